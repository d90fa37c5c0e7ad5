"""A Python literal read as JSON values: the ``repr`` some servers send where JSON was due.

Pure: no I/O, no threads, no clocks. **Nothing is evaluated**: no ``eval``, no
``ast.literal_eval`` (which compiles its text first: a hostile text can make
``compile`` take unbounded memory and recursion). :func:`parse` is a reader of its
own over a bounded grammar, iterative (an explicit stack, never Python's), total:
every text is a value or :class:`LiteralRefused`.

What it reads is what ``repr`` and ``pprint`` print for the JSON kinds:

* ``dict`` displays whose keys are strings (``{'a': 1}``); ``list`` and ``tuple``
  displays (``[1, 2]``, ``(1,)``, ``()``), both read as a list; ``set`` displays
  of scalars (``{'a', 'b'}``), read as a list; a value in parentheses is the value
  (``('a' 'b')``, as ``pprint`` wraps a long string);
* strings: ``'...'`` or ``"..."``, a ``u`` or ``r`` prefix, every escape Python
  knows but ``\\N{...}``, adjacent strings joined (across a line break only inside
  brackets, as Python would);
* integers (decimal, at most :data:`MAX_INT_DIGITS` digits), floats (finite),
  either with a sign; ``True``, ``False``, ``None``.

Anything else is refused: another name (``inf``, ``nan``, ``datetime(...)``,
``set()``), bytes, complex numbers, a key that is not a string, a set of
containers, a comment, a line continuation. Nesting is bounded like JSON's
(:data:`MAX_DEPTH`). Whatever it reads, ``ast.literal_eval`` reads the same (a
property test holds them together); it refuses some texts ``literal_eval`` takes,
never the other way round.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..errors import LiteralRefused
from ..jsonvalue import MAX_DEPTH, MAX_INT_DIGITS, JsonValue

__all__ = ["parse", "LiteralRefused", "MAX_DEPTH", "MAX_INT_DIGITS", "MAX_NUMBER_CHARS"]

#: Characters of one number token (a float's digits too), sign and exponent included.
MAX_NUMBER_CHARS = MAX_INT_DIGITS + 64

# One token: a punctuation mark, a string, a number, a name. Strings are unrolled
# (runs of plain characters, then one escape), never a choice per character.
_TOKEN = re.compile(
    r"""
    (?P<punct>[{}\[\](),:])
    | (?P<string>[uUrR]?(?:
        '[^'\\\n\r]*(?:\\[^\r][^'\\\n\r]*)*'
        | "[^"\\\n\r]*(?:\\[^\r][^"\\\n\r]*)*"
      ))
    | (?P<number>[+-]?(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|[1-9]\d*|0+))
      (?![\w.])
    | (?P<name>[A-Za-z_]\w*)
    """,
    re.VERBOSE | re.ASCII,  # Python's numbers are ASCII digits; a non-ASCII name is no literal
)
_SPACE = re.compile(r"[ \t\r\n]*")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {
    "\n": "",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
_CONSTANTS: Dict[str, Any] = {"True": True, "False": False, "None": None}
_CLOSER = {"{": "}", "[": "]", "(": ")"}
_STRING, _NUMBER, _CONSTANT = "string", "number", "constant"


def parse(text: str) -> JsonValue:
    """``text`` (one Python literal, surrounding space allowed) as a JSON value; raises
    :class:`LiteralRefused` for anything else. Tuples and sets are lists."""
    reader = _Reader()
    for kind, value, at in _tokens(text):
        reader.feed(kind, value, at)
    return reader.end(len(text))


# ----------------------------------------------------------------------------- tokens


def _tokens(text: str) -> Iterator[Tuple[str, Any, int]]:
    """``(kind, value, offset)``: punctuation (its character), strings (adjacent ones
    joined), numbers and constants (their values)."""
    depth = 0
    pending: Optional[Tuple[str, int, int]] = None  # a string, its offset, its end
    position = _SPACE.match(text).end()  # type: ignore[union-attr]  # it matches ""
    while position < len(text):
        found = _TOKEN.match(text, position)
        if found is None:
            raise LiteralRefused("not a Python literal at character %d" % position)
        kind = found.lastgroup
        token = found.group()
        if kind == "string":
            part = _string(token, position)
            if pending is not None and (depth or not _breaks(text[pending[2] : position])):
                pending = (pending[0] + part, pending[1], found.end())
            else:
                if pending is not None:  # two strings a line apart: two statements
                    raise LiteralRefused("two strings at character %d" % position)
                pending = (part, position, found.end())
        else:
            if pending is not None:
                yield _STRING, pending[0], pending[1]
                pending = None
            if kind == "punct":
                depth += 1 if token in "{[(" else -1 if token in "}])" else 0
                yield "punct", token, position
            elif kind == "number":
                yield _NUMBER, _number(token, position), position
            elif token in _CONSTANTS:
                yield _CONSTANT, _CONSTANTS[token], position
            else:
                raise LiteralRefused("a name, not a literal, at character %d" % position)
        position = _SPACE.match(text, found.end()).end()  # type: ignore[union-attr]
    if pending is not None:
        yield _STRING, pending[0], pending[1]


def _breaks(space: str) -> bool:
    """A line break between two tokens (``\\r`` is one to Python's tokenizer too)."""
    return "\n" in space or "\r" in space


def _string(token: str, at: int) -> str:
    raw = token[0] in "rR"
    body = token[2:-1] if token[0] in "uUrR" else token[1:-1]
    if raw or "\\" not in body:
        return body
    return _ESCAPE.sub(lambda found: _escaped(found.group(1), at), body)


def _escaped(escape: str, at: int) -> str:
    head = escape[0]
    if head in _SIMPLE_ESCAPES and len(escape) == 1:
        return _SIMPLE_ESCAPES[head]
    if head in "xuU" and len(escape) > 1:
        code = int(escape[1:], 16)
        if code > 0x10FFFF:
            raise LiteralRefused("an escape past U+10FFFF in the string at character %d" % at)
        return chr(code)
    if head in "01234567":
        return chr(int(escape, 8))
    if head in "xuUN":  # \x without two hex digits (Python refuses it too), \N{...}
        raise LiteralRefused("an escape not read here in the string at character %d" % at)
    return "\\" + escape  # Python keeps an unknown escape as it is


def _number(token: str, at: int) -> Any:
    if len(token) > MAX_NUMBER_CHARS:
        raise LiteralRefused("a number too long at character %d" % at)
    if any(mark in token for mark in ".eE"):
        value = float(token)
        if not math.isfinite(value):
            raise LiteralRefused("a number JSON cannot carry at character %d" % at)
        return value
    if len(token.lstrip("+-")) > MAX_INT_DIGITS:
        raise LiteralRefused("an integer of over %d digits at character %d" % (MAX_INT_DIGITS, at))
    return int(token)


# ----------------------------------------------------------------------------- values


class _Open:
    """A display being read: its bracket, what it holds so far, and where it is."""

    __slots__ = ("bracket", "items", "mapping", "key", "mode", "comma", "at")

    def __init__(self, bracket: str, at: int) -> None:
        self.bracket = bracket
        self.items: List[Any] = []
        self.mapping: Dict[str, Any] = {}
        self.key: Optional[str] = None  # a dict's key read, its value awaited
        self.mode = "" if bracket == "{" else bracket  # "{": "dict" or "set" once known
        self.comma = False  # a tuple's comma: "(1,)" is a tuple, "(1)" is 1
        self.at = at


class _Reader:
    """The values, read token by token on an explicit stack (no recursion)."""

    def __init__(self) -> None:
        self.stack: List[_Open] = []
        self.value: Any = None  # the value just read, awaiting what follows it
        self.has_value = False
        self.done = False  # the top-level value is read

    def feed(self, kind: str, token: Any, at: int) -> None:
        if self.done:
            raise LiteralRefused("more after the value at character %d" % at)
        if self.has_value:
            self.after_value(kind, token, at)
        elif kind != "punct":
            self.read(token)
        elif token in _CLOSER:
            if len(self.stack) >= MAX_DEPTH:
                raise LiteralRefused("nested deeper than %d at character %d" % (MAX_DEPTH, at))
            self.stack.append(_Open(token, at))
        elif token in ")]}" and self.stack and self.may_close(self.stack[-1], token):
            self.read(self.close(self.stack.pop()))
        else:
            raise LiteralRefused("a value expected at character %d" % at)

    def read(self, value: Any) -> None:
        self.value, self.has_value = value, True
        if not self.stack:
            self.done = True

    @staticmethod
    def may_close(open_: _Open, token: str) -> bool:
        """A closer where a value was due: ``[]``, ``{}``, ``()``, or after a comma."""
        return token == _CLOSER[open_.bracket] and open_.key is None

    def after_value(self, kind: str, token: Any, at: int) -> None:
        top = self.stack[-1]  # a value at the top level ends the reading (done)
        self.has_value = False
        value, self.value = self.value, None
        if kind == "punct" and token == ":":
            if top.mode not in ("", "dict") or top.key is not None:
                raise LiteralRefused("a ':' out of place at character %d" % at)
            if type(value) is not str:
                raise LiteralRefused("a key that is not a string at character %d" % at)
            top.mode, top.key = "dict", value
            return
        if kind != "punct" or token not in ",)]}":
            raise LiteralRefused("a ',' or a closing bracket expected at character %d" % at)
        self.put(top, value, at)
        if token == ",":
            top.comma = True
            return
        if token != _CLOSER[top.bracket]:
            raise LiteralRefused("%r closes %r at character %d" % (token, top.bracket, at))
        self.read(self.close(self.stack.pop()))

    @staticmethod
    def put(top: _Open, value: Any, at: int) -> None:
        if top.mode == "dict":
            if top.key is None:
                raise LiteralRefused("a key without its value at character %d" % at)
            top.mapping[top.key] = value
            top.key = None
            return
        if top.bracket == "{":
            if type(value) in (list, dict):  # Python's sets hold no list, dict or tuple
                raise LiteralRefused("a set of containers at character %d" % at)
            top.mode = "set"
        top.items.append(value)

    @staticmethod
    def close(top: _Open) -> Any:
        if top.mode == "dict" or (top.bracket == "{" and not top.items):
            return top.mapping
        if top.bracket == "(" and len(top.items) == 1 and not top.comma:
            return top.items[0]  # a value in parentheses
        return top.items

    def end(self, length: int) -> JsonValue:
        if self.stack:
            raise LiteralRefused("%r not closed at character %d" % (self.stack[-1].bracket, length))
        if not self.done:
            raise LiteralRefused("no value")
        return self.value  # type: ignore[no-any-return]
