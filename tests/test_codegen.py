"""mcp_client.codegen: limits, refusals, determinism and the cage's helpers."""

from __future__ import annotations

import ast
import hashlib
import io
import random
import token
import tokenize
import unicodedata
import unittest
from typing import List

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcp_client import codegen
from mcp_client.codegen import (
    MAX_DESCRIPTION_CHARS, MAX_SURFACE_BYTES, MAX_TOOLS, Generated, SanitizerBreach,
    SurfaceTooLarge, ToolNameCollision, TooManyTools, describe, escape, generate, sanitize,
    scan_for_at, truncate,
)
from mcp_client.errors import GenerateError
from mcp_client.protocol import ToolDescriptor

OBJECT = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def tool(name: str, description: str = "", schema: object = None) -> ToolDescriptor:
    return ToolDescriptor(name, OBJECT if schema is None else schema, description=description)


def typed_schema(*names: str) -> object:
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}}


def tools(count: int, description: str = "") -> List[ToolDescriptor]:
    return [tool("tool_%03d" % index, description) for index in range(count)]


class LimitsTest(unittest.TestCase):
    def test_constants(self) -> None:
        self.assertEqual((MAX_TOOLS, MAX_SURFACE_BYTES), (256, 64 * 1024))
        self.assertEqual((codegen.MAX_DESCRIPTION_CHARS, codegen.MAX_NOTE_CHARS), (400, 120))

    def test_256_tools_are_generated(self) -> None:
        generated = generate("s", tools(MAX_TOOLS))
        self.assertEqual(generated.surface.count("\n"), MAX_TOOLS)

    def test_257_tools_are_refused(self) -> None:
        with self.assertRaises(TooManyTools) as caught:
            generate("s", tools(MAX_TOOLS + 1))
        self.assertEqual((caught.exception.count, caught.exception.limit), (257, 256))

    def test_surface_past_64_kib_is_refused(self) -> None:
        # 256 lines carrying a 400-character description each need ~115 KB.
        with self.assertRaises(SurfaceTooLarge) as caught:
            generate("s", tools(MAX_TOOLS, "d" * 10000))
        self.assertGreater(caught.exception.size, MAX_SURFACE_BYTES)
        self.assertEqual(caught.exception.limit, MAX_SURFACE_BYTES)

    def test_surface_counts_utf8_bytes_after_truncation(self) -> None:
        # 150 lines of 400 three-byte characters: 150 * 1200 bytes > 64 KiB,
        # though the same text is only 60,000 characters.
        with self.assertRaises(SurfaceTooLarge):
            generate("s", tools(150, "日" * 1000))
        generated = generate("s", tools(40, "日" * 1000))
        line = generated.surface.splitlines()[0]
        self.assertTrue(line.endswith("  # " + "日" * (MAX_DESCRIPTION_CHARS - 3) + "..."))


class CollisionTest(unittest.TestCase):
    def test_identical_names_are_refused_naming_both(self) -> None:
        with self.assertRaises(ToolNameCollision) as caught:
            generate("s", [tool("search"), tool("other"), tool("search")])
        error = caught.exception
        self.assertEqual((error.first, error.second, error.mangled),
                         ("search", "search", "search"))

    def test_digest_near_miss_is_refused(self) -> None:
        twin = "create_issue_" + hashlib.sha256(b"createIssue").hexdigest()[:8]
        with self.assertRaises(ToolNameCollision) as caught:
            generate("s", [tool("createIssue"), tool(twin)])
        self.assertEqual((caught.exception.first, caught.exception.second), ("createIssue", twin))

    def test_create_issue_and_createissue_both_generate(self) -> None:
        generated = generate("s", [tool("createIssue"), tool("create_issue")])
        names = [node.name for node in ast.parse(generated.source).body
                 if isinstance(node, ast.FunctionDef)]
        suffix = hashlib.sha256(b"createIssue").hexdigest()[:8]
        self.assertEqual(names, ["create_issue", "create_issue_" + suffix])

    def test_label_collision_degrades_only_that_tool(self) -> None:
        colliding = {"type": "object", "properties": {"a-b": {"type": "string"},
                                                      "a b": {"type": "string"}}}
        listing = [tool("t1", schema=colliding), tool("t2")]
        generated = generate("s", listing, digest=lambda _: "0" * 64)
        self.assertIn("def t1(arguments: Dict[str, Any]) -> Any:", generated.source)
        self.assertIn("# Takes one dict, sent unchanged as the arguments: parameters 'a-b' and",
                      generated.source)
        self.assertIn("def t2(q: str) -> Any:", generated.source)


class DeterminismTest(unittest.TestCase):
    def test_same_listing_same_bytes(self) -> None:
        listing = [tool("b", "second"), tool("a", "first"), tool("getThing", "x\ny")]
        self.assertEqual(generate("srv", listing), generate("srv", list(listing)))

    def test_listing_order_does_not_matter(self) -> None:
        listing = [tool("tool%d" % index, "d%d" % index) for index in range(20)]
        shuffled = list(listing)
        random.Random(4).shuffle(shuffled)
        self.assertEqual(generate("srv", listing), generate("srv", shuffled))

    def test_generated_is_a_frozen_value(self) -> None:
        generated = generate("srv", [tool("a")])
        self.assertIsInstance(generated, Generated)
        with self.assertRaises(AttributeError):
            generated.source = ""  # type: ignore[misc]

    def test_module_name_is_the_mangled_server(self) -> None:
        self.assertEqual(generate("git", []).module_name, "cap.mcp.git")
        suffix = hashlib.sha256("my-server".encode()).hexdigest()[:8]
        self.assertEqual(generate("my-server", []).module_name, "cap.mcp.my_server_" + suffix)

    def test_empty_listing_is_an_importable_module(self) -> None:
        generated = generate("s", [])
        self.assertEqual(generated.surface, "")
        tree = ast.parse(generated.source)
        self.assertEqual([type(node) for node in tree.body], [ast.ImportFrom])


class TruncateTest(unittest.TestCase):
    def test_short_text_is_kept(self) -> None:
        self.assertEqual(truncate("abc", 3), "abc")

    def test_cut_ends_in_dots_within_the_limit(self) -> None:
        self.assertEqual(truncate("abcdef", 5), "ab...")
        self.assertEqual(truncate("ab cdef", 6), "ab...")  # no space before the dots
        self.assertEqual(len(truncate("x" * 1000, 400)), 400)

    def test_tiny_limits_cut_without_dots(self) -> None:
        self.assertEqual(truncate("abcdef", 2), "ab")
        self.assertEqual(truncate("abcdef", 0), "")


class SanitizeTest(unittest.TestCase):
    def test_line_breaks_become_spaces(self) -> None:
        for brk in ("\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\t"):
            self.assertEqual(sanitize("one" + brk + "two", 400), "one two", repr(brk))

    def test_direction_changing_codepoints_are_removed(self) -> None:
        for char in BIDI:
            self.assertEqual(sanitize("ab" + char + "cd", 400), "abcd", "U+%04X" % ord(char))

    def test_other_controls_and_formats_are_removed(self) -> None:
        for char in ("\x00", "\x07", "\x1b", "\x7f", "\x9b", "\u200b", "\ufeff", "\ud800",
                     "\u00ad"):
            self.assertEqual(sanitize("a" + char + "b", 400), "ab", "U+%04X" % ord(char))

    def test_printable_text_is_kept(self) -> None:
        text = 'Quote """ hash # at @decorator back\\slash \\N{BULLET} 日本語 é 🙂'
        self.assertEqual(sanitize(text, 400), text)

    def test_whitespace_runs_collapse_and_ends_strip(self) -> None:
        self.assertEqual(sanitize("  a \t\n  b\u3000c  ", 400), "a b c")

    def test_limit_applies_after_cleaning(self) -> None:
        self.assertEqual(sanitize("\x00" * 500 + "abcdef", 5), "ab...")

    @settings(max_examples=300, deadline=None)
    @given(st.text(st.characters(blacklist_categories=())), st.integers(0, 50))
    @example("0\r0", 2)  # once cut to "0 ", which a second pass changed
    def test_output_is_clean_short_and_stable(self, text: str, limit: int) -> None:
        clean = sanitize(text, limit)
        self.assertLessEqual(len(clean), limit)
        for char in clean:
            self.assertNotIn(unicodedata.category(char), ("Cc", "Cf", "Cs", "Zl", "Zp"))
            self.assertNotIn(char, BIDI)
        self.assertNotIn("  ", clean)
        self.assertEqual(sanitize(clean, limit), clean)
        clean.encode("utf-8")  # no surrogate survives: the source must encode


class EscapeTest(unittest.TestCase):
    def test_examples(self) -> None:
        cases = {
            'a"b': 'a\\"b', "a\\b": "a\\\\b", "\n": "\\x0a", "\x00": "\\x00",
            "é": "\\xe9", "日": "\\u65e5", "🙂": "\\U0001f642", "\ud800": "\\ud800",
            "\u2028": "\\u2028", "\\N{BULLET}": "\\\\N{BULLET}", "'{x}'": "'{x}'",
            "@decorator": "\\x40decorator",
            "plain text_1 ~!": "plain text_1 ~!",
        }
        for text, escaped in cases.items():
            self.assertEqual(escape(text), escaped, repr(text))

    @settings(max_examples=400, deadline=None)
    @given(st.text(st.characters(blacklist_categories=())))
    def test_round_trips_exactly_as_printable_ascii(self, text: str) -> None:
        body = escape(text)
        self.assertTrue(all(" " <= char <= "~" for char in body))
        self.assertNotIn("@", body)
        self.assertEqual(ast.literal_eval('"' + body + '"'), text)


# Pieces of Python that open, close or hide strings and comments across lines.
FRAGMENTS = [
    "\n", "\r", "x = ", "#", "# c ", "@d", "@", " @ ", "a", "b", "(", ")", "{", "}", "[", "]",
    '"', "'", '"""', "'''", "f", "t", "r", "b", 'f"', "f'", 'rf"', "\\", "\\\n", "def g(): pass",
    " = 1", ", ", ":", "    ", "@=", "x",
]


class ScanForAtTest(unittest.TestCase):
    def test_at_in_comment_lines_is_inert_whatever_they_hold(self) -> None:
        source = '# @decorator\n# "quoted" @x \'\'\' """ f"{a@b}" \\\nx = 1\n'
        self.assertIsNone(scan_for_at(source))

    def test_at_inside_a_plain_string_is_settled_by_the_tokenizer(self) -> None:
        self.assertIsNone(scan_for_at('x = "@decorator"  # a @ b\ny = r"@"\n'))

    def test_at_tokens_are_refused(self) -> None:
        for source in ("@decorator\ndef f():\n    pass\n", "x = a @ b\n", "a @= b\n",
                       "x = 1\n@\n", "    @indented\n"):
            with self.assertRaises(SanitizerBreach, msg=source):
                scan_for_at(source)

    def test_a_carriage_return_ends_a_line_as_compile_sees_it(self) -> None:
        # compile() reads "# a\r@evil" as a comment line and a decorator line.
        with self.assertRaises(SanitizerBreach):
            scan_for_at("# a\r@evil\ndef f():\n    pass\n")

    def test_a_comment_line_inside_a_string_is_not_trusted(self) -> None:
        # Line 2 starts inside the triple-quoted string, so its "#" opens no
        # comment and the @ after the closing quotes is a real operator.
        with self.assertRaises(SanitizerBreach):
            scan_for_at('x = """\n#""" @ y\n')
        with self.assertRaises(SanitizerBreach):
            scan_for_at('x = "a\\\n#" @ y\n')  # a backslash carries the string on

    def test_f_strings_are_refused(self) -> None:
        # Before 3.12 the tokenizer hides an f-string's fields (code) in one token.
        for source in ('x = f"{a@b}"\n', 'x = rf"{a@b}"\n', 'x = F"@"\n'):
            with self.assertRaises(SanitizerBreach, msg=source):
                scan_for_at(source)

    def test_untokenizable_source_with_an_unproven_at_is_a_breach(self) -> None:
        for source in ('x = (\n"@"\n', 'x = "@\n', "x = $@\n", "x = 1\x00@\n"):
            with self.assertRaises(SanitizerBreach, msg=repr(source)):
                scan_for_at(source)

    def test_source_without_an_unproven_at_needs_no_tokenizer(self) -> None:
        # The claim is "no @ token", not "valid Python": compile is a later verb.
        self.assertIsNone(scan_for_at("x = (\n# @ in a comment\n"))

    def test_the_line_proof_declines_what_it_cannot_see(self) -> None:
        # Each of these may carry a string onto the next line, where a "#"
        # would not open a comment; the tokenizer must decide instead.
        for source in ('x = f"{a\n}"\n', 'x = rf"{a}"\n', 'x = (1)t"{a}"\n', "x = '''\n",
                       'x = "a\\\n"\n', "x = 1@2\n", 'x = "a" f"{b}"\n', 'x = b"a"\n',
                       "x = f'{a\n'\n", 'x = """a"""\n'):
            self.assertFalse(codegen._inert_by_lines(source), source)
        # Closing quotes after a letter, quotes of the other kind inside a
        # string, escaped quotes and comments in code are all told apart.
        for source in ('x = "git_diff"\n', 'x = ["if", "f", "t"]\n', "# f'{@\n",
                       'x = {"don\'t f": 1}\n', 'x = "a\\" f" # f"\n', "x = 1  # f'{\n",
                       'x = "\'\'\'", "\\"\\"\\""\n'):
            self.assertTrue(codegen._inert_by_lines(source), source)

    @settings(max_examples=500, deadline=None)
    @given(st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join))
    def test_the_line_proof_agrees_with_python(self, source: str) -> None:
        # Whenever the fast proof accepts, the tokenizer and Python's own
        # parser (the real judge, 3.12 f-strings included) find no @ token.
        text = source.replace("\r\n", "\n").replace("\r", "\n")
        if not codegen._inert_by_lines(text):
            return
        try:
            kinds = [t.exact_type for t in tokenize.generate_tokens(io.StringIO(text).readline)]
            self.assertNotIn(token.AT, kinds)
            self.assertNotIn(token.ATEQUAL, kinds)
        except (tokenize.TokenError, SyntaxError):
            pass  # judged by the parser below
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return  # a source the compiler refuses runs nothing
        for node in ast.walk(tree):
            self.assertNotIsInstance(node, ast.MatMult)
            self.assertEqual(getattr(node, "decorator_list", []), [])

    def test_generated_source_is_proven_by_lines(self) -> None:
        listing = [tool("a@b", '"quoted" @mention """ f"{x@y}" \\', typed_schema("@context"))]
        self.assertTrue(codegen._inert_by_lines(generate("s@rv", listing).source))


class DescribeTest(unittest.TestCase):
    def test_one_sanitized_line(self) -> None:
        error = ToolNameCollision("a\u202e\nb", "a\u202e\nb", "x")
        text = describe(error)
        self.assertTrue(text.startswith("ToolNameCollision: tools "))
        self.assertEqual(sanitize(text, 10000), text)

    def test_every_refusal_is_a_generate_error(self) -> None:
        for error in (TooManyTools(1, 0), SurfaceTooLarge(2, 1), SanitizerBreach("x"),
                      ToolNameCollision("a", "a", "a")):
            self.assertIsInstance(error, GenerateError)
            self.assertIn(type(error).__name__, describe(error))


if __name__ == "__main__":
    unittest.main()
