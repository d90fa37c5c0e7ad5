"""The run-time check of a result against the shape its tool declared.

Pure: no I/O, no threads, no clocks. ``compile(kind)`` turns one type of
``schema``'s language (a tool's ``outputSchema`` as ``plan_output`` reads it)
into a function of one value that returns ``None`` when the value has the
shape, or the first :class:`Mismatch`: where (``path``), what was expected,
and what came (its JSON kind; a scalar's short text for a ``Literal``). It
checks what the generated ``TypedDict`` promises a program and no more:

* a record's required keys are present, and every key it names that is
  present has its type; keys it does not name pass (``additionalProperties``
  is the server's business, and a type never promised their absence);
* each value's JSON kind (``integer`` is an ``int`` that is not a ``bool``;
  ``number`` an ``int`` or ``float``, never a ``bool``);
* ``Literal`` members (``1`` is not ``True``);
* every item of a list, every value of a map, the branches of a union (one
  must pass), ``null`` where nullable;
* ``Structured`` (``Any``) passes anything.

The check is compiled once per tool (closures, one per node of the type, so
a call pays no dispatch on the type's class) and is total: any JSON value
(and anything else) gives ``None`` or a ``Mismatch``, never an exception.
Its work is linear in the value's size and its recursion follows the type,
whose depth ``schema.MAX_LOOK`` bounds, never the value's.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from ..text import escape, sanitize
from .schema import AnyOf, Array, Choice, Map, Nullable, Record, Simple, Structured, ValueType

__all__ = ["Mismatch", "Check", "Deferred", "compile", "kind_of", "MAX_GOT_CHARS"]

#: Characters of a scalar shown in a mismatch's ``got``.
MAX_GOT_CHARS = 40


class Mismatch(NamedTuple):
    """Where a value left its shape: ``path`` (``$["items"][3]``), ``expected``, ``got``."""

    path: str
    expected: str
    got: str


# A compiled node: the value and the path of keys and indexes to it (built only on failure).
_Node = Callable[[Any], Optional[Tuple[List[Any], str]]]
#: A compiled check: ``None``, or the first mismatch.
Check = Callable[[Any], Optional[Mismatch]]

_KINDS: Dict[str, Callable[[Any], bool]] = {
    "string": lambda value: type(value) is str,
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) is float or type(value) is int,
    "boolean": lambda value: type(value) is bool,
}


def compile(kind: ValueType) -> Check:  # noqa: A001 - the verb this module is about
    """The check of ``kind``, compiled once; see the module doc."""
    node = _compile(kind)

    def check(value: Any) -> Optional[Mismatch]:
        failure = node(value)
        if failure is None:
            return None
        steps, expected = failure
        at = value
        for step in reversed(steps):
            at = at[step]
        return Mismatch(_path(reversed(steps)), expected, _got(at))

    return check


def kind_of(value: Any) -> str:
    """The JSON kind of ``value``: ``object``, ``array``, ``string``, ... or its Python type."""
    if value is None:
        return "null"
    return _KIND_NAMES.get(type(value)) or "a Python %s" % sanitize(type(value).__name__, 40)


_KIND_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
}


def _compile(kind: ValueType) -> _Node:
    if isinstance(kind, Simple):
        return _simple(kind.kind)
    if isinstance(kind, Record):
        return _record(kind)
    if isinstance(kind, Array):
        return _array(_compile(kind.item))
    if isinstance(kind, Map):
        return _map(_compile(kind.value))
    if isinstance(kind, Nullable):
        return _nullable(_compile(kind.inner))
    if isinstance(kind, Choice):
        return _choice(kind)
    if isinstance(kind, AnyOf):
        return _any_of(kind)
    return _anything  # Structured: Any


def _anything(value: Any) -> None:
    return None


def _simple(name: str) -> _Node:
    test = _KINDS[name]

    def check(value: Any) -> Optional[Tuple[List[Any], str]]:
        return None if test(value) else ([], name)

    return check


#: The Python types of each simple kind's values, exactly (``bool`` is no ``int`` here).
_EXACT = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


def _record(record: Record) -> _Node:
    required = tuple(field.name for field in record.fields if not field.optional)
    # The hot path: a simple field is one type test in the loop, no call; Structured
    # fields check nothing and are left out.
    simple = tuple(
        (field.name, _EXACT[field.type.kind], field.type.kind)
        for field in record.fields
        if isinstance(field.type, Simple)
    )
    nested = tuple(
        (field.name, _compile(field.type))
        for field in record.fields
        if not isinstance(field.type, (Simple, Structured))
    )
    keys = ", ".join(_key(name) for name in required) or "no required key"
    expected = "an object with %s" % sanitize(keys, 200)

    def check(value: Any) -> Optional[Tuple[List[Any], str]]:
        if type(value) is not dict:
            return [], "object"
        for name in required:
            if name not in value:
                return [], expected
        for name, types, kind in simple:
            if name in value and type(value[name]) not in types:
                return [name], kind
        for name, node in nested:
            if name in value:
                failure = node(value[name])
                if failure is not None:
                    failure[0].append(name)
                    return failure
        return None

    return check


def _array(item: _Node) -> _Node:
    def check(value: Any) -> Optional[Tuple[List[Any], str]]:
        if type(value) is not list:
            return [], "array"
        for index, entry in enumerate(value):
            failure = item(entry)
            if failure is not None:
                failure[0].append(index)
                return failure
        return None

    return check


def _map(node: _Node) -> _Node:
    def check(value: Any) -> Optional[Tuple[List[Any], str]]:
        if type(value) is not dict:
            return [], "object"
        for key, entry in value.items():
            failure = node(entry)
            if failure is not None:
                failure[0].append(key)
                return failure
        return None

    return check


def _nullable(inner: _Node) -> _Node:
    def check(value: Any) -> Optional[Tuple[List[Any], str]]:
        if value is None:
            return None
        failure = inner(value)
        if failure is not None and not failure[0]:
            return [], failure[1] + " or null"
        return failure

    return check


def _choice(choice: Choice) -> _Node:
    # Keyed by type too: 1 == True == 1.0, and only the member's own type is it.
    members = frozenset((type(member), member) for member in choice.members)
    expected = "one of " + sanitize(", ".join(_member(m) for m in choice.members), 200)

    def check(value: Any) -> Optional[Tuple[List[Any], str]]:
        if type(value) in (str, int, bool) and (type(value), value) in members:
            return None
        return [], expected

    return check


def _any_of(union: AnyOf) -> _Node:
    branches = tuple(_compile(branch) for branch in union.branches)
    expected = "one of %d alternatives" % len(branches)

    def check(value: Any) -> Optional[Tuple[List[Any], str]]:
        for branch in branches:
            if branch(value) is None:
                return None
        return [], expected

    return check


def _path(steps: Any) -> str:
    parts = ["$"]
    for step in steps:
        parts.append("[%d]" % step if type(step) is int else '["%s"]' % escape(step))
    return sanitize("".join(parts), 400)


def _got(value: Any) -> str:
    name = kind_of(value)
    if type(value) is str:
        return "%s %s" % (name, _literal(sanitize(value, MAX_GOT_CHARS)))
    if type(value) in (int, float, bool):
        return "%s %s" % (name, sanitize(json.dumps(value), MAX_GOT_CHARS))
    return name


def _literal(text: str) -> str:
    return '"' + escape(text) + '"'


def _key(name: str) -> str:
    return _literal(name)


def _member(member: Any) -> str:
    return _literal(member) if type(member) is str else repr(member)


class Deferred:
    """A check compiled on its first use, then kept: ``generate`` makes one per
    typed tool at the cost of one object, and only a tool that is called pays
    for compiling its check (once)."""

    __slots__ = ("kind", "_check")

    def __init__(self, kind: ValueType) -> None:
        self.kind = kind
        self._check: Optional[Check] = None

    def __call__(self, value: Any) -> Optional[Mismatch]:
        check = self._check
        if check is None:  # two threads may both compile: the same check, harmlessly
            check = self._check = compile(self.kind)
        return check(value)
