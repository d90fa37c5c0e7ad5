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

``plan_output(output_schema)`` reads a tool's ``outputSchema`` (MCP
2025-06-18: the shape of its ``structuredContent``) the same way, total and
with no key ever dropped, as a ``Record`` or ``WholeValue(reason)``:

* the top level must be an object schema of type ``"object"`` (or no
  ``type``) with at least one property, no combinator, a ``properties``
  object and a ``required`` list of strings; a top-level ``$ref`` is followed;
* each ``Field`` is one key, verbatim, in the schema's order (then the
  ``required`` names with no property schema, typed ``Structured``), with
  ``optional`` when it is not ``required`` (the key may be absent);
* a field's type is ``Simple(kind)``, ``Array(item)``, a nested ``Record``
  (an object schema with properties), ``Nullable(inner)`` (``"null"`` in a
  type list, a null combinator branch or a ``null`` enum member), or
  ``Structured(reason)`` for anything else. Nullability is kept here, unlike
  for parameters: a program reading the value must know it can be ``None``;
* a ``Record`` is ``open`` when ``additionalProperties`` is present and not
  ``false``: other keys may appear beside the ones it names;
* local references (``#/$defs/<name>``, ``#/definitions/<name>``, resolved in
  the top-level schema) are followed, because pydantic, and so every typed
  fastmcp or ``mcp`` SDK tool, spells each nested model as one; any other
  reference is ``Structured``.

Bounds: a step (into a field, an array's items, a combinator branch, or
through a ``$ref``) costs one level and the reading stops at
``MAX_OUTPUT_LOOK`` levels, so a ``$ref`` loop ends as ``Structured``. The
fields of nested records, summed over one schema, stop at
``MAX_NESTED_FIELDS``; a nested object past that is ``Structured``. References
can make a small schema describe an exponentially large type; the budget keeps
the work, and the generated source, linear in the schema's own size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Literal, Optional, Tuple, Union, cast

from .jsonvalue import JsonValue

__all__ = [
    "Kind", "KINDS", "Simple", "ListOf", "Structured", "ParamType", "Param",
    "Typed", "WholeValue", "Plan", "MAX_LOOK", "plan",
    "Array", "Nullable", "Field", "Record", "ResultType", "OutputPlan", "MAX_OUTPUT_LOOK",
    "MAX_NESTED_FIELDS", "plan_output",
]

Kind = Literal["string", "integer", "number", "boolean"]
KINDS: Tuple[Kind, ...] = ("string", "integer", "number", "boolean")

#: How many levels below a property the reading ever looks.
MAX_LOOK = 3
#: How many steps below its top level the reading of an outputSchema takes.
MAX_OUTPUT_LOOK = 12
#: Fields of nested records, summed over one outputSchema, that are read.
MAX_NESTED_FIELDS = 256


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
    refusal = _top_output_refusal(schema)
    if refusal is not None:
        return refusal
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


def _enum_type(schema: Dict[str, JsonValue]) -> Union[Simple, Structured]:
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
    return _simple(declared)


def _simple(declared: JsonValue) -> "Union[Simple, Structured]":
    """A declared ``type`` that is one simple kind, or why it is not one."""
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


# ----------------------------------------------------------------------------- outputSchema


@dataclass(frozen=True)
class Array:
    """A JSON array whose items are all of one type."""

    item: "ResultType"


@dataclass(frozen=True)
class Nullable:
    """``inner`` or ``null``; ``inner`` is never itself ``Nullable`` or ``Structured``."""

    inner: "ResultType"


@dataclass(frozen=True)
class Field:
    """One key of a result object: its wire ``name`` (verbatim), type and description."""

    name: str
    type: "ResultType"
    optional: bool  # not in ``required``: the key may be absent
    description: Optional[str]


@dataclass(frozen=True)
class Record:
    """A JSON object with named keys, in the schema's order; never without a field."""

    fields: Tuple[Field, ...]
    open: bool  # additionalProperties admits keys no field names


ResultType = Union[Simple, Array, Record, Nullable, Structured]
OutputPlan = Union[Record, WholeValue]

_DEF_PREFIXES = ("#/$defs/", "#/definitions/")
_TOO_DEEP = Structured("nested too deep to type")


def plan_output(output_schema: JsonValue) -> OutputPlan:
    """Read ``output_schema`` as the shape of a result; total, see the module doc."""
    if type(output_schema) is not dict:
        return WholeValue("outputSchema is not an object")
    return _OutputReader(output_schema).top()


class _OutputReader:
    """One reading: the root (where references resolve) and the nested-field budget."""

    def __init__(self, root: Dict[str, JsonValue]) -> None:
        self.root = root
        self.budget = MAX_NESTED_FIELDS

    def top(self) -> OutputPlan:
        followed = self._through_refs()
        if isinstance(followed, WholeValue):
            return followed
        schema, depth = followed
        refusal = _top_output_refusal(schema) or _object_refusal(schema)
        if refusal is not None:
            return WholeValue(refusal)
        return self._record(schema, depth)

    def _through_refs(self) -> Union[Tuple[Dict[str, JsonValue], int], WholeValue]:
        """The top level with its ``$ref`` chain followed, and the steps it took."""
        schema, depth = self.root, 0
        while "$ref" in schema:
            depth += 1
            target = self._resolve(schema["$ref"])
            if isinstance(target, Structured):
                return WholeValue("top level: " + target.reason)
            if type(target[0]) is not dict:
                return WholeValue("top level: $ref names a schema that is not an object")
            if depth > MAX_OUTPUT_LOOK:
                return WholeValue("top level: a chain of $ref too long to follow")
            schema = target[0]
        return schema, depth

    def _record(self, schema: Dict[str, JsonValue], depth: int) -> Record:
        # _object_refusal has checked both shapes. (A string type: cast then
        # costs no typing subscription per call.)
        properties = cast("Dict[str, JsonValue]", schema.get("properties", {}))
        required = cast("List[str]", schema.get("required", []))
        wanted = set(required)
        fields = [self._field(name, property_schema, name not in wanted, depth)
                  for name, property_schema in properties.items()]
        for name in dict.fromkeys(required):  # dedupe, keeping the schema's order
            if name not in properties:
                fields.append(Field(name, _NO_SCHEMA, False, None))
        return Record(tuple(fields), schema.get("additionalProperties", False) is not False)

    def _field(self, name: str, schema: JsonValue, optional: bool, depth: int) -> Field:
        description = schema.get("description") if type(schema) is dict else None
        text = description if type(description) is str else None
        return Field(name, self._type(schema, depth + 1), optional, text)

    def _type(self, schema: JsonValue, depth: int) -> ResultType:
        """The type of one value, ``depth`` steps below the top level."""
        if depth > MAX_OUTPUT_LOOK:
            return _TOO_DEEP
        if type(schema) is not dict:
            return Structured("schema is not an object")
        if "$ref" in schema:
            target = self._resolve(schema["$ref"])
            return target if isinstance(target, Structured) else self._type(target[0], depth + 1)
        if "enum" in schema or "const" in schema:
            return _nullable(_enum_type(schema), _has_null_member(schema))
        for key in _BRANCHES:
            if key in schema:
                return self._branch(key, schema[key], depth)
        return self._declared(schema, depth)

    def _resolve(self, ref: JsonValue) -> Union[Tuple[JsonValue], Structured]:
        """The definition ``ref`` names in the root, in a 1-tuple, or why not."""
        if type(ref) is not str:
            return Structured("$ref is not a string")
        for prefix in _DEF_PREFIXES:
            name = ref[len(prefix):]
            if ref.startswith(prefix) and name and "/" not in name and "~" not in name:
                definitions = self.root.get(prefix[2:-1])
                if type(definitions) is dict and name in definitions:
                    return (definitions[name],)
                return Structured("$ref %s names no definition" % _show(ref))
        return Structured("$ref %s is not followed" % _show(ref))

    def _branch(self, key: str, branches: JsonValue, depth: int) -> ResultType:
        if type(branches) is not list:
            return Structured("%s is not a list" % key)
        kept = [branch for branch in branches if not _is_null_branch(branch)]
        if len(kept) != 1:
            return Structured("%s of %d alternatives" % (key, len(kept)))
        return _nullable(self._type(kept[0], depth + 1), len(kept) < len(branches))

    def _declared(self, schema: Dict[str, JsonValue], depth: int) -> ResultType:
        declared = schema.get("type")
        null = False
        if type(declared) is list:
            others = [kind for kind in declared if kind != "null"]
            if len(others) != 1:
                return Structured("type is one of %d kinds" % len(others))
            null, declared = len(others) < len(declared), others[0]
        if declared is None and "properties" in schema:
            declared = "object"  # an object schema that forgot its type
        return _nullable(self._kind(declared, schema, depth), null)

    def _kind(self, declared: JsonValue, schema: Dict[str, JsonValue], depth: int) -> ResultType:
        if declared == "array":
            return Array(self._type(schema.get("items"), depth + 1))
        if declared == "object":
            return self._nested(schema, depth)
        return _simple(declared)

    def _nested(self, schema: Dict[str, JsonValue], depth: int) -> ResultType:
        refusal = _object_refusal(schema)
        if refusal is not None:
            return Structured(refusal)
        # Charged before reading, so that no reading ever overshoots the budget.
        size = len(cast("Dict[str, JsonValue]", schema["properties"]))
        size += len(cast("List[str]", schema.get("required", [])))
        if size > self.budget:
            return Structured("past %d fields of nested objects" % MAX_NESTED_FIELDS)
        self.budget -= size
        return self._record(schema, depth)


def _top_output_refusal(schema: Dict[str, JsonValue]) -> Optional[str]:
    """Why a root schema (input or output) is not a plain object, if it is not."""
    kind = schema.get("type", "object")
    if kind != "object":
        return "top-level type is %s, not object" % _show(kind)
    for key in _TOP_COMBINATORS:
        if key in schema:
            return "top level uses %s" % key
    return None


def _object_refusal(schema: Dict[str, JsonValue]) -> Optional[str]:
    """Why an object schema does not read as named keys, if it does not."""
    properties = schema.get("properties", {})
    if type(properties) is not dict:
        return "properties is not an object"
    if not _is_string_list(schema.get("required", [])):
        return "required is not a list of strings"
    if not properties:
        return "an object that names no properties"
    return None


def _has_null_member(schema: Dict[str, JsonValue]) -> bool:
    members = schema["enum"] if "enum" in schema else [schema["const"]]
    return type(members) is list and None in members


def _nullable(inner: ResultType, null: bool) -> ResultType:
    # Any already admits null; one Nullable is enough.
    if not null or isinstance(inner, (Structured, Nullable)):
        return inner
    return Nullable(inner)
