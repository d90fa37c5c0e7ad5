"""mcp_client.schema: the total readings of an inputSchema and of an outputSchema."""

from __future__ import annotations

import json
import unittest
from pathlib import Path
from typing import Any, Dict, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_client.codegen.schema import (
    KINDS,
    MAX_BRANCHES,
    MAX_CHOICES,
    MAX_NESTED_FIELDS,
    MAX_OUTPUT_LOOK,
    AnyOf,
    Array,
    Choice,
    Field,
    Map,
    Nullable,
    Param,
    ParamType,
    Record,
    ResultType,
    Simple,
    Structured,
    Typed,
    WholeValue,
    plan,
    plan_output,
)
from mcp_client.jsonvalue import JsonValue

from strategies import examples

NULL = {"type": "null"}
GOLDEN = Path(__file__).with_name("golden")
TIME_TOOLS = json.loads((GOLDEN / "time.tools.json").read_text("utf-8"))["tools"]


def one(schema: JsonValue) -> ParamType:
    """The type ``plan`` gives a single optional property ``p`` with ``schema``."""
    result = plan({"type": "object", "properties": {"p": schema}})
    assert isinstance(result, Typed), result
    return result.params[0].type


def nested(key: str, depth: int, leaf: JsonValue) -> JsonValue:
    """``depth`` levels of ``{key: [...]}`` (arrays of arrays for items), built iteratively."""
    schema = leaf
    for _ in range(depth):
        schema = {"type": "array", "items": schema} if key == "items" else {key: [schema]}
    return schema


class TopLevel(unittest.TestCase):
    def test_not_an_object_is_whole_value(self) -> None:
        for schema in ([], "object", None, 3, True, [{"type": "object"}]):
            self.assertEqual(plan(schema), WholeValue("inputSchema is not an object"))

    def test_type_other_than_object_is_whole_value(self) -> None:
        for kind in ("array", "string", ["object", "null"], None):
            self.assertIsInstance(plan({"type": kind, "properties": {}}), WholeValue)

    def test_top_level_combinators_and_refs_are_whole_value(self) -> None:
        for key in ("$ref", "anyOf", "oneOf", "allOf", "not", "if"):
            result = plan({"type": "object", key: [{"type": "object"}]})
            self.assertEqual(result, WholeValue("top level uses " + key))

    def test_malformed_properties_or_required_are_whole_value(self) -> None:
        self.assertIsInstance(plan({"type": "object", "properties": []}), WholeValue)
        self.assertIsInstance(plan({"type": "object", "required": "p"}), WholeValue)
        self.assertIsInstance(plan({"type": "object", "required": ["p", 1]}), WholeValue)

    def test_open_additional_properties_is_whole_value(self) -> None:
        for extra in (True, {}, {"type": "string"}):
            result = plan(
                {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": extra,
                }
            )
            self.assertIsInstance(result, WholeValue)

    def test_closed_or_absent_additional_properties_is_typed(self) -> None:
        closed = plan({"type": "object", "properties": {}, "additionalProperties": False})
        self.assertEqual(closed, Typed(()))
        self.assertEqual(plan({"type": "object"}), Typed(()))

    def test_missing_type_reads_as_object(self) -> None:
        result = plan({"properties": {"a": {"type": "string"}}, "required": ["a"]})
        self.assertEqual(result, Typed((Param("a", Simple("string"), False, None),)))

    def test_git_status_schema(self) -> None:
        schema = {
            "properties": {
                "repo_path": {"title": "Repo Path", "type": "string"},
                "context_lines": {"default": 3, "title": "Context Lines", "type": "integer"},
            },
            "required": ["repo_path"],
            "type": "object",
            "title": "diffArguments",
        }
        self.assertEqual(
            plan(schema),
            Typed(
                (
                    Param("repo_path", Simple("string"), False, None),
                    Param("context_lines", Simple("integer"), True, None, 3, True),
                )
            ),
        )


class NoParameterDropped(unittest.TestCase):
    def test_required_without_property_schema_becomes_structured(self) -> None:
        result = plan(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": ["ghost", "a", "ghost"],
            }
        )
        assert isinstance(result, Typed)
        self.assertEqual([p.name for p in result.params], ["a", "ghost"])
        ghost = result.params[1]
        self.assertFalse(ghost.optional)
        self.assertIsInstance(ghost.type, Structured)

    def test_thousand_properties_keep_their_order(self) -> None:
        names = ["p%04d" % index for index in range(1000)][::-1]
        result = plan({"type": "object", "properties": {n: {"type": "integer"} for n in names}})
        assert isinstance(result, Typed)
        self.assertEqual([p.name for p in result.params], names)

    def test_description_is_kept_only_when_a_string(self) -> None:
        result = plan(
            {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "description": "the a"},
                    "b": {"type": "string", "description": 7},
                },
            }
        )
        assert isinstance(result, Typed)
        self.assertEqual([p.description for p in result.params], ["the a", None])


class ParamTypes(unittest.TestCase):
    def test_primitive_kinds(self) -> None:
        for kind in KINDS:
            self.assertEqual(one({"type": kind}), Simple(kind))

    def test_arrays(self) -> None:
        self.assertEqual(
            one({"type": "array", "items": {"type": "string"}}), Array(Simple("string"))
        )
        self.assertEqual(
            one({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}),
            Array(Array(Simple("integer"))),
        )
        for items in (None, [{"type": "string"}], {"$ref": "#/$defs/Label"}):
            schema: Dict[str, Any] = {"type": "array"}
            if items is not None:
                schema["items"] = items
            kind = one(schema)
            assert isinstance(kind, Array), kind
            self.assertIsInstance(kind.item, Structured, items)

    def test_arrays_of_objects_are_records(self) -> None:
        # The filesystem server's edit_file: the model must see oldText/newText.
        edits = {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {"type": "string", "description": "Text to search for"},
                    "newText": {"type": "string"},
                    "note": {"type": "string"},
                },
                "required": ["oldText", "newText"],
                "additionalProperties": False,
            },
        }
        self.assertEqual(
            one(edits),
            Array(
                Record(
                    (
                        Field("oldText", STRING, False, "Text to search for"),
                        Field("newText", STRING, False, None),
                        Field("note", STRING, True, None),
                    ),
                    False,
                )
            ),
        )

    def test_nullability_is_kept(self) -> None:
        self.assertEqual(one({"type": ["string", "null"]}), Nullable(Simple("string")))
        self.assertEqual(one({"type": ["null", "boolean"]}), Nullable(Simple("boolean")))
        self.assertEqual(
            one({"type": ["array", "null"], "items": {"type": "number"}}),
            Nullable(Array(Simple("number"))),
        )

    def test_type_lists_of_several_kinds_are_unions(self) -> None:
        self.assertEqual(
            one({"type": ["string", "integer"]}), AnyOf((Simple("string"), Simple("integer")))
        )
        self.assertEqual(
            one({"type": ["string", "integer", "null"]}),
            Nullable(AnyOf((Simple("string"), Simple("integer")))),
        )
        for kinds in (["null"], [], [1, 2], ["string", "integer", "number", "boolean", "array"]):
            self.assertIsInstance(one({"type": kinds}), Structured, kinds)

    def test_enums_are_choices(self) -> None:
        self.assertEqual(
            one({"type": "string", "enum": ["name", "size"]}), Choice(("name", "size"))
        )
        self.assertEqual(
            one({"enum": ["a", None], "type": ["string", "null"]}), Nullable(Choice(("a",)))
        )
        self.assertEqual(one({"enum": [1, 2, 1]}), Choice((1, 2)))
        self.assertEqual(one({"enum": [True, 1, "a"]}), Choice((True, 1, "a")))
        self.assertEqual(one({"const": "fixed"}), Choice(("fixed",)))

    def test_enums_that_are_not_choices_keep_their_kind(self) -> None:
        self.assertEqual(one({"enum": [1, 2.5]}), Simple("number"))
        self.assertEqual(one({"enum": ["x" * 121, "y"]}), Simple("string"))
        self.assertEqual(one({"enum": ["m%d" % n for n in range(65)]}), Simple("string"))
        self.assertEqual(one({"enum": [10**130]}), Simple("integer"))
        for members in ([], [None], [{"a": 1}], [[1]], "a", [1.5, "a"]):
            self.assertIsInstance(one({"enum": members}), Structured, members)

    def test_any_of_with_null_is_the_other_branch_nullable(self) -> None:
        # pydantic's Optional[X]
        self.assertEqual(
            one({"anyOf": [{"type": "string"}, NULL], "default": None}), Nullable(Simple("string"))
        )
        self.assertEqual(
            one({"anyOf": [{"items": {"type": "string"}, "type": "array"}, NULL]}),
            Nullable(Array(Simple("string"))),
        )
        self.assertEqual(one({"allOf": [{"type": "integer"}]}), Simple("integer"))
        self.assertEqual(
            one({"oneOf": [{"enum": ["open", "closed"]}, NULL]}),
            Nullable(Choice(("open", "closed"))),
        )

    def test_a_few_readable_branches_are_a_union(self) -> None:
        self.assertEqual(
            one({"anyOf": [{"type": "integer"}, {"type": "string"}, NULL]}),
            Nullable(AnyOf((Simple("integer"), Simple("string")))),
        )
        self.assertEqual(
            one({"oneOf": [{"type": "integer"}, {"type": "integer"}]}), Simple("integer")
        )
        self.assertEqual(
            one(
                {
                    "anyOf": [
                        {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                        {"type": "integer"},
                    ]
                }
            ),
            AnyOf((Simple("string"), Simple("boolean"), Simple("integer"))),
        )

    def test_other_combinators_are_structured(self) -> None:
        five = [{"type": kind} for kind in ("string", "integer", "boolean", "number")]
        five.append({"type": "array", "items": {}})
        for schema in (
            {"oneOf": [NULL]},
            {"anyOf": {"type": "string"}},
            {"allOf": [{"type": "string"}, {"minLength": 1}]},
            {"anyOf": five},
            {"anyOf": [{"type": "string"}, {}]},
        ):
            self.assertIsInstance(one(schema), Structured, schema)

    def test_local_refs_are_followed(self) -> None:
        schema = {
            "type": "object",
            "$defs": {"Priority": {"enum": ["low", "high"]}},
            "properties": {"p": {"$ref": "#/$defs/Priority"}},
        }
        result = plan(schema)
        assert isinstance(result, Typed)
        self.assertEqual(result.params[0].type, Choice(("low", "high")))
        self.assertIsInstance(one({"$ref": "#/$defs/Missing"}), Structured)
        self.assertIsInstance(one({"$ref": "http://x/y", "type": "string"}), Structured)

    def test_untyped_and_unknown_are_structured(self) -> None:
        for schema in ({}, {"type": "frobnicate"}, {"type": 7}, True, False, None, "string", 3):
            self.assertIsInstance(one(schema), Structured, schema)
        # An object that names no keys is a map of anything: a dict, not any value.
        self.assertEqual(
            one({"type": "object"}), Map(Structured("an object that names no properties"))
        )

    def test_narrowing_keywords_are_ignored_and_the_default_kept(self) -> None:
        schema = {"type": "string", "format": "date-time", "minLength": 3, "default": "x"}
        self.assertEqual(one(schema), Simple("string"))
        result = plan({"type": "object", "properties": {"p": schema, "q": {"default": None}}})
        assert isinstance(result, Typed)
        self.assertEqual(
            [(p.default, p.has_default) for p in result.params], [("x", True), (None, True)]
        )
        self.assertFalse(plan_one({"type": "string"}).has_default)


def plan_one(schema: JsonValue) -> Param:
    result = plan({"type": "object", "properties": {"p": schema}})
    assert isinstance(result, Typed), result
    return result.params[0]


class HostileSchema(unittest.TestCase):
    def test_ref_loop_in_defs_ends_at_the_bound(self) -> None:
        loop = {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}
        schema = {
            "type": "object",
            "$defs": loop,
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "required": ["a"],
        }
        self.assertEqual(
            plan(schema), Typed((Param("a", Structured("nested too deep to type"), False, None),))
        )

    def test_self_reference_at_top_is_whole_value(self) -> None:
        self.assertEqual(plan({"$ref": "#"}), WholeValue("top level uses $ref"))

    def test_deep_nesting_is_bounded(self) -> None:
        # Far past the recursion limit: plan must only ever look a bounded depth in.
        for key in ("anyOf", "items", "oneOf"):
            leaf = {"type": "string"}
            kind = one(nested(key, 20000, leaf))
            while isinstance(kind, Array):
                kind = kind.item
            self.assertIsInstance(kind, Structured, key)

    def test_shallow_nesting_still_types(self) -> None:
        self.assertEqual(one(nested("anyOf", 2, {"type": "string"})), Simple("string"))
        self.assertEqual(
            one({"type": "array", "items": nested("anyOf", 1, {"type": "string"})}),
            Array(Simple("string")),
        )

    def test_references_cannot_multiply_the_work_of_inputs(self) -> None:
        # Each level names the one below twice: 2**30 leaves, unless bounded.
        defs = {
            "L%d" % n: {
                "type": "object",
                "properties": {
                    "a": {"$ref": "#/$defs/L%d" % (n + 1)},
                    "b": {"$ref": "#/$defs/L%d" % (n + 1)},
                },
            }
            for n in range(30)
        }
        schema = {"type": "object", "$defs": defs, "properties": {"p": {"$ref": "#/$defs/L0"}}}
        self.assertIsInstance(plan(schema), Typed)
        self.assertLessEqual(str(plan(schema)).count("Field("), MAX_NESTED_FIELDS)


def output(schema: JsonValue) -> Record:
    result = plan_output(schema)
    assert isinstance(result, Record), result
    return result


def field(schema: JsonValue) -> ResultType:
    """The type ``plan_output`` gives a single optional key ``k`` with ``schema``."""
    return output({"type": "object", "properties": {"k": schema}}).fields[0].type


def required(*fields: Field) -> Record:
    return Record(fields, False)


STRING, BOOLEAN = Simple("string"), Simple("boolean")
# mcp-server-time's TimeResult (tests/golden/time.tools.json), all keys required.
TIME_RESULT = Record(
    tuple(
        Field(name, BOOLEAN if name == "is_dst" else STRING, False, None)
        for name in ("timezone", "datetime", "day_of_week", "is_dst")
    ),
    False,
)


class OutputTopLevel(unittest.TestCase):
    def test_the_real_time_server(self) -> None:
        tools = {tool["name"]: tool["outputSchema"] for tool in TIME_TOOLS}
        self.assertEqual(plan_output(tools["get_current_time"]), TIME_RESULT)
        # source and target are $refs into $defs, followed.
        self.assertEqual(
            plan_output(tools["convert_time"]),
            required(
                Field("source", TIME_RESULT, False, None),
                Field("target", TIME_RESULT, False, None),
                Field("time_difference", STRING, False, None),
            ),
        )

    def test_not_an_object_is_whole_value(self) -> None:
        for schema in ([], "object", None, 3, True, [{"type": "object"}]):
            self.assertEqual(plan_output(schema), WholeValue("outputSchema is not an object"))

    def test_type_other_than_object_is_whole_value(self) -> None:
        for kind in ("array", "string", ["object", "null"], None):
            result = plan_output({"type": kind, "properties": {"a": {"type": "string"}}})
            self.assertIsInstance(result, WholeValue, kind)

    def test_missing_type_reads_as_object(self) -> None:
        self.assertEqual(
            plan_output({"properties": {"a": {"type": "string"}}}),
            Record((Field("a", STRING, True, None),), False),
        )

    def test_combinators_are_whole_value(self) -> None:
        for key in ("anyOf", "oneOf", "allOf", "not", "if"):
            result = plan_output(
                {
                    "type": "object",
                    key: [{"type": "object"}],
                    "properties": {"a": {"type": "string"}},
                }
            )
            self.assertEqual(result, WholeValue("top level uses " + key))

    def test_malformed_or_empty_objects_are_whole_value(self) -> None:
        cases = {
            "properties is not an object": {"type": "object", "properties": []},
            "required is not a list of strings": {
                "type": "object",
                "required": [1],
                "properties": {"a": {}},
            },
            "an object that names no properties": {"type": "object", "required": ["a"]},
        }
        for reason, schema in cases.items():
            self.assertEqual(plan_output(schema), WholeValue(reason))
        # Only named keys make a type: a map of anything is left whole.
        self.assertIsInstance(
            plan_output({"type": "object", "additionalProperties": {}}), WholeValue
        )

    def test_additional_properties_make_an_open_record(self) -> None:
        for extra, open_ in ((True, True), ({"type": "integer"}, True), (False, False)):
            result = output(
                {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": extra,
                }
            )
            self.assertEqual(result.open, open_, extra)

    def test_top_level_refs_are_followed(self) -> None:
        schema = {
            "$ref": "#/definitions/Time",
            "definitions": {
                "Time": {
                    "type": "object",
                    "properties": {"at": {"type": "string"}},
                    "required": ["at"],
                }
            },
        }
        self.assertEqual(plan_output(schema), required(Field("at", STRING, False, None)))

    def test_top_level_refs_that_cannot_be_followed(self) -> None:
        cases = {
            "top level: $ref '#' is not followed": {"$ref": "#"},
            "top level: $ref 'other.json#/A' is not followed": {"$ref": "other.json#/A"},
            "top level: $ref '#/$defs/B' names no definition": {
                "$ref": "#/$defs/B",
                "$defs": {"A": {}},
            },
            "top level: $ref is not a string": {"$ref": 7},
            "top level: $ref names a schema that is not an object": {
                "$ref": "#/$defs/A",
                "$defs": {"A": "text"},
            },
            "top level: a chain of $ref too long to follow": {
                "$ref": "#/$defs/A",
                "$defs": {"A": {"$ref": "#/$defs/A"}},
            },
        }
        for reason, schema in cases.items():
            self.assertEqual(plan_output(schema), WholeValue(reason))


class OutputFields(unittest.TestCase):
    def test_kinds_and_nullability(self) -> None:
        for kind in KINDS:
            self.assertEqual(field({"type": kind}), Simple(kind))
            self.assertEqual(field({"type": [kind, "null"]}), Nullable(Simple(kind)))
            self.assertEqual(field({"anyOf": [{"type": kind}, NULL]}), Nullable(Simple(kind)))
        self.assertEqual(field({"enum": ["a", "b"]}), Choice(("a", "b")))
        self.assertEqual(field({"enum": [1, 2, None]}), Nullable(Choice((1, 2))))
        self.assertEqual(field({"const": None}), Structured("enum lists no member but null"))

    def test_one_nullable_is_enough_and_any_admits_null(self) -> None:
        self.assertEqual(field({"anyOf": [{"type": ["string", "null"]}, NULL]}), Nullable(STRING))
        self.assertEqual(field({"anyOf": [{}, NULL]}), Structured("no type given"))

    def test_arrays_keep_what_their_items_are(self) -> None:
        self.assertEqual(
            field({"type": "array", "items": {"type": "integer"}}), Array(Simple("integer"))
        )
        self.assertEqual(
            field({"type": "array", "items": {"type": ["string", "null"]}}), Array(Nullable(STRING))
        )
        self.assertEqual(
            field({"type": "array", "items": {"type": "array", "items": {"type": "number"}}}),
            Array(Array(Simple("number"))),
        )
        self.assertEqual(field({"type": "array"}), Array(Structured("schema is not an object")))
        items = {"type": "object", "properties": {"x": {"type": "integer"}}}
        self.assertEqual(
            field({"type": "array", "items": items}),
            Array(Record((Field("x", Simple("integer"), True, None),), False)),
        )

    def test_nested_objects(self) -> None:
        inner = {
            "type": "object",
            "properties": {"b": {"type": "boolean", "description": "B"}},
            "required": ["b", "ghost"],
            "additionalProperties": True,
        }
        self.assertEqual(
            field(inner),
            Record(
                (
                    Field("b", BOOLEAN, False, "B"),
                    Field("ghost", Structured("required but has no property schema"), False, None),
                ),
                True,
            ),
        )
        self.assertEqual(
            field({"type": ["object", "null"], "properties": {"b": {}}}),
            Nullable(Record((Field("b", Structured("no type given"), True, None),), False)),
        )
        self.assertEqual(
            field({"properties": {"b": {"type": "string"}}}),
            Record((Field("b", STRING, True, None),), False),
            "type forgotten",
        )
        self.assertEqual(
            field({"type": "object", "properties": 1}), Structured("properties is not an object")
        )
        self.assertEqual(
            field({"type": "object", "additionalProperties": False}),
            Structured("an object that admits no key"),
        )

    def test_objects_that_name_no_keys_are_maps(self) -> None:
        anything = Map(Structured("an object that names no properties"))
        self.assertEqual(field({"type": "object"}), anything)
        self.assertEqual(field({"type": "object", "additionalProperties": True}), anything)
        self.assertEqual(
            field({"type": "object", "additionalProperties": {"type": "string"}}), Map(STRING)
        )
        self.assertEqual(
            one(
                {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "integer"}},
                }
            ),
            Map(Array(Simple("integer"))),
        )

    def test_refs_resolve_in_the_root_only(self) -> None:
        schema = {
            "type": "object",
            "$defs": {"Name": {"type": "string"}},
            "properties": {
                "a": {"$ref": "#/$defs/Name"},
                "b": {"$ref": "#/$defs/Gone"},
                "c": {"$ref": "#/$defs/Name/x"},
                "d": {"$ref": "#/$defs/"},
                "e": {"$ref": "https://example.com/schema"},
            },
        }
        self.assertEqual(
            [f.type for f in output(schema).fields],
            [
                STRING,
                Structured("$ref '#/$defs/Gone' names no definition"),
                Structured("$ref '#/$defs/Name/x' is not followed"),
                Structured("$ref '#/$defs/' is not followed"),
                Structured("$ref 'https://example.com/schema' is not followed"),
            ],
        )

    def test_other_shapes_are_structured(self) -> None:
        for schema in (
            {},
            True,
            None,
            3,
            {"type": "null"},
            {"anyOf": "x"},
            {"anyOf": [{"type": "string"}, True]},
            {"enum": ["a", 1.5]},
        ):
            self.assertIsInstance(field(schema), Structured, schema)
        self.assertEqual(
            field({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            AnyOf((STRING, Simple("integer"))),
        )


class OutputBounds(unittest.TestCase):
    def test_a_ref_loop_ends_at_the_depth_bound(self) -> None:
        node = {
            "type": "object",
            "properties": {"next": {"$ref": "#/$defs/Node"}, "value": {"type": "integer"}},
        }
        record = output({"$defs": {"Node": node}, "$ref": "#/$defs/Node"})
        levels = 0
        kind: ResultType = record
        while isinstance(kind, Record):
            levels, kind = levels + 1, kind.fields[0].type
        self.assertEqual(kind, Structured("nested too deep to type"))
        # The top $ref is a step; then each level costs a field and a $ref.
        self.assertEqual(levels, MAX_OUTPUT_LOOK // 2)

    def test_deep_nesting_costs_no_recursion(self) -> None:
        for key in ("anyOf", "items"):
            deep = nested(key, 20000, {"type": "string"})
            self.assertIsInstance(output({"properties": {"k": deep}}), Record)

    def test_references_cannot_multiply_the_work(self) -> None:
        # Ten keys per level, each a $ref to the level below, five levels (within
        # the depth bound): 11,110 nested fields if expanded; the budget stops
        # them at MAX_NESTED_FIELDS.
        defs: Dict[str, Any] = {"L5": {"type": "string"}}
        for level in range(4, -1, -1):
            defs["L%d" % level] = {
                "type": "object",
                "properties": {
                    "k%d" % index: {"$ref": "#/$defs/L%d" % (level + 1)} for index in range(10)
                },
            }
        record = output({"$defs": defs, "$ref": "#/$defs/L0"})
        self.assertEqual(len(record.fields), 10, "the top level is never cut")
        self.assertLessEqual(nested_fields(record) - 10, MAX_NESTED_FIELDS)
        reasons = {f.type.reason for f in walk_fields(record) if isinstance(f.type, Structured)}
        self.assertEqual(reasons, {"past %d fields of nested objects" % MAX_NESTED_FIELDS})

    def test_a_thousand_keys_at_the_top_are_all_kept(self) -> None:
        names = ["k%04d" % index for index in range(1000)][::-1]
        record = output(
            {"properties": {n: {"type": "integer"} for n in names}, "required": names[:10]}
        )
        self.assertEqual([f.name for f in record.fields], names)
        self.assertEqual(sum(not f.optional for f in record.fields), 10)


def walk_fields(record: Record) -> List[Field]:
    found: List[Field] = []
    for item in record.fields:
        found.append(item)
        kind = item.type
        while isinstance(kind, (Array, Nullable)):
            kind = kind.item if isinstance(kind, Array) else kind.inner
        if isinstance(kind, Record):
            found += walk_fields(kind)
    return found


def nested_fields(record: Record) -> int:
    return len(walk_fields(record))


def json_values() -> st.SearchStrategy[JsonValue]:
    keys = st.sampled_from(
        [
            "type",
            "properties",
            "required",
            "items",
            "anyOf",
            "enum",
            "$ref",
            "additionalProperties",
            "oneOf",
            "const",
            "a",
            "b",
            "",
        ]
    )
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.sampled_from(["object", "string", "array", "null", "integer"]),
        st.text(max_size=5),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)
        ),
        max_leaves=25,
    )


def expected_names(properties: Dict[str, JsonValue], required: List[str]) -> List[str]:
    return list(properties) + [n for n in dict.fromkeys(required) if n not in properties]


@pytest.mark.slow
class PlanProperties(unittest.TestCase):
    @settings(max_examples=examples(300), deadline=None)
    @given(json_values())
    def test_total_on_any_json(self, schema: JsonValue) -> None:
        self.assertIsInstance(plan(schema), (Typed, WholeValue))

    @settings(max_examples=examples(200), deadline=None)
    @given(
        st.dictionaries(st.text(max_size=8), json_values(), max_size=6),
        st.lists(st.text(max_size=8), max_size=6),
    )
    def test_no_parameter_is_ever_dropped(
        self, properties: Dict[str, JsonValue], required: List[str]
    ) -> None:
        result = plan({"type": "object", "properties": properties, "required": required})
        assert isinstance(result, Typed)
        self.assertEqual([p.name for p in result.params], expected_names(properties, required))
        for param in result.params:
            self.assertEqual(param.optional, param.name not in required)
            self.assertTrue(well_formed(param.type), param.type)


@pytest.mark.slow
class OutputProperties(unittest.TestCase):
    @settings(max_examples=examples(300), deadline=None)
    @given(json_values())
    def test_total_on_any_json(self, schema: JsonValue) -> None:
        self.assertIsInstance(plan_output(schema), (Record, WholeValue))

    @settings(max_examples=examples(200), deadline=None)
    @given(
        st.dictionaries(st.text(max_size=8), json_values(), min_size=1, max_size=6),
        st.lists(st.text(max_size=8), max_size=6),
    )
    def test_no_key_is_ever_dropped(
        self, properties: Dict[str, JsonValue], required: List[str]
    ) -> None:
        result = output({"type": "object", "properties": properties, "required": required})
        self.assertEqual([f.name for f in result.fields], expected_names(properties, required))
        for item in result.fields:
            self.assertEqual(item.optional, item.name not in required)
            self.assertTrue(well_formed(item.type), item.type)


def well_formed(kind: ResultType) -> bool:
    """Nullable never wraps Nullable or Structured; a record has a field; kinds are known."""
    if isinstance(kind, Nullable):
        return not isinstance(kind.inner, (Nullable, Structured)) and well_formed(kind.inner)
    if isinstance(kind, Array):
        return well_formed(kind.item)
    if isinstance(kind, Map):
        return well_formed(kind.value)
    if isinstance(kind, Record):
        return bool(kind.fields) and all(well_formed(f.type) for f in kind.fields)
    if isinstance(kind, AnyOf):
        return (
            2 <= len(kind.branches) <= MAX_BRANCHES
            and all(
                not isinstance(b, (AnyOf, Nullable, Structured)) and well_formed(b)
                for b in kind.branches
            )
            and len(set(map(repr, kind.branches))) == len(kind.branches)
        )
    if isinstance(kind, Choice):
        return 1 <= len(kind.members) <= MAX_CHOICES and all(
            type(m) in (str, int, bool) for m in kind.members
        )
    return isinstance(kind, Structured) or kind.kind in KINDS


if __name__ == "__main__":
    unittest.main()
