"""mcp_client.schema: the total three-tier reading of an inputSchema."""

from __future__ import annotations

import unittest
from typing import Any, Dict, List

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_client.jsonvalue import JsonValue
from mcp_client.schema import (
    KINDS, ListOf, Param, ParamType, Simple, Structured, Typed, WholeValue, plan,
)

NULL = {"type": "null"}


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


class TopLevelTest(unittest.TestCase):
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
            result = plan({"type": "object", "properties": {"a": {"type": "string"}},
                           "additionalProperties": extra})
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
            "required": ["repo_path"], "type": "object", "title": "diffArguments",
        }
        self.assertEqual(plan(schema), Typed((
            Param("repo_path", Simple("string"), False, None),
            Param("context_lines", Simple("integer"), True, None),
        )))


class NoParameterDroppedTest(unittest.TestCase):
    def test_required_without_property_schema_becomes_structured(self) -> None:
        result = plan({"type": "object", "properties": {"a": {"type": "string"}},
                       "required": ["ghost", "a", "ghost"]})
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
        result = plan({"type": "object", "properties": {
            "a": {"type": "string", "description": "the a"},
            "b": {"type": "string", "description": 7},
        }})
        assert isinstance(result, Typed)
        self.assertEqual([p.description for p in result.params], ["the a", None])


class ParamTypeTest(unittest.TestCase):
    def test_primitive_kinds(self) -> None:
        for kind in KINDS:
            self.assertEqual(one({"type": kind}), Simple(kind))

    def test_arrays(self) -> None:
        self.assertEqual(one({"type": "array", "items": {"type": "string"}}), ListOf("string"))
        self.assertEqual(one({"type": "array", "items": {"type": "integer"}}), ListOf("integer"))
        for items in (None, {"type": "object"}, {"type": "array", "items": {"type": "string"}},
                      [{"type": "string"}], {"$ref": "#/$defs/Label"}):
            schema: Dict[str, Any] = {"type": "array"}
            if items is not None:
                schema["items"] = items
            self.assertIsInstance(one(schema), Structured, items)

    def test_type_lists_drop_null(self) -> None:
        self.assertEqual(one({"type": ["string", "null"]}), Simple("string"))
        self.assertEqual(one({"type": ["null", "boolean"]}), Simple("boolean"))
        self.assertEqual(one({"type": ["array", "null"], "items": {"type": "number"}}),
                         ListOf("number"))
        for kinds in (["string", "integer"], ["null"], [], [1, 2]):
            self.assertIsInstance(one({"type": kinds}), Structured, kinds)

    def test_enum(self) -> None:
        self.assertEqual(one({"enum": ["a", "b"]}), Simple("string"))
        self.assertEqual(one({"enum": ["a", None], "type": ["string", "null"]}), Simple("string"))
        self.assertEqual(one({"enum": [1, 2]}), Simple("integer"))
        self.assertEqual(one({"enum": [1, 2.5]}), Simple("number"))
        self.assertEqual(one({"enum": [True, False]}), Simple("boolean"))
        self.assertEqual(one({"const": "fixed"}), Simple("string"))
        for members in (["a", 1], [], [None], [{"a": 1}], [[1]], [True, 1], "a"):
            self.assertIsInstance(one({"enum": members}), Structured, members)

    def test_any_of_with_null_is_the_other_branch(self) -> None:
        # pydantic's Optional[X]
        self.assertEqual(one({"anyOf": [{"type": "string"}, NULL], "default": None}),
                         Simple("string"))
        self.assertEqual(one({"anyOf": [{"items": {"type": "string"}, "type": "array"}, NULL]}),
                         ListOf("string"))
        self.assertEqual(one({"allOf": [{"type": "integer"}]}), Simple("integer"))
        self.assertEqual(one({"oneOf": [{"enum": ["open", "closed"]}, NULL]}), Simple("string"))

    def test_other_combinators_are_structured(self) -> None:
        for schema in ({"anyOf": [{"type": "integer"}, {"type": "string"}, NULL]},
                       {"oneOf": [NULL]}, {"anyOf": {"type": "string"}},
                       {"allOf": [{"$ref": "#/$defs/X"}]},
                       {"anyOf": [{"anyOf": [{"anyOf": [{"type": "string"}]}]}]}):
            self.assertIsInstance(one(schema), Structured, schema)

    def test_refs_are_never_followed(self) -> None:
        self.assertIsInstance(one({"$ref": "#/$defs/Priority"}), Structured)
        self.assertIsInstance(one({"$ref": "#", "type": "string"}), Structured)

    def test_untyped_and_unknown_are_structured(self) -> None:
        for schema in ({}, {"type": "object"}, {"type": "frobnicate"}, {"type": 7},
                       True, False, None, "string", 3):
            self.assertIsInstance(one(schema), Structured, schema)

    def test_narrowing_keywords_are_ignored(self) -> None:
        schema = {"type": "string", "format": "date-time", "minLength": 3, "default": "x"}
        self.assertEqual(one(schema), Simple("string"))


class HostileSchemaTest(unittest.TestCase):
    def test_ref_loop_in_defs_costs_nothing(self) -> None:
        loop = {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}
        schema = {"type": "object", "$defs": loop,
                  "properties": {"a": {"$ref": "#/$defs/A"}}, "required": ["a"]}
        self.assertEqual(plan(schema), Typed((
            Param("a", Structured("$ref is not followed"), False, None),)))

    def test_self_reference_at_top_is_whole_value(self) -> None:
        self.assertEqual(plan({"$ref": "#"}), WholeValue("top level uses $ref"))

    def test_deep_nesting_is_bounded(self) -> None:
        # Far past the recursion limit: plan must only ever look a few levels in.
        for key in ("anyOf", "items", "oneOf"):
            leaf = {"type": "string"}
            self.assertIsInstance(one(nested(key, 20000, leaf)), Structured, key)

    def test_shallow_nesting_still_types(self) -> None:
        self.assertEqual(one(nested("anyOf", 2, {"type": "string"})), Simple("string"))
        self.assertEqual(one({"type": "array", "items": nested("anyOf", 1, {"type": "string"})}),
                         ListOf("string"))


def json_values() -> st.SearchStrategy[JsonValue]:
    keys = st.sampled_from(["type", "properties", "required", "items", "anyOf", "enum", "$ref",
                            "additionalProperties", "oneOf", "const", "a", "b", ""])
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                        st.sampled_from(["object", "string", "array", "null", "integer"]),
                        st.text(max_size=5))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)), max_leaves=25)


def expected_names(properties: Dict[str, JsonValue], required: List[str]) -> List[str]:
    return list(properties) + [n for n in dict.fromkeys(required) if n not in properties]


class PlanPropertiesTest(unittest.TestCase):
    @settings(max_examples=300, deadline=None)
    @given(json_values())
    def test_total_on_any_json(self, schema: JsonValue) -> None:
        self.assertIsInstance(plan(schema), (Typed, WholeValue))

    @settings(max_examples=200, deadline=None)
    @given(st.dictionaries(st.text(max_size=8), json_values(), max_size=6),
           st.lists(st.text(max_size=8), max_size=6))
    def test_no_parameter_is_ever_dropped(self, properties: Dict[str, JsonValue],
                                          required: List[str]) -> None:
        result = plan({"type": "object", "properties": properties, "required": required})
        assert isinstance(result, Typed)
        self.assertEqual([p.name for p in result.params], expected_names(properties, required))
        for param in result.params:
            self.assertEqual(param.optional, param.name not in required)
            if not isinstance(param.type, Structured):
                self.assertIn(param.type.kind, KINDS)


if __name__ == "__main__":
    unittest.main()
