"""jsonvalue: the total parser and the strict one-line serializer.

What is proved here:
- ``parse`` is total: any bytes, any text (lone surrogates included), any
  token soup, even a non-text argument, either gives a JSON value or raises
  ``CorruptionReport``; nothing else escapes.
- ``parse`` agrees with the standard ``json`` module on every input where the
  latter's verdict is within our bounds (finite numbers, MAX_INT_DIGITS,
  MAX_DEPTH, strict UTF-8, no BOM): a differential oracle, not a copy of the code.
- ``parse(dump(v))`` gives back ``v`` exactly (types, member order, and the
  sign of ``-0.0``); ``dump`` is one line and valid UTF-8; NaN and the
  infinities cannot be dumped at all.
- The bounds sit exactly where the module says: depth MAX_DEPTH in, MAX_DEPTH+1
  out, on both sides; MAX_INT_DIGITS digits in, one more out, whatever
  ``sys.int_max_str_digits`` says.
- The fast paths (measured in ``tools/bench*.py``) say what the plain code they replace
  says: ``_too_deep`` (a walk by ``gc`` referents) what ``depth() > MAX_DEPTH``
  says, at the boundary, for leaf dicts that CPython untracks, and after a
  collection has untracked what it could; ``parse`` what the strict path says;
  ``encode`` (one reused C encoder) what ``json.dumps`` writes.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import sys
import unittest
from typing import Any, Iterator, List

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client import jsonvalue
from mcp_client.errors import CorruptionReport, EncodeRefused
from mcp_client.jsonvalue import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    _too_deep,
    check,
    depth,
    dump,
    encode,
    encode_checked,
    parse,
)

from strategies import json_values, property_settings
from support import same

PROPERTY = property_settings(300)

# Text without surrogates: what a str taken from valid UTF-8 can hold.
JSON_VALUES = json_values(25)
# Any code point at all, lone surrogates included.
ANY_TEXT = st.lists(st.integers(0, sys.maxunicode), max_size=40).map(
    lambda points: "".join(map(chr, points))
)
# Fragments that steer random text into the parser's interesting states.
TOKENS = [
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    " ",
    "\n",
    "\r",
    "\t",
    '"a"',
    '"\\u00e9"',
    '"\\ud800"',
    '"\\udc00"',
    '"\\ud83d\\ude00"',
    '"\\',
    '"',
    "0",
    "-",
    "1",
    "12",
    ".5",
    "e3",
    "E-2",
    "1e400",
    "-1e400",
    "true",
    "false",
    "null",
    "NaN",
    "Infinity",
    "-Infinity",
    "\ufeff",
    "\x00",
    "\u00e9",
    "/",
    '"\\n"',
    "9" * 30,
]
TOKEN_SOUP = st.lists(st.sampled_from(TOKENS), max_size=30).map("".join)


def nested(levels: int, kind: str = "array") -> str:
    """JSON text nested ``levels`` deep: ``[[...]]`` or ``{"a":{"a":...}}``."""
    if kind == "array":
        return "[" * levels + "]" * levels
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def nested_value(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


TOO_MANY_DIGITS = 10**MAX_INT_DIGITS


def within_bounds(value: Any) -> bool:
    """Would ``parse`` keep this value that ``json.loads`` produced?"""
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if type(node) is float and not math.isfinite(node):
            return False
        if type(node) is int and abs(node) >= TOO_MANY_DIGITS:
            return False
        if type(node) in (list, dict):
            if level > MAX_DEPTH:
                return False
            kids = node.values() if type(node) is dict else node
            stack.extend((kid, level + 1) for kid in kids)
    return True


@contextlib.contextmanager
def int_digit_limit(limit: int) -> Iterator[None]:
    """Set ``sys.int_max_str_digits`` for a block (Python 3.11+ and the 2022 backports)."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


class ParseAccepts(unittest.TestCase):
    def test_every_kind_of_value(self) -> None:
        text = '{"n":null,"t":true,"f":false,"i":-12,"x":1.5,"s":"\\u00e9\\n","a":[1,[]],"o":{}}'
        expected = {
            "n": None,
            "t": True,
            "f": False,
            "i": -12,
            "x": 1.5,
            "s": "\u00e9\n",
            "a": [1, []],
            "o": {},
        }
        self.assertTrue(same(parse(text), expected))

    def test_bytes_bytearray_and_str_agree(self) -> None:
        text = '{"k":["\u00e9\u4e2d\U0001f600",2]}'
        raw = text.encode("utf-8")
        for given_ in (text, raw, bytearray(raw)):
            with self.subTest(type=type(given_).__name__):
                self.assertTrue(same(parse(given_), {"k": ["\u00e9\u4e2d\U0001f600", 2]}))

    def test_rfc_whitespace_around_values(self) -> None:
        self.assertEqual(parse(" \t\r\n[ 1 ,\n2 ] \r\n"), [1, 2])

    def test_number_types_follow_the_grammar(self) -> None:
        # A fraction or exponent makes a float; -0 is the integer zero.
        self.assertTrue(same(parse("1.0"), 1.0))
        self.assertTrue(same(parse("1E2"), 100.0))
        self.assertTrue(same(parse("-0"), 0))
        self.assertTrue(same(parse("-0.0"), -0.0))
        self.assertTrue(same(parse("1e-400"), 0.0))  # underflow is a finite double: kept

    def test_paired_surrogate_escapes_make_one_character(self) -> None:
        self.assertEqual(parse('"\\ud83d\\ude00"'), "\U0001f600")

    def test_lone_surrogate_escapes_are_kept_in_the_str(self) -> None:
        # Decision, documented here: RFC 8259 section 8.2 leaves lone surrogate
        # escapes to the implementation. parse keeps Python's reading (the str
        # holds the surrogate) because refusing would kill a channel over text
        # nobody may ever look at; the refusal happens where it matters, in dump
        # (see DumpRefuses), so such a string can never reach the wire.
        self.assertEqual(parse('"\\ud800"'), "\ud800")
        self.assertEqual(parse('{"\\udc00":"x\\ud800y"}'), {"\udc00": "x\ud800y"})

    def test_member_order_is_kept(self) -> None:
        self.assertEqual(list(parse('{"b":1,"a":2,"c":3}')), ["b", "a", "c"])


class ParseRefuses(unittest.TestCase):
    CASES = [
        ("empty", b"", "Expecting value"),
        ("only whitespace", b" \n ", "Expecting value"),
        ("trailing data", b"{} {}", "Extra data"),
        # The json module's wording changed in 3.13 ("Illegal trailing comma ..."); both
        # name the offending character's position.
        ("trailing comma", b"[1,]", "column 4" if sys.version_info < (3, 13) else "column 3"),
        ("single quotes", b"{'a':1}", "property name"),
        ("leading zero", b"01", "Extra data"),
        ("leading plus", b"+1", "Expecting value"),
        ("bare fraction", b".5", "Expecting value"),
        ("raw control character in a string", b'"a\x01b"', "control character"),
        ("raw newline in a string", b'"a\nb"', "control character"),
        ("comment", b"[1] // no", "Extra data"),
        ("unterminated string", b'"abc', "Unterminated string"),
        ("bad escape", b'"\\x41"', "Invalid \\escape"),
        ("NaN", b"NaN", "NaN is not JSON"),
        ("Infinity", b"[Infinity]", "Infinity is not JSON"),
        ("-Infinity", b'{"a":-Infinity}', "-Infinity is not JSON"),
        ("1e400", b"1e400", "overflows a double"),
        ("-1e400 nested", b"[[-1e400]]", "overflows a double"),
        ("BOM then JSON", b"\xef\xbb\xbf{}", "line 1 column 1"),
        ("invalid UTF-8", b'"ab\xff"', "not UTF-8 at byte 3"),
        ("overlong UTF-8", b'"\xc0\xaf"', "not UTF-8 at byte 1"),
        ("UTF-8 cut short at the end", b'"\xe2\x82', "not UTF-8 at byte 1"),
        ("surrogate encoded in UTF-8 (CESU)", b'"\xed\xa0\x80"', "not UTF-8 at byte 1"),
    ]

    def test_table(self) -> None:
        for name, data, reason in self.CASES:
            with self.subTest(name):
                with self.assertRaises(CorruptionReport) as caught:
                    parse(data)
                self.assertIn(reason, caught.exception.reason)

    def test_a_bom_in_a_str_is_refused_too(self) -> None:
        # RFC 8259 section 8.1: senders MUST NOT add a BOM; we take the option to refuse it.
        with self.assertRaises(CorruptionReport):
            parse("\ufeff{}")

    def test_corruption_report_is_a_value_error_with_a_reason(self) -> None:
        with self.assertRaises(ValueError) as caught:
            parse("{")
        self.assertIsInstance(caught.exception, CorruptionReport)
        self.assertEqual(str(caught.exception), caught.exception.reason)

    def test_non_text_arguments_are_refused_not_crashed_on(self) -> None:
        for bogus in (None, 12, 1.5, memoryview(b"{}"), ["{}"], object()):
            with self.subTest(type=type(bogus).__name__):
                with self.assertRaises(CorruptionReport):
                    parse(bogus)  # type: ignore[arg-type]


class Bounds(unittest.TestCase):
    def test_depth_max_is_accepted_for_arrays_and_objects(self) -> None:
        for kind in ("array", "object"):
            with self.subTest(kind):
                self.assertEqual(jsonvalue.depth(parse(nested(MAX_DEPTH, kind))), MAX_DEPTH)

    def test_depth_max_plus_one_is_refused_for_arrays_and_objects(self) -> None:
        for kind in ("array", "object"):
            with self.subTest(kind):
                with self.assertRaises(CorruptionReport) as caught:
                    parse(nested(MAX_DEPTH + 1, kind))
                self.assertIn("nesting deeper than %d" % MAX_DEPTH, caught.exception.reason)

    def test_brackets_inside_strings_do_not_count_as_depth(self) -> None:
        text = '["%s", "%s"]' % ("[" * 1000, "{" * 1000)
        self.assertEqual(parse(text), ["[" * 1000, "{" * 1000])

    def test_int_digits_boundary_on_both_signs(self) -> None:
        for sign in ("", "-"):
            with self.subTest(sign=sign or "+"):
                at_limit = sign + "9" * MAX_INT_DIGITS
                self.assertEqual(parse(at_limit), int(at_limit))
                with self.assertRaises(CorruptionReport) as caught:
                    parse(sign + "9" * (MAX_INT_DIGITS + 1))
                self.assertIn("%d digits" % (MAX_INT_DIGITS + 1), caught.exception.reason)

    @unittest.skipUnless(
        hasattr(sys, "set_int_max_str_digits"), "this interpreter has no int digit limit to lift"
    )
    def test_int_digits_verdict_ignores_the_interpreter_limit(self) -> None:
        # With the interpreter's own limit lifted (0 = unlimited, as on a Python
        # that predates the limit), the verdict must stay the same: the limit is ours.
        with int_digit_limit(0):
            self.assertEqual(parse("7" * MAX_INT_DIGITS), int("7" * MAX_INT_DIGITS))
            for sign in ("", "-"):
                with self.subTest(sign=sign or "+"), self.assertRaises(CorruptionReport):
                    parse(sign + "7" * (MAX_INT_DIGITS + 1))

    def test_long_floats_are_fine_while_finite(self) -> None:
        self.assertEqual(parse("0." + "0" * 5000 + "1"), 0.0)
        with self.assertRaises(CorruptionReport):
            parse("1" * 5000 + ".0")  # 1.1e4999: overflows


class DumpShape(unittest.TestCase):
    def test_compact_and_order_preserving(self) -> None:
        self.assertEqual(
            dump({"b": [1, 2.5, None], "a": {"t": True}}), '{"b":[1,2.5,null],"a":{"t":true}}'
        )

    def test_non_ascii_stays_raw_and_encode_is_its_utf8(self) -> None:
        value = {"k": "\u00e9\u4e2d\U0001f600"}
        self.assertEqual(dump(value), '{"k":"\u00e9\u4e2d\U0001f600"}')
        self.assertEqual(encode(value), dump(value).encode("utf-8"))

    def test_every_control_character_is_escaped(self) -> None:
        text = "".join(map(chr, range(0x20)))
        out = dump(text)
        self.assertFalse(any(ord(ch) < 0x20 for ch in out), out)
        self.assertEqual(parse(out), text)

    def test_negative_zero_keeps_its_sign(self) -> None:
        back = parse(dump(-0.0))
        self.assertTrue(same(back, -0.0))

    def test_depth_max_dumps(self) -> None:
        self.assertEqual(dump(nested_value(MAX_DEPTH)), nested(MAX_DEPTH))


class DumpRefuses(unittest.TestCase):
    def _refused(self, value: Any, reason: str) -> None:
        with self.assertRaises(EncodeRefused) as caught:
            dump(value)
        self.assertIn(reason, caught.exception.reason)
        with self.assertRaises(EncodeRefused):
            encode(value)
        if reason != "lone surrogate":  # found by the encoding, not by the walk
            with self.assertRaises(EncodeRefused) as walked:
                check(value)
            self.assertEqual(walked.exception.reason, caught.exception.reason)

    def test_non_finite_floats(self) -> None:
        for value, shown in ((math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")):
            with self.subTest(shown):
                self._refused({"x": [value]}, "%s is not a JSON number" % shown)

    def test_lone_surrogates_in_values_and_keys(self) -> None:
        self._refused("a\ud800", "lone surrogate")
        self._refused({"\udfff": 1}, "lone surrogate")
        self._refused(parse('["\\ud800"]'), "lone surrogate")  # what parse let through

    def test_things_that_are_not_json_values(self) -> None:
        cases = [
            ("tuple", (1, 2), "tuple"),
            ("set", {1}, "set"),
            ("bytes", b"x", "bytes"),
            ("object", object(), "object"),
            ("int key", {1: "a"}, "key 1"),
            ("None key", {None: 1}, "key None"),
            ("bool key", {True: 1}, "key True"),
            ("str subclass", type("S", (str,), {})("x"), "S"),
        ]
        for name, value, reason in cases:
            with self.subTest(name):
                self._refused([value], reason)

    def test_too_deep_and_cyclic_values(self) -> None:
        self._refused(nested_value(MAX_DEPTH + 1), "nesting deeper than %d" % MAX_DEPTH)
        self._refused(nested_value(100_000), "nesting deeper than %d" % MAX_DEPTH)
        cycle: List[Any] = []
        cycle.append(cycle)
        self._refused(cycle, "nesting deeper than %d" % MAX_DEPTH)

    def test_an_int_too_long_to_print(self) -> None:
        with self.assertRaises(EncodeRefused):
            dump(10**5000)
        with self.assertRaises(EncodeRefused):
            encode_checked(10**5000)  # the encoder's own refusal, with no walk before it

    def test_a_fault_among_plain_items_is_found_where_it_sits(self) -> None:
        # Deep inside, among items that pass: the refusal names the item at fault.
        self._refused(["a", 1, True, None, {"k": ["b", 2, math.nan]}], "nan is not")
        self._refused({"a": [1, 2], "b": {"c": [None, (1,)]}}, "tuple")
        self._refused(["a", {"x": 1, 2: "y"}], "key 2")
        self._refused([[], {}, [[]], {"k": {}}, [1.5, set()]], "set")

    def test_the_bound_counts_from_where_the_value_sits(self) -> None:
        check(nested_value(MAX_DEPTH))
        check(nested_value(MAX_DEPTH - 1), 1)  # params inside a request's envelope
        with self.assertRaises(EncodeRefused) as caught:
            check(nested_value(MAX_DEPTH), 1)
        self.assertIn("nesting deeper than %d" % MAX_DEPTH, caught.exception.reason)


class Properties(unittest.TestCase):
    @pytest.mark.slow
    @PROPERTY
    @given(JSON_VALUES)
    def test_a_checked_value_encodes_as_encode_does(self, value: Any) -> None:
        check(value)
        self.assertEqual(encode_checked(value), encode(value))

    @PROPERTY
    @given(st.integers(min_value=0, max_value=MAX_DEPTH + 2))
    def test_params_checked_in_place_get_the_whole_message_verdict(self, deep: int) -> None:
        # Requests.start checks only the params, one level inside the envelope:
        # the verdict must be the one a walk of the whole message gives.
        params = nested_value(deep)
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        verdicts = []
        for walk in (lambda: check(params, 1), lambda: encode(message)):
            try:
                walk()
                verdicts.append(None)
            except EncodeRefused as e:
                verdicts.append(e.reason)
        self.assertEqual(verdicts[0], verdicts[1])

    @pytest.mark.slow
    @PROPERTY
    @given(JSON_VALUES)
    def test_round_trip_is_exact(self, value: Any) -> None:
        self.assertTrue(same(parse(dump(value)), value))
        self.assertTrue(same(parse(encode(value)), value))

    @PROPERTY
    @given(JSON_VALUES)
    def test_dump_is_one_line_of_valid_utf8(self, value: Any) -> None:
        raw = encode(value)
        self.assertNotIn(b"\n", raw)
        self.assertNotIn(b"\r", raw)
        self.assertEqual(raw.decode("utf-8"), dump(value))  # strict: raises if not UTF-8

    @PROPERTY
    @given(st.binary(max_size=64) | TOKEN_SOUP.map(lambda text: text.encode("utf-8")))
    def test_parse_is_total_on_bytes_and_agrees_with_json(self, data: bytes) -> None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            with self.assertRaises(CorruptionReport) as caught:
                parse(data)
            self.assertEqual(caught.exception.reason, "not UTF-8 at byte %d" % e.start)
            return
        self._agrees_with_json(data, text)

    @PROPERTY
    @given(ANY_TEXT | TOKEN_SOUP)
    def test_parse_is_total_on_text_and_agrees_with_json(self, text: str) -> None:
        self._agrees_with_json(text, text)

    def _agrees_with_json(self, data: Any, text: str) -> None:
        # The oracle: the stdlib's verdict, narrowed by our documented bounds.
        try:
            expected = json.loads(text)
            oracle_accepts = within_bounds(expected)
        except (ValueError, RecursionError):
            oracle_accepts = False
        try:
            value = parse(data)
        except CorruptionReport as report:
            self.assertFalse(oracle_accepts, "refused valid JSON: %s" % report.reason)
            self.assertTrue(report.reason)
            return
        self.assertTrue(oracle_accepts, "accepted what json.loads refuses or bounds forbid")
        self.assertTrue(same(value, expected))


# ----------------------------------------------------------------------------- the fast paths

# More leaves, shorter text: what the fast paths are held to the plain code on.
FAST_PATH_VALUES = json_values(40, width=4, text=8, keys=4)


def chain(levels: int, leaf: Any, kinds: str) -> Any:
    """``levels`` containers deep around ``leaf``, cycling through ``kinds`` ("l"/"d")."""
    value = leaf
    for level in range(levels):
        value = [value] if kinds[level % len(kinds)] == "l" else {"k": value}
    return value


class Depth(unittest.TestCase):
    def _agrees(self, value: Any) -> None:
        self.assertEqual(_too_deep(value), depth(value) > MAX_DEPTH, depth(value))

    def test_boundary_chains_with_every_kind_of_leaf(self) -> None:
        leaves = [1, "s", None, [], {}, {"a": 1}, [1, 2], {"a": {}}, {"a": []}]
        for levels in (0, 1, 2, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1):
            for leaf in leaves:
                for kinds in ("l", "d", "ld", "dl", "lld"):
                    with self.subTest(levels=levels, leaf=leaf, kinds=kinds):
                        self._agrees(chain(levels, leaf, kinds))

    def test_after_a_collection_untracks_what_it_can(self) -> None:
        values = [
            chain(levels, {"a": 1, "b": "c"}, kinds)
            for levels in (MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1)
            for kinds in ("d", "ld")
        ]
        gc.collect()
        for value in values:
            self._agrees(value)

    def test_wide_and_shallow(self) -> None:
        self._agrees(
            {"tools": [{"name": str(i), "schema": {"p": {"type": "x"}}} for i in range(1000)]}
        )

    @pytest.mark.slow
    @PROPERTY
    @given(FAST_PATH_VALUES, st.integers(0, MAX_DEPTH + 2), st.sampled_from(["l", "d", "ld"]))
    def test_any_value_at_any_depth(self, value: Any, levels: int, kinds: str) -> None:
        self._agrees(chain(levels, value, kinds))


def strict(text: str) -> Any:
    """What the strict path says: the value, or the refusal's reason."""
    try:
        return ("value", jsonvalue._parse(text, jsonvalue._DECODER.decode))
    except CorruptionReport as e:
        return ("refused", e.reason)


def fast(text: str) -> Any:
    try:
        return ("value", parse(text))
    except CorruptionReport as e:
        return ("refused", e.reason)


class Parsing(unittest.TestCase):
    @PROPERTY
    @given(
        st.lists(st.sampled_from(TOKENS + ["9" * (MAX_INT_DIGITS + 1)]), max_size=30).map("".join)
    )
    def test_the_fast_path_says_what_the_strict_one_says(self, text: str) -> None:
        self.assertEqual(repr(fast(text)), repr(strict(text)))

    @pytest.mark.slow
    @PROPERTY
    @given(FAST_PATH_VALUES, st.sampled_from(["", " ", "\n", " \t\r\n "]))
    def test_values_with_whitespace_around(self, value: Any, space: str) -> None:
        text = space + json.dumps(value) + space
        self.assertEqual(repr(fast(text)), repr(strict(text)))


@pytest.mark.slow
class Encoding(unittest.TestCase):
    @PROPERTY
    @given(FAST_PATH_VALUES)
    def test_what_json_dumps_would_write(self, value: Any) -> None:
        expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        self.assertEqual(encode(value), expected.encode("utf-8"))


if __name__ == "__main__":
    unittest.main()
