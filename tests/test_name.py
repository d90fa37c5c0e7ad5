"""mcp_client.name: server text to Python identifiers."""

from __future__ import annotations

import builtins
import hashlib
import keyword
import re
import unittest
from typing import List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_client.codegen import name
from mcp_client.codegen.name import (
    LABEL_RESERVED,
    RESERVED,
    Collision,
    first_collision,
    mangle,
    mangle_all,
    mangle_function,
    mangle_label,
    sha256_digest,
)

from strategies import examples

# An ASCII identifier: what mangle_label leaves alone unless it is reserved.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
        expected = hashlib.sha256("日本語".encode()).hexdigest()
        self.assertEqual(sha256_digest("日本語"), expected)

    def test_lone_surrogate_does_not_raise(self) -> None:
        # JSON "\ud800" parses to a lone surrogate; the digest must stay total.
        expected = hashlib.sha256(b"\xed\xa0\x80").hexdigest()
        self.assertEqual(sha256_digest("\ud800"), expected)


class MangleExamples(unittest.TestCase):
    def test_legal_short_identifiers_are_kept_verbatim(self) -> None:
        for text in (
            "create_issue",
            "git_status",
            "a",
            "read_file2",
            "a" * 32,
            "createIssue",
            "HTTPServer",
            "getURL",
            "v2Api",
            "ReadFile",
            "a__b",
            "sortBy_",
        ):
            self.assertEqual(mangle(text, sha256_digest), text)

    def test_create_issue_and_createissue_stay_distinct(self) -> None:
        self.assertEqual(mangle("create_issue", sha256_digest), "create_issue")
        self.assertEqual(mangle("createIssue", sha256_digest), "createIssue")
        # Alone, create-issue is create_issue; beside it, it takes its digest (mangle_all).
        self.assertEqual(mangle("create-issue", sha256_digest), "create_issue")
        self.assertEqual(
            mangle_all(["create-issue", "create_issue", "createIssue"], sha256_digest),
            ["create_issue_" + h("create-issue"), "create_issue", "createIssue"],
        )

    def test_only_dashes_and_dots_become_underscores_without_a_digest(self) -> None:
        for text, kept in (
            ("get-sum", "get_sum"),
            ("get_tiny-image", "get_tiny_image"),
            ("git.log--all", "git_log__all"),
            ("mcp-client-demo", "mcp_client_demo"),
        ):
            self.assertEqual(mangle(text, sha256_digest), kept)
            self.assertEqual(mangle_label(text, sha256_digest), kept)
        # A swap that lands on a reserved name, or starts with no letter, is digested.
        self.assertEqual(mangle("li-st", sha256_digest), "li_st")
        self.assertEqual(mangle("-x", sha256_digest), "x_" + h("-x"))
        self.assertEqual(mangle("Tool-Output", sha256_digest), "Tool_Output")
        self.assertEqual(mangle_label("---", sha256_digest), "arg_" + h("---"))

    def test_mangle_all_digests_every_altered_name_that_meets_another(self) -> None:
        self.assertEqual(
            mangle_all(["a-b", "a.b", "c-d"], sha256_digest),
            ["a_b_" + h("a-b"), "a_b_" + h("a.b"), "c_d"],
        )
        self.assertEqual(
            mangle_all(["x-y", "x_y"], sha256_digest, mangle_label), ["x_y_" + h("x-y"), "x_y"]
        )

    def test_illegal_characters_are_mangled_with_the_digest(self) -> None:
        cases = {
            "git log": "git_log",
            "read/file": "read_file",
            "getUser-by Id": "get_user_by_id",
            "_private_": "private",
            "café": "caf",
        }
        for text, stem in cases.items():
            self.assertEqual(mangle(text, sha256_digest), stem + "_" + h(text))

    def test_keywords_soft_keywords_and_builtins_are_digested_as_modules(self) -> None:
        for text in (
            "class",
            "import",
            "None",
            "True",
            "match",
            "case",
            "type",
            "list",
            "print",
            "dict",
            "id",
            "Ellipsis",
        ):
            self.assertEqual(mangle(text, sha256_digest), text.lower() + "_" + h(text))

    def test_a_function_keeps_a_builtins_or_a_soft_keywords_name(self) -> None:
        for text in ("list", "set", "type", "str", "print", "id", "match", "case", "Ellipsis"):
            self.assertEqual(mangle_function(text, sha256_digest), text)
        for text, stem in (
            ("class", "class"),
            ("None", "none"),
            ("internal", "internal"),
            ("Dict", "dict"),
            ("ToolOutput", "tool_output"),
            ("cap", "cap"),
        ):
            self.assertEqual(mangle_function(text, sha256_digest), stem + "_" + h(text))
        self.assertEqual(mangle_all(["list", "set"], sha256_digest), ["list", "set"])

    def test_names_the_module_binds_are_digested(self) -> None:
        for text in ("internal", "arguments", "cap", "mcp"):
            self.assertEqual(mangle(text, sha256_digest), text + "_" + h(text))
        for text, stem in (
            ("Any", "any"),
            ("Dict", "dict"),
            ("Literal", "literal"),
            ("TypedDict", "typed_dict"),
            ("ToolOutput", "tool_output"),
        ):
            self.assertEqual(mangle(text, sha256_digest), stem + "_" + h(text))

    def test_empty_after_mangling_gets_the_stem(self) -> None:
        for text in ("---", "日本語", "", "🙂"):
            self.assertEqual(mangle(text, sha256_digest), "mcp_" + h(text))
            self.assertEqual(mangle_label(text, sha256_digest), "arg_" + h(text))
        self.assertEqual(mangle("_", sha256_digest), "mcp_" + h("_"))

    def test_leading_digit_gets_the_stem(self) -> None:
        self.assertEqual(mangle("3d_render", sha256_digest), "mcp_3d_render_" + h("3d_render"))
        self.assertEqual(mangle_label("2fa", sha256_digest), "arg_2fa_" + h("2fa"))

    def test_non_ascii_identifiers_are_not_kept(self) -> None:
        # Python allows them, but NFKC folds distinct wire names into one identifier.
        self.assertTrue("ﬁle".isidentifier())
        self.assertEqual(mangle_label("ﬁle", sha256_digest), "le_" + h("ﬁle"))
        self.assertEqual(mangle("naïve", sha256_digest), "na_ve_" + h("naïve"))

    def test_long_tool_names_are_cut_to_32_and_digested(self) -> None:
        self.assertEqual(mangle("a" * 33, sha256_digest), "a" * 32 + "_" + h("a" * 33))
        long = "x" * 200
        self.assertEqual(mangle(long, sha256_digest), "x" * 32 + "_" + h(long))

    def test_a_cut_never_ends_in_an_underscore(self) -> None:
        text = "x" * 31 + "_y-z"  # the cut falls right after the underscore
        self.assertEqual(mangle(text, sha256_digest), "x" * 31 + "_" + h(text))

    def test_digest_contract_is_enforced(self) -> None:
        with self.assertRaises(ValueError):
            mangle("Bad ", lambda _: "XYZ")
        with self.assertRaises(ValueError):
            mangle("Bad ", lambda _: "abc")
        self.assertEqual(mangle("Ok", lambda _: "XYZ"), "Ok")  # unaltered: digest unused


class MangleLabelExamples(unittest.TestCase):
    def test_the_servers_own_names_are_kept(self) -> None:
        for text in (
            "sortBy",
            "dryRun",
            "excludePatterns",
            "nextThoughtNeeded",
            "dashboardUid",
            "oldText",
            "_private",
            "__dunder__",
            "x" * 32,
        ):
            self.assertEqual(mangle_label(text, sha256_digest), text)
        self.assertEqual(mangle_label("x" * 33, sha256_digest), "x" * 32 + "_" + h("x" * 33))

    def test_builtins_and_soft_keywords_are_fine_as_parameters(self) -> None:
        for text in (
            "type",
            "id",
            "format",
            "range",
            "filter",
            "str",
            "dict",
            "list",
            "match",
            "case",
            "_",
            "cast",
            "Dict",
            "Any",
            "Optional",
            "cap",
            "mcp",
        ):
            self.assertEqual(mangle_label(text, sha256_digest), text)

    def test_hard_keywords_are_digested(self) -> None:
        for text in ("class", "from", "lambda", "None", "True", "False", "async"):
            self.assertEqual(mangle_label(text, sha256_digest), text.lower() + "_" + h(text))

    def test_names_the_body_uses_are_digested(self) -> None:
        for text, stem in (
            ("internal", "internal"),
            ("arguments", "arguments"),
            ("_typing", "typing"),
            ("ToolOutput", "tool_output"),
            ("__debug__", "debug"),
        ):
            self.assertEqual(mangle_label(text, sha256_digest), stem + "_" + h(text))

    def test_illegal_labels_are_mangled(self) -> None:
        for text, stem in (("dry run", "dry_run"), ("a b", "a_b"), ("$ref", "ref")):
            self.assertEqual(mangle_label(text, sha256_digest), stem + "_" + h(text))


class Reserved(unittest.TestCase):
    def test_reserved_covers_this_interpreters_names(self) -> None:
        # mangle keeps only names that start with a letter, so those members
        # are the ones that matter; a new Python adding such a name must fail here.
        families = set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))
        producible = {text for text in families if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", text)}
        self.assertEqual(producible - RESERVED, set())

    def test_hard_keywords_are_label_reserved(self) -> None:
        self.assertEqual(set(keyword.kwlist) - LABEL_RESERVED, set())

    def test_soft_keywords_are_reserved_on_every_version(self) -> None:
        # keyword.softkwlist lacks "type" before 3.12; the generated module
        # must not change with the interpreter that generated it.
        self.assertTrue({"match", "case", "type", "_"} <= RESERVED)

    def test_module_names_are_reserved(self) -> None:
        self.assertTrue({"internal", "arguments", "_typing", "ToolOutput"} <= RESERVED)
        self.assertTrue({"internal", "arguments", "_typing", "ToolOutput"} <= LABEL_RESERVED)
        self.assertTrue(name.TYPING_NAMES <= RESERVED)


class FirstCollision(unittest.TestCase):
    def test_distinct_names_have_none(self) -> None:
        self.assertIsNone(first_collision(["createIssue", "create_issue", "x"], sha256_digest))

    def test_the_first_pair_in_order_is_named(self) -> None:
        found = first_collision(["a", "b", "a", "b"], sha256_digest)
        self.assertEqual(found, Collision("a", "a", "a"))

    def test_engineered_digest_near_miss(self) -> None:
        twin = "create_issue_" + h("create-issue")
        self.assertIsNone(first_collision(["create-issue", twin], sha256_digest))
        found = first_collision(["create-issue", "create_issue", twin], sha256_digest)
        self.assertEqual(found, Collision("create-issue", twin, twin))

    def test_injected_digest_and_label_mangler(self) -> None:
        found = first_collision(["x-y", "ok", "x_y", "x y"], zeros, name.mangle_label)
        self.assertEqual(found, Collision("x-y", "x y", "x_y_00000000"))


class MangleProperties(unittest.TestCase):
    @pytest.mark.slow
    @settings(max_examples=examples(300), deadline=None)
    @given(st.text(max_size=60))
    def test_output_is_a_safe_identifier(self, text: str) -> None:
        mangled = mangle(text, sha256_digest)
        self.assertRegex(mangled, r"\A[A-Za-z][A-Za-z0-9_]*\Z")
        self.assertFalse(keyword.iskeyword(mangled) or keyword.issoftkeyword(mangled))
        self.assertNotIn(mangled, dir(builtins))
        self.assertNotIn(mangled, RESERVED)
        self.assertLessEqual(len(mangled), name.MAX_NAME_CHARS + 1 + name.DIGEST_CHARS)
        function = mangle_function(text, sha256_digest)
        self.assertRegex(function, r"\A[A-Za-z][A-Za-z0-9_]*\Z")
        self.assertFalse(keyword.iskeyword(function))
        self.assertNotIn(function, name.FUNCTION_RESERVED)
        compile("def %s(): pass" % function, "<function>", "exec")
        label = mangle_label(text, sha256_digest)
        self.assertRegex(label, r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
        self.assertFalse(keyword.iskeyword(label))
        self.assertNotIn(label, LABEL_RESERVED)
        compile("def f(%s): pass" % label, "<label>", "exec")

    @settings(max_examples=examples(300), deadline=None)
    @given(st.one_of(st.text(max_size=40), st.from_regex(IDENTIFIER, fullmatch=True)))
    def test_unchanged_exactly_when_legal_short_and_free(self, text: str) -> None:
        keep = (
            bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", text))
            and len(text) <= 32
            and text not in RESERVED
        )
        self.assertEqual(mangle(text, sha256_digest) == text, keep)
        keep_label = (
            bool(IDENTIFIER.fullmatch(text)) and len(text) <= 32 and text not in LABEL_RESERVED
        )
        self.assertEqual(mangle_label(text, sha256_digest) == text, keep_label)

    @settings(max_examples=examples(300), deadline=None)
    @given(st.text(max_size=40))
    def test_altered_names_carry_their_own_digest(self, text: str) -> None:
        swapped = text.replace("-", "_").replace(".", "_")
        for mangled in (mangle(text, sha256_digest), mangle_label(text, sha256_digest)):
            if mangled not in (text, swapped):
                self.assertTrue(mangled.endswith("_" + h(text)))

    @pytest.mark.slow
    @settings(max_examples=examples(300), deadline=None)
    @given(st.lists(st.text(alphabet="ab-._ ", max_size=5), unique=True, max_size=8))
    def test_mangle_all_keeps_distinct_names_distinct(self, names: List[str]) -> None:
        for mangler in (mangle, mangle_label):
            mangled = mangle_all(names, sha256_digest, mangler)
            self.assertEqual(len(set(mangled)), len(names), (names, mangled))
            self.assertIsNone(first_collision(names, sha256_digest, mangler))


if __name__ == "__main__":
    unittest.main()
