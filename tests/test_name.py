"""mcp_client.name: server text to Python identifiers."""

from __future__ import annotations

import builtins
import hashlib
import keyword
import re
import unittest

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_client import name
from mcp_client.name import (
    RESERVED, Collision, first_collision, mangle, mangle_label, sha256_digest,
)

# The canonical form mangle leaves alone: lower snake case, starting with a
# letter, no doubled, leading or trailing underscore.
CANONICAL = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
PRODUCED = re.compile(r"[a-z][a-z0-9_]*")


def h(text: str) -> str:
    """The eight-character suffix, computed independently of the module."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def zeros(_: str) -> str:
    """An injected digest that makes every altered name collide."""
    return "0" * 64


class Sha256Digest(unittest.TestCase):
    def test_fips_180_test_vector(self) -> None:
        self.assertEqual(
            sha256_digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        )

    def test_hashes_utf8_bytes(self) -> None:
        expected = hashlib.sha256("日本語".encode("utf-8")).hexdigest()
        self.assertEqual(sha256_digest("日本語"), expected)

    def test_lone_surrogate_does_not_raise(self) -> None:
        # JSON "\ud800" parses to a lone surrogate; the digest must stay total.
        expected = hashlib.sha256(b"\xed\xa0\x80").hexdigest()
        self.assertEqual(sha256_digest("\ud800"), expected)


class MangleExamples(unittest.TestCase):
    def test_canonical_names_are_kept(self) -> None:
        for text in ("create_issue", "git_status", "a", "read_file2", "a" * 32):
            self.assertEqual(mangle(text, sha256_digest), text)

    def test_camel_case_is_split_and_digested(self) -> None:
        cases = {
            "createIssue": "create_issue",
            "HTTPServer": "http_server",
            "getURL": "get_url",
            "v2Api": "v2_api",
            "ReadFile": "read_file",
        }
        for text, stem in cases.items():
            self.assertEqual(mangle(text, sha256_digest), stem + "_" + h(text))

    def test_create_issue_and_createissue_stay_distinct(self) -> None:
        self.assertEqual(mangle("create_issue", sha256_digest), "create_issue")
        self.assertEqual(mangle("createIssue", sha256_digest), "create_issue_" + h("createIssue"))

    def test_punctuation_runs_become_one_underscore(self) -> None:
        self.assertEqual(mangle("git.log--all", sha256_digest), "git_log_all_" + h("git.log--all"))
        self.assertEqual(mangle("a__b", sha256_digest), "a_b_" + h("a__b"))
        self.assertEqual(mangle("_private_", sha256_digest), "private_" + h("_private_"))

    def test_keywords_soft_keywords_and_builtins_are_digested(self) -> None:
        for text in ("class", "import", "match", "case", "type", "list", "print", "dict", "id"):
            self.assertEqual(mangle(text, sha256_digest), text + "_" + h(text))

    def test_names_the_module_uses_are_digested(self) -> None:
        for text in ("internal", "arguments", "cap", "mcp"):
            self.assertEqual(mangle_label(text, sha256_digest), text + "_" + h(text))

    def test_empty_after_mangling_gets_the_stem(self) -> None:
        for text in ("---", "日本語", "", "_", "🙂"):
            self.assertEqual(mangle(text, sha256_digest), "mcp_" + h(text))
            self.assertEqual(mangle_label(text, sha256_digest), "arg_" + h(text))

    def test_leading_digit_gets_the_stem(self) -> None:
        self.assertEqual(mangle("3d_render", sha256_digest), "mcp_3d_render_" + h("3d_render"))
        self.assertEqual(mangle_label("2fa", sha256_digest), "arg_2fa_" + h("2fa"))

    def test_non_ascii_letters_are_dropped_not_transliterated(self) -> None:
        # Transliteration would follow the interpreter's Unicode database.
        self.assertEqual(mangle("café", sha256_digest), "caf_" + h("café"))

    def test_long_names_are_cut_to_32_and_digested(self) -> None:
        self.assertEqual(mangle("a" * 33, sha256_digest), "a" * 32 + "_" + h("a" * 33))
        long = "x" * 200
        self.assertEqual(mangle(long, sha256_digest), "x" * 32 + "_" + h(long))

    def test_a_cut_never_ends_in_an_underscore(self) -> None:
        text = "x" * 31 + "_yz"  # the cut falls right after the underscore
        self.assertEqual(mangle(text, sha256_digest), "x" * 31 + "_" + h(text))

    def test_digest_contract_is_enforced(self) -> None:
        with self.assertRaises(ValueError):
            mangle("Bad", lambda _: "XYZ")
        with self.assertRaises(ValueError):
            mangle("Bad", lambda _: "abc")
        self.assertEqual(mangle("ok", lambda _: "XYZ"), "ok")  # unaltered: digest unused


class Reserved(unittest.TestCase):
    def test_reserved_covers_this_interpreters_producible_names(self) -> None:
        # mangle only produces [a-z][a-z0-9_]*, so those members are the ones
        # that matter; a new Python adding such a name must fail here.
        families = set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))
        producible = {text for text in families if PRODUCED.fullmatch(text)}
        self.assertEqual(producible - RESERVED, set())

    def test_soft_keywords_are_reserved_on_every_version(self) -> None:
        # keyword.softkwlist lacks "type" before 3.12; the generated module
        # must not change with the interpreter that generated it.
        self.assertTrue({"match", "case", "type", "_"} <= RESERVED)

    def test_module_names_are_reserved(self) -> None:
        self.assertTrue({"internal", "arguments"} <= RESERVED)


class FirstCollision(unittest.TestCase):
    def test_distinct_names_have_none(self) -> None:
        self.assertIsNone(first_collision(["createIssue", "create_issue", "x"], sha256_digest))

    def test_the_first_pair_in_order_is_named(self) -> None:
        found = first_collision(["a", "b", "a", "b"], sha256_digest)
        self.assertEqual(found, Collision("a", "a", "a"))

    def test_engineered_digest_near_miss(self) -> None:
        twin = "create_issue_" + h("createIssue")
        found = first_collision(["createIssue", twin], sha256_digest)
        self.assertEqual(found, Collision("createIssue", twin, twin))

    def test_injected_digest_and_label_mangler(self) -> None:
        found = first_collision(["x-y", "ok", "x y"], zeros, name.mangle_label)
        self.assertEqual(found, Collision("x-y", "x y", "x_y_00000000"))


class MangleProperties(unittest.TestCase):
    @settings(max_examples=300, deadline=None)
    @given(st.text(max_size=60))
    def test_output_is_a_safe_identifier(self, text: str) -> None:
        for mangled in (mangle(text, sha256_digest), mangle_label(text, sha256_digest)):
            self.assertRegex(mangled, r"\A[a-z][a-z0-9_]*\Z")
            self.assertTrue(mangled.isidentifier())
            self.assertFalse(keyword.iskeyword(mangled) or keyword.issoftkeyword(mangled))
            self.assertNotIn(mangled, dir(builtins))
            self.assertNotIn(mangled, RESERVED)
            self.assertLessEqual(len(mangled), name.MAX_NAME_CHARS + 1 + name.DIGEST_CHARS)

    @settings(max_examples=300, deadline=None)
    @given(st.one_of(st.text(max_size=40), st.from_regex(CANONICAL, fullmatch=True)))
    def test_unchanged_exactly_when_canonical_short_and_free(self, text: str) -> None:
        keep = bool(CANONICAL.fullmatch(text)) and len(text) <= 32 and text not in RESERVED
        self.assertEqual(mangle(text, sha256_digest) == text, keep)

    @settings(max_examples=300, deadline=None)
    @given(st.text(max_size=40))
    def test_altered_names_carry_their_own_digest(self, text: str) -> None:
        mangled = mangle(text, sha256_digest)
        if mangled != text:
            self.assertTrue(mangled.endswith("_" + h(text)))


if __name__ == "__main__":
    unittest.main()
