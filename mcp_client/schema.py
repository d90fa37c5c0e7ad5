"""The total three-tier reading of a raw ``inputSchema``.

Pure: no I/O, no threads, no clocks. ``plan`` has no error case (SEED.md,
"Every decoder is total": tier 3 *is* the failure mode, carried as data):

* tier 1 -- ``Simple(kind)`` and ``ListOf(kind)``, the typed subset, with
  ``kind`` one of ``"string"``, ``"integer"``, ``"number"``, ``"boolean"``;
* tier 2 -- ``Structured(reason)``: a parameter we pass through untyped
  (any JSON value the caller builds);
* tier 3 -- ``WholeValue(reason)``: the top level is unusable, and the
  generated function takes the whole arguments object as one ``dict``.

No parameter is ever dropped. Every property becomes a ``Param`` in the
schema's own order, and a name listed in ``required`` with no property schema
becomes a ``Structured`` parameter after them.

The top level (``Typed`` or ``WholeValue``):

* it must be a JSON object whose ``type``, when present, is ``"object"``
  (missing ``type`` is read as ``"object"``: the MCP schema requires it, and
  servers that forget it still send an object);
* ``$ref``, ``anyOf``, ``oneOf``, ``allOf``, ``not`` or ``if`` at the top
  level give ``WholeValue``: its shape is not a plain list of properties;
* ``properties`` must be an object and ``required`` a list of strings;
* ``additionalProperties`` that is anything but absent or ``false`` gives
  ``WholeValue``: the object admits keys no parameter can name. (Absent is
  JSON Schema's "allowed", but servers leave it out almost always, and the
  listed properties are the interface they mean.)

One parameter (``Simple`` / ``ListOf`` / ``Structured``), looked at in this
order:

* a schema that is not an object (``true``, ``false``, junk) is Structured;
* ``$ref`` is Structured: references are never followed, so a ``$ref`` loop
  costs nothing;
* ``enum`` (and ``const``): all members strings -> Simple string, all
  booleans -> boolean, all integers -> integer, integers and floats ->
  number; ``null`` members are ignored; anything else is Structured;
* ``anyOf`` / ``oneOf`` / ``allOf``: branches whose ``type`` is ``"null"``
  are dropped (pydantic's ``Optional[X]``); one branch left is read as the
  parameter itself, more (or none) are Structured;
* ``type`` a string: a kind is Simple, ``"array"`` is ListOf when its
  ``items`` reads as Simple, anything else is Structured;
* ``type`` a list: ``"null"`` is dropped, one type left is read as above
  (``["string", "null"]`` -> Simple string), more are Structured;
* no ``type`` at all is Structured (the parameter accepts any JSON value).

Nullability is not kept: a required ``["string", "null"]`` parameter is typed
``str``, and the generated body sends whatever it is given, ``None``
included, as JSON ``null``. ``format``, ``default``, ``minimum`` and the like
are ignored: they narrow a value, they do not change its kind.

Depth: the reading looks at most ``MAX_LOOK`` levels into a parameter (one
combinator branch, then one ``items``), so untrusted nesting of any depth
costs a constant amount of work per parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Literal, Optional, Tuple, Union, cast

from .jsonvalue import JsonValue

__all__ = [
    "Kind", "KINDS", "Simple", "ListOf", "Structured", "ParamType", "Param",
    "Typed", "WholeValue", "Plan", "MAX_LOOK", "plan",
]

Kind = Literal["string", "integer", "number", "boolean"]
KINDS: Tuple[Kind, ...] = ("string", "integer", "number", "boolean")

#: How many levels below a property the reading ever looks.
MAX_LOOK = 3


@dataclass(frozen=True)
class Simple:
    """One value of a JSON Schema primitive kind."""

    kind: Kind


@dataclass(frozen=True)
class ListOf:
    """A JSON array whose items are all of one primitive kind."""

    kind: Kind


@dataclass(frozen=True)
class Structured:
    """Any other value, passed through untyped; ``reason`` says why it is untyped."""

    reason: str


ParamType = Union[Simple, ListOf, Structured]


@dataclass(frozen=True)
class Param:
    """One parameter: its wire ``name`` (verbatim), its type, and its description."""

    name: str
    type: ParamType
    optional: bool
    description: Optional[str]


@dataclass(frozen=True)
class Typed:
    """The top level is an object of named parameters, in the schema's order."""

    params: Tuple[Param, ...]


@dataclass(frozen=True)
class WholeValue:
    """The top level cannot be read as parameters; the tool takes one ``dict``."""

    reason: str


Plan = Union[Typed, WholeValue]

_NO_SCHEMA = Structured("required but has no property schema")
_TOP_COMBINATORS = ("$ref", "anyOf", "oneOf", "allOf", "not", "if")
_BRANCHES = ("anyOf", "oneOf", "allOf")


def plan(input_schema: JsonValue) -> Plan:
    """Read ``input_schema`` as parameters; total, see the module doc."""
    if type(input_schema) is not dict:
        return WholeValue("inputSchema is not an object")
    refusal = _top_level_refusal(input_schema)
    if refusal is not None:
        return WholeValue(refusal)
    # _top_level_refusal has checked both shapes.
    properties = cast(Dict[str, JsonValue], input_schema.get("properties", {}))
    required = cast(List[str], input_schema.get("required", []))
    return Typed(_params(properties, required))


def _top_level_refusal(schema: Dict[str, JsonValue]) -> Optional[str]:
    kind = schema.get("type", "object")
    if kind != "object":
        return "top-level type is %s, not object" % _show(kind)
    for key in _TOP_COMBINATORS:
        if key in schema:
            return "top level uses %s" % key
    if type(schema.get("properties", {})) is not dict:
        return "properties is not an object"
    if not _is_string_list(schema.get("required", [])):
        return "required is not a list of strings"
    if schema.get("additionalProperties", False) is not False:
        return "additionalProperties admits keys no parameter names"
    return None


def _params(properties: Dict[str, JsonValue], required: List[str]) -> Tuple[Param, ...]:
    wanted = set(required)
    params = [_param(name, schema, name not in wanted) for name, schema in properties.items()]
    for name in dict.fromkeys(required):  # dedupe, keeping the schema's order
        if name not in properties:
            params.append(Param(name, _NO_SCHEMA, False, None))
    return tuple(params)


def _param(name: str, schema: JsonValue, optional: bool) -> Param:
    description = schema.get("description") if type(schema) is dict else None
    text = description if type(description) is str else None
    return Param(name, _type(schema, 0), optional, text)


def _type(schema: JsonValue, depth: int) -> ParamType:
    """The tier of one parameter schema, looking at most ``MAX_LOOK`` levels in."""
    if depth >= MAX_LOOK:
        return Structured("nested too deep to type")
    if type(schema) is not dict:
        return Structured("schema is not an object")
    if "$ref" in schema:
        return Structured("$ref is not followed")
    if "enum" in schema or "const" in schema:
        return _enum_type(schema)
    for key in _BRANCHES:
        if key in schema:
            return _branch_type(key, schema[key], depth)
    return _declared_type(schema, depth)


def _enum_type(schema: Dict[str, JsonValue]) -> ParamType:
    members = schema["enum"] if "enum" in schema else [schema["const"]]
    if type(members) is not list:
        return Structured("enum is not a list")
    kinds = {_value_kind(member) for member in members if member is not None}
    if kinds == {"integer", "number"}:
        kinds = {"number"}  # 1 and 1.5 are both JSON numbers
    kind = kinds.pop() if len(kinds) == 1 else None
    if kind is None:
        return Structured("enum members are not all of one primitive kind")
    return Simple(kind)


def _value_kind(value: JsonValue) -> Optional[Kind]:
    kind = type(value)
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if kind is float:
        return "number"
    return "string" if kind is str else None


def _branch_type(key: str, branches: JsonValue, depth: int) -> ParamType:
    if type(branches) is not list:
        return Structured("%s is not a list" % key)
    kept = [branch for branch in branches if not _is_null_branch(branch)]
    if len(kept) != 1:
        return Structured("%s of %d alternatives" % (key, len(kept)))
    return _type(kept[0], depth + 1)


def _declared_type(schema: Dict[str, JsonValue], depth: int) -> ParamType:
    declared = schema.get("type")
    if type(declared) is list:
        others = [kind for kind in declared if kind != "null"]
        if len(others) != 1:
            return Structured("type is one of %d kinds" % len(others))
        declared = others[0]
    if declared == "array":
        return _array_type(schema.get("items"), depth)
    for kind in KINDS:
        if declared == kind:
            return Simple(kind)
    if declared is None:
        return Structured("no type given")
    return Structured("type %s" % _show(declared))


def _array_type(items: JsonValue, depth: int) -> ParamType:
    item = _type(items, depth + 1)
    if isinstance(item, Simple):
        return ListOf(item.kind)
    return Structured("array of values that are not one primitive kind")


def _is_null_branch(branch: JsonValue) -> bool:
    return type(branch) is dict and branch.get("type") == "null"


def _is_string_list(value: object) -> bool:
    return type(value) is list and all(type(entry) is str for entry in value)


def _show(value: object) -> str:
    # Reasons end up in generated comments (sanitized there); keep them short.
    return repr(value[:40]) if isinstance(value, str) else type(value).__name__
