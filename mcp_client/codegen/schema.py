"""The total readings of a raw ``inputSchema`` and of a raw ``outputSchema``.

Pure: no I/O, no threads, no clocks. Neither reading has an error case
(SEED.md, "Every decoder is total": what cannot be read is carried as data).
Both read values into one type language (inputs are typed like results):

* ``Simple(kind)``, ``kind`` one of ``"string"``, ``"integer"``, ``"number"``,
  ``"boolean"``;
* ``Array(item)``: a JSON array whose items are all ``item``;
* ``Record(fields, open)``: an object schema with ``properties``, each
  ``Field`` one key verbatim, in the schema's order (then the ``required``
  names with no property schema), ``optional`` when it is not ``required``;
  ``open`` when ``additionalProperties`` is present and not ``false``;
* ``Map(value)``: an object schema without ``properties``: any keys, each value
  ``value`` (its ``additionalProperties`` schema; ``Structured`` when that is
  absent or ``true``);
* ``Choice(members)``: ``enum`` or ``const`` whose members are strings,
  integers or booleans (``Literal[...]``), at most ``MAX_CHOICES`` of them,
  none longer than ``MAX_CHOICE_CHARS`` characters; a longer or other list
  falls back to its kind (all strings: ``Simple("string")``; integers and
  floats: ``"number"``) or ``Structured``;
* ``Union(branches)``: ``anyOf`` / ``oneOf`` of 2 to ``MAX_BRANCHES``
  readable branches, or a ``type`` list of several kinds;
* ``Nullable(inner)``: ``"null"`` in a type list, a null branch of a
  combinator, or a ``null`` enum member (``Optional[...]``);
* ``Structured(reason)``: anything else, passed through as ``Any``, with
  the reason it could not be read.

``plan(input_schema)`` gives ``Typed(params)`` or ``WholeValue(reason)``:

* the top level must be a JSON object whose ``type``, when present, is
  ``"object"`` (missing ``type`` is read as ``"object"``), with no
  ``$ref``, ``anyOf``, ``oneOf``, ``allOf``, ``not`` or ``if`` (a top-level
  ``$ref`` is followed for an ``outputSchema`` only);
* ``properties`` must be an object and ``required`` a list of strings;
* ``additionalProperties`` that is anything but absent or ``false`` gives
  ``WholeValue``: the object admits keys no parameter can name.

No parameter is ever dropped: every property becomes a ``Param`` in the
schema's own order, and a name listed in ``required`` with no property schema
becomes a ``Structured`` parameter after them. A ``Param`` keeps the
property's ``description`` and its ``default`` (``has_default`` tells an
absent default from ``null``).

``plan_output(output_schema)`` gives a ``Record`` or ``WholeValue(reason)``:
as for ``plan``, and the record must name at least one property.

Both follow local references (``#/$defs/<name>``, ``#/definitions/<name>``,
resolved in the top-level schema), because pydantic, and so every typed
fastmcp or ``mcp`` SDK tool, spells each nested model as one; any other
reference is ``Structured``. ``allOf`` of one non-null branch is that
branch; an intersection of several is ``Structured``. ``format``,
``minimum`` and the like are ignored: they narrow a value, not its type.

Bounds: a step (into a field, an array's items, a combinator branch, or
through a ``$ref``) costs one level and the reading stops at ``MAX_LOOK``
levels, so a ``$ref`` loop ends as ``Structured``. The fields of nested
records, summed over one schema, stop at ``MAX_NESTED_FIELDS``, and so do the
branches of its unions; past that a nested object is ``Structured``.
References can make a small schema describe an exponentially large type; the
budget keeps the work, and the generated source, linear in the schema's own
size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Literal, Optional, Sequence, Tuple, Union, cast

from ..jsonvalue import JsonValue

__all__ = [
    "Kind",
    "KINDS",
    "Simple",
    "Array",
    "Map",
    "Record",
    "Field",
    "Choice",
    "ChoiceValue",
    "AnyOf",
    "Nullable",
    "Structured",
    "ValueType",
    "ParamType",
    "ResultType",
    "Param",
    "Typed",
    "WholeValue",
    "Plan",
    "OutputPlan",
    "MAX_LOOK",
    "MAX_OUTPUT_LOOK",
    "MAX_NESTED_FIELDS",
    "MAX_CHOICES",
    "MAX_CHOICE_CHARS",
    "MAX_BRANCHES",
    "plan",
    "plan_output",
]

Kind = Literal["string", "integer", "number", "boolean"]
KINDS: Tuple[Kind, ...] = ("string", "integer", "number", "boolean")

#: How many steps below its top level a reading takes.
MAX_LOOK = 12
MAX_OUTPUT_LOOK = MAX_LOOK  # the name plan_output's bound had first
#: Fields of nested records (and branches of unions), summed over one schema, that are read.
MAX_NESTED_FIELDS = 256
#: Most members an enum may list to be read as a Choice.
MAX_CHOICES = 64
#: Longest member (characters of a string, digits of an integer) a Choice keeps.
MAX_CHOICE_CHARS = 120
#: Most branches (null ones aside) an anyOf / oneOf may have to be read as a Union.
MAX_BRANCHES = 4

#: What a Choice member can be: what ``typing.Literal`` admits of JSON.
ChoiceValue = Union[str, int, bool]


@dataclass(frozen=True)
class Simple:
    """One value of a JSON Schema primitive kind."""

    kind: Kind


@dataclass(frozen=True)
class Array:
    """A JSON array whose items are all of one type."""

    item: "ValueType"


@dataclass(frozen=True)
class Map:
    """A JSON object with keys of its own choosing, every value of one type."""

    value: "ValueType"


@dataclass(frozen=True)
class Choice:
    """One of a few constants (``enum`` / ``const``), in the schema's order, distinct."""

    members: Tuple[ChoiceValue, ...]


@dataclass(frozen=True)
class AnyOf:
    """One of 2 to ``MAX_BRANCHES`` types (``anyOf`` / ``oneOf``, or a type list)."""

    branches: Tuple["ValueType", ...]


@dataclass(frozen=True)
class Nullable:
    """``inner`` or ``null``; ``inner`` is never itself ``Nullable`` or ``Structured``."""

    inner: "ValueType"


@dataclass(frozen=True)
class Structured:
    """Any other value, passed through untyped; ``reason`` says why it is untyped."""

    reason: str


@dataclass(frozen=True)
class Field:
    """One key of an object: its wire ``name`` (verbatim), type and description."""

    name: str
    type: "ValueType"
    optional: bool  # not in ``required``: the key may be absent
    description: Optional[str]


@dataclass(frozen=True)
class Record:
    """A JSON object with named keys, in the schema's order."""

    fields: Tuple[Field, ...]
    open: bool  # additionalProperties admits keys no field names


ValueType = Union[Simple, Array, Map, Record, Choice, AnyOf, Nullable, Structured]
#: The type of one parameter, and of one result value: the same language.
ParamType = ValueType
ResultType = ValueType


@dataclass(frozen=True)
class Param:
    """One parameter: its wire ``name`` (verbatim), type, description and default."""

    name: str
    type: ValueType
    optional: bool
    description: Optional[str]
    default: JsonValue = None
    has_default: bool = False  # tells an absent default from a null one


@dataclass(frozen=True)
class Typed:
    """The top level is an object of named parameters, in the schema's order."""

    params: Tuple[Param, ...]


@dataclass(frozen=True)
class WholeValue:
    """The top level cannot be read as parameters; the tool takes one ``dict``."""

    reason: str


Plan = Union[Typed, WholeValue]
OutputPlan = Union[Record, WholeValue]

_NO_SCHEMA = Structured("required but has no property schema")
_TOO_DEEP = Structured("nested too deep to type")
_TOP_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "if")
_BRANCHES = ("anyOf", "oneOf", "allOf")
_DEF_PREFIXES = ("#/$defs/", "#/definitions/")
_CHOICE_INT_BOUND = 10**MAX_CHOICE_CHARS


def plan(input_schema: JsonValue) -> Plan:
    """Read ``input_schema`` as parameters; total, see the module doc."""
    if type(input_schema) is not dict:
        return WholeValue("inputSchema is not an object")
    if "$ref" in input_schema:
        # Not followed at the top, as before issue 19: a tool that took one dict
        # then still does, so its bare surface line never grows.
        return WholeValue("top level uses $ref")
    reader = _Reader(input_schema)
    top = reader.top()
    if isinstance(top, WholeValue):
        return top
    schema, depth = top
    if schema.get("additionalProperties", False) is not False:
        return WholeValue("additionalProperties admits keys no parameter names")
    return Typed(reader.params(schema, depth))


def plan_output(output_schema: JsonValue) -> OutputPlan:
    """Read ``output_schema`` as the shape of a result; total, see the module doc."""
    if type(output_schema) is not dict:
        return WholeValue("outputSchema is not an object")
    reader = _Reader(output_schema)
    top = reader.top()
    if isinstance(top, WholeValue):
        return top
    schema, depth = top
    if not schema.get("properties"):
        return WholeValue("an object that names no properties")
    return reader.record(schema, depth)


class _Reader:
    """One reading: the root (where references resolve) and the nested-field budget."""

    def __init__(self, root: Dict[str, JsonValue]) -> None:
        self.root = root
        self.budget = MAX_NESTED_FIELDS

    def top(self) -> Union[Tuple[Dict[str, JsonValue], int], WholeValue]:
        """The top-level object schema, its ``$ref`` chain followed, and the steps taken."""
        schema, depth = self.root, 0
        while "$ref" in schema:
            depth += 1
            target = self._resolve(schema["$ref"])
            if isinstance(target, Structured):
                return WholeValue("top level: " + target.reason)
            if type(target[0]) is not dict:
                return WholeValue("top level: $ref names a schema that is not an object")
            if depth > MAX_LOOK:
                return WholeValue("top level: a chain of $ref too long to follow")
            schema = target[0]
        refusal = _top_refusal(schema) or _object_refusal(schema)
        return WholeValue(refusal) if refusal is not None else (schema, depth)

    def params(self, schema: Dict[str, JsonValue], depth: int) -> Tuple[Param, ...]:
        return tuple(_param(field, raw) for field, raw in self._fields(schema, depth))

    def record(self, schema: Dict[str, JsonValue], depth: int) -> Record:
        fields = tuple(field for field, _ in self._fields(schema, depth))
        return Record(fields, schema.get("additionalProperties", False) is not False)

    def _fields(self, schema: Dict[str, JsonValue], depth: int) -> List[Tuple[Field, JsonValue]]:
        """Every key, with its raw schema: properties in order, then bare required names."""
        # _object_refusal has checked both shapes. (A string type: cast then
        # costs no typing subscription per call.)
        properties = cast("Dict[str, JsonValue]", schema.get("properties", {}))
        required = cast("List[str]", schema.get("required", []))
        wanted = set(required)
        fields = [
            (Field(name, self.type(raw, depth + 1), name not in wanted, _description(raw)), raw)
            for name, raw in properties.items()
        ]
        for name in dict.fromkeys(required):  # dedupe, keeping the schema's order
            if name not in properties:
                fields.append((Field(name, _NO_SCHEMA, False, None), None))
        return fields

    def type(self, schema: JsonValue, depth: int) -> ValueType:
        """The type of one value, ``depth`` steps below the top level."""
        if depth > MAX_LOOK:
            return _TOO_DEEP
        if type(schema) is not dict:
            return Structured("schema is not an object")
        if "$ref" in schema:
            target = self._resolve(schema["$ref"])
            return target if isinstance(target, Structured) else self.type(target[0], depth + 1)
        if "enum" in schema or "const" in schema:
            return _choice(schema)
        for key in _BRANCHES:
            if key in schema:
                return self._branches(key, schema[key], depth)
        return self._declared(schema, depth)

    def _resolve(self, ref: JsonValue) -> Union[Tuple[JsonValue], Structured]:
        """The definition ``ref`` names in the root, in a 1-tuple, or why not."""
        if type(ref) is not str:
            return Structured("$ref is not a string")
        for prefix in _DEF_PREFIXES:
            name = ref[len(prefix) :]
            if ref.startswith(prefix) and name and "/" not in name and "~" not in name:
                definitions = self.root.get(prefix[2:-1])
                if type(definitions) is dict and name in definitions:
                    return (definitions[name],)
                return Structured("$ref %s names no definition" % _show(ref))
        return Structured("$ref %s is not followed" % _show(ref))

    def _branches(self, key: str, branches: JsonValue, depth: int) -> ValueType:
        if type(branches) is not list:
            return Structured("%s is not a list" % key)
        kept = [branch for branch in branches if not _is_null_branch(branch)]
        null = len(kept) < len(branches)
        if len(kept) == 1:
            return _nullable(self.type(kept[0], depth + 1), null)
        if key == "allOf" or not 2 <= len(kept) <= MAX_BRANCHES:
            return Structured("%s of %d alternatives" % (key, len(kept)))
        return _nullable(self._union([self.type(b, depth + 1) for b in kept], key), null)

    def _union(self, types: List[ValueType], what: str) -> ValueType:
        if len(types) > self.budget:
            return Structured("past %d fields of nested objects" % MAX_NESTED_FIELDS)
        self.budget -= len(types)
        return _union(types, what)

    def _declared(self, schema: Dict[str, JsonValue], depth: int) -> ValueType:
        declared = schema.get("type")
        if declared is None and "properties" in schema:
            declared = "object"  # an object schema that forgot its type
        if type(declared) is not list:
            return self._kind(declared, schema, depth)
        kinds: List[JsonValue] = []
        for kind in declared:  # dedupe by hand: a member may be a list (unhashable)
            if kind != "null" and kind not in kinds:
                kinds.append(kind)
            if len(kinds) > MAX_BRANCHES:  # Structured already; stay linear
                break
        null = "null" in declared
        if len(kinds) == 1:
            return _nullable(self._kind(kinds[0], schema, depth), null)
        if not 2 <= len(kinds) <= MAX_BRANCHES:
            return Structured("type is one of %d kinds" % len(kinds))
        return _nullable(self._union([self._kind(k, schema, depth) for k in kinds], "type"), null)

    def _kind(self, declared: JsonValue, schema: Dict[str, JsonValue], depth: int) -> ValueType:
        if declared == "array":
            return Array(self.type(schema.get("items"), depth + 1))
        if declared == "object":
            return self._nested(schema, depth)
        return _simple(declared)

    def _nested(self, schema: Dict[str, JsonValue], depth: int) -> ValueType:
        refusal = _object_refusal(schema)
        if refusal is not None:
            return Structured(refusal)
        if not schema.get("properties"):
            return self._map(schema.get("additionalProperties", True), depth)
        # Charged before reading, so that no reading ever overshoots the budget.
        size = len(cast("Dict[str, JsonValue]", schema.get("properties", {})))
        size += len(cast("List[str]", schema.get("required", [])))
        if size > self.budget:
            return Structured("past %d fields of nested objects" % MAX_NESTED_FIELDS)
        self.budget -= size
        return self.record(schema, depth)

    def _map(self, extra: JsonValue, depth: int) -> ValueType:
        """An object that names no keys: a map of what ``additionalProperties`` says."""
        if extra is False:
            return Structured("an object that admits no key")
        if type(extra) is dict:
            return Map(self.type(extra, depth + 1))
        return Map(Structured("an object that names no properties"))


def _param(field: Field, raw: JsonValue) -> Param:
    has_default = type(raw) is dict and "default" in raw
    default = raw["default"] if has_default and type(raw) is dict else None
    return Param(field.name, field.type, field.optional, field.description, default, has_default)


def _description(schema: JsonValue) -> Optional[str]:
    description = schema.get("description") if type(schema) is dict else None
    return description if type(description) is str else None


def _choice(schema: Dict[str, JsonValue]) -> ValueType:
    members = schema["enum"] if "enum" in schema else [schema["const"]]
    if type(members) is not list:
        return Structured("enum is not a list")
    values = [member for member in members if member is not None]
    null = len(values) < len(members)
    if not values:
        return Structured("enum lists no member but null" if null else "enum lists no member")
    if len(values) <= MAX_CHOICES and all(_is_choice_value(value) for value in values):
        # Keyed by type too: 1 == True, and both may be members.
        distinct = {(type(value), value): value for value in values}
        return _nullable(Choice(tuple(cast("List[ChoiceValue]", list(distinct.values())))), null)
    return _nullable(_enum_kind(values), null)


def _is_choice_value(value: JsonValue) -> bool:
    if type(value) is str:
        return len(value) <= MAX_CHOICE_CHARS
    if type(value) is int:  # a long integer is a long literal
        return bool(-_CHOICE_INT_BOUND < value < _CHOICE_INT_BOUND)
    return type(value) is bool


def _enum_kind(values: Sequence[JsonValue]) -> Union[Simple, Structured]:
    """The one kind of an enum that is not a Choice, or why it has none."""
    kinds = {_value_kind(value) for value in values}
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


def _union(types: List[ValueType], what: str) -> ValueType:
    """The union of ``types``: flat, distinct, ``Any`` if any one is, null outermost."""
    branches: List[ValueType] = []
    null = False
    for kind in types:
        if isinstance(kind, Structured):
            return Structured("%s with an untyped branch: %s" % (what, kind.reason))
        if isinstance(kind, Nullable):
            null, kind = True, kind.inner
        for branch in kind.branches if isinstance(kind, AnyOf) else (kind,):
            if branch not in branches:
                branches.append(branch)
    one = branches[0] if len(branches) == 1 else AnyOf(tuple(branches))
    return _nullable(one, null)


def _simple(declared: JsonValue) -> Union[Simple, Structured]:
    """A declared ``type`` that is one simple kind, or why it is not one."""
    for kind in KINDS:
        if declared == kind:
            return Simple(kind)
    if declared is None:
        return Structured("no type given")
    return Structured("type %s" % _show(declared))


def _is_null_branch(branch: JsonValue) -> bool:
    return type(branch) is dict and branch.get("type") == "null"


def _is_string_list(value: object) -> bool:
    return type(value) is list and all(type(entry) is str for entry in value)


def _show(value: object) -> str:
    # Reasons end up in generated comments (sanitized there); keep them short.
    return repr(value[:40]) if isinstance(value, str) else type(value).__name__


def _top_refusal(schema: Dict[str, JsonValue]) -> Optional[str]:
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
    if type(schema.get("properties", {})) is not dict:
        return "properties is not an object"
    if not _is_string_list(schema.get("required", [])):
        return "required is not a list of strings"
    return None


def _nullable(inner: ValueType, null: bool) -> ValueType:
    # Any already admits null; one Nullable is enough.
    if not null or isinstance(inner, (Structured, Nullable)):
        return inner
    return Nullable(inner)
