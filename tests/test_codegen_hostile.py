"""The hostile tools/list corpus, and the cage as a property of any listing.

The corpus covers input schemas and output schemas (result types) alike.

Every generated module here is checked twice (``tests/fakecap/codegen_checks.py``):
statically (it parses, no decorator, no ``@`` token, one function per tool, each
ending in ``internal.invoke`` with the wire names as constants) and by running it
against the fake ``cap`` runtime (each function sends exactly its wire tool name
and wire parameter names).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import typing
import unittest
from pathlib import Path
from typing import Any, Dict, List, Sequence
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_client import codegen
from mcp_client import text as text_module
from mcp_client.codegen import (
    MAX_DESCRIPTION_CHARS,
    MAX_DOC_BYTES,
    MAX_DOC_DESCRIPTION_CHARS,
    Generated,
    generate,
    shapes,
)
from mcp_client.codegen.name import first_collision, sha256_digest
from mcp_client.codegen.schema import MAX_OUTPUT_LOOK
from mcp_client.errors import ResultMismatch, ToolFailed, ToolNameCollision
from mcp_client.protocol import CallToolResult, Text, ToolDescriptor, decode_tools_page
from mcp_client.text import scan_window

FAKECAP = str(Path(__file__).with_name("fakecap"))
if FAKECAP not in sys.path:
    sys.path.insert(0, FAKECAP)

from cap.mcp import load_generated  # noqa: E402
from codegen_checks import assert_caged, assert_sends_wire_names  # noqa: E402

from servers import scripted  # noqa: E402
from strategies import examples, json_values, with_json_text  # noqa: E402

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

HOSTILE_NAMES = [
    "class",
    "import",
    "match",
    "type",
    "case",
    "_",
    "list",
    "print",
    "internal",
    "arguments",
    "---",
    "日本語",
    "3d_render",
    "42",
    "x" * 200,
    "x" * 199 + "y",
    "createIssue",
    "create_issue",
    "a\u202eb",
    "tool\nname",
    'quote"name',
    "back\\slash",
    "lone\ud800",
    "@decorator",
    "#comment",
    "nul\x00",
    "\\N{COMMERCIAL AT}",
]

HOSTILE_TEXTS = [
    '"""',
    "'''",
    "\n@decorator\ndef evil():\n    pass",
    "\r@evil = 1",
    "a\x00b",
    "line\u2028@evil()",
    "\u202e@txet",
    "\u2066@isolated\u2069",
    "# not a comment\n#",
    "back\\slash\\",
    "\\N{COMMERCIAL AT}",
    "\\u0040",
    "\x0c@form feed",
    "\x85@next line",
    "-*- coding: raw_unicode_escape -*-",
    '")\nimport os\n("',
    "x" * 10000,
]


def h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def typed(properties: Dict[str, Any], required: Sequence[str] = ()) -> Dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def hostile_params() -> Dict[str, Any]:
    """Every hostile text as a parameter name, with a hostile description too."""
    return {text: {"type": "string", "description": text} for text in HOSTILE_TEXTS}


class CorpusCase(unittest.TestCase):
    def generate_checked(
        self, server: str, tools: Sequence[ToolDescriptor], **kwargs: Any
    ) -> Generated:
        generated = generate(server, tools, **kwargs)
        assert_caged(self, generated, server, tools)
        assert_sends_wire_names(self, generated, server, tools, **kwargs)
        return generated

    def function_names(self, generated: Generated) -> List[str]:
        tree = ast.parse(generated.source)
        return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]


class HostileNames(CorpusCase):
    def test_every_hostile_name_generates_a_distinct_function(self) -> None:
        tools = [ToolDescriptor(n, typed({"q": {"type": "string"}})) for n in HOSTILE_NAMES]
        generated = self.generate_checked("srv", tools)
        names = self.function_names(generated)
        self.assertEqual(len(set(names)), len(HOSTILE_NAMES))
        for expected in (
            "class_" + h("class"),
            "match",  # a soft keyword and builtins keep their names (server.list(...))
            "type",
            "list",
            "internal_" + h("internal"),
            "arguments_" + h("arguments"),
            "mcp_" + h("---"),
            "mcp_" + h("日本語"),
            "mcp_3d_render_" + h("3d_render"),
            "x" * 32 + "_" + h("x" * 200),
            "create_issue",
            "createIssue",
        ):
            self.assertIn(expected, names)

    def test_byte_identical_names_are_refused(self) -> None:
        tools = [ToolDescriptor("dup\u202e", typed({})), ToolDescriptor("dup\u202e", typed({}))]
        with self.assertRaises(ToolNameCollision) as caught:
            generate("srv", tools)
        self.assertEqual(
            (caught.exception.first, caught.exception.second), ("dup\u202e", "dup\u202e")
        )

    def test_hostile_parameter_names_travel_verbatim(self) -> None:
        names = {text: {"type": "integer"} for text in HOSTILE_NAMES}
        tools = [ToolDescriptor("t", typed(names, required=HOSTILE_NAMES[:5]))]
        self.generate_checked("srv", tools)

    def test_labels_named_like_what_a_body_could_use_change_nothing(self) -> None:
        # A cast's type is evaluated where the parameters are: a parameter called
        # str once made it Dict["value of str", Any], a forward reference that
        # does not compile. Each tool is called with every label given a string.
        shadows = [
            "str",
            "cast",
            "Dict",
            "Any",
            "List",
            "Optional",
            "Literal",
            "Union",
            "TypedDict",
            "dict",
            "typing",
            "None_",
            "self",
            "_",
            "__class__",
        ]
        params = {name: {"type": "string"} for name in shadows}
        outputs: List[Any] = [None, {"anyOf": [{}, {}]}, record({"ok": {"type": "boolean"}})]
        tools = [
            ToolDescriptor("t%d" % index, typed(params, shadows[:3]), output_schema=output)
            for index, output in enumerate(outputs)
        ]
        generated = self.generate_checked("srv", tools)
        labels = [line.split("(", 1)[1].split(":")[0] for line in generated.surface.splitlines()]
        self.assertEqual(labels, ["str"] * 3)

    def test_hostile_server_name(self) -> None:
        server = "-*- coding: raw_unicode_escape -*-\n@evil\u202e\\x0a\"#"
        generated = self.generate_checked(server, [ToolDescriptor("t", typed({}))])
        # 34 characters of snake case, cut to 32, then the digest.
        self.assertEqual(
            generated.module_name, "cap.mcp.coding_raw_unicode_escape_evil_x_" + h(server)
        )
        # Only the sanitized name in a comment (never on lines 1 and 2) and
        # the escaped literal carry it.
        lines = generated.source.splitlines()
        # The newline became a space, U+202E is gone, the wrap broke the line.
        self.assertEqual(
            lines[3:5],
            [
                "# Module %s: the tools of MCP" % generated.module_name,
                '# server -*- coding: raw_unicode_escape -*- @evil\\x0a"#.',
            ],
        )
        self.assertNotIn("coding: raw", "\n".join(lines[:2]))


class HostileText(CorpusCase):
    def test_hostile_descriptions_and_parameters(self) -> None:
        tools = [
            ToolDescriptor(
                "tool%d" % index,
                typed(hostile_params(), ["\r@evil = 1"]),
                title=text,
                description=text,
            )
            for index, text in enumerate(HOSTILE_TEXTS)
        ]
        generated = self.generate_checked("srv", tools)
        self.assertNotIn("\ndef evil", generated.source)
        self.assertNotIn("\nimport os", generated.source)

    def test_long_description_is_capped_in_source_and_surface(self) -> None:
        text = " ".join(["word"] * 5000)
        listing = [ToolDescriptor("t", typed({}), description=text)]
        generated = self.generate_checked("srv", listing)
        described = generated.surface.split("  # ", 1)[1].rstrip("\n")
        # Cut at a word boundary, marked with an ellipsis (issue 24).
        self.assertLessEqual(len(described), MAX_DESCRIPTION_CHARS)
        self.assertGreater(len(described), MAX_DESCRIPTION_CHARS - len("word") - 2)
        self.assertTrue(described.endswith(" word\u2026"), described[-20:])
        function = ast.parse(generated.source).body[-1]
        assert isinstance(function, ast.FunctionDef)
        docstring = ast.get_docstring(function) or ""
        first = " ".join(docstring.split("\n\n")[0].split())
        self.assertEqual(len(first), codegen.MAX_DOC_DESCRIPTION_CHARS)
        self.assertTrue(first.startswith(described[:-1]))
        self.assertEqual(generated.tools[0].doc.split("\n\n", 1)[1], docstring)

    def test_long_parameter_description_is_a_capped_note(self) -> None:
        long_note = "n " * codegen.MAX_DOC_NOTE_CHARS
        tools = [ToolDescriptor("t", typed({"p": {"type": "string", "description": long_note}}))]
        generated = self.generate_checked("srv", tools)
        doc = " ".join(generated.tools[0].doc.split())
        note = doc.split("p: (str, optional) ", 1)[1].split(" Returns:")[0]
        self.assertEqual(len(note), codegen.MAX_DOC_NOTE_CHARS)

    def test_no_description_means_no_comment_in_the_surface(self) -> None:
        generated = self.generate_checked("srv", [ToolDescriptor("t", typed({}))])
        self.assertEqual(
            generated.surface,
            'cap.mcp.srv.t() -> ToolOutput{"text": str, "data": dict | list | None, '
            '"content": list[Block]}\n',
        )


class HostileSchema(CorpusCase):
    def test_schemas_that_are_not_objects_take_the_whole_value(self) -> None:
        tools = [
            ToolDescriptor("t%d" % index, schema)
            for index, schema in enumerate([[], "object", None, 5, True, {"type": "array"}])
        ]
        generated = self.generate_checked("srv", tools)
        self.assertEqual(generated.source.count("(arguments: Dict[str, Any]) -> ToolOutput:"), 6)

    def test_ref_loops(self) -> None:
        loop = {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}
        tools = [
            ToolDescriptor("top", dict(loop, **{"$ref": "#/$defs/A"})),
            ToolDescriptor("inner", dict(typed({"a": {"$ref": "#/$defs/A"}}, ["a"]), **loop)),
            ToolDescriptor("self", {"$ref": "#"}),
        ]
        self.generate_checked("srv", tools)

    def test_thousand_properties(self) -> None:
        properties = {"p%d" % index: {"type": "integer"} for index in range(1000)}
        generated = self.generate_checked(
            "srv", [ToolDescriptor("wide", typed(properties, ["p0", "p999"]))]
        )
        self.assertEqual(generated.surface.count(": int"), 1000)

    def test_deep_nesting(self) -> None:
        deep: Any = {"type": "string"}
        for _ in range(5000):
            deep = {"type": "array", "items": {"anyOf": [deep, {"type": "null"}]}}
        self.generate_checked("srv", [ToolDescriptor("deep", typed({"d": deep}, ["d"]))])

    def test_required_names_without_schemas(self) -> None:
        tools = [ToolDescriptor("t", typed({}, HOSTILE_TEXTS[:6]))]
        generated = self.generate_checked("srv", tools)
        self.assertIn("required but has no property schema", generated.source)

    def test_label_collision_degrades_to_the_whole_value(self) -> None:
        zeros = {"digest": lambda _: "0" * 64}  # every altered label becomes name_00000000
        tools = [
            ToolDescriptor(
                "clash",
                typed(
                    {
                        "a-b": {"type": "string"},
                        "a_b": {"type": "string"},
                        "a b": {"type": "string"},
                    }
                ),
            ),
            ToolDescriptor("fine", typed({"a-b": {"type": "string"}, "a b": {"type": "string"}})),
        ]
        generated = self.generate_checked("srv", tools, **zeros)
        self.assertIn("def clash(arguments: Dict[str, Any]) -> ToolOutput:", generated.source)
        self.assertIn(
            "def fine(\n    *,\n    a_b: Optional[str] = None,\n"
            "    a_b_00000000: Optional[str] = None,\n) -> ToolOutput:",
            generated.source,
        )

    def test_label_digest_near_miss_degrades(self) -> None:
        twin = "repo_path_" + h("repo-path")
        labels = {"repo-path": {"type": "string"}, "repo_path": {"type": "string"}}
        tools = [ToolDescriptor("t", typed(dict(labels, **{twin: {"type": "string"}})))]
        generated = self.generate_checked("srv", tools)
        self.assertIn("def t(arguments: Dict[str, Any]) -> ToolOutput:", generated.source)


def record(properties: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    """An object schema with every key required."""
    return dict(typed(properties, list(properties)), **extra)


INNER = record({"x": {"type": "integer"}})


class HostileOutputSchema(CorpusCase):
    def result_type(self, generated: Generated, name: str) -> Any:
        module = load_generated(generated.module_name, generated.source)
        return getattr(module, name)

    def test_ref_loops(self) -> None:
        loop = {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}
        node = record({"next": {"$ref": "#/$defs/Node"}, "v": {"type": "integer"}})
        tools = [
            ToolDescriptor("top", typed({}), output_schema={"$ref": "#/$defs/A", "$defs": loop}),
            ToolDescriptor("self", typed({}), output_schema={"$ref": "#"}),
            ToolDescriptor(
                "inner",
                typed({}),
                output_schema=dict(record({"a": {"$ref": "#/$defs/A"}}), **{"$defs": loop}),
            ),
            ToolDescriptor(
                "list", typed({}), output_schema={"$defs": {"Node": node}, "$ref": "#/$defs/Node"}
            ),
        ]
        generated = self.generate_checked("srv", tools)
        self.assertIn("def top() -> Dict[str, Any]:", generated.source)
        self.assertIn("def self() -> Dict[str, Any]:", generated.source)
        self.assertIn('"a": Any', generated.source)
        # A self-referencing record is declared to the depth bound, then Any:
        # the top $ref, then a key and a $ref a level.
        self.assertEqual(generated.source.count(' = TypedDict("List'), MAX_OUTPUT_LOOK // 2)

    def test_thousand_keys(self) -> None:
        keys = ["k%d" % index for index in range(1000)]
        generated = self.generate_checked(
            "srv",
            [
                ToolDescriptor(
                    "wide",
                    typed({}),
                    output_schema=record({key: {"type": "integer"} for key in keys}),
                )
            ],
        )
        self.assertEqual(list(self.result_type(generated, "WideResult").__annotations__), keys)
        self.assertTrue(generated.surface.endswith("-> WideResult\n"), "too long to show")

    def test_keys_that_are_python_or_module_names(self) -> None:
        keys = [
            "class",
            "import",
            "match",
            "_",
            "list",
            "print",
            "str",
            "None",
            "True",
            "internal",
            "arguments",
            "cap",
            "TypedDict",
            "Any",
            "Dict",
            "WideResult",
            "WideResult_Class",
            "__class__",
            "total",
        ]
        generated = self.generate_checked(
            "srv",
            [ToolDescriptor("wide", typed({}), output_schema=record({key: INNER for key in keys}))],
        )
        result = self.result_type(generated, "WideResult")
        self.assertEqual(list(result.__annotations__), keys)
        nested = [value.__name__ for value in result.__annotations__.values()]
        self.assertEqual(len(set(nested)), len(keys))
        # "class" and "__class__" would both be WideResultClass: each carries a digest.
        self.assertEqual(sum(name.startswith("WideResultClass_") for name in nested), 2)
        self.assertIn("WideResultWideResultClass", nested)
        # "_" has no letter: its object is WideResultValue, never WideResult.
        self.assertIn("WideResultValue", nested)

    def test_keys_empty_after_mangling(self) -> None:
        keys = ["", "---", "日本語", "@", " "]
        generated = self.generate_checked(
            "srv",
            [ToolDescriptor("t", typed({}), output_schema=record({key: INNER for key in keys}))],
        )
        result = self.result_type(generated, "TResult")
        self.assertEqual(list(result.__annotations__), keys)
        names = {value.__name__ for value in result.__annotations__.values()}
        # All five would be TResultValue: each carries the digest of where it sits.
        self.assertEqual(
            names, {"TResultValue_" + h(json.dumps(["t", "result", "." + key])) for key in keys}
        )

    def test_keys_that_meet_after_mangling(self) -> None:
        keys = ["a-b", "a b", "A_B", "aB", "a_b"]
        schema = record({key: INNER for key in keys})
        generated = self.generate_checked(
            "srv", [ToolDescriptor("t", typed({}), output_schema=schema)]
        )
        self.assertEqual(
            len(set(self.result_type(generated, "TResult").__annotations__.values())), 5
        )
        # A digest that always says zeros: the digested names meet, and the server
        # is refused rather than repaired.
        with self.assertRaises(ToolNameCollision):
            generate(
                "srv",
                [ToolDescriptor("t", typed({}), output_schema=schema)],
                digest=lambda _: "0" * 64,
            )

    def test_no_object_at_the_root(self) -> None:
        schemas = [
            {"type": "array", "items": INNER},
            {"type": "string"},
            {"anyOf": [INNER]},
            {"type": ["object", "null"], "properties": {"x": {}}},
            {"type": "object"},
            [],
            "object",
            5,
            True,
            {"properties": "x"},
        ]
        tools = [
            ToolDescriptor("t%d" % index, typed({}), output_schema=schema)
            for index, schema in enumerate(schemas)
        ]
        generated = self.generate_checked("srv", tools)
        self.assertEqual(
            sum("structuredContent, untyped:" in " ".join(t.doc.split()) for t in generated.tools),
            len(schemas),
        )
        self.assertNotIn(" = TypedDict(", generated.source)
        self.assertEqual(generated.surface.count(") -> dict[str, Any]\n"), len(schemas))

    def test_bidi_controls_and_hostile_text_in_keys_and_descriptions(self) -> None:
        keys = [
            "a\u202eb",
            "\u2066x\u2069",
            "line\nbreak",
            'q"uote',
            "back\\",
            "\ud800",
            "\r@evil = 1",
            "# not a comment",
        ]
        schema = record(
            {key: dict(INNER, description=key + "\u202e\n@d") for key in keys}, title="\u202eTitle"
        )
        tools = [
            ToolDescriptor(
                "t",
                typed({}),
                output_schema=schema,
                title="\u202eT\n@x",
                annotations={"readOnlyHint": True, "title": "\u2066"},
            )
        ]
        generated = self.generate_checked("srv", tools)
        self.assertEqual(list(self.result_type(generated, "TResult").__annotations__), keys)
        for char in BIDI:
            self.assertNotIn(char, generated.source + generated.surface)
        self.assertEqual(generated.surface.count("\n"), 1)
        self.assertIn('"a\\u202eb": {"x": int}', generated.surface)


HOSTILE_CHARS = list('"\'\\\n\r\x00\u2028\u2029\u202e\u2066\u200f#@{}\ud800é日🙂 \t\x0c\x85_-1aAZ.')
hostile_text = st.text(st.one_of(st.sampled_from(HOSTILE_CHARS), st.characters()), max_size=12)
names = st.one_of(
    hostile_text,
    st.sampled_from(["search", "createIssue", "create_issue", "class", "list", "arguments", "---"]),
)
members = st.one_of(hostile_text, st.integers(), st.booleans(), st.none())
param_leaves = st.one_of(
    st.sampled_from(
        [
            {"type": "string"},
            {"type": "integer"},
            {"type": "number"},
            {"type": "array", "items": {"type": "boolean"}},
            {"$ref": "#"},
            {},
            True,
            {"anyOf": [{"type": "number"}, {"type": "null"}]},
            {"enum": [1, "a"]},
            {"$ref": "#/$defs/D"},
            {"type": ["string", "integer", "null"]},
        ]
    ),
    st.builds(lambda text: {"type": "string", "description": text}, hostile_text),
    st.builds(lambda values: {"enum": values}, st.lists(members, max_size=5)),
    st.builds(lambda value: {"const": value}, members),
    st.builds(lambda value: {"type": "string", "default": value}, members),
)
# Nested inputs: arrays of objects with hostile keys, unions of a few branches.
param_schemas = st.recursive(
    param_leaves,
    lambda inner: st.one_of(
        st.builds(lambda item: {"type": "array", "items": item}, inner),
        st.builds(lambda branches: {"anyOf": branches}, st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda value: {"type": "object", "additionalProperties": value}, inner),
        st.builds(
            lambda properties, required: typed(properties, required),
            st.dictionaries(names, inner, min_size=1, max_size=4),
            st.lists(names, max_size=2),
        ),
    ),
    max_leaves=6,
)
object_schemas = st.builds(
    lambda properties, required, definition: dict(
        typed(properties, required), **{"$defs": {"D": definition}}
    ),
    st.dictionaries(names, param_schemas, max_size=5),
    st.lists(names, max_size=3),
    param_schemas,
)
schemas = st.one_of(object_schemas, st.sampled_from([[], None, "x", {"$ref": "#"}]))
descriptions = st.one_of(st.none(), hostile_text, st.sampled_from(HOSTILE_TEXTS))
# Output schemas: values of every shape plan_output types, nested a few levels, and junk.
result_leaves = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": ["number", "null"]},
        {"enum": ["a", None]},
        {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
        {"$ref": "#/$defs/D"},
        {"$ref": "#"},
        {},
        True,
        {"type": "object"},
        {"type": "array"},
    ]
)
result_values = st.recursive(
    result_leaves,
    lambda inner: st.one_of(
        st.builds(lambda item: {"type": "array", "items": item}, inner),
        st.builds(lambda item: {"anyOf": [item, {"type": "null"}]}, inner),
        st.builds(
            lambda properties, required, extra: dict(
                typed(properties, required), additionalProperties=extra
            ),
            st.dictionaries(names, inner, min_size=1, max_size=4),
            st.lists(names, max_size=2),
            st.booleans(),
        ),
    ),
    max_leaves=8,
)
output_schemas = st.one_of(
    st.builds(
        lambda properties, required, definition: dict(
            typed(properties, required), **{"$defs": {"D": definition}}
        ),
        st.dictionaries(names, result_values, max_size=5),
        st.lists(names, max_size=3),
        result_values,
    ),
    st.sampled_from([None, [], "x", {"$ref": "#"}, {"type": "array"}, {"anyOf": []}]),
)
hints = st.dictionaries(
    st.sampled_from(
        ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "title"]
    ),
    st.one_of(st.booleans(), hostile_text, st.none()),
    max_size=5,
)
tools = st.builds(
    ToolDescriptor,
    name=names,
    input_schema=schemas,
    title=descriptions,
    description=descriptions,
    output_schema=output_schemas,
    annotations=st.one_of(st.none(), hints),
)


@pytest.mark.slow
class CageProperty(unittest.TestCase):
    @settings(max_examples=examples(150), deadline=None)
    @given(hostile_text, st.lists(tools, max_size=6))
    def test_any_listing_is_refused_for_a_collision_or_caged(
        self, server: str, listing: List[ToolDescriptor]
    ) -> None:
        collision = first_collision([tool.name for tool in listing], sha256_digest)
        try:
            generated = generate(server, listing)
        except ToolNameCollision as error:
            # The only refusal a listing this small can earn, and only when real.
            assert collision is not None
            self.assertEqual((error.first, error.second), (collision.first, collision.second))
            return
        self.assertIsNone(collision)
        # Parses, no @, one function per tool, every result type well formed,
        # used exactly once, with its record's keys (static and at run time).
        assert_caged(self, generated, server, listing)
        assert_sends_wire_names(self, generated, server, listing)
        self.assertEqual(generate(server, listing), generated)
        self.assertEqual(generated.surface.count("\n"), len(listing))
        # One GeneratedTool per function, in surface order; its line is the surface's.
        self.assertEqual([t.line for t in generated.tools], generated.surface.splitlines())
        self.assertEqual(
            sorted(t.wire_name for t in generated.tools), sorted(tool.name for tool in listing)
        )
        by_wire = {tool.name: tool for tool in listing}
        module = load_generated(generated.module_name, generated.source)
        for made in generated.tools:
            self.assertLessEqual(len(made.doc.encode("utf-8")), MAX_DOC_BYTES)
            self.assertEqual(
                made.returns,
                "result" if by_wire[made.wire_name].output_schema is None else "structured",
            )
            function = getattr(module, made.function)
            self.assertEqual(made.doc.split("\n\n", 1)[1], function.__doc__)
            typing.get_type_hints(function)  # every annotation resolves
        for char in BIDI:
            self.assertNotIn(char, generated.surface)


class HostileResults(CorpusCase):
    """Results and learned shapes from a hostile server: caged like its schemas; total."""

    def learned_listing(self, values: Sequence[Any]) -> Generated:
        listing = [ToolDescriptor("resolve", typed({})), ToolDescriptor("other", typed({}))]
        seen = shapes.record(values[0])
        for value in values[1:]:
            seen = shapes.merge(seen, shapes.record(value))
        learned = {"resolve": shapes.Learned(len(values), seen, None)}
        generated = generate("srv", listing, learned=learned)
        assert_caged(self, generated, "srv", listing)
        assert_sends_wire_names(self, generated, "srv", listing)
        module = load_generated(generated.module_name, generated.source)
        for made in generated.tools:
            typing.get_type_hints(getattr(module, made.function))  # every annotation resolves
        return generated

    def test_hostile_keys_in_a_learned_shape_are_caged(self) -> None:
        keys = [t for t in HOSTILE_TEXTS + HOSTILE_NAMES if len(t) <= shapes.MAX_KEY_CHARS]
        value = {text: {text: [text]} for text in keys[: shapes.MAX_KEYS]}
        generated = self.learned_listing([value, {"ok": 1}])
        line = generated.tools[1].line
        self.assertIn('"data": observed{', line)
        self.assertNotIn("\n@decorator", generated.source)
        for char in BIDI:
            self.assertNotIn(char, generated.surface)

    def test_hostile_keys_inside_json_text_are_caged_alike(self) -> None:
        keys = [t for t in HOSTILE_TEXTS + HOSTILE_NAMES if len(t) <= shapes.MAX_KEY_CHARS]
        held = json.dumps({text: [text] for text in keys[: shapes.MAX_KEYS]})
        generated = self.learned_listing([{"result": held}, {"result": held}])
        self.assertIn('ResolveDataResult = TypedDict("ResolveDataResult", {', generated.source)
        self.assertEqual(generated.tools[1].parsed, ((("key", "result"),),))

    @pytest.mark.slow
    @settings(max_examples=examples(100), deadline=None)
    @given(st.lists(json_values(25, keys=8), min_size=1, max_size=3))
    def test_any_learned_shape_generates_a_caged_module(self, values: List[Any]) -> None:
        self.learned_listing(values)

    @pytest.mark.slow
    @settings(max_examples=examples(100), deadline=None)
    @given(st.lists(with_json_text(20), min_size=1, max_size=3))
    def test_any_learned_json_text_generates_a_caged_module(self, values: List[Any]) -> None:
        self.learned_listing(values)

    @pytest.mark.slow
    @settings(max_examples=examples(200), deadline=None)
    @given(
        st.recursive(
            st.one_of(json_values(4), st.builds(object), st.binary(max_size=4), st.just(1j)),
            lambda kids: (
                st.lists(kids, max_size=4)
                | st.dictionaries(st.one_of(st.text(max_size=80), st.integers()), kids, max_size=4)
            ),
            max_leaves=30,
        )
    )
    def test_the_shape_recorder_is_total_on_any_python_value(self, value: Any) -> None:
        shape = shapes.record(value)
        again = shapes.load_shape(shapes.dump_shape(shape))
        self.assertEqual(again, shape)
        shapes.to_type(shapes.merge(shape, shapes.record({"k": value})))

    @pytest.mark.slow
    @settings(max_examples=examples(200), deadline=None)
    @given(output_schemas, json_values(20, keys=6), st.booleans())
    def test_deliver_and_its_check_are_total(
        self, schema: Any, structured: Any, is_error: bool
    ) -> None:
        generated = generate("srv", [ToolDescriptor("t", typed({}), output_schema=schema)])
        result = CallToolResult((Text(json.dumps(structured)),), is_error, structured)
        try:
            value = codegen.deliver(generated.tools[0], result)
        except ResultMismatch as mismatch:
            self.assertTrue(str(mismatch).isprintable())
            self.assertTrue(mismatch.path.startswith("$"))
            return
        except ToolFailed:
            return
        if generated.tools[0].returns == "structured":
            self.assertIs(value, structured)
        else:
            self.assertEqual(
                value["data"], structured if type(structured) in (dict, list) else None
            )


if __name__ == "__main__":
    unittest.main()


class ListingCost(unittest.TestCase):
    """Issue 25: what a listing may cost is bounded, counted in characters sanitized."""

    def test_a_200k_description_behind_255_refs_is_read_once_and_only_its_window(self) -> None:
        raw = json.dumps({"tools": scripted.costly_tools()})
        self.assertGreater(len(raw), 3_500_000)
        tools = decode_tools_page(json.loads(raw)).tools
        # Before: every site sanitized the whole text, 765 times 200k characters (203 s
        # here). Now at most a window per distinct text: refuse the work past a bound.
        bound = 20 * scan_window(MAX_DOC_DESCRIPTION_CHARS)
        seen = [0]
        real = text_module._clean_char

        def counted(match: "re.Match[str]") -> str:
            seen[0] += 1
            if seen[0] > bound:
                raise AssertionError("sanitize read past %d characters" % bound)
            return real(match)

        codegen._sanitized_note.cache_clear()
        with mock.patch.object(text_module, "_clean_char", counted):
            generated = codegen.generate("costly", tools)
        self.assertEqual(len(generated.tools), 3)
        self.assertLess(seen[0], bound)
        self.assertGreater(seen[0], 0, "the description was shown, cut")
