"""End to end: the surface a model writes against, for four real npm servers (issue 19).

Against ``mcp-server-filesystem``, ``mcp-server-memory``,
``mcp-server-sequential-thinking`` and ``mcp-server-everything`` (pinned in
``tests/npm``; the README's test command installs them), each started for real:

* the surface keeps the servers' own names where Python allows them
  (``sortBy``, ``dryRun``, ``nextThoughtNeeded``, ``messageType``), and types
  the inputs the schemas describe: the keys of nested objects (filesystem's
  ``edits`` of ``oldText``/``newText``, memory's ``observations`` of
  ``entityName``/``contents``) and the members of enums (``sortBy``'s
  ``"name" | "size"``), on the surface line, in the module's runtime types
  (``typing.get_type_hints``) and in the documentation;
* programs written against those modules type-check (``mypy --strict``) when
  right, and each guess issue 19 saw a model make fails with mypy's own
  message (``did you mean "sortBy"?``, the keys ``oldText``/``newText``);
* a call through the generated function, with the fake ``cap`` seam wired to
  ``codegen.deliver``, returns exactly what the function declares: a tool's
  ``structuredContent`` for ``"structured"``, the ``{"text", "content"}``
  record for ``"result"`` (blocks as the server sent them, an image's data
  included), and ``ToolFailed`` carrying the tool's own error text.

Every claim about a server here was checked against that server's real
``tools/list`` and answers first. Each session ends with ``Exited`` evidence,
and the leak check (``conftest.py``) proves the server's whole process group
gone.
"""

from __future__ import annotations

import base64
import inspect
import os
import sys
import tempfile
import typing
import unittest
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import pytest

from mcp_client import Client, Exited, ProcessTransport, Spawn, codegen, start
from mcp_client.codegen import content
from mcp_client.errors import ToolFailed
from mcp_client.transport import CAPTURE

import npm_servers
from support import OPTIONS
from typecheck import mypy_strict

FAKECAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakecap")
if FAKECAP not in sys.path:  # the fake `cap` package generated modules import
    sys.path.insert(0, FAKECAP)

from cap.internal import mcp as seam  # noqa: E402
from cap.mcp import load_generated  # noqa: E402

NONE = type(None)


@dataclass
class Live:
    """One started server: its client, its generated module, its tools by wire name."""

    client: Client
    generated: codegen.Generated
    module: ModuleType
    tools: Dict[str, codegen.GeneratedTool]  # by wire name

    def function(self, wire: str) -> Callable[..., Any]:
        function: Callable[..., Any] = getattr(self.module, self.tools[wire].function)
        return function

    def line(self, wire: str) -> str:
        return self.tools[wire].line

    def hints(self, wire: str) -> Dict[str, Any]:
        """The function's annotations, resolved at run time (no TYPE_CHECKING needed)."""
        return typing.get_type_hints(self.function(wire))

    def deliver(self, server: str, tool: str, arguments: Dict[str, Any]) -> Any:
        """The seam's handler: the live call, then exactly what the function promises."""
        return codegen.deliver(self.tools[tool], self.client.call_tool(tool, arguments))


class SurfaceCase(unittest.TestCase):
    @contextmanager
    def live(self, spawn: Spawn) -> Iterator[Live]:
        """Start, list, generate, load; shut down after the block, with ``Exited`` evidence."""
        client = start(ProcessTransport(spawn, stderr=CAPTURE), OPTIONS)
        try:
            tools = client.list_tools()
            server = client.initialize_result.server_info.name
            generated = codegen.generate(server, tools)
            module = load_generated(generated.module_name, generated.source)
            self.assertEqual(
                [tool.line for tool in generated.tools],
                generated.surface.splitlines(),
                "in surface order, as shown",
            )
            self.assertEqual(
                sorted(tool.wire_name for tool in generated.tools),
                sorted(tool.name for tool in tools),
            )
            live = Live(
                client, generated, module, {tool.wire_name: tool for tool in generated.tools}
            )
            with seam.recording(live.deliver) as self.calls:
                yield live
        finally:
            evidence = client.shutdown()
        self.assertIsInstance(evidence, Exited)

    def assert_verbatim(self, live: Live, wire: str, *names: str) -> None:
        """Each of ``names`` is a parameter of the function, and on its surface line."""
        parameters = inspect.signature(live.function(wire)).parameters
        for name in names:
            self.assertIn(name, parameters)
            self.assertIn(name + ":", live.line(wire))

    def assert_record_of(self, hint: Any, keys: Dict[str, Any]) -> Any:
        """``hint`` is ``List[R]`` (or Optional of it) with ``R`` a TypedDict of ``keys``."""
        hint = strip_optional(hint)
        self.assertIs(typing.get_origin(hint), list, hint)
        [record] = typing.get_args(hint)
        self.assertTrue(is_typeddict(record), record)
        self.assertEqual(typing.get_type_hints(record), keys)
        return record

    def assert_declared(self, live: Live, wire: str, value: Any) -> None:
        """``value`` is of the type the function's return annotation declares."""
        conform(self, value, live.hints(wire)["return"], wire)

    def assert_result_record(self, live: Live, wire: str, value: Any) -> None:
        """A ``"result"`` tool: the ``{"text", "data", "content"}`` record, declared as such,
        its data the text parsed when that is one JSON object or array."""
        self.assertEqual(live.tools[wire].returns, "result")
        declared = live.hints(wire)["return"]
        self.assertTrue(is_typeddict(declared), declared)
        self.assertEqual(set(declared.__annotations__), {"text", "data", "content"})
        self.assertEqual(set(value), {"text", "data", "content"})
        self.assert_declared(live, wire, value)
        texts = [block["text"] for block in value["content"] if block["type"] == "text"]
        self.assertEqual(value["text"], "\n".join(texts))
        self.assertEqual(value["data"], content.parse_data(value["text"]))


def npm(executable: str, *args: str, env: Optional[Dict[str, str]] = None) -> Spawn:
    """The npm server ``executable`` with ``args``, as a ``Spawn`` (its args a tuple)."""
    argv = npm_servers.argv(executable, *args)
    return Spawn(argv[0], tuple(argv[1:]), env=env)


def strip_optional(hint: Any) -> Any:
    """``X`` of ``Optional[X]``; any other hint as it is."""
    if typing.get_origin(hint) is Union and NONE in typing.get_args(hint):
        rest = [arm for arm in typing.get_args(hint) if arm is not NONE]
        return rest[0] if len(rest) == 1 else Union[tuple(rest)]
    return hint


def is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__total__")


def literal_members(hint: Any) -> List[Any]:
    hint = strip_optional(hint)
    assert typing.get_origin(hint) is typing.Literal, hint
    return list(typing.get_args(hint))


def conform(test: unittest.TestCase, value: Any, hint: Any, where: str) -> None:
    """``value`` is what ``hint`` says, recursively (TypedDict keys: required ones, no others)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return
    if origin is Union:
        test.assertTrue(any(_conforms(test, value, arm, where) for arm in args), (where, value))
    elif origin is typing.Literal:
        test.assertIn(value, args, where)
    elif origin is list:
        test.assertIs(type(value), list, where)
        for index, item in enumerate(value):
            conform(test, item, args[0] if args else Any, "%s[%d]" % (where, index))
    elif origin is dict:
        test.assertIs(type(value), dict, where)
    elif is_typeddict(hint):
        test.assertIs(type(value), dict, where)
        test.assertLessEqual(set(hint.__required_keys__), set(value), where)
        test.assertLessEqual(set(value), set(hint.__annotations__), where)
        fields = typing.get_type_hints(hint)
        for key, item in value.items():
            conform(test, item, fields[key], "%s[%r]" % (where, key))
    elif hint is float:  # JSON has one number type
        test.assertIn(type(value), (int, float), where)
    else:
        test.assertIs(type(value), hint, where)


def _conforms(test: unittest.TestCase, value: Any, hint: Any, where: str) -> bool:
    try:
        conform(test, value, hint, where)
    except AssertionError:
        return False
    return True


class Filesystem(SurfaceCase):
    def setUp(self) -> None:
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        self.allowed = os.path.realpath(scratch.name)
        self.spawn = npm(npm_servers.FILESYSTEM, self.allowed)

    def test_the_surface_names_the_edits_keys_and_the_sort_order(self) -> None:
        with self.live(self.spawn) as live:
            self.assert_verbatim(live, "edit_file", "path", "edits", "dryRun")
            self.assertIn('"oldText": str', live.line("edit_file"))
            self.assertIn('"newText": str', live.line("edit_file"))
            edit = self.assert_record_of(
                live.hints("edit_file")["edits"], {"oldText": str, "newText": str}
            )
            self.assertEqual(edit.__required_keys__, frozenset({"oldText", "newText"}))
            self.assertIs(strip_optional(live.hints("edit_file")["dryRun"]), bool)
            # The keys' own descriptions reach the on-demand detail.
            self.assertIn(
                '"oldText": Text to search for - must match exactly',
                " ".join(live.tools["edit_file"].doc.split()),
            )
            self.assert_verbatim(live, "list_directory_with_sizes", "path", "sortBy")
            self.assertEqual(
                literal_members(live.hints("list_directory_with_sizes")["sortBy"]), ["name", "size"]
            )
            self.assertIn(
                'sortBy: Literal["name", "size"] = "name"', live.line("list_directory_with_sizes")
            )
            doc = " ".join(
                (inspect.getdoc(live.function("list_directory_with_sizes")) or "").split()
            )  # as wrapped: one space between words
            self.assertIn(
                'sortBy: (Literal["name", "size"], optional) Sort entries by name '
                'or size. One of: "name", "size". Default: "name"',
                doc,
            )
            self.assert_verbatim(live, "directory_tree", "excludePatterns")

    def test_calls_deliver_the_declared_shapes(self) -> None:
        notes = os.path.join(self.allowed, "notes.txt")
        with self.live(self.spawn) as live:
            wrote = live.function("write_file")(path=notes, content="alpha beta\n")
            edited = live.function("edit_file")(
                path=notes, edits=[{"oldText": "beta", "newText": "gamma"}]
            )
            listed = live.function("list_directory_with_sizes")(path=self.allowed, sortBy="size")
            with self.assertRaises(ToolFailed) as refused:
                live.function("read_text_file")(path="/etc/passwd")
        for wire, value in (
            ("write_file", wrote),
            ("edit_file", edited),
            ("list_directory_with_sizes", listed),
        ):
            self.assertEqual(live.tools[wire].returns, "structured")
            self.assertEqual(set(value), {"content"})
            self.assert_declared(live, wire, value)
        self.assertIn("+alpha gamma", edited["content"])
        self.assertIn("notes.txt", listed["content"])
        with open(notes) as stream:
            self.assertEqual(stream.read(), "alpha gamma\n")
        self.assertEqual(
            [call.arguments for call in self.calls][1:3],
            [
                # dryRun's default is the signature's: sent, as the surface line shows it.
                {
                    "path": notes,
                    "edits": [{"oldText": "beta", "newText": "gamma"}],
                    "dryRun": False,
                },
                {"path": self.allowed, "sortBy": "size"},
            ],
        )
        self.assertTrue(refused.exception.result.is_error)
        self.assertIn("Access denied - path outside allowed directories", str(refused.exception))


class Memory(SurfaceCase):
    def setUp(self) -> None:
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        self.store = os.path.join(scratch.name, "memory.jsonl")
        self.spawn = npm(npm_servers.MEMORY, env={"MEMORY_FILE_PATH": self.store})

    def test_the_surface_names_the_observations_keys(self) -> None:
        with self.live(self.spawn) as live:
            self.assert_verbatim(live, "add_observations", "observations")
            line = live.line("add_observations")
            self.assertIn('"entityName": str', line)
            self.assertIn('"contents": list[str]', line)
            self.assert_record_of(
                live.hints("add_observations")["observations"],
                {"entityName": str, "contents": List[str]},
            )
            self.assert_record_of(
                live.hints("create_entities")["entities"],
                {"name": str, "entityType": str, "observations": List[str]},
            )
            self.assert_verbatim(live, "delete_entities", "entityNames")

    def test_calls_deliver_the_declared_shapes(self) -> None:
        with self.live(self.spawn) as live:
            created = live.function("create_entities")(
                entities=[{"name": "Ada", "entityType": "person", "observations": ["wrote notes"]}]
            )
            added = live.function("add_observations")(
                observations=[{"entityName": "Ada", "contents": ["first programmer"]}]
            )
            with self.assertRaises(ToolFailed) as missing:
                live.function("add_observations")(
                    observations=[{"entityName": "Nobody", "contents": ["x"]}]
                )
            graph = live.function("read_graph")()
        for wire, value in (
            ("create_entities", created),
            ("add_observations", added),
            ("read_graph", graph),
        ):
            self.assertEqual(live.tools[wire].returns, "structured")
            self.assert_declared(live, wire, value)
        self.assertEqual(
            added, {"results": [{"entityName": "Ada", "addedObservations": ["first programmer"]}]}
        )
        self.assertEqual(
            graph["entities"],
            [
                {
                    "name": "Ada",
                    "entityType": "person",
                    "observations": ["wrote notes", "first programmer"],
                }
            ],
        )
        self.assertEqual(graph["relations"], [])
        self.assertTrue(missing.exception.result.is_error)
        self.assertEqual(str(missing.exception), "Entity with name Nobody not found")
        with open(self.store) as stream:
            self.assertIn("first programmer", stream.read())


class SequentialThinking(SurfaceCase):
    PARAMETERS = (
        "thought",
        "nextThoughtNeeded",
        "thoughtNumber",
        "totalThoughts",
        "isRevision",
        "revisesThought",
        "branchFromThought",
        "branchId",
        "needsMoreThoughts",
    )

    def setUp(self) -> None:
        self.spawn = npm(npm_servers.SEQUENTIAL_THINKING)

    def test_every_parameter_verbatim_and_the_thoughts_delivered(self) -> None:
        with self.live(self.spawn) as live:
            self.assertEqual(tuple(live.tools), ("sequentialthinking",))
            self.assert_verbatim(live, "sequentialthinking", *self.PARAMETERS)
            self.assertEqual(
                set(inspect.signature(live.function("sequentialthinking")).parameters),
                set(self.PARAMETERS),
            )
            think = live.function("sequentialthinking")
            first = think(
                thought="Plan the test", nextThoughtNeeded=True, thoughtNumber=1, totalThoughts=2
            )
            second = think(
                thought="Run it", nextThoughtNeeded=False, thoughtNumber=2, totalThoughts=2
            )
        self.assertEqual(live.tools["sequentialthinking"].returns, "structured")
        for value in (first, second):
            self.assert_declared(live, "sequentialthinking", value)
        self.assertEqual(
            first,
            {
                "thoughtNumber": 1,
                "totalThoughts": 2,
                "nextThoughtNeeded": True,
                "branches": [],
                "thoughtHistoryLength": 1,
            },
        )
        self.assertEqual((second["nextThoughtNeeded"], second["thoughtHistoryLength"]), (False, 2))
        self.assertEqual(
            self.calls[0].arguments,
            {
                "thought": "Plan the test",
                "nextThoughtNeeded": True,
                "thoughtNumber": 1,
                "totalThoughts": 2,
            },
        )


class Everything(SurfaceCase):
    def setUp(self) -> None:
        self.spawn = npm(npm_servers.EVERYTHING)

    def test_enums_keep_their_members(self) -> None:
        with self.live(self.spawn) as live:
            for wire, parameter, members in (
                ("get-structured-content", "location", ["New York", "Chicago", "Los Angeles"]),
                ("get-annotated-message", "messageType", ["error", "success", "debug"]),
                ("get-resource-reference", "resourceType", ["Text", "Blob"]),
                ("gzip-file-as-resource", "outputType", ["resourceLink", "resource"]),
            ):
                self.assert_verbatim(live, wire, parameter)
                self.assertEqual(literal_members(live.hints(wire)[parameter]), members)
                for member in members:
                    self.assertIn('"%s"' % member, live.line(wire))
            self.assert_verbatim(live, "get-annotated-message", "includeImage")

    def test_calls_deliver_the_declared_shapes(self) -> None:
        with self.live(self.spawn) as live:
            echoed = live.function("echo")(message="hi")
            image = live.function("get-tiny-image")()
            weather = live.function("get-structured-content")(location="Chicago")
            with self.assertRaises(ToolFailed) as refused:  # a member the schema lacks
                live.function("get-structured-content")(location="Atlantis")
        self.assert_result_record(live, "echo", echoed)
        self.assertEqual(
            echoed,
            {"text": "Echo: hi", "data": None, "content": [{"type": "text", "text": "Echo: hi"}]},
        )
        # Hyphens only: the names with "_", no digest (issue 24); the wire names verbatim.
        self.assertEqual(live.tools["get-tiny-image"].function, "get_tiny_image")
        self.assertEqual(live.tools["get-structured-content"].function, "get_structured_content")
        self.assertEqual(self.calls[1].tool, "get-tiny-image")
        self.assert_result_record(live, "get-tiny-image", image)
        self.assertIsNone(image["data"])
        self.assertEqual([block["type"] for block in image["content"]], ["text", "image", "text"])
        picture = image["content"][1]
        self.assertEqual(picture["mimeType"], "image/png")
        self.assertEqual(base64.b64decode(picture["data"])[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(
            image["text"], "Here's the image you requested:\nThe image above is the MCP logo."
        )
        self.assertEqual(live.tools["get-structured-content"].returns, "structured")
        self.assert_declared(live, "get-structured-content", weather)
        self.assertEqual(set(weather), {"temperature", "conditions", "humidity"})
        self.assertIn('expected one of "New York"|"Chicago"|"Los Angeles"', str(refused.exception))


STUB = (
    "from typing import Any, Dict\n\n"
    "def invoke(server: str, tool: str, arguments: Dict[str, Any]) -> Any: ...\n"
)

RIGHT = """from typing import Any, Dict, List
from cap.mcp import everything, filesystem, memory, thinking


def main() -> None:
    diff: str = filesystem.edit_file(
        "/tmp/a", [{"oldText": "a", "newText": "b"}], dryRun=True)["content"]
    listing: str = filesystem.list_directory_with_sizes("/tmp", sortBy="size")["content"]
    memory.create_entities([{"name": "Ada", "entityType": "person", "observations": []}])
    added = memory.add_observations([{"entityName": "Ada", "contents": ["programmer"]}])
    names: List[str] = [result["entityName"] for result in added["results"]]
    kinds: List[str] = [entity["entityType"] for entity in memory.read_graph()["entities"]]
    step = thinking.sequentialthinking(thought="t", nextThoughtNeeded=True, thoughtNumber=1,
                                       totalThoughts=2)
    more: bool = step["nextThoughtNeeded"]
    echoed = everything.echo("hi")
    text: str = echoed["text"]
    blocks: List[str] = []
    for block in everything.get_tiny_image()["content"]:
        if block["type"] == "image":
            blocks.append(block["mimeType"])
    data = echoed["data"]
    if isinstance(data, dict):
        blocks.append(str(data.get("x")))
    weather: float = everything.{weather}(location="Chicago")["temperature"]
    print(diff, listing, names, kinds, more, text, blocks, weather)
"""

# The guesses issue 19 saw (and their kin), each with the finding mypy must make.
WRONG: Dict[str, Tuple[str, str]] = {
    "edits": (
        'filesystem.edit_file("/tmp/a", [{{"old": "a", "new": "b"}}])',
        'Missing keys ("oldText", "newText") for TypedDict "EditFileEdits"',
    ),
    "observations": (
        'memory.add_observations([{{"entityName": "Ada", "observations": []}}])',
        'Extra key "observations" for TypedDict "AddObservationsObservations"',
    ),
    "sort_by": (
        'filesystem.list_directory_with_sizes("/tmp", sort_by="size")',
        'Unexpected keyword argument "sort_by" for "list_directory_with_sizes"; '
        'did you mean "sortBy"?',
    ),
    "snake_case": (
        'thinking.sequentialthinking(thought="t", next_thought_needed=True, '
        'thoughtNumber=1, totalThoughts=1)',
        'Unexpected keyword argument "next_thought_needed" for '
        '"sequentialthinking"; did you mean "nextThoughtNeeded"?',
    ),
    "member": (
        'everything.{weather}(location="Atlantis")',
        'has incompatible type "Literal[\'Atlantis\']"; '
        'expected "Literal[\'New York\', \'Chicago\', \'Los Angeles\']"',
    ),
    "result_key": (
        'print(memory.read_graph()["entities"][0]["entity_type"])',
        'has no key "entity_type"',
    ),
    "output_key": ('print(everything.echo("hi")["txt"])', 'has no key "txt"'),
    "block_key": (
        'print(everything.get_tiny_image()["content"][0]["mimeType"])',
        'TypedDict "TextContent" has no key "mimeType"',
    ),
}


@pytest.mark.slow
class TypeCheckedPrograms(SurfaceCase):
    """The modules of the live servers, a right program and the wrong guesses, under mypy."""

    SERVERS = (
        ("filesystem", npm_servers.FILESYSTEM),
        ("memory", npm_servers.MEMORY),
        ("thinking", npm_servers.SEQUENTIAL_THINKING),
        ("everything", npm_servers.EVERYTHING),
    )

    def test_right_passes_and_each_guess_fails_with_mypys_message(self) -> None:
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        root = Path(scratch.name)
        for relative, text in (
            ("cap/__init__.py", ""),
            ("cap/internal/__init__.py", ""),
            ("cap/internal/mcp.pyi", STUB),
            ("cap/mcp/__init__.py", ""),
        ):
            write(root / relative, text)
        files: List[str] = []
        tools: Dict[str, codegen.GeneratedTool] = {}
        for name, executable in self.SERVERS:
            files.append(self.generate_into(root, name, executable, tools))
        weather = tools["get-structured-content"].function  # hyphens: "_", no digest
        write(root / "right.py", RIGHT.replace("{weather}", weather))
        for key, (line, _) in WRONG.items():
            write(
                root / ("wrong_%s.py" % key),
                "from cap.mcp import everything, filesystem, memory, thinking\n%s\n"
                % line.format(weather=weather),
            )
        _, findings = mypy_strict(
            root, files + ["right.py"] + ["wrong_%s.py" % key for key in WRONG]
        )
        self.assertEqual(
            {path: said for path, said in findings.items() if not path.startswith("wrong_")},
            {},
            "modules and right.py clean",
        )
        for key, (_, expected) in WRONG.items():
            with self.subTest(key):
                said = findings.get("wrong_%s.py" % key, [])
                self.assertTrue(any(expected in finding for finding in said), said)

    def generate_into(
        self, root: Path, name: str, executable: str, tools: Dict[str, codegen.GeneratedTool]
    ) -> str:
        """The live server's module as ``cap.mcp.<name>`` under ``root``, its tools added
        to ``tools``; returns the module's path."""
        with tempfile.TemporaryDirectory() as scratch:
            env = {"MEMORY_FILE_PATH": os.path.join(scratch, "memory.jsonl")}
            args = (scratch,) if executable == npm_servers.FILESYSTEM else ()
            with self.live(npm(executable, *args, env=env)) as live:
                generated = codegen.generate(name, live.client.list_tools())
        tools.update({tool.wire_name: tool for tool in generated.tools})
        relative = "cap/mcp/%s.py" % name
        write(root / relative, generated.source)
        return relative


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


if __name__ == "__main__":
    unittest.main()
