"""mcp_client.codegen: limits, refusals, determinism and the cage's helpers."""

from __future__ import annotations

import ast
import hashlib
import inspect
import io
import json
import random
import sys
import token
import tokenize
import typing
import unicodedata
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcp_client import codegen
from mcp_client import text as text_module
from mcp_client.codegen import (
    MAX_DESCRIPTION_CHARS,
    MAX_NOTE_CHARS,
    MAX_SHAPE_CHARS,
    MAX_SURFACE_BYTES,
    MAX_TOOLS,
    Generated,
    deliver,
    describe,
    escape,
    generate,
    sanitize,
    scan_for_at,
    shapes,
    truncate,
)
from mcp_client.codegen import validate as checker
from mcp_client.codegen.schema import Record, plan_output
from mcp_client.codegen.validate import Deferred
from mcp_client.errors import (
    GenerateError,
    McpClientError,
    ProtocolFault,
    ResultMismatch,
    SanitizerBreach,
    SurfaceTooLarge,
    ToolFailed,
    ToolNameCollision,
    TooManyTools,
)
from mcp_client.protocol import CallToolResult, Text, ToolDescriptor, decode_call_tool
from mcp_client.text import inert, scan_window

FAKECAP = str(Path(__file__).with_name("fakecap"))
if FAKECAP not in sys.path:
    sys.path.insert(0, FAKECAP)

from cap.internal import mcp as seam  # noqa: E402
from cap.mcp import load_generated  # noqa: E402
from codegen_checks import assert_caged, assert_conforms, assert_sends_wire_names  # noqa: E402

from strategies import examples, json_values, with_json_text  # noqa: E402

OBJECT = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
NULL = {"type": "null"}
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def tool(
    name: str,
    description: str = "",
    schema: object = None,
    output: object = None,
    title: Optional[str] = None,
    annotations: Optional[Dict[str, Any]] = None,
) -> ToolDescriptor:
    return ToolDescriptor(
        name, OBJECT if schema is None else schema, title, description, output, annotations
    )


def typed_schema(*names: str) -> object:
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}}


def tools(count: int, description: str = "") -> List[ToolDescriptor]:
    return [tool("tool_%03d" % index, description) for index in range(count)]


class Limits(unittest.TestCase):
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

    def test_256_tools_with_400_character_descriptions_are_generated(self) -> None:
        # Issue 6's collision: 256 lines of 400 characters need ~115 KB. The
        # descriptions give first, cut to MAX_NOTE_CHARS; the server is kept.
        generated = generate("s", tools(MAX_TOOLS, "d" * 10000))
        self.assertLessEqual(len(generated.surface.encode("utf-8")), MAX_SURFACE_BYTES)
        for line in generated.surface.splitlines():
            self.assertTrue(line.endswith("  # " + "d" * (MAX_NOTE_CHARS - 1) + "\u2026"), line)
        # The source is never cut: each docstring keeps its description whole
        # up to MAX_DOC_DESCRIPTION_CHARS, and so does each tool's doc.
        full = "d" * (codegen.MAX_DOC_DESCRIPTION_CHARS - 3) + "..."
        module = ast.parse(generated.source)
        docs = [
            ast.get_docstring(node) for node in module.body if isinstance(node, ast.FunctionDef)
        ]
        self.assertEqual([doc.splitlines()[0] for doc in docs if doc], [full] * MAX_TOOLS)
        self.assertEqual(
            [t.doc.split("\n\n")[1].splitlines()[0] for t in generated.tools], [full] * MAX_TOOLS
        )
        self.assertEqual([t.line for t in generated.tools], generated.surface.splitlines())

    def test_surface_counts_utf8_bytes_after_truncation(self) -> None:
        # 150 lines of 400 three-byte characters: 150 * 1200 bytes > 64 KiB,
        # though the same text is only 60,000 characters; cut to 120, they fit.
        cut = generate("s", tools(150, "日" * 1000)).surface.splitlines()[0]
        self.assertTrue(cut.endswith("  # " + "日" * (MAX_NOTE_CHARS - 1) + "\u2026"))
        generated = generate("s", tools(40, "日" * 1000))
        line = generated.surface.splitlines()[0]
        self.assertTrue(line.endswith("  # " + "日" * (MAX_DESCRIPTION_CHARS - 1) + "\u2026"))


class Collisions(unittest.TestCase):
    def test_identical_names_are_refused_naming_both(self) -> None:
        with self.assertRaises(ToolNameCollision) as caught:
            generate("s", [tool("search"), tool("other"), tool("search")])
        error = caught.exception
        self.assertEqual((error.first, error.second, error.mangled), ("search", "search", "search"))

    def test_digest_near_miss_is_refused(self) -> None:
        # create-issue meets create_issue, so it takes its digest, which meets the twin.
        twin = "create_issue_" + hashlib.sha256(b"create-issue").hexdigest()[:8]
        with self.assertRaises(ToolNameCollision) as caught:
            generate("s", [tool("create-issue"), tool("create_issue"), tool(twin)])
        self.assertEqual((caught.exception.first, caught.exception.second), ("create-issue", twin))

    def test_create_issue_and_createissue_both_generate_verbatim(self) -> None:
        output = {"type": "object", "properties": {"id": {"type": "integer"}}}
        generated = generate(
            "s", [tool("createIssue", output=output), tool("create_issue", output=output)]
        )
        module = ast.parse(generated.source)
        names = [node.name for node in module.body if isinstance(node, ast.FunctionDef)]
        self.assertEqual(names, ["createIssue", "create_issue"])
        # Both result types would be CreateIssueResult: each carries its digest.
        types = [node.targets[0].id for node in module.body if isinstance(node, ast.Assign)]
        self.assertEqual(len(set(types)), 2)
        self.assertTrue(all(name.startswith("CreateIssueResult_") for name in types), types)

    def test_label_collision_degrades_only_that_tool(self) -> None:
        colliding = {
            "type": "object",
            "properties": {
                "a-b": {"type": "string"},
                "a_b": {"type": "string"},
                "a b": {"type": "string"},
            },
        }
        listing = [tool("t1", schema=colliding), tool("t2")]
        generated = generate("s", listing, digest=lambda _: "0" * 64)
        self.assertIn("def t1(arguments: Dict[str, Any]) -> ToolOutput:", generated.source)
        self.assertIn(
            "arguments: one dict, sent unchanged as the tool's arguments: "
            "parameters 'a-b' and 'a b' both become a_b_00000000",
            " ".join(generated.tools[0].doc.split()),
        )
        self.assertIn("def t2(q: str) -> ToolOutput:", generated.source)


class BuiltinNames(unittest.TestCase):
    """A tool named like a builtin keeps its name; the module spells what it shadows
    through ``builtins``, so its types still mean the builtins."""

    NAMES = ("list", "set", "type", "str", "int", "float", "bool", "dict", "match", "print")
    SCHEMA = {
        "type": "object",
        "properties": {
            "x": {"type": "string"},
            "n": {"type": "integer"},
            "m": {
                "type": "object",
                "properties": {"f": {"type": "number"}, "b": {"type": "boolean"}},
            },
        },
        "required": ["x"],
    }

    def listing(self) -> List[ToolDescriptor]:
        listing = [tool(name, schema=self.SCHEMA) for name in self.NAMES]
        return listing + [tool("keys", schema=self.SCHEMA, output={"type": "object"})]

    def generated(self) -> Any:
        return generate("s", self.listing())

    def test_the_names_are_kept_and_the_module_runs(self) -> None:
        generated = self.generated()
        self.assertEqual(
            sorted(t.function for t in generated.tools), sorted(self.NAMES + ("keys",))
        )
        self.assertIn("import builtins as _builtins", generated.source)
        self.assertIn("def str(\n    x: _builtins.str,", generated.source)
        self.assertIn("\"data\": Optional[Union[Dict[_builtins.str, Any]", generated.source)
        module = load_generated("cap.mcp.s", generated.source)
        result = CallToolResult((Text("[1]"),), False, None)
        with seam.recording(seam.contract(lambda name, arguments: result, generated.tools)) as log:
            out = module.list("a", n=2)
            module.str("b")
        self.assertEqual(out["data"], [1])
        self.assertEqual(
            [(c.tool, c.arguments) for c in log],
            [("list", {"x": "a", "n": 2}), ("str", {"x": "b"})],
        )
        hints = typing.get_type_hints(module.int)
        self.assertIs(hints["x"], str)
        assert_caged(self, generated, "s", self.listing())

    def test_a_module_that_shadows_nothing_imports_no_builtins(self) -> None:
        self.assertNotIn("builtins", generate("s", [tool("list")]).source)
        self.assertNotIn("_builtins", generate("s", [tool("get")]).source)

    def test_a_server_named_like_a_builtin_is_still_digested(self) -> None:
        # ``from cap.mcp import list`` would shadow list in the program.
        self.assertRegex(
            generate("list", [tool("a")]).module_name, r"\Acap\.mcp\.list_[0-9a-f]{8}\Z"
        )


class Determinism(unittest.TestCase):
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
        self.assertEqual(generate("my-server", []).module_name, "cap.mcp.my_server")
        self.assertEqual(generate("mcp-client-demo", []).module_name, "cap.mcp.mcp_client_demo")
        suffix = hashlib.sha256(b"my server").hexdigest()[:8]
        self.assertEqual(generate("my server", []).module_name, "cap.mcp.my_server_" + suffix)

    def test_empty_listing_is_an_importable_module(self) -> None:
        generated = generate("s", [])
        self.assertEqual(generated.surface, "")
        tree = ast.parse(generated.source)
        self.assertEqual([type(node) for node in tree.body], [ast.Expr, ast.Import, ast.ImportFrom])
        self.assertEqual(ast.get_docstring(tree), "The tools of MCP server s.")


def obj(properties: Dict[str, Any], *required: str, **extra: Any) -> Dict[str, Any]:
    return dict({"type": "object", "properties": properties, "required": list(required)}, **extra)


TIME = obj({"timezone": {"type": "string"}, "is_dst": {"type": "boolean"}}, "timezone", "is_dst")
TIME_RECORD = plan_output(TIME)
assert isinstance(TIME_RECORD, Record)


def checked(test: unittest.TestCase, listing: List[ToolDescriptor], **kwargs: Any) -> Generated:
    generated = generate("s", listing, **kwargs)
    assert_caged(test, generated, "s", listing)
    assert_sends_wire_names(test, generated, "s", listing, **kwargs)
    return generated


class ResultTypes(unittest.TestCase):
    def test_a_tool_with_an_output_schema_returns_its_type(self) -> None:
        generated = checked(self, [tool("now", output=TIME)])
        self.assertIn(
            'NowResult = TypedDict("NowResult", {"timezone": str, "is_dst": bool})\n',
            generated.source,
        )
        self.assertIn("def now(q: str) -> NowResult:", generated.source)
        self.assertIn("return _typing.cast(NowResult, internal.invoke(", generated.source)
        self.assertIn("from typing import TypedDict\nimport typing as _typing\n", generated.source)
        self.assertEqual(generated.tools[0].returns, "structured")
        self.assertEqual(
            generated.surface,
            's.now(q: str) -> NowResult{"timezone": str, "is_dst": bool}\n'.replace(
                "s.", "cap.mcp.s.", 1
            ),
        )

    def test_without_an_output_schema_it_returns_a_tool_output(self) -> None:
        generated = checked(self, [tool("plain"), tool("other")])
        self.assertIn("def plain(q: str) -> ToolOutput:", generated.source)
        self.assertIn(
            "from typing import Any, Dict, List, Literal, Optional, TypedDict, Union\n",
            generated.source,
        )
        # Declared once, however many tools return it, after the block types.
        self.assertEqual(generated.source.count('ToolOutput = TypedDict("ToolOutput"'), 1)
        self.assertIn("\n".join(codegen.content.DECLARATIONS), generated.source)
        # A TypedDict of the module's own: nothing of the runtime but invoke is needed.
        self.assertIn(
            'ToolOutput = TypedDict("ToolOutput", {\n'
            '    "text": str, "data": Optional[Union[Dict[str, Any], List[Any]]], '
            '"content": List[Block],\n})',
            generated.source,
        )
        self.assertEqual(generated.outputs, ("ToolOutput",))
        self.assertEqual([t.returns for t in generated.tools], ["result", "result"])
        # The surface line says what a ToolOutput holds, as it does a result type's shape.
        self.assertTrue(
            generated.surface.endswith(
                ') -> ToolOutput{"text": str, "data": dict | list | None, "content": list[Block]}\n'
            )
        )

    def test_an_unreadable_output_schema_returns_any_and_says_why(self) -> None:
        generated = checked(self, [tool("odd", output={"anyOf": [TIME, TIME]})])
        self.assertIn("def odd(q: str) -> Dict[str, Any]:", generated.source)
        self.assertIn("untyped: top level uses anyOf", " ".join(generated.tools[0].doc.split()))
        self.assertTrue(generated.surface.endswith(") -> dict[str, Any]\n"))

    def test_the_header_states_the_contract(self) -> None:
        for listing in ([], [tool("now", output=TIME)]):
            source = generate("s", listing).source
            comment = " ".join(line[2:] for line in source.splitlines() if line.startswith("# "))
            self.assertIn(
                "For a tool that declares an outputSchema, that is the call's "
                "structuredContent as the server sent it",
                comment,
            )
            self.assertIn(
                "For a tool without one, it is a ToolOutput (internal.ToolOutput: a dict "
                "whose keys read as attributes too): the text blocks joined by newlines, "
                "that text parsed when it is one JSON object or array, or a Python "
                "literal of one (data), and every content block as the server sent it. "
                "A failed "
                "call (isError, or a tool with an outputSchema that brought no "
                "structuredContent object) raises mcp_client.errors.ToolFailed "
                "instead.",
                comment,
            )

    def test_optional_keys_stay_optional_and_required_ones_required(self) -> None:
        schema = obj(
            {"id": {"type": "string"}, "note": {"type": "string"}, "size": {"type": "integer"}},
            "id",
            "size",
        )
        generated = checked(self, [tool("get", output=schema)])
        self.assertIn(
            '_GetResultRequired = TypedDict("_GetResultRequired", '
            '{"id": str, "size": int})\n'
            '_GetResultOptional = TypedDict("_GetResultOptional", {\n'
            '    "note": str,\n'
            '}, total=False)\n'
            'class GetResult(_GetResultRequired, _GetResultOptional):\n    pass\n',
            generated.source,
        )
        self.assertIn('GetResult{"id": str, "note"?: str, "size": int}', generated.surface)
        module = load_generated(generated.module_name, generated.source)
        self.assertEqual(module.GetResult.__required_keys__, frozenset({"id", "size"}))
        self.assertEqual(module.GetResult.__optional_keys__, frozenset({"note"}))
        every = obj({"a": {"type": "string"}})
        self.assertIn('{"a": str}, total=False)', checked(self, [tool("get", output=every)]).source)

    def test_nested_objects_lists_and_nullables(self) -> None:
        line = obj({"sku": {"type": "string"}}, "sku")
        schema = obj(
            {
                "lines": {"type": "array", "items": line},
                "refund": {"anyOf": [obj({"amount": {"type": "number"}}, "amount"), NULL]},
                "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            },
            "lines",
            "refund",
            "tags",
            additionalProperties=True,
        )
        generated = checked(self, [tool("order", output=schema)])
        self.assertIn(
            '    "lines": List[OrderResultLines],\n'
            '    "refund": Optional[OrderResultRefund],\n'
            '    "tags": Optional[List[str]],\n',
            generated.source,
        )
        self.assertIn(
            "# OrderResultLines: each item of the value under the key \"lines\" of\n"
            "# OrderResult.\n",
            generated.source,
        )
        self.assertIn("# Other keys may appear too (additionalProperties).", generated.source)
        # Nested types come before the types that use them.
        source = generated.source
        self.assertLess(source.index("OrderResultLines = "), source.index("OrderResult = "))
        self.assertIn(
            '-> OrderResult{"lines": list[{"sku": str}], "refund": {"amount": float} '
            '| None, "tags": list[str] | None, ...}',
            generated.surface,
        )

    def test_type_names_carry_a_digest_only_when_they_must(self) -> None:
        # a_1 and a1 are distinct functions whose types would both be A1Result.
        listing = [tool(name, output=TIME) for name in ("a_1", "a1", "getThing", "class")]
        generated = checked(self, listing)
        names = {
            node.targets[0].id
            for node in ast.parse(generated.source).body  # type: ignore
            if isinstance(node, ast.Assign)
        }
        digests = {
            name: hashlib.sha256(json.dumps([name, "result"]).encode()).hexdigest()[:8]
            for name in ("a_1", "a1")
        }
        klass = hashlib.sha256(b"class").hexdigest()[:8]  # class_<8 hex>, in PascalCase
        self.assertEqual(
            names,
            {
                "A1Result_" + digests["a_1"],
                "A1Result_" + digests["a1"],
                "GetThingResult",
                "Class" + klass.capitalize() + "Result",
            },
        )

    def test_type_names_never_meet_a_function_or_a_label(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "GetResult": {"type": "string"},
                "item": {"type": "object", "properties": {"x": {"type": "integer"}}},
            },
        }
        listing = [tool("get", schema=schema, output=TIME), tool("GetItem")]
        generated = checked(self, listing)
        module = ast.parse(generated.source)
        names = {node.targets[0].id for node in module.body if isinstance(node, ast.Assign)}
        self.assertTrue(any(name.startswith("GetResult_") for name in names), names)
        self.assertTrue(any(name.startswith("GetItem_") for name in names), names)

    def test_keys_travel_verbatim_and_escaped(self) -> None:
        keys = [
            "class",
            "import",
            "list",
            "internal",
            "arguments",
            "TypedDict",
            "NowResult",
            "Any",
            "",
            "---",
            "a\u202eb",
            'quote"d',
            "@context",
            "日本",
        ]
        schema = obj({key: {"type": "integer"} for key in keys}, *keys)
        generated = checked(self, [tool("now", output=schema)])
        module = load_generated(generated.module_name, generated.source)
        self.assertEqual(list(module.NowResult.__annotations__), keys)
        self.assertIn('"a\\u202eb": int', generated.source)
        self.assertIn('"\\x40context"?: int'.replace("?", ""), generated.surface)
        self.assertNotIn("\u202e", generated.surface)

    def test_sibling_keys_that_meet_under_an_engineered_digest_are_refused(self) -> None:
        # With a digest that always says zeros, "a-b" and "a b" both name TResultAB_00000000:
        # an engineered digest, refused rather than repaired.
        inner = obj({"x": {"type": "integer"}}, "x")
        schema = obj({"a-b": inner, "a b": inner}, "a-b", "a b")
        with self.assertRaises(ToolNameCollision) as caught:
            generate("s", [tool("t", output=schema)], digest=lambda _: "0" * 64)
        self.assertEqual(caught.exception.mangled, "TResultAB_00000000")
        # The default digest keeps them apart.
        generated = checked(self, [tool("t", output=schema)])
        self.assertEqual(generated.source.count(" = TypedDict("), 3)

    def test_a_long_shape_shows_its_top_level_keys_then_only_its_name(self) -> None:
        inner = obj({"k%d" % index: {"type": "string"} for index in range(40)})
        wide = obj({"a": inner, "b": inner})
        shown = checked(self, [tool("w", output=wide)]).surface
        self.assertIn('-> WResult{"a"?: {...}, "b"?: {...}}\n', shown)
        huge = obj({"k%04d" % index: {"type": "string"} for index in range(200)})
        shown = checked(self, [tool("w", output=huge)]).surface
        self.assertTrue(shown.endswith(") -> WResult\n"), shown)
        self.assertGreater(len('"k0000"?: str, ') * 200, MAX_SHAPE_CHARS)


EDIT_FILE = obj(
    {
        "path": {"type": "string", "description": "Where the file is"},
        "edits": {
            "type": "array",
            "description": "The edits, in order",
            "items": obj(
                {
                    "oldText": {
                        "type": "string",
                        "description": "Text to search for - must match exactly",
                    },
                    "newText": {"type": "string", "description": "Text to replace with"},
                    "mode": {"enum": ["exact", "fuzzy"], "description": "How to match"},
                },
                "oldText",
                "newText",
            ),
        },
        "sortBy": {
            "type": "string",
            "enum": ["name", "size"],
            "default": "name",
            "description": "Sort entries by name or size",
        },
        "dryRun": {"type": "boolean", "default": False},
    },
    "path",
    "edits",
)


class Docs(unittest.TestCase):
    """Every function's docstring, and each tool's line and doc (issue 19 items 3 and 4)."""

    def generated(self) -> Generated:
        hints = {"destructiveHint": True}
        return checked(
            self,
            [
                tool("edit_file", "Make line-based edits.", EDIT_FILE, TIME, annotations=hints),
                tool("plain", "Plain."),
            ],
        )

    def test_the_docstring_says_everything_a_call_needs(self) -> None:
        generated = self.generated()
        module = load_generated(generated.module_name, generated.source)
        doc = " ".join((inspect.getdoc(module.edit_file) or "").split())
        for said in (
            "Make line-based edits.",
            "path: (str) Where the file is.",
            "edits: (list[EditFileEdits]) The edits, in order.",
            'sortBy: (Literal["name", "size"], optional) Sort entries by name or '
            'size. One of: "name", "size". Default: "name".',
            "dryRun: (bool, optional) Default: False",
            'EditFileEdits: {"oldText": str, "newText": str, "mode"?: Literal["exact", "fuzzy"]}',
            '"oldText": Text to search for - must match exactly.',
            '"mode": How to match. One of: "exact", "fuzzy".',
            "Returns: EditFileResult: the call's structuredContent",
            "Server says (claims, not checked): destructive",
            "Raises: ToolFailed: the tool reported an error (isError) or brought no "
            "structuredContent",
        ):
            self.assertIn(said, doc)
        plain = " ".join((inspect.getdoc(module.plain) or "").split())
        self.assertIn(
            "Returns: ToolOutput: a dict whose keys read as attributes too: text, the text "
            "blocks joined by newlines",
            plain,
        )
        self.assertIn(
            "data, that text parsed when it is one JSON object or array, or a Python literal",
            plain,
        )
        self.assertIn("Raises: ToolFailed: the tool reported an error (isError); str()", plain)

    def test_the_surface_and_the_signature_show_one_default_said_once(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "max_count": {"type": "integer", "default": 10},
                "pattern": {"type": "string", "default": "%", "description": 'Default: "%"'},
                "odd": {"type": "integer", "default": "10"},  # not its own type: left out
                "tags": {"type": "array", "items": {"type": "string"}, "default": []},
            },
        }
        generated = checked(self, [tool("log", schema=schema)])
        line = generated.tools[0].line
        self.assertIn('*, max_count: int = 10, pattern: str = "%", odd: int | None = None', line)
        self.assertIn("tags: list[str] | None = None", line)
        self.assertIn(
            'max_count: int = 10,\n    pattern: str = "%",\n    odd: Optional[int] = None,\n'
            "    tags: Optional[List[str]] = None,\n",
            generated.source,
        )
        # A shown default is sent as given; the others only when given.
        self.assertIn(
            '"max_count": max_count,\n        "pattern": pattern,\n    }', generated.source
        )
        self.assertIn('    if odd is not None:\n        arguments["odd"] = odd', generated.source)
        doc = " ".join(generated.tools[0].doc.split())
        self.assertEqual(doc.count("Default"), 4, doc)  # once each: pattern's is its own
        self.assertIn("max_count: (int, optional) Default: 10.", doc)
        self.assertIn('odd: (int, optional) Default: "10" (the server applies it', doc)
        self.assertIn("tags: (list[str], optional) Default: [] (the server applies it", doc)

    def test_the_module_docstring_names_the_server_and_holds_its_instructions(self) -> None:
        from mcp_client.protocol import InitializeResult, ServerInfo

        info = InitializeResult(
            "2025-06-18",
            ServerInfo("cal\x1b[2J", "1.4\u202e", 'Cal "x"'),
            {},
            None,
            'Use zones.\n@decorator\ndef evil(): pass\n"""',
        )
        generated = generate("s", [tool("now")], info=info)
        assert_caged(self, generated, "s", [tool("now")])
        module = load_generated("m_info", generated.source)
        paragraphs = [" ".join(part.split()) for part in (module.__doc__ or "").split("\n\n")]
        self.assertEqual(
            paragraphs,
            [
                'The tools of MCP server cal[2J, version 1.4 (title "Cal "x""), configured as s.',
                "The server's instructions (its text, not checked): "
                'Use zones. @decorator def evil(): pass """',
            ],
        )

    def test_a_renamed_tool_names_its_wire_name(self) -> None:
        generated = checked(self, [tool("read-file", "Reads."), tool("get.sum", "Adds.")])
        # Not an identifier only because of "-" or ".": the name with "_", no digest.
        self.assertEqual([t.function for t in generated.tools], ["get_sum", "read_file"])
        self.assertIn('Reads.\n\nThe server\'s tool "read-file".\n', generated.tools[1].doc)
        self.assertIn('"get.sum", arguments))', generated.source)  # the wire name verbatim
        # A digest only where two names would meet: the altered one takes it.
        clash = checked(self, [tool("read-file"), tool("read_file")])
        self.assertEqual(
            sorted(t.function for t in clash.tools),
            ["read_file", "read_file_" + hashlib.sha256(b"read-file").hexdigest()[:8]],
        )

    def test_each_tool_has_its_line_and_its_doc_in_surface_order(self) -> None:
        generated = self.generated()
        self.assertEqual(
            [(t.function, t.wire_name, t.returns) for t in generated.tools],
            [("edit_file", "edit_file", "structured"), ("plain", "plain", "result")],
        )
        self.assertEqual(
            [t.line + "\n" for t in generated.tools], generated.surface.splitlines(keepends=True)
        )
        module = load_generated(generated.module_name, generated.source)
        first = generated.tools[0]
        signature, rest = first.doc.split("\n\n", 1)
        self.assertEqual(rest, module.edit_file.__doc__)
        self.assertEqual(signature, first.line.split("  # ")[0])
        self.assertIn(
            'edits: list[EditFileEdits{"oldText": str, "newText": str, "mode"?: '
            'Literal["exact", "fuzzy"]}]',
            first.line,
        )
        self.assertIn('sortBy: Literal["name", "size"] = "name", dryRun: bool = False', first.line)

    def test_server_text_in_a_docstring_stays_an_inert_literal(self) -> None:
        text = '"""\n@evil\ndef x(): pass\n\u202e\\'
        schema = obj({"a": {"type": "string", "description": text, "default": text}})
        generated = checked(self, [tool("t", text, schema)])
        module = load_generated(generated.module_name, generated.source)
        self.assertNotIn("\u202e", module.t.__doc__)
        self.assertIn('""" @evil def x(): pass', module.t.__doc__)  # sanitized: one line
        self.assertTrue(codegen._inert_by_lines(generated.source))

    def test_a_huge_doc_is_cut_to_its_bound_and_says_what_is_left_out(self) -> None:
        keys = {"k%03d" % n: {"type": "string", "description": "d" * 300} for n in range(100)}
        generated = checked(self, [tool("t", "x" * 5000, obj({"o": obj(keys)}))])
        doc = generated.tools[0].doc
        self.assertLessEqual(len(doc.encode("utf-8")), codegen.MAX_DOC_BYTES)
        self.assertRegex(
            doc.splitlines()[-1],
            r"^\(cut here: a tool's doc is at most %d bytes; \d+ lines not shown, with "
            r"Returns\)$" % codegen.MAX_DOC_BYTES,
        )


class Claims(unittest.TestCase):
    def test_hints_are_shown_as_claims_in_a_fixed_order(self) -> None:
        hints = {
            "openWorldHint": False,
            "idempotentHint": True,
            "destructiveHint": False,
            "readOnlyHint": True,
            "unknownHint": True,
            "title": 3,
        }
        generated = checked(self, [tool("t", "Does it.", annotations=hints)])
        claim = "server says: read-only, non-destructive, idempotent, closed-world"
        self.assertIn(
            "Server says (claims, not checked): " + claim[13:],
            " ".join(generated.tools[0].doc.split()),
        )
        self.assertTrue(generated.surface.endswith("  # [%s] Does it.\n" % claim))

    def test_every_answer_reads_as_said(self) -> None:
        hints = {
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": True,
        }
        generated = generate("s", [tool("t", annotations=hints)])
        self.assertIn(
            "[server says: not read-only, destructive, not idempotent, open-world]",
            generated.surface,
        )

    def test_hints_that_are_not_booleans_are_not_claims(self) -> None:
        generated = generate(
            "s", [tool("t", annotations={"readOnlyHint": "yes", "destructiveHint": None})]
        )
        self.assertNotIn("server says", generated.source + generated.surface)

    def test_the_title_is_shown_when_it_tells_something(self) -> None:
        cases = [
            (tool("get_thing", "Gets it.", title="Get the thing"), 'title "Get the thing"'),
            (
                tool("t", "Gets it.", annotations={"title": "Old-style title"}),
                'title "Old-style title"',
            ),
            (tool("t", "Gets it.", title="New", annotations={"title": "Old"}), 'title "New"'),
            (tool("get_thing", "Gets it.", title="get_thing"), None),  # the name again
            (ToolDescriptor("t", OBJECT, title="Only a title"), None),  # the description
            (tool("t", "Gets it.", title="\u202eevil\nnext"), 'title "evil next"'),
        ]
        for listed, shown in cases:
            surface = generate("s", [listed]).surface
            if shown is None:
                self.assertNotIn("server says", surface)
            else:
                self.assertIn("[server says: %s]" % shown, surface)
        long_title = generate("s", [tool("t", "d", title="x" * 500)]).surface
        self.assertIn('title "%s..."' % ("x" * (MAX_NOTE_CHARS - 3)), long_title)


class SurfaceBudget(unittest.TestCase):
    """Each rung of the budget is taken only when the one before does not fit."""

    def listing(
        self,
        description: str,
        params: int,
        output: object = None,
        annotations: Optional[Dict[str, Any]] = None,
    ) -> List[ToolDescriptor]:
        schema = typed_schema(*("p%02d" % index for index in range(params)))
        return [
            tool("tool_%03d" % index, description, schema, output, annotations=annotations)
            for index in range(MAX_TOOLS)
        ]

    def fits(self, generated: Generated) -> List[str]:
        self.assertLessEqual(len(generated.surface.encode("utf-8")), MAX_SURFACE_BYTES)
        return generated.surface.splitlines()

    def test_the_full_surface_when_it_fits(self) -> None:
        # 251 bytes a line (64,256 in all) with the 150-character descriptions.
        lines = self.fits(generate("s", self.listing("d" * 150, 1, TIME)))
        self.assertTrue(
            lines[0].endswith('-> Tool000Result{"timezone": str, "is_dst": bool}  # ' + "d" * 150),
            lines[0],
        )

    def test_descriptions_are_cut_first(self) -> None:
        # 501 bytes a line with 400-character descriptions, 221 with 120.
        lines = self.fits(generate("s", self.listing("d" * 400, 1, TIME)))
        self.assertTrue(lines[0].endswith('"is_dst": bool}  # ' + "d" * 119 + "\u2026"), lines[0])

    def test_then_the_result_shapes(self) -> None:
        # A 10-key shape and 120 characters: 348 bytes a line; without the shape 188.
        wide = obj({"key_%02d" % index: {"type": "string"} for index in range(10)})
        lines = self.fits(generate("s", self.listing("d" * 400, 1, wide)))
        self.assertTrue(lines[0].endswith("-> Tool000Result  # " + "d" * 119 + "\u2026"), lines[0])

    def test_then_the_descriptions_then_the_claims(self) -> None:
        # Five parameters: 323 bytes a line with 120 characters of description,
        # 202 without; eight: 274 bytes with the claims, 232 without.
        claims = {"readOnlyHint": True, "openWorldHint": False}
        lines = self.fits(generate("s", self.listing("d" * 400, 5, TIME, claims)))
        self.assertTrue(
            lines[0].endswith("-> Tool000Result  # [server says: read-only, closed-world]"),
            lines[0],
        )
        lines = self.fits(generate("s", self.listing("d" * 400, 8, TIME, claims)))
        self.assertTrue(lines[0].endswith("p07: str | None = None) -> Tool000Result"), lines[0])

    def test_only_signatures_that_do_not_fit_refuse_the_server(self) -> None:
        with self.assertRaises(SurfaceTooLarge) as caught:
            generate("s", self.listing("", 30))
        self.assertGreater(caught.exception.size, MAX_SURFACE_BYTES)
        self.assertEqual(caught.exception.limit, MAX_SURFACE_BYTES)


class SeamContract(unittest.TestCase):
    """deliver answers as the header says; the fake cap uses it; functions return that."""

    def answer(self, result: CallToolResult) -> Any:
        listing = [tool("now", output=TIME), tool("plain")]
        generated = generate("s", listing)
        module = load_generated(generated.module_name, generated.source)
        with seam.recording(seam.contract(lambda name, arguments: result, generated.tools)):
            return module.now("x"), module.plain("x")

    def test_a_tool_with_an_output_schema_returns_its_structured_content(self) -> None:
        content = {"timezone": "UTC", "is_dst": False}
        typed, whole = self.answer(CallToolResult((Text("{}"),), False, content))
        self.assertIs(typed, content)
        assert_conforms(
            self,
            typed,
            load_generated("m", generate("s", [tool("now", output=TIME)]).source).NowResult,
        )
        self.assertEqual(
            whole, {"text": "{}", "data": {}, "content": [{"type": "text", "text": "{}"}]}
        )

    def test_a_tool_without_one_returns_its_text_and_every_block_raw(self) -> None:
        image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        text = {"type": "text", "text": "two", "annotations": {"audience": ["user"]}}
        result = decode_call_tool(
            {
                "content": [{"type": "text", "text": "one"}, image, text],
                "structuredContent": {"timezone": "UTC", "is_dst": False},
            }
        )
        _, whole = self.answer(result)
        self.assertEqual(
            whole,
            {
                "text": "one\ntwo",
                "data": None,
                "content": [{"type": "text", "text": "one"}, image, text],
            },
        )
        self.assertIs(whole["content"][1], result.content[1].raw)  # type: ignore[union-attr]

    def test_a_failed_call_raises_tool_failed(self) -> None:
        for result in (
            CallToolResult((Text("boom"),), True, None),
            CallToolResult((Text("{}"),), False, None),
            CallToolResult((), False, [1, 2]),
        ):
            with self.assertRaises(ToolFailed) as caught:
                self.answer(result)
            self.assertIs(caught.exception.result, result)
            self.assertIsInstance(caught.exception, McpClientError)
        with self.assertRaises(ToolFailed) as caught:
            self.answer(CallToolResult((Text("no \x1b[31mway"), Text("out")), True, None))
        self.assertEqual(str(caught.exception), "no [31mway out")

    def test_is_error_raises_for_a_result_tool_too(self) -> None:
        plain = generate("s", [tool("plain")]).tools[0]
        with self.assertRaises(ToolFailed) as caught:
            deliver(plain, CallToolResult((), True, None))
        self.assertEqual(
            str(caught.exception), "tool plain reported an error (isError) with no text"
        )

    @pytest.mark.slow
    @settings(max_examples=examples(300), deadline=None)
    @given(
        st.lists(json_values(12, keys=6), max_size=4),
        st.booleans(),
        json_values(12),
        st.sampled_from(["structured", "result"]),
    )
    def test_deliver_is_total(
        self, blocks: List[Any], is_error: bool, structured: Any, returns: str
    ) -> None:
        content = []
        for raw in blocks:
            try:
                content.append(decode_call_tool({"content": [raw]}).content[0])
            except ProtocolFault:
                pass
        result = CallToolResult(tuple(content), is_error, structured)
        target = codegen.GeneratedTool("f", "f", returns, "", "", Deferred(TIME_RECORD))
        try:
            value = deliver(target, result)
        except ResultMismatch as mismatch:
            self.assertEqual(returns, "structured")
            self.assertIsNotNone(checker.compile(TIME_RECORD)(structured))
            self.assertTrue(str(mismatch).isprintable())
            return
        except ToolFailed as failed:
            self.assertIs(failed.result, result)
            self.assertTrue(is_error or returns == "structured")
            self.assertTrue(str(failed))
            return
        if returns == "structured":
            self.assertIs(value, structured)
        else:
            self.assertEqual(sorted(value), ["content", "data", "text"])
            self.assertEqual(len(value["content"]), len(content))
            self.assertIn(type(value["data"]), (dict, list, type(None)))

    def test_conformance_is_checked_key_by_key(self) -> None:
        result_type = load_generated(
            "m", generate("s", [tool("now", output=TIME)]).source
        ).NowResult
        for bad in (
            {"timezone": "UTC"},
            {"timezone": 1, "is_dst": True},
            {"timezone": "UTC", "is_dst": True, "extra": 1},
            ["UTC", True],
        ):
            with self.assertRaises(AssertionError, msg=repr(bad)):
                assert_conforms(self, bad, result_type)


class JsonTextParsed(unittest.TestCase):
    """A string that held JSON text in every call seen: typed as what it held, observed,
    and delivered parsed; once it holds none, delivered as the string it is."""

    WRAPPED = {
        "type": "object",
        "properties": {"result": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["result"],
    }

    def test_a_string_in_data_is_parsed(self) -> None:
        seen = shapes.merge(
            shapes.record({"result": '{"total": 3, "rows": [1]}'}),
            shapes.record({"result": '{"total": 4, "rows": []}'}),
        )
        made = generate("s", [tool("report")], learned={"report": shapes.Learned(2, seen)})
        report = made.tools[0]
        self.assertIn(
            '"data": observed{"result": observed{"total": int, "rows": list[int], ...}, ...}',
            report.line,
        )
        doc = " ".join(report.doc.split())
        self.assertIn('"result": a string of JSON text in every call seen, given parsed', doc)
        sent = CallToolResult((Text('{"result": "{\\"total\\": 5, \\"rows\\": [2]}"}'),))
        out = deliver(report, sent)
        self.assertEqual(out["data"], {"result": {"total": 5, "rows": [2]}})
        self.assertEqual(out["text"], '{"result": "{\\"total\\": 5, \\"rows\\": [2]}"}')
        other = deliver(report, CallToolResult((Text('{"result": "not today"}'),)))
        self.assertEqual(other["data"], {"result": "not today"})  # as it came

    def test_a_declared_string_that_held_json_is_typed_and_parsed(self) -> None:
        seen = shapes.record({"result": '[{"id": 1, "name": "a"}]', "n": 1})
        listing = [tool("wrapped", output=self.WRAPPED)]
        made = generate("s", listing, learned={"wrapped": shapes.Learned(1, None, seen)})
        wrapped = made.tools[0]
        self.assertIn(
            '-> WrappedResult{"result": list[observed{"id": int, "name": str, ...}], "n"?: int}',
            wrapped.line,
        )
        content = {"result": '[{"id": 7, "name": "b"}]', "n": 2}
        value = deliver(wrapped, CallToolResult((), False, content))
        self.assertEqual(value, {"result": [{"id": 7, "name": "b"}], "n": 2})
        self.assertEqual(content["result"], '[{"id": 7, "name": "b"}]')  # never changed
        with self.assertRaises(ResultMismatch):  # the schema still holds the server
            deliver(wrapped, CallToolResult((), False, {"result": [{"id": 7}]}))
        module = load_generated("cap.mcp.s", made.source)
        hints = typing.get_type_hints(module.WrappedResult)
        self.assertEqual(str(hints["result"]), "typing.List[cap.mcp.s.WrappedResultResult]")

    def test_only_a_declared_string_is_retyped(self) -> None:
        seen = shapes.record({"n": '{"a": 1}', "result": "plain"})  # n is declared integer
        listing = [tool("wrapped", output=self.WRAPPED)]
        made = generate("s", listing, learned={"wrapped": shapes.Learned(1, None, seen)})
        self.assertIn('-> WrappedResult{"result": str, "n"?: int}', made.tools[0].line)
        self.assertEqual(made.tools[0].parsed, ())

    @settings(max_examples=200, deadline=None)
    @given(st.lists(with_json_text(12), min_size=1, max_size=3), with_json_text(12))
    def test_deliver_is_total_and_leaves_what_came_alone(self, seen: List[Any], sent: Any) -> None:
        learned = shapes.record(seen[0])
        for value in seen[1:]:
            learned = shapes.merge(learned, shapes.record(value))
        listing = [tool("r"), tool("w", output={"type": "object"})]
        made = generate(
            "s", listing, learned={n: shapes.Learned(1, learned, learned) for n in ("r", "w")}
        )
        before = json.dumps(sent)
        result = CallToolResult((Text(before),), False, sent)
        for target in made.tools:
            deliver(target, result) if type(sent) is dict or target.returns == "result" else None
        self.assertEqual(json.dumps(sent), before)


class Truncate(unittest.TestCase):
    def test_short_text_is_kept(self) -> None:
        self.assertEqual(truncate("abc", 3), "abc")

    def test_cut_ends_in_dots_within_the_limit(self) -> None:
        self.assertEqual(truncate("abcdef", 5), "ab...")
        self.assertEqual(truncate("ab cdef", 6), "ab...")  # no space before the dots
        self.assertEqual(len(truncate("x" * 1000, 400)), 400)

    def test_tiny_limits_cut_without_dots(self) -> None:
        self.assertEqual(truncate("abcdef", 2), "ab")
        self.assertEqual(truncate("abcdef", 0), "")


class Sanitize(unittest.TestCase):
    def test_line_breaks_become_spaces(self) -> None:
        for brk in ("\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\t"):
            self.assertEqual(sanitize("one" + brk + "two", 400), "one two", repr(brk))

    def test_direction_changing_codepoints_are_removed(self) -> None:
        for char in BIDI:
            self.assertEqual(sanitize("ab" + char + "cd", 400), "abcd", "U+%04X" % ord(char))

    def test_other_controls_and_formats_are_removed(self) -> None:
        for char in (
            "\x00",
            "\x07",
            "\x1b",
            "\x7f",
            "\x9b",
            "\u200b",
            "\ufeff",
            "\ud800",
            "\u00ad",
        ):
            self.assertEqual(sanitize("a" + char + "b", 400), "ab", "U+%04X" % ord(char))

    def test_printable_text_is_kept(self) -> None:
        text = 'Quote """ hash # at @decorator back\\slash \\N{BULLET} 日本語 é 🙂'
        self.assertEqual(sanitize(text, 400), text)

    def test_whitespace_runs_collapse_and_ends_strip(self) -> None:
        self.assertEqual(sanitize("  a \t\n  b\u3000c  ", 400), "a b c")

    def test_limit_applies_after_cleaning(self) -> None:
        self.assertEqual(sanitize("\x00" * 200 + "abcdef", 5), "ab...")

    def test_only_the_window_is_read_and_a_cut_says_so(self) -> None:
        # Issue 25: 200k control characters once cost a scan of all of them, per site.
        # The window is 4 * limit + 256: what lies past it is never looked at.
        window = scan_window(5)
        self.assertEqual(window, 276)
        self.assertEqual(sanitize("\x00" * window + "abcdef", 5), "...")
        self.assertEqual(sanitize("word " + "\x01" * 10**6, 400), "word ...")
        self.assertEqual(sanitize("x" * window, 400), "x" * window)  # not cut: all read
        seen: List[str] = []
        real = text_module._clean_char
        counted = lambda m: seen.append(m.group()) or real(m)  # noqa: E731
        with mock.patch.object(text_module, "_clean_char", counted):
            self.assertEqual(sanitize("\x01" * 200_000, 120), "...")
        self.assertEqual(len(seen), scan_window(120), "every character past the window unread")

    def test_inert_with_a_limit_reads_one_more_than_it_shows(self) -> None:
        for text_in in ("abc", "\x1b[31m" * 50, "é" * 10, "a\nb" * 40):
            for limit in (0, 2, 3, 10, 200):
                self.assertEqual(inert(text_in, "\n", limit), truncate(inert(text_in, "\n"), limit))

    @settings(max_examples=examples(300), deadline=None)
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


class Wrap(unittest.TestCase):
    # What the generator wraps is sanitized or its own: words and single spaces.
    @settings(max_examples=examples(300), deadline=None)
    @given(
        st.lists(st.text("ab", min_size=1, max_size=8), max_size=8).map(" ".join),
        st.integers(1, 12),
    )
    def test_words_kept_in_order_within_the_width(self, text: str, width: int) -> None:
        lines = codegen._wrap(text, width)
        self.assertEqual([word for line in lines for word in line.split(" ")], text.split())
        for line in lines:
            self.assertTrue(len(line) <= width or " " not in line, (line, width))
            self.assertEqual(line, line.strip())
        # Greedy: no line could have taken the next line's first word.
        for line, following in zip(lines, lines[1:]):
            self.assertGreater(len(line) + 1 + len(following.split(" ")[0]), width)

    @settings(max_examples=examples(300), deadline=None)
    @given(
        st.lists(st.text("a\n\t", min_size=1, max_size=8), max_size=8),
        st.lists(st.integers(1, 3), min_size=9, max_size=9),
        st.booleans(),
        st.integers(-1, 12),
    )
    def test_runs_of_spaces_wrap_as_one(
        self, words: List[str], gaps: List[int], edges: bool, width: int
    ) -> None:
        # Only spaces part words (a tab or a line break inside one is the escaper's
        # business); runs of them, and spaces at either end, count as one space.
        spaced = "".join(word + " " * gap for word, gap in zip(words, gaps))
        spaced = (" " + spaced) if edges else spaced.rstrip(" ")
        lines = codegen._wrap(spaced, width)
        self.assertEqual(lines, codegen._wrap(" ".join(words), width))
        self.assertEqual([word for line in lines for word in line.split(" ")], words)
        if width < 1:
            self.assertEqual(lines, words)


class Escape(unittest.TestCase):
    def test_examples(self) -> None:
        cases = {
            'a"b': 'a\\"b',
            "a\\b": "a\\\\b",
            "\n": "\\x0a",
            "\x00": "\\x00",
            "é": "\\xe9",
            "日": "\\u65e5",
            "🙂": "\\U0001f642",
            "\ud800": "\\ud800",
            "\u2028": "\\u2028",
            "\\N{BULLET}": "\\\\N{BULLET}",
            "'{x}'": "'{x}'",
            "@decorator": "\\x40decorator",
            "plain text_1 ~!": "plain text_1 ~!",
        }
        for text, escaped in cases.items():
            self.assertEqual(escape(text), escaped, repr(text))

    @settings(max_examples=examples(400), deadline=None)
    @given(st.text(st.characters(blacklist_categories=())))
    def test_round_trips_exactly_as_printable_ascii(self, text: str) -> None:
        body = escape(text)
        self.assertTrue(all(" " <= char <= "~" for char in body))
        self.assertNotIn("@", body)
        self.assertEqual(ast.literal_eval('"' + body + '"'), text)

    @pytest.mark.slow
    @settings(max_examples=examples(400), deadline=None)
    @given(st.lists(st.text(st.sampled_from('ab "\\@\n\x7f\x00é~'))) | st.lists(st.text()))
    @example(["a\nb"])
    @example([])
    @example([""])
    def test_escape_lines_is_escape_of_each_line(self, lines: List[str]) -> None:
        # The docstrings' fast path: a few passes over the join, the same literals.
        self.assertEqual(text_module.escape_lines(lines), [escape(line) for line in lines])


# Pieces of Python that open, close or hide strings and comments across lines.
FRAGMENTS = [
    "\n",
    "\r",
    "x = ",
    "#",
    "# c ",
    "@d",
    "@",
    " @ ",
    "a",
    "b",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    '"""',
    "'''",
    "f",
    "t",
    "r",
    "b",
    'f"',
    "f'",
    'rf"',
    "\\",
    "\\\n",
    "def g(): pass",
    " = 1",
    ", ",
    ":",
    "    ",
    "@=",
    "x",
]


class ScanForAt(unittest.TestCase):
    def test_at_in_comment_lines_is_inert_whatever_they_hold(self) -> None:
        source = '# @decorator\n# "quoted" @x \'\'\' """ f"{a@b}" \\\nx = 1\n'
        self.assertIsNone(scan_for_at(source))

    def test_at_inside_a_plain_string_is_settled_by_the_tokenizer(self) -> None:
        self.assertIsNone(scan_for_at('x = "@decorator"  # a @ b\ny = r"@"\n'))

    def test_at_tokens_are_refused(self) -> None:
        for source in (
            "@decorator\ndef f():\n    pass\n",
            "x = a @ b\n",
            "a @= b\n",
            "x = 1\n@\n",
            "    @indented\n",
        ):
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
        for source in (
            'x = f"{a\n}"\n',
            'x = rf"{a}"\n',
            'x = (1)t"{a}"\n',
            "x = '''\n",
            'x = "a\\\n"\n',
            "x = 1@2\n",
            'x = "a" f"{b}"\n',
            'x = b"a"\n',
            "x = f'{a\n'\n",
            'x = """a"""\n',
        ):
            self.assertFalse(codegen._inert_by_lines(source), source)
        # Closing quotes after a letter, quotes of the other kind inside a
        # string, escaped quotes and comments in code are all told apart.
        for source in (
            'x = "git_diff"\n',
            'x = ["if", "f", "t"]\n',
            "# f'{@\n",
            'x = {"don\'t f": 1}\n',
            'x = "a\\" f" # f"\n',
            "x = 1  # f'{\n",
            'x = "\'\'\'", "\\"\\"\\""\n',
        ):
            self.assertTrue(codegen._inert_by_lines(source), source)

    @settings(max_examples=examples(500), deadline=None)
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

    @settings(max_examples=examples(500), deadline=None)
    @given(
        st.lists(
            st.sampled_from(FRAGMENTS + ['"a"', '"\\""', '"it\'s"', "\x00", '""']), max_size=10
        ).map("".join)
    )
    def test_the_quick_pass_never_accepts_what_the_lexeme_scan_declines(self, text: str) -> None:
        code = text.replace("\r\n", "\n").replace("\r", "\n")
        if codegen._plain_strings_only(code):
            self.assertFalse(
                any(
                    codegen._may_span_lines(code, match)
                    for match in codegen._LEXEMES.finditer(code)
                ),
                code,
            )

    def test_generated_source_takes_the_quick_pass(self) -> None:
        listing = [
            tool(
                "a@b",
                '"quoted" @mention """ f"{x@y}" it\'s \\',
                typed_schema("@context"),
                output=TIME,
            )
        ]
        source = generate("s@rv", listing).source
        code = "\n".join(line for line in source.split("\n") if not line.startswith("#"))
        self.assertTrue(codegen._plain_strings_only(code))

    def test_generated_source_is_proven_by_lines(self) -> None:
        listing = [tool("a@b", '"quoted" @mention """ f"{x@y}" \\', typed_schema("@context"))]
        self.assertTrue(codegen._inert_by_lines(generate("s@rv", listing).source))


class Describe(unittest.TestCase):
    def test_one_sanitized_line(self) -> None:
        error = ToolNameCollision("a\u202e\nb", "a\u202e\nb", "x")
        text = describe(error)
        self.assertTrue(text.startswith("ToolNameCollision: tools "))
        self.assertEqual(sanitize(text, 10000), text)

    def test_every_refusal_is_a_generate_error(self) -> None:
        for error in (
            TooManyTools(1, 0),
            SurfaceTooLarge(2, 1),
            SanitizerBreach("x"),
            ToolNameCollision("a", "a", "a"),
        ):
            self.assertIsInstance(error, GenerateError)
            self.assertIn(type(error).__name__, describe(error))


if __name__ == "__main__":
    unittest.main()
