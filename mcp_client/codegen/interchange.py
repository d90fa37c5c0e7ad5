"""Values between the capability wire (msgpack) and the MCP wire (JSON).

Pure: no I/O, no threads, no clocks. The capability wire's value model is
msgpack's, seen as Python objects: ``None``, ``bool``, ``int``, ``float``,
``str``, ``bytes``, ``list``, and ``dict`` with keys of any of those. The MCP
wire's is :data:`jsonvalue.JsonValue`. Both conversions are total: for *any*
Python object they return a fresh value or raise :class:`InterchangeFault`,
never anything else, and a refusal refuses the **whole** conversion (SEED.md,
``mcp/interchange``). What crosses is what both models share:

* ``None``, ``bool``, finite ``float``: as they are (NaN and the infinities
  have no JSON form);
* ``int`` within ``[MIN_MSGPACK_INT, MAX_MSGPACK_INT]``: as it is; a JSON
  integer outside that range is refused, never wrapped or clamped;
* ``str`` without lone surrogates (neither wire can carry one as UTF-8);
* ``list``, and ``dict`` whose keys are all such strings.

Refused as well: ``bytes`` (JSON has no binary type, and base64 or a list of
numbers would each be a guess), a non-string map key (same argument), a
subclass or any other type (``tuple``, ``set``, ``IntEnum``...: the models are
exact), nesting deeper than :data:`jsonvalue.MAX_DEPTH` (the bound both
parsers apply), and a container met twice: decoded values are trees, and a
shared or cyclic reference could make the walk exponential.

A fault's ``path`` names where the refusal was found: ``$`` is the root, an
index is ``[3]``, a key that is an ASCII identifier is ``.key``, and any other
key is ``["its JSON-quoted text"]``, so ``$.items[3]["a b"]``. The walk is
iterative: depth costs no Python stack.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Set, Tuple, Union

from ..errors import InterchangeFault
from ..jsonvalue import MAX_DEPTH, JsonValue

__all__ = [
    "MsgpackValue",
    "MAX_MSGPACK_INT",
    "MIN_MSGPACK_INT",
    "InterchangeFault",
    "to_json",
    "to_msgpack",
    "describe",
]

MsgpackValue = Union[
    None, bool, int, float, str, bytes, List["MsgpackValue"], Dict[Any, "MsgpackValue"]
]

#: Largest integer msgpack encodes (uint 64).
MAX_MSGPACK_INT = 2**64 - 1
#: Smallest integer msgpack encodes (int 64).
MIN_MSGPACK_INT = -(2**63)

# A path step: a list index or a map key, linked back to the parent's crumb;
# paths are only rendered when a fault is raised.
_Crumb = Optional[Tuple["_Crumb", Union[int, str]]]
# One pending conversion: the source value, the container and slot its result
# goes into, its nesting level (0 for the root), and its crumb.
_Task = Tuple[object, Any, Union[int, str], int, _Crumb]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True)
class _Direction:
    """How one direction words the refusals that differ between the two."""

    source_model: str
    binary: str


_TO_JSON = _Direction("msgpack", "binary data has no JSON form")
_TO_MSGPACK = _Direction("JSON", "bytes is not a JSON value")


def to_json(value: object) -> JsonValue:
    """A capability-wire value as a JSON value, or :class:`InterchangeFault`."""
    result: JsonValue = _convert(value, _TO_JSON)
    return result


def to_msgpack(value: object) -> MsgpackValue:
    """A JSON value as a capability-wire value, or :class:`InterchangeFault`."""
    result: MsgpackValue = _convert(value, _TO_MSGPACK)
    return result


def describe(fault: InterchangeFault) -> str:
    """One line for a refusal: where it was found and why."""
    return "cannot convert the value at %s: %s" % (fault.path, fault.detail)


def _convert(value: object, direction: _Direction) -> Any:
    root: List[Any] = [None]
    seen: Set[int] = set()
    stack: List[_Task] = [(value, root, 0, 0, None)]
    while stack:
        source, sink, slot, level, crumb = stack.pop()
        kind = type(source)
        if kind is list or kind is dict:
            _enter(source, level, crumb, seen)
            sink[slot] = _open(source, level, crumb, stack)
        else:
            _check_scalar(source, crumb, direction)
            sink[slot] = source
    return root[0]


def _enter(container: object, level: int, crumb: _Crumb, seen: Set[int]) -> None:
    if level >= MAX_DEPTH:
        raise InterchangeFault(_render(crumb), "nesting deeper than %d" % MAX_DEPTH)
    if id(container) in seen:
        raise InterchangeFault(_render(crumb), "container met twice (shared or cyclic)")
    seen.add(id(container))


def _open(source: Any, level: int, crumb: _Crumb, stack: List[_Task]) -> Any:
    """An empty copy of ``source``, its children queued to fill it in order."""
    if type(source) is list:
        copy: Any = [None] * len(source)
        slots: Any = range(len(source))
    else:
        for key in source:
            _check_key(key, crumb)
        copy, slots = dict.fromkeys(source), list(source)  # keys inserted in order now
    # Pushed last-first so that they pop first-first: the fault reported is
    # the first one in document order.
    stack.extend((source[slot], copy, slot, level + 1, (crumb, slot)) for slot in reversed(slots))
    return copy


def _check_key(key: object, crumb: _Crumb) -> None:
    if type(key) is not str:
        reason = "map key of type %s is not a string" % type(key).__name__
        raise InterchangeFault(_render(crumb), reason)
    if _SURROGATE.search(key):
        raise InterchangeFault(_render(crumb), "map key holds a lone surrogate")


def _check_scalar(value: object, crumb: _Crumb, direction: _Direction) -> None:
    reason = _scalar_refusal(value, direction)
    if reason is not None:
        raise InterchangeFault(_render(crumb), reason)


def _scalar_refusal(value: object, direction: _Direction) -> Optional[str]:
    if type(value) is str:
        return "string holds a lone surrogate" if _SURROGATE.search(value) else None
    if type(value) is int:
        return None if MIN_MSGPACK_INT <= value <= MAX_MSGPACK_INT else _OUT_OF_RANGE
    if type(value) is float:
        return None if math.isfinite(value) else "%r has no JSON form" % value
    if value is None or type(value) is bool:
        return None
    if type(value) is bytes or type(value) is bytearray:
        return direction.binary
    return "%s is not a %s value" % (type(value).__name__, direction.source_model)


_OUT_OF_RANGE = "integer outside [-2**63, 2**64 - 1]"


def _render(crumb: _Crumb) -> str:
    steps: List[str] = []
    while crumb is not None:
        crumb, step = crumb
        steps.append(_render_step(step))
    return "$" + "".join(reversed(steps))


def _render_step(step: Union[int, str]) -> str:
    if isinstance(step, int):
        return "[%d]" % step
    if _IDENTIFIER.fullmatch(step):
        return "." + step
    return "[%s]" % json.dumps(step)  # ASCII: every other codepoint is \u-escaped
