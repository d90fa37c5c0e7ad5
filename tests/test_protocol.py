"""protocol: the MCP handshake, tool listings and tool results.

What is proved here:
- ``initialize_params`` declares exactly nothing (pinned), names the client
  and asks for REQUESTED_VERSION.
- Realistic results, shaped like what the reference servers, fastmcp and
  pydantic-generated schemas send, decode to exactly the expected values.
- The three decoders are total over arbitrary JSON: a value or ProtocolFault.
- Mutations of valid wire lines, run through the whole inbound path
  (stdio.Buffer -> jsonrpc.decode -> protocol.decode_*), only ever end in
  FramingFault/MessageFault/ProtocolFault or a value that keeps the documented
  invariants; deleting a member faults exactly when that member is required;
  replacing anything inside raw content (schemas, structuredContent,
  capabilities) never faults and crosses unchanged; unknown members anywhere
  in the envelope change nothing.
"""

from __future__ import annotations

import copy
import unittest
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client import jsonrpc, protocol, stdio
from mcp_client.errors import ForeignVersionFault, MessageFault, ProtocolFault
from mcp_client.jsonvalue import encode
from mcp_client.protocol import (
    REQUESTED_VERSION,
    SUPPORTED_VERSIONS,
    CallToolResult,
    ClientInfo,
    InitializeResult,
    Other,
    ServerInfo,
    Text,
    ToolDescriptor,
    ToolsCapability,
    ToolsPage,
)

from strategies import json_values, property_settings

PROPERTY = property_settings(250)

JSON_VALUES = json_values(15, width=3, text=8, keys=6)

Path = Tuple[Any, ...]

# ------------------------------------------------------------------ realistic samples

CAPABILITIES = {
    "tools": {"listChanged": True},
    "prompts": {},
    "resources": {"subscribe": True},
    "logging": {},
    "experimental": {"x-trace": {}},
}
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": CAPABILITIES,
    "serverInfo": {"name": "example-servers/everything", "version": "1.0.0", "title": "Everything"},
    "instructions": "Call get-sum to add two numbers.",
}
INIT_DECODED = InitializeResult(
    protocol_version="2025-06-18",
    server_info=ServerInfo("example-servers/everything", "1.0.0", "Everything"),
    capabilities=CAPABILITIES,
    tools=ToolsCapability(True),
    instructions="Call get-sum to add two numbers.",
)

SUM_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
    "$schema": "http://json-schema.org/draft-07/schema#",
}
PYDANTIC_SCHEMA = {
    "$defs": {
        "Item": {
            "properties": {"id": {"type": "integer", "minimum": 0}},
            "required": ["id"],
            "type": "object",
        }
    },
    "properties": {
        "items": {"items": {"$ref": "#/$defs/Item"}, "type": "array"},
        "mode": {"anyOf": [{"enum": ["fast", "slow"]}, {"type": "null"}], "default": None},
    },
    "required": ["items"],
    "type": "object",
}
OUTPUT_SCHEMA = {"type": "object", "properties": {"sum": {"type": "number"}}}
TOOLS = {
    "tools": [
        {
            "name": "get-sum",
            "description": "Adds two numbers",
            "inputSchema": SUM_SCHEMA,
            "outputSchema": OUTPUT_SCHEMA,
            "annotations": {"readOnlyHint": True},
            "execution": {"taskSupport": "forbidden"},
        },
        {
            "name": "git_status",
            "title": "Git status",
            "inputSchema": {"type": "object"},
            "_meta": {"vendor": 1},
        },
        {"name": "process_items", "inputSchema": PYDANTIC_SCHEMA},
    ],
    "nextCursor": "page-2",
}
TOOLS_DECODED = ToolsPage(
    tools=(
        ToolDescriptor(
            "get-sum", SUM_SCHEMA, None, "Adds two numbers", OUTPUT_SCHEMA, {"readOnlyHint": True}
        ),
        ToolDescriptor("git_status", {"type": "object"}, "Git status"),
        ToolDescriptor("process_items", PYDANTIC_SCHEMA),
    ),
    next_cursor="page-2",
)

STRUCTURED = {"sum": 5, "terms": [2, 3]}
CALL = {
    "content": [
        {"type": "text", "text": "The sum of 2 and 3 is 5."},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "resource_link", "uri": "file:///tmp/x", "name": "x"},
        {"type": "text", "text": "", "annotations": {"audience": ["user"]}},
    ],
    "structuredContent": STRUCTURED,
    "isError": False,
}
CALL_DECODED = CallToolResult(
    content=(
        Text("The sum of 2 and 3 is 5."),
        Other("image", {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
        Other("resource_link", {"type": "resource_link", "uri": "file:///tmp/x", "name": "x"}),
        Text(""),
    ),
    is_error=False,
    structured_content=STRUCTURED,
)


# ------------------------------------------------------------------ invariants


def check_initialize(test: unittest.TestCase, got: InitializeResult) -> None:
    test.assertIn(got.protocol_version, SUPPORTED_VERSIONS)
    test.assertIs(type(got.server_info.name), str)
    test.assertIs(type(got.server_info.version), str)
    test.assertIn(type(got.server_info.title), (str, type(None)))
    test.assertIs(type(got.capabilities), dict)
    if got.tools is not None:
        test.assertIs(type(got.tools.list_changed), bool)
    test.assertIn(type(got.instructions), (str, type(None)))


def check_tools_page(test: unittest.TestCase, got: ToolsPage) -> None:
    test.assertIs(type(got.tools), tuple)
    for tool in got.tools:
        test.assertIs(type(tool.name), str)
        test.assertTrue(tool.name)
        test.assertIn(type(tool.title), (str, type(None)))
        test.assertIn(type(tool.description), (str, type(None)))
        test.assertIn(type(tool.annotations), (dict, type(None)))
    if got.next_cursor is not None:
        test.assertIs(type(got.next_cursor), str)
        test.assertTrue(got.next_cursor)


def check_call(test: unittest.TestCase, got: CallToolResult) -> None:
    test.assertIs(type(got.content), tuple)
    test.assertIs(type(got.is_error), bool)
    for block in got.content:
        if type(block) is Text:
            test.assertIs(type(block.text), str)
        else:
            test.assertIs(type(block), Other)
            test.assertIs(type(block.kind), str)
            test.assertNotEqual(block.kind, "text")


DECODERS: Dict[str, Tuple[Callable[[Any], Any], Callable[..., None]]] = {
    "initialize": (protocol.decode_initialize, check_initialize),
    "tools/list": (protocol.decode_tools_page, check_tools_page),
    "tools/call": (protocol.decode_call_tool, check_call),
}
SAMPLES = {"initialize": INIT, "tools/list": TOOLS, "tools/call": CALL}

# ------------------------------------------------------------------ which members matter

ANY_INDEX = object()


def matches(path: Path, pattern: Path) -> bool:
    return len(path) == len(pattern) and all(
        p == q or (q is ANY_INDEX and type(p) is int) for p, q in zip(path, pattern)
    )


def under(path: Path, prefix: Path) -> bool:
    return len(path) >= len(prefix) and matches(path[: len(prefix)], prefix)


ENVELOPE_REQUIRED = [("jsonrpc",), ("id",), ("result",)]
REQUIRED: Dict[str, List[Path]] = {
    "initialize": [
        ("result", "protocolVersion"),
        ("result", "capabilities"),
        ("result", "serverInfo"),
        ("result", "serverInfo", "name"),
    ],
    "tools/list": [
        ("result", "tools"),
        ("result", "tools", ANY_INDEX, "name"),
        ("result", "tools", ANY_INDEX, "inputSchema"),
    ],
    "tools/call": [("result", "content"), ("result", "content", ANY_INDEX, "type")]
    + [
        ("result", "content", i, "text")
        for i, block in enumerate(CALL["content"])
        if block["type"] == "text"
    ],
}
# Raw content: anything at or under these crosses uninterpreted.
RAW: Dict[str, List[Path]] = {
    "initialize": [("result", "capabilities", key) for key in CAPABILITIES if key != "tools"],
    "tools/list": [
        ("result", "tools", ANY_INDEX, "inputSchema"),
        ("result", "tools", ANY_INDEX, "outputSchema"),
        ("result", "tools", ANY_INDEX, "annotations", "readOnlyHint"),
        ("result", "tools", ANY_INDEX, "execution"),
        ("result", "tools", ANY_INDEX, "_meta"),
    ],
    "tools/call": [
        ("result", "structuredContent"),
        ("result", "content", ANY_INDEX, "data"),
        ("result", "content", ANY_INDEX, "mimeType"),
        ("result", "content", ANY_INDEX, "uri"),
        ("result", "content", ANY_INDEX, "annotations"),
    ],
}
# The objects whose unknown members the decoders must ignore (not raw ones).
ENVELOPE_OBJECTS: Dict[str, List[Path]] = {
    "initialize": [(), ("result",), ("result", "serverInfo")],
    "tools/list": [(), ("result",)] + [("result", "tools", i) for i in range(3)],
    # Blocks 1 and 2 are not text: an Other keeps its block raw, unknown members too.
    "tools/call": [(), ("result",), ("result", "content", 0), ("result", "content", 3)],
}
KNOWN_NAMES = {
    "jsonrpc",
    "id",
    "method",
    "result",
    "error",
    "params",
    "protocolVersion",
    "capabilities",
    "serverInfo",
    "instructions",
    "name",
    "version",
    "title",
    "tools",
    "nextCursor",
    "inputSchema",
    "description",
    "outputSchema",
    "annotations",
    "content",
    "isError",
    "structuredContent",
    "type",
    "text",
    "listChanged",
}


def paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    yield prefix
    if type(value) is dict:
        for key, kid in value.items():
            yield from paths(kid, prefix + (key,))
    elif type(value) is list:
        for index, kid in enumerate(value):
            yield from paths(kid, prefix + (index,))


def at(value: Any, path: Path) -> Any:
    for step in path:
        value = value[step]
    return value


def message_for(kind: str) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": copy.deepcopy(SAMPLES[kind])}


def inbound_path(test: unittest.TestCase, data: bytes, kind: str, splits: Sequence[int]) -> None:
    """Feed ``data`` through the whole inbound path; only our faults may come out."""
    decoder, check = DECODERS[kind]
    buffer = stdio.Buffer()
    cuts = [0] + sorted(splits) + [len(data)]
    for start, end in zip(cuts, cuts[1:]):
        for line in buffer.push(data[start:end]):
            try:
                inbound = jsonrpc.decode(line)
            except MessageFault as fault:
                test.assertTrue(fault.reason)
                continue
            if type(inbound) is not jsonrpc.Response or inbound.error is not None:
                continue
            try:
                check(test, decoder(inbound.result))
            except ProtocolFault as fault:
                test.assertTrue(fault.reason)


# ------------------------------------------------------------------ tests


class InitializeParams(unittest.TestCase):
    def test_capabilities_are_exactly_empty(self) -> None:
        # Pinned on purpose: the declared client capabilities are a security
        # decision. No "sampling" (a server must not spend our model), no
        # "roots" (it learns nothing about our filesystem), no "elicitation"
        # (it must not put questions to a human through us). Widening this
        # must break this test; change it only together with that decision.
        params = protocol.initialize_params(ClientInfo("harness", "9.9"))
        self.assertIs(type(params["capabilities"]), dict)  # type: ignore[index]
        self.assertEqual(params["capabilities"], {})  # type: ignore[index]

    def test_exact_shape(self) -> None:
        self.assertEqual(
            protocol.initialize_params(ClientInfo("harness", "9.9")),
            {
                "protocolVersion": REQUESTED_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "harness", "version": "9.9"},
            },
        )

    def test_each_call_gets_its_own_capabilities(self) -> None:
        first = protocol.initialize_params(ClientInfo())
        first["capabilities"]["sampling"] = {}  # type: ignore[index]
        self.assertEqual(protocol.initialize_params(ClientInfo())["capabilities"], {})  # type: ignore[index]

    def test_versions(self) -> None:
        self.assertEqual(REQUESTED_VERSION, "2025-06-18")
        self.assertEqual(SUPPORTED_VERSIONS, ("2025-06-18", "2025-03-26", "2024-11-05"))
        self.assertEqual(
            protocol.initialize_params(ClientInfo())["protocolVersion"],  # type: ignore[index]
            REQUESTED_VERSION,
        )

    def test_other_params_builders(self) -> None:
        self.assertIsNone(protocol.tools_list_params(None))
        self.assertEqual(protocol.tools_list_params("c2"), {"cursor": "c2"})
        self.assertEqual(
            protocol.call_tool_params("get-sum", {"a": 1}),
            {"name": "get-sum", "arguments": {"a": 1}},
        )


class DecodesRealisticResults(unittest.TestCase):
    def test_initialize(self) -> None:
        self.assertEqual(protocol.decode_initialize(copy.deepcopy(INIT)), INIT_DECODED)

    def test_initialize_every_supported_version(self) -> None:
        for version in SUPPORTED_VERSIONS:
            with self.subTest(version):
                got = protocol.decode_initialize(dict(INIT, protocolVersion=version))
                self.assertEqual(got.protocol_version, version)

    def test_initialize_minimal_server(self) -> None:
        got = protocol.decode_initialize(
            {"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "m"}}
        )
        self.assertEqual(got, InitializeResult("2024-11-05", ServerInfo("m", ""), {}, None, None))

    def test_tools_capability_forms(self) -> None:
        cases = [
            ({"tools": {}}, ToolsCapability(False)),
            ({"tools": None}, None),
            ({"tools": {"listChanged": False}}, ToolsCapability(False)),
            ({}, None),
        ]
        for capabilities, expected in cases:
            with self.subTest(capabilities=capabilities):
                got = protocol.decode_initialize(dict(INIT, capabilities=capabilities))
                self.assertEqual(got.tools, expected)

    def test_unsupported_version_carries_both_sides(self) -> None:
        with self.assertRaises(ForeignVersionFault) as caught:
            protocol.decode_initialize(dict(INIT, protocolVersion="2026-07-28"))
        self.assertEqual(caught.exception.server_version, "2026-07-28")
        self.assertEqual(caught.exception.supported, SUPPORTED_VERSIONS)
        self.assertIn("2026-07-28", caught.exception.reason)
        for version in SUPPORTED_VERSIONS:
            self.assertIn(version, caught.exception.reason)

    def test_tools_page(self) -> None:
        self.assertEqual(protocol.decode_tools_page(copy.deepcopy(TOOLS)), TOOLS_DECODED)

    def test_last_and_empty_pages(self) -> None:
        self.assertEqual(protocol.decode_tools_page({"tools": []}), ToolsPage((), None))
        # The empty cursor ends the listing, as the module documents.
        self.assertEqual(
            protocol.decode_tools_page({"tools": [], "nextCursor": ""}), ToolsPage((), None)
        )
        self.assertEqual(
            protocol.decode_tools_page({"tools": [], "nextCursor": None}), ToolsPage((), None)
        )

    def test_call(self) -> None:
        self.assertEqual(protocol.decode_call_tool(copy.deepcopy(CALL)), CALL_DECODED)

    def test_every_block_keeps_its_json_as_the_server_sent_it(self) -> None:
        # Issue 19: an image, audio or resource block reaches the program whole.
        raw = copy.deepcopy(CALL)
        got = protocol.decode_call_tool(raw)
        for block, sent in zip(got.content, raw["content"]):
            self.assertIs(block.raw, sent)
        # A text block's raw is evidence, not identity: equal texts are equal blocks.
        self.assertEqual(got.content[3], Text(""))
        self.assertIn("annotations", got.content[3].raw)  # type: ignore[operator]

    def test_call_failure_is_a_result(self) -> None:
        got = protocol.decode_call_tool(
            {"content": [{"type": "text", "text": "boom"}], "isError": True}
        )
        self.assertEqual(got, CallToolResult((Text("boom"),), True, None))

    def test_call_is_error_defaults_to_false(self) -> None:
        self.assertIs(protocol.decode_call_tool({"content": []}).is_error, False)

    def test_the_samples_survive_the_wire(self) -> None:
        for kind, expected in (
            ("initialize", INIT_DECODED),
            ("tools/list", TOOLS_DECODED),
            ("tools/call", CALL_DECODED),
        ):
            with self.subTest(kind):
                buffer = stdio.Buffer()
                [line] = buffer.push(stdio.frame(message_for(kind)))
                inbound = jsonrpc.decode(line)
                self.assertEqual(DECODERS[kind][0](inbound.result), expected)  # type: ignore[union-attr]


class TotalOverArbitraryJson(unittest.TestCase):
    @PROPERTY
    @given(JSON_VALUES, st.sampled_from(sorted(DECODERS)))
    def test_any_value(self, value: Any, kind: str) -> None:
        decoder, check = DECODERS[kind]
        try:
            check(self, decoder(value))
        except ProtocolFault as fault:
            self.assertTrue(fault.reason)

    @pytest.mark.slow
    @PROPERTY
    @given(st.data(), st.sampled_from(sorted(DECODERS)))
    def test_any_value_in_any_member(self, data: st.DataObject, kind: str) -> None:
        result = copy.deepcopy(SAMPLES[kind])
        path = data.draw(st.sampled_from([p for p in paths(result) if p]))
        parent = at(result, path[:-1])
        parent[path[-1]] = data.draw(JSON_VALUES)
        decoder, check = DECODERS[kind]
        try:
            check(self, decoder(result))
        except ProtocolFault as fault:
            self.assertTrue(fault.reason)


class MutatedMessages(unittest.TestCase):
    """The issue's mutations of valid messages, through the whole inbound path."""

    @PROPERTY
    @given(st.data(), st.sampled_from(sorted(DECODERS)))
    def test_deleting_a_member_faults_exactly_when_it_is_required(
        self, data: st.DataObject, kind: str
    ) -> None:
        message = message_for(kind)
        deletable = [p for p in paths(message) if p and type(at(message, p[:-1])) is dict]
        path = data.draw(st.sampled_from(deletable))
        del at(message, path[:-1])[path[-1]]
        decoder, check = DECODERS[kind]
        if any(matches(path, pattern) for pattern in ENVELOPE_REQUIRED):
            with self.assertRaises(MessageFault):
                jsonrpc.decode(encode(message))
            return
        inbound = jsonrpc.decode(encode(message))
        if any(matches(path, pattern) for pattern in REQUIRED[kind]):
            with self.assertRaises(ProtocolFault) as caught:
                decoder(inbound.result)  # type: ignore[union-attr]
            self.assertIn(str(path[-1]), caught.exception.reason)
        else:
            check(self, decoder(inbound.result))  # type: ignore[union-attr]

    @PROPERTY
    @given(st.data(), st.sampled_from(sorted(DECODERS)), JSON_VALUES)
    def test_raw_content_takes_any_value_and_crosses_unchanged(
        self, data: st.DataObject, kind: str, value: Any
    ) -> None:
        message = message_for(kind)
        raw = [p for p in paths(message) if any(under(p, prefix) for prefix in RAW[kind])]
        path = data.draw(st.sampled_from(raw))
        at(message, path[:-1])[path[-1]] = value
        decoder, check = DECODERS[kind]
        got = decoder(jsonrpc.decode(encode(message)).result)  # type: ignore[union-attr]
        check(self, got)
        self.assertEqual(got, decoder(copy.deepcopy(message["result"])))
        if kind == "tools/list" and path[3] == "inputSchema":
            self.assertEqual(got.tools[path[2]].input_schema, at(message, path[:4]))
        if kind == "tools/call" and path[1] == "structuredContent":
            self.assertEqual(got.structured_content, at(message, path[:2]))

    @PROPERTY
    @given(st.data(), st.sampled_from(sorted(DECODERS)), JSON_VALUES)
    def test_unknown_members_change_nothing(
        self, data: st.DataObject, kind: str, value: Any
    ) -> None:
        message = message_for(kind)
        where = data.draw(st.sampled_from(ENVELOPE_OBJECTS[kind]))
        key = data.draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in KNOWN_NAMES))
        at(message, where)[key] = value
        decoder, check = DECODERS[kind]
        got = decoder(jsonrpc.decode(encode(message)).result)  # type: ignore[union-attr]
        self.assertEqual(got, decoder(copy.deepcopy(SAMPLES[kind])))

    @PROPERTY
    @given(st.data(), st.sampled_from(sorted(DECODERS)), st.binary(min_size=1, max_size=8))
    def test_inserted_bytes(self, data: st.DataObject, kind: str, junk: bytes) -> None:
        wire = stdio.frame(message_for(kind))
        where = data.draw(st.integers(0, len(wire)))
        mutated = wire[:where] + junk + wire[where:]
        splits = data.draw(st.lists(st.integers(0, len(mutated)), max_size=4))
        inbound_path(self, mutated, kind, splits)

    @PROPERTY
    @given(st.data(), st.sampled_from(sorted(DECODERS)))
    def test_truncated(self, data: st.DataObject, kind: str) -> None:
        line = encode(message_for(kind))
        cut = data.draw(st.integers(0, len(line) - 1))
        with self.assertRaises(MessageFault):  # a strict prefix of an object is never JSON
            jsonrpc.decode(line[:cut])


if __name__ == "__main__":
    unittest.main()
