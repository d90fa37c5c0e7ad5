"""mcp_client.interchange: msgpack-model values to JSON values and back."""

from __future__ import annotations

import collections
import enum
import json
import math
import unittest
from typing import Any, Callable, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_client.codegen import interchange
from mcp_client.codegen.interchange import (
    MAX_MSGPACK_INT,
    MIN_MSGPACK_INT,
    describe,
    to_json,
    to_msgpack,
)
from mcp_client.errors import InterchangeFault
from mcp_client.jsonvalue import MAX_DEPTH

from strategies import examples

BOTH: Tuple[Callable[[object], object], ...] = (to_json, to_msgpack)


def shared_values() -> st.SearchStrategy[Any]:
    """Values both models hold: what must round-trip unchanged."""
    text = st.text(max_size=8)  # hypothesis' text excludes lone surrogates by default
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(MIN_MSGPACK_INT, MAX_MSGPACK_INT),
        st.floats(allow_nan=False, allow_infinity=False),
        text,
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)
        ),
        max_leaves=30,
    )


def nested_lists(depth: int) -> List[Any]:
    value: List[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


class Weekday(enum.IntEnum):
    MONDAY = 1


class RoundTrip(unittest.TestCase):
    def test_example(self) -> None:
        value = {"items": [1, -2.5, "x", None, True, {"b c": [], "é": {}}], "n": MAX_MSGPACK_INT}
        self.assertEqual(to_json(value), value)
        self.assertEqual(to_msgpack(to_json(value)), value)

    def test_result_is_a_fresh_copy(self) -> None:
        inner = [1]
        value = {"a": inner}
        converted = to_json(value)
        assert isinstance(converted, dict)
        self.assertIsNot(converted, value)
        self.assertIsNot(converted["a"], inner)

    def test_key_order_is_kept(self) -> None:
        value = {"z": 1, "a": 2, "m": {"y": 1, "b": 2}}
        self.assertEqual(json.dumps(to_msgpack(value)), json.dumps(value))

    def test_integer_bounds_are_inclusive(self) -> None:
        for convert in BOTH:
            self.assertEqual(
                convert([MIN_MSGPACK_INT, MAX_MSGPACK_INT]), [MIN_MSGPACK_INT, MAX_MSGPACK_INT]
            )
        self.assertEqual((MIN_MSGPACK_INT, MAX_MSGPACK_INT), (-(2**63), 2**64 - 1))

    def test_max_depth_is_accepted(self) -> None:
        for convert in BOTH:
            self.assertEqual(convert(nested_lists(MAX_DEPTH)), nested_lists(MAX_DEPTH))

    @pytest.mark.slow
    @settings(max_examples=examples(200), deadline=None)
    @given(shared_values())
    def test_shared_values_round_trip(self, value: Any) -> None:
        self.assertEqual(to_msgpack(value), value)
        self.assertEqual(to_json(to_msgpack(value)), value)


class Refusals(unittest.TestCase):
    def assert_refused(
        self, convert: Callable[[object], object], value: object, path: str, reason: str
    ) -> None:
        with self.assertRaises(InterchangeFault) as caught:
            convert(value)
        self.assertEqual((caught.exception.path, caught.exception.detail), (path, reason))

    def test_binary_is_refused_with_its_path(self) -> None:
        value = {"items": [0, 1, 2, {"key": b"\x00"}]}
        self.assert_refused(to_json, value, "$.items[3].key", "binary data has no JSON form")
        self.assert_refused(to_msgpack, value, "$.items[3].key", "bytes is not a JSON value")

    def test_non_string_keys_are_refused_at_the_map(self) -> None:
        for key, kind in ((1, "int"), (None, "NoneType"), (b"k", "bytes"), (True, "bool")):
            for convert in BOTH:
                self.assert_refused(
                    convert, {"m": {key: 1}}, "$.m", "map key of type %s is not a string" % kind
                )

    def test_non_finite_floats_are_refused(self) -> None:
        for number in (math.nan, math.inf, -math.inf):
            for convert in BOTH:
                self.assert_refused(convert, [0.5, number], "$[1]", "%r has no JSON form" % number)

    def test_integers_outside_the_msgpack_range_are_refused(self) -> None:
        for number in (MAX_MSGPACK_INT + 1, MIN_MSGPACK_INT - 1, 10**400):
            for convert in BOTH:
                self.assert_refused(
                    convert, {"n": number}, "$.n", "integer outside [-2**63, 2**64 - 1]"
                )

    def test_nesting_past_max_depth_is_refused(self) -> None:
        too_deep = nested_lists(MAX_DEPTH + 1)
        for convert in BOTH:
            self.assert_refused(
                convert, too_deep, "$" + "[0]" * MAX_DEPTH, "nesting deeper than %d" % MAX_DEPTH
            )

    def test_very_deep_nesting_does_not_recurse(self) -> None:
        for convert in BOTH:
            with self.assertRaises(InterchangeFault):
                convert(nested_lists(100000))

    def test_cycles_and_shared_containers_are_refused(self) -> None:
        cycle: List[Any] = []
        cycle.append(cycle)
        shared = [1]
        for convert in BOTH:
            self.assert_refused(convert, cycle, "$[0]", "container met twice (shared or cyclic)")
            self.assert_refused(
                convert, {"a": shared, "b": shared}, "$.b", "container met twice (shared or cyclic)"
            )

    def test_lone_surrogates_are_refused(self) -> None:
        for convert in BOTH:
            self.assert_refused(convert, ["ok", "\ud800"], "$[1]", "string holds a lone surrogate")
            self.assert_refused(convert, {"\udfff": 1}, "$", "map key holds a lone surrogate")

    def test_other_types_are_refused_by_name(self) -> None:
        ordered = collections.OrderedDict(a=1)
        cases = ((1, 2), {1}, object(), 1j, Weekday.MONDAY, ordered, frozenset(), bytes)
        for value in cases:
            kind = type(value).__name__
            self.assert_refused(to_json, [value], "$[0]", "%s is not a msgpack value" % kind)
            self.assert_refused(to_msgpack, [value], "$[0]", "%s is not a JSON value" % kind)

    def test_the_first_fault_in_document_order_is_named(self) -> None:
        value = {"a": [1, b"x"], "b": float("nan")}
        self.assert_refused(to_json, value, "$.a[1]", "binary data has no JSON form")


class Paths(unittest.TestCase):
    def path_of(self, value: object) -> str:
        with self.assertRaises(InterchangeFault) as caught:
            to_json(value)
        return caught.exception.path

    def test_root(self) -> None:
        self.assertEqual(self.path_of(b""), "$")

    def test_identifier_keys_use_dots(self) -> None:
        self.assertEqual(self.path_of({"_x1": {"Y": b""}}), "$._x1.Y")

    def test_other_keys_are_json_quoted_ascii(self) -> None:
        self.assertEqual(self.path_of({"a b": b""}), '$["a b"]')
        self.assertEqual(self.path_of({"1a": b""}), '$["1a"]')
        self.assertEqual(self.path_of({"é": b""}), '$["\\u00e9"]')
        self.assertEqual(self.path_of({'"]': b""}), '$["\\"]"]')
        self.assertEqual(self.path_of({"": b""}), '$[""]')

    def test_describe_names_path_and_reason(self) -> None:
        with self.assertRaises(InterchangeFault) as caught:
            to_json({"items": [0, 1, 2, {"key": b""}]})
        self.assertEqual(
            describe(caught.exception),
            "cannot convert the value at $.items[3].key: binary data has no JSON form",
        )


def steps() -> st.SearchStrategy[List[Any]]:
    """A path of indexes and keys, each index small and each key arbitrary text."""
    return st.lists(st.one_of(st.integers(0, 3), st.text(max_size=6)), max_size=6)


def render(path: List[Any]) -> str:
    """The documented path syntax, written out independently of the module."""
    out = "$"
    for step in path:
        if isinstance(step, int):
            out += "[%d]" % step
        elif (
            step
            and step.isascii()
            and (step[0].isalpha() or step[0] == "_")
            and all(c.isalnum() or c == "_" for c in step)
        ):
            out += "." + step
        else:
            out += "[" + json.dumps(step) + "]"
    return out


def plant(path: List[Any], leaf: object) -> object:
    """A value holding ``leaf`` at ``path``, with well-formed siblings around it."""
    value = leaf
    for step in reversed(path):
        if isinstance(step, int):
            value = [None] * step + [value] + ["sibling"]
        else:
            value = {"~before": 1, step: value} if step != "~before" else {step: value}
    return value


class Properties(unittest.TestCase):
    @settings(max_examples=examples(200), deadline=None)
    @given(steps(), st.sampled_from([b"", math.nan, 2**64, (1,), "\ud800", {3: 1}]))
    def test_one_bad_leaf_refuses_the_whole_value_and_names_its_path(
        self, path: List[Any], leaf: object
    ) -> None:
        value = plant(path, leaf)
        for convert in BOTH:
            with self.assertRaises(InterchangeFault) as caught:
                convert(value)
            self.assertEqual(caught.exception.path, render(path))

    @settings(max_examples=examples(200), deadline=None)
    @given(
        st.recursive(
            st.one_of(
                st.none(),
                st.booleans(),
                st.integers(),
                st.floats(),
                st.text(),
                st.binary(),
                st.just(object()),
                st.complex_numbers(),
            ),
            lambda inner: st.one_of(
                st.lists(inner, max_size=3),
                st.tuples(inner),
                st.dictionaries(st.one_of(st.text(), st.integers()), inner, max_size=3),
            ),
            max_leaves=20,
        )
    )
    def test_total_on_any_object(self, value: object) -> None:
        for convert in BOTH:
            try:
                converted = convert(value)
            except InterchangeFault as fault:  # anything else escaping fails the test
                self.assertTrue(fault.path.startswith("$"))
                self.assertTrue(interchange.describe(fault).startswith("cannot convert"))
            else:  # only values of the shared model get through, unchanged
                self.assertEqual(converted, value)


if __name__ == "__main__":
    unittest.main()
