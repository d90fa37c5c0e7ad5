"""mcp_client.codegen.pyrepr: a Python literal read as JSON values, bounded, never evaluated."""

from __future__ import annotations

import ast
import pprint
import sys
import time
import unittest
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_client.codegen import pyrepr
from mcp_client.errors import Fault, LiteralRefused

from strategies import json_values, property_settings

# What reprs are made of, and a few things they are not: texts drawn from it meet every
# branch of the reader (and ast.literal_eval, on texts this short, is safe to ask).
LITERAL_ALPHABET = st.sampled_from(
    list("{}[](),:'\" \n\t\\-+.0123456789eExuUrRbTFN#_")
    + ["True", "False", "None", "'a'", '"b"', "1.5", "\\n", "\\x41", "\\u00e9", "set()", "inf"]
)
literal_texts = st.lists(LITERAL_ALPHABET, max_size=24).map("".join)


def normal(value: Any) -> Any:
    """A value as the reader gives it: tuples and sets as lists."""
    if isinstance(value, (list, tuple)):
        return [normal(item) for item in value]
    if isinstance(value, dict):
        return {key: normal(item) for key, item in value.items()}
    return value


def tupled(value: Any) -> Any:
    """Some lists as tuples, as a Python program's data would hold them."""
    if isinstance(value, list):
        items = [tupled(item) for item in value]
        return tuple(items) if len(items) % 2 else items
    if isinstance(value, dict):
        return {key: tupled(item) for key, item in value.items()}
    return value


class Examples(unittest.TestCase):
    def test_the_reprs_a_server_sends(self) -> None:
        self.assertEqual(
            pyrepr.parse("{'name': 'Ada', 'tags': ('x', 'y'), 'ok': True, 'n': None, 'f': -1.5}"),
            {"name": "Ada", "tags": ["x", "y"], "ok": True, "n": None, "f": -1.5},
        )
        self.assertEqual(pyrepr.parse("[{'a'}, (), (1,), (2), {}]"), [["a"], [], [1], 2, {}])
        self.assertEqual(pyrepr.parse("  ['it\\'s', \"q\\\"\", u'\\u00e9', r'\\d'] \n"),
                         ["it's", 'q"', "é", "\\d"])  # fmt: skip
        self.assertEqual(pyrepr.parse("('a'\n 'b')"), "ab")  # pprint's long string

    def test_what_is_no_literal_is_refused_by_its_place(self) -> None:
        for text, where in (
            ("{'a': datetime.date(2026, 1, 1)}", "a name, not a literal, at character 6"),
            ("[inf]", "a name, not a literal, at character 1"),
            ("{1: 'a'}", "a key that is not a string at character 2"),
            ("b'x'", "a name, not a literal, at character 0"),
            ("[1, 2", "'[' not closed at character 5"),
            ("1e999", "a number JSON cannot carry at character 0"),
            ("{[1]}", "a set of containers at character 4"),
            ("'a'\n'b'", "two strings at character 4"),
            ("[1] # note", "not a Python literal at character 4"),
            ("", "no value"),
        ):
            with self.subTest(text):
                with self.assertRaises(LiteralRefused) as caught:
                    pyrepr.parse(text)
                self.assertEqual(caught.exception.reason, where)
                self.assertIsInstance(caught.exception, (Fault, ValueError))

    def test_nesting_is_bounded_without_recursion(self) -> None:
        deep = "[" * pyrepr.MAX_DEPTH + "]" * pyrepr.MAX_DEPTH
        self.assertEqual(pyrepr.parse(deep), eval_nested(pyrepr.MAX_DEPTH))
        with self.assertRaises(LiteralRefused):
            pyrepr.parse("[" + deep + "]")
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(100)  # the reader has a stack of its own: no frame per level
        try:
            with self.assertRaises(LiteralRefused):
                pyrepr.parse("(" * 100_000)
            read = pyrepr.parse("[" * 200 + "]" * 200)
        finally:
            sys.setrecursionlimit(limit)
        self.assertEqual(read, eval_nested(200))  # compared with the limit back: == recurses

    def test_numbers_are_bounded(self) -> None:
        digits = "9" * pyrepr.MAX_INT_DIGITS
        self.assertEqual(pyrepr.parse("-" + digits), -int(digits))
        with self.assertRaises(LiteralRefused):
            pyrepr.parse(digits + "9")
        with self.assertRaises(LiteralRefused):
            pyrepr.parse("1." + "0" * pyrepr.MAX_NUMBER_CHARS)

    def test_a_large_text_costs_a_linear_pass(self) -> None:
        text = repr([{"k%d" % index: "v" * 50, "n": index} for index in range(20_000)])
        started = time.perf_counter()
        self.assertEqual(len(pyrepr.parse(text)), 20_000)  # type: ignore[arg-type]
        self.assertLess(time.perf_counter() - started, 30)  # no quadratic path, however slow


def eval_nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


class Properties(unittest.TestCase):
    @property_settings(500)
    @given(st.text(max_size=200))
    def test_total_on_any_text(self, text: str) -> None:
        try:
            pyrepr.parse(text)
        except LiteralRefused:
            pass

    @property_settings(1000)
    @given(literal_texts)
    def test_what_it_reads_literal_eval_reads_alike(self, text: str) -> None:
        try:
            ours = pyrepr.parse(text)
        except LiteralRefused:
            return
        theirs = ast.literal_eval(text.strip())
        if isinstance(theirs, (set, frozenset)):  # order and duplicates are the set's
            self.assertEqual(set(ours), theirs)  # type: ignore[arg-type]
        else:
            self.assertEqual(ours, normal(theirs))

    @property_settings()
    @given(json_values(30))
    def test_a_repr_of_json_values_reads_back(self, value: Any) -> None:
        self.assertEqual(pyrepr.parse(repr(value)), value)
        self.assertEqual(pyrepr.parse(repr(tupled(value))), value)
        self.assertEqual(pyrepr.parse(pprint.pformat(value, width=20)), value)


if __name__ == "__main__":
    unittest.main()
