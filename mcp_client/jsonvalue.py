"""JSON values: one total parser and one strict, single-line serializer.

Pure: no I/O, no threads, no clocks. ``parse`` is total: for any ``bytes`` or
``str`` it returns a value or raises :class:`CorruptionReport`, never
``RecursionError``, ``UnicodeDecodeError`` or the int-digits ``ValueError``.
The work is done by the C scanner of the standard ``json`` module; this module
adds the bounds RFC 8259 leaves to implementations (section 9): nesting depth,
integer digits, and non-finite numbers.
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Tuple, Union

from .errors import CorruptionReport, EncodeRefused

__all__ = ["JsonValue", "MAX_DEPTH", "MAX_INT_DIGITS", "parse", "dump", "encode",
           "CorruptionReport", "EncodeRefused"]

JsonValue = Union[None, bool, int, float, str, List["JsonValue"], Dict[str, "JsonValue"]]

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


def parse(data: bytes | str) -> JsonValue:
    """Parse one JSON text (UTF-8 when given bytes); total, see the module doc."""
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        value: JsonValue = _DECODER.decode(text)
    except RecursionError:
        raise CorruptionReport("nesting deeper than %d" % MAX_DEPTH) from None
    except UnicodeDecodeError as e:
        raise CorruptionReport("not UTF-8 at byte %d" % e.start) from None
    except (ValueError, TypeError) as e:
        raise CorruptionReport(str(e)[:200]) from None
    if _may_be_too_deep(text) and depth(value) > MAX_DEPTH:
        raise CorruptionReport("nesting deeper than %d" % MAX_DEPTH)
    return value


def _may_be_too_deep(text: str) -> bool:
    # Depth cannot exceed the number of opening brackets; counting them is a
    # memchr-speed scan, so the walk below only runs for texts that could fail.
    return text.count("[") + text.count("{") > MAX_DEPTH


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


def encode(value: JsonValue) -> bytes:
    """Compact one-line UTF-8 JSON for ``value``, or :class:`EncodeRefused`."""
    _check(value)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate in some string
        raise EncodeRefused("string holds a lone surrogate at %d" % e.start) from None
    except (ValueError, TypeError, RecursionError) as e:
        raise EncodeRefused(str(e)[:200]) from None


def dump(value: JsonValue) -> str:
    """Compact single-line JSON text for ``value``; never holds a literal newline."""
    return encode(value).decode("utf-8")


def _check(value: object) -> None:
    # json.dumps would quietly accept tuples, int keys, subclasses with odd
    # __str__ and cycles; the wire must only ever see plain JSON values.
    stack = [(value, 0)]
    while stack:
        node, level = stack.pop()
        kind = type(node)
        if kind is dict:
            _check_container(level)
            for key, child in node.items():  # type: ignore[attr-defined]
                if type(key) is not str:
                    raise EncodeRefused("object key %r is not a string" % (key,))
                stack.append((child, level + 1))
        elif kind is list:
            _check_container(level)
            stack.extend((child, level + 1) for child in node)  # type: ignore[attr-defined]
        elif kind is float and not math.isfinite(node):  # type: ignore[arg-type]
            raise EncodeRefused("%r is not a JSON number" % node)
        elif kind not in _SCALARS:
            raise EncodeRefused("%s is not a JSON value" % kind.__name__)


def _check_container(level: int) -> None:
    if level >= MAX_DEPTH:
        raise EncodeRefused("nesting deeper than %d" % MAX_DEPTH)


_SCALARS = (type(None), bool, int, float, str)
