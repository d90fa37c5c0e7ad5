"""JSON values: one total parser and one strict, single-line serializer.

Pure: no I/O, no threads, no clocks. ``parse`` is total: for any ``bytes`` or
``str`` it returns a value or raises :class:`CorruptionReport`, never
``RecursionError``, ``UnicodeDecodeError`` or the int-digits ``ValueError``.
The work is done by the C scanner of the standard ``json`` module; this module
adds the bounds RFC 8259 leaves to implementations (section 9): nesting depth,
integer digits, and non-finite numbers.
"""

from __future__ import annotations

import gc
import json
import math
import sys

from ._lazy import lazy_aliases
from .errors import CorruptionReport, EncodeRefused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__all__ = [
    "JsonValue",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "parse",
    "dump",
    "encode",
    "encode_checked",
    "check",
    "CorruptionReport",
    "EncodeRefused",
]

if TYPE_CHECKING:
    JsonValue = Union[None, bool, int, float, str, List["JsonValue"], Dict[str, "JsonValue"]]
else:  # made on first use: typing is not imported with the client
    __getattr__ = lazy_aliases(
        globals(),
        JsonValue=lambda t: t.Union[
            None, bool, int, float, str, t.List["JsonValue"], t.Dict[str, "JsonValue"]
        ],
    )

#: The one nesting bound of the package: arrays and objects deeper than this are
#: refused by ``parse`` here and by ``interchange`` in both directions.
MAX_DEPTH = 256

#: Integers longer than this are refused, whatever ``sys.int_max_str_digits``
#: says, so the verdict does not depend on the interpreter's version.
MAX_INT_DIGITS = 4300

_CONTAINERS = (list, dict)


def _parse_int(text: str) -> int:
    digits = len(text) - text.startswith("-")  # the sign is not a digit
    if digits > MAX_INT_DIGITS:
        raise ValueError("integer of %d digits; the limit is %d" % (digits, MAX_INT_DIGITS))
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: valid grammar, but not a finite double
        raise ValueError("number %s overflows a double" % text[:40])
    return value


def _refuse_constant(name: str) -> None:
    raise ValueError("%s is not JSON" % name)


_DECODER = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_refuse_constant
)
#: The same, but integers are left to the C scanner (no Python call per integer).
#: Used only while the interpreter's own digit limit *is* ``MAX_INT_DIGITS``: the
#: scanner then refuses exactly the integers ``_parse_int`` refuses.
_FAST_DECODER = json.JSONDecoder(parse_float=_parse_float, parse_constant=_refuse_constant)
_INT_LIMIT: Optional[Callable[[], int]] = getattr(sys, "get_int_max_str_digits", None)


def parse(data: bytes | str) -> JsonValue:
    """Parse one JSON text (UTF-8 when given bytes); total, see the module doc."""
    if _INT_LIMIT is not None and _INT_LIMIT() == MAX_INT_DIGITS:
        try:
            return _parse(data, _scan_fast)
        except CorruptionReport:
            pass  # a refusal's reason must not depend on the path: the strict one says it
    return _parse(data, _DECODER.decode)


def _parse(data: bytes | str, decode: Callable[[str], Any]) -> JsonValue:
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        value: JsonValue = decode(text)
    except RecursionError:
        raise CorruptionReport("nesting deeper than %d" % MAX_DEPTH) from None
    except UnicodeDecodeError as e:
        raise CorruptionReport("not UTF-8 at byte %d" % e.start) from None
    except (ValueError, TypeError) as e:
        raise CorruptionReport(str(e)[:200]) from None
    if len(text) > _SHALLOW and _may_be_too_deep(text) and _too_deep(value):
        raise CorruptionReport("nesting deeper than %d" % MAX_DEPTH)
    return value


def _scan_fast(text: str) -> Any:
    """``_FAST_DECODER.decode(text)`` minus its Python layers: the C scanner from
    the first character, whitespace after the value allowed, nothing else. Any
    refusal (leading whitespace included) sends ``parse`` to the strict path."""
    try:
        value, end = _SCAN_FAST(text, 0)
    except StopIteration:
        raise ValueError("not a JSON text") from None
    if end != len(text) and text[end:].strip(" \t\n\r"):
        raise ValueError("extra data")
    return value


#: Every ``JSONDecoder`` has one (the C scanner when there is one); typeshed omits it.
_SCAN_FAST: Callable[[str, int], Tuple[Any, int]] = getattr(_FAST_DECODER, "scan_once")


#: Up to this many characters, counting brackets is cheaper than walking the value.
_COUNT_LIMIT = 4096


#: No text this long or shorter can nest deeper than ``MAX_DEPTH``: looked at in line.
_SHALLOW = 2 * MAX_DEPTH


def _may_be_too_deep(text: str) -> bool:
    # Depth cannot exceed the number of opening brackets, nor half the length.
    # A short text is cleared by a memchr-speed count of its brackets; a longer
    # one goes to the walk, which touches containers only and so costs less than
    # counting when the text holds long strings.
    if len(text) <= 2 * MAX_DEPTH:
        return False
    return len(text) > _COUNT_LIMIT or text.count("[") + text.count("{") > MAX_DEPTH


def _too_deep(value: JsonValue) -> bool:
    """``depth(value) > MAX_DEPTH``, a level of the tree at a time, at C speed.

    On CPython ``gc.get_referents`` hands back every item of a list and every
    value of a dict, and ``gc.is_tracked`` keeps exactly the containers that can
    hold containers: lists always, dicts unless every value is atomic (CPython
    untracks only those). So each pass yields the next level's containers but
    for such leaf dicts, which hold no container by construction; the last pass
    looks at every child of the deepest level, leaves included.
    """
    if not _REFERENTS_ARE_CHILDREN:
        return depth(value) > MAX_DEPTH
    level: List[Any] = [value]
    for _ in range(MAX_DEPTH - 1):
        level = list(filter(gc.is_tracked, gc.get_referents(*level)))
        if not level:
            return False
    return any(type(child) in _CONTAINERS for child in gc.get_referents(*level))


_REFERENTS_ARE_CHILDREN = sys.implementation.name == "cpython"


def depth(value: object) -> int:
    """Nesting depth of a parsed value: 0 for a scalar, 1 for ``[]``; iterative."""
    deepest = 0
    stack: List[Tuple[Any, int]] = [(value, 1)] if type(value) in _CONTAINERS else []
    while stack:
        node, level = stack.pop()
        if level > deepest:
            deepest = level
        for child in node.values() if type(node) is dict else node:
            if type(child) in _CONTAINERS:
                stack.append((child, level + 1))
    return deepest


def _refuse_object(value: object) -> None:
    raise TypeError("%s is not a JSON value" % type(value).__name__)


def _make_encoder() -> Callable[[object], str]:
    """One encoder for every call, made once: compact, UTF-8 (not ASCII), no NaN.

    ``json.dumps`` with these options builds a ``JSONEncoder`` and then a C
    encoder on every call. The C encoder itself holds no state between calls
    when it keeps no cycle markers, which ``_check`` makes unnecessary (a cycle
    is nesting past ``MAX_DEPTH``).
    """
    public = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    try:
        c_encoder = make(
            None,
            _refuse_object,
            json.encoder.encode_basestring,
            None,  # type: ignore[misc]
            ":",
            ",",
            False,
            False,
            False,
        )

        def fast(value: object) -> str:
            return "".join(c_encoder(value, 0))

        if fast(_PROBE) == public(_PROBE):
            return fast
    except Exception:  # no accelerator, or its private signature moved: the public path
        pass
    return public


#: A value whose encoding proves the private encoder agrees with the public one.
_PROBE: JsonValue = {"k": [1, -2.5, True, None, "\u00e9\u2028\"\\\n"], "e": {}, "l": []}


_ENCODE = _make_encoder()


def encode(value: JsonValue) -> bytes:
    """Compact one-line UTF-8 JSON for ``value``, or :class:`EncodeRefused`."""
    check(value)
    return encode_checked(value)


def encode_checked(value: JsonValue) -> bytes:
    r""":func:`encode` for a value already :func:`check`\ ed, or built by the package
    from such parts (a message around checked params): the walk is not made again.
    A lone surrogate, which only the encoding finds, is still :class:`EncodeRefused`."""
    try:
        return _ENCODE(value).encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate in some string
        raise EncodeRefused("string holds a lone surrogate at %d" % e.start) from None
    except (ValueError, TypeError, RecursionError) as e:
        raise EncodeRefused(str(e)[:200]) from None


def dump(value: JsonValue) -> str:
    """Compact single-line JSON text for ``value``; never holds a literal newline."""
    return encode(value).decode("utf-8")


def check(value: object, level: int = 0) -> None:
    """Refuse (:class:`EncodeRefused`) what :func:`encode` refuses, lone
    surrogates aside; ``level``: how deep ``value`` sits in the message that will
    carry it (the nesting bound is the whole message's)."""
    # json.dumps would quietly accept tuples, int keys, subclasses with odd
    # __str__ and cycles; the wire must only ever see plain JSON values.
    # Containers go on the stack; scalars are judged where they are met.
    if type(value) not in _CONTAINERS:
        _check_scalar(value)
        return
    stack: List[Tuple[Any, int]] = [(value, level)]
    while stack:
        node, level = stack.pop()
        if level >= MAX_DEPTH:
            raise EncodeRefused("nesting deeper than %d" % MAX_DEPTH)
        if not node:
            continue  # {} or []: a tool called without arguments
        if type(node) is dict:
            for key in node:
                if type(key) is not str:
                    raise EncodeRefused("object key %r is not a string" % (key,))
            node = node.values()
        for child in node:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, level + 1))
            elif kind is not str and kind is not int:
                _check_scalar(child)


def _check_scalar(value: object) -> None:
    kind = type(value)
    if kind is float and not math.isfinite(value):  # type: ignore[arg-type]
        raise EncodeRefused("%r is not a JSON number" % value)
    if kind not in _SCALARS:
        raise EncodeRefused("%s is not a JSON value" % kind.__name__)


_SCALARS = (type(None), bool, int, float, str)
