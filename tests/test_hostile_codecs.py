"""The named hostile cases: one table, every codec, one verdict per case.

Each row is (name, layer, input, verdict). The layer is the codec under test:
``parse`` (jsonvalue.parse), ``dump`` (jsonvalue.dump), ``decode``
(jsonrpc.decode), ``initialize`` / ``tools`` / ``call`` (the protocol
decoders, fed the JSON value a Response would carry) and ``frame64`` / ``frame``
(a stdio.Buffer capped at 64 bytes / the real cap, fed a list of chunks).

A verdict is either ``Fault(cls, *needles)``: exactly that class (not a
subclass, not a sibling) is raised, its reason contains every needle and is
short whatever the input; or ``Ok(value)``: decoding succeeds and gives exactly
``value`` (for the protocol decoders that also proves unknown members did not
appear anywhere); or ``Holds(predicate)`` for a success too deep to compare.

The hostile server lines of ``tests/hostile.py`` are rows here too, each with its verdict.
"""

from __future__ import annotations

import unittest
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

from mcp_client import jsonrpc, jsonvalue, protocol, stdio
from mcp_client.errors import (
    BadMessage,
    CorruptionReport,
    EncodeRefused,
    ForeignVersionFault,
    LineTooLong,
    MalformedMessage,
    ProtocolFault,
)
from mcp_client.jsonrpc import Notification, Response, RpcError, ServerRequest
from mcp_client.jsonvalue import MAX_DEPTH
from mcp_client.protocol import (
    SUPPORTED_VERSIONS,
    CallToolResult,
    InitializeResult,
    Other,
    ServerInfo,
    Text,
    ToolDescriptor,
    ToolsCapability,
    ToolsPage,
)

import hostile


class Fault(NamedTuple):
    cls: type
    needles: Tuple[str, ...]


class Ok(NamedTuple):
    value: Any


class Holds(NamedTuple):
    """Decoding succeeds and ``predicate(result)`` is true (for values too deep to compare)."""

    predicate: Callable[[Any], bool]


def fault(cls: type, *needles: str) -> Fault:
    return Fault(cls, needles)


def deep_text(levels: int) -> str:
    return "[" * levels + "]" * levels


def deep_objects(levels: int) -> str:
    return '{"a":' * levels + "0" + "}" * levels


def deep_value(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def envelope(body: str) -> str:
    return '{"jsonrpc":"2.0","id":1,%s}' % body


def push_all(buffer: stdio.Buffer, chunks: List[bytes]) -> List[bytes]:
    lines: List[bytes] = []
    for chunk in chunks:
        lines.extend(buffer.push(chunk))
    return lines


LAYERS: Dict[str, Callable[[Any], Any]] = {
    "parse": jsonvalue.parse,
    "dump": jsonvalue.dump,
    "decode": jsonrpc.decode,
    "initialize": protocol.decode_initialize,
    "tools": protocol.decode_tools_page,
    "call": protocol.decode_call_tool,
    "frame64": lambda chunks: push_all(stdio.Buffer(64), chunks),
    "frame": lambda chunks: push_all(stdio.Buffer(), chunks),
}

SERVER_INFO = {"name": "srv", "version": "1"}
INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO}


def init(**changes: Any) -> Dict[str, Any]:
    result = dict(INIT, **changes)
    return {key: value for key, value in result.items() if value is not DROP}


DROP = object()


def tool(name: Any = "t", **extra: Any) -> Dict[str, Any]:
    entry = {"name": name, "inputSchema": {"type": "object"}}
    entry.update(extra)
    return {key: value for key, value in entry.items() if value is not DROP}


def listing(entries: List[Any], **extra: Any) -> Dict[str, Any]:
    return dict({"tools": entries}, **extra)


GOOD_TOOLS = [tool("t%d" % i) for i in range(3)]
DEEP = deep_value(100_000)
A_LOT = 5000 * "9"

CASES: List[Tuple[str, str, Any, Any]] = [
    # ---------------------------------------------------------------- parse: size and depth
    ("100,000-deep arrays", "parse", deep_text(100_000), fault(CorruptionReport, "nesting")),
    ("100,000-deep objects", "parse", deep_objects(100_000), fault(CorruptionReport, "nesting")),
    ("100,000 unclosed brackets", "parse", "[" * 100_000, fault(CorruptionReport)),
    (
        "MAX_DEPTH + 1, below the recursion limit",
        "parse",
        deep_text(MAX_DEPTH + 1),
        fault(CorruptionReport, "nesting deeper than %d" % MAX_DEPTH),
    ),
    ("MAX_DEPTH exactly", "parse", deep_text(MAX_DEPTH), Ok(deep_value(MAX_DEPTH))),
    ("5,000-digit integer", "parse", A_LOT, fault(CorruptionReport, "5000 digits")),
    ("5,000-digit negative integer", "parse", "-" + A_LOT, fault(CorruptionReport, "5000 digits")),
    (
        "5,000-digit integer inside a message",
        "decode",
        envelope('"result":%s' % A_LOT),
        fault(MalformedMessage, "digits"),
    ),
    # ---------------------------------------------------------------- parse: numbers
    ("NaN", "parse", "NaN", fault(CorruptionReport, "NaN is not JSON")),
    ("Infinity", "parse", "Infinity", fault(CorruptionReport, "Infinity is not JSON")),
    ("-Infinity", "parse", "-Infinity", fault(CorruptionReport, "-Infinity is not JSON")),
    ("1e400", "parse", "1e400", fault(CorruptionReport, "overflows a double")),
    ("NaN as a result", "decode", envelope('"result":NaN'), fault(MalformedMessage, "NaN")),
    # ---------------------------------------------------------------- parse: text encoding
    # Decision: a lone surrogate *escape* is valid JSON grammar and Python keeps it
    # in the str (RFC 8259 section 8.2 leaves the meaning to us); dump refuses to
    # write it, so it cannot travel further than this client.
    ("lone high surrogate escape", "parse", '"\\ud800"', Ok("\ud800")),
    ("lone low surrogate escape", "parse", '"\\udc00"', Ok("\udc00")),
    ("lone surrogate escape in a key", "parse", '{"\\ud800":1}', Ok({"\ud800": 1})),
    (
        "lone surrogate: dump refuses",
        "dump",
        ["ok", "\ud800"],
        fault(EncodeRefused, "lone surrogate"),
    ),
    (
        "lone surrogate key: dump refuses",
        "dump",
        {"\udbff": 0},
        fault(EncodeRefused, "lone surrogate"),
    ),
    (
        "lone surrogate as raw bytes",
        "parse",
        b'"\xed\xa0\x80"',
        fault(CorruptionReport, "not UTF-8 at byte 1"),
    ),
    (
        "lone surrogate as raw bytes in a message",
        "decode",
        b'{"jsonrpc":"2.0","id":1,"result":"\xed\xb0\x80"}',
        fault(MalformedMessage, "not UTF-8"),
    ),
    (
        "invalid UTF-8 (0xff)",
        "parse",
        b"[\"\xff\"]",
        fault(CorruptionReport, "not UTF-8 at byte 2"),
    ),
    ("invalid UTF-8 continuation", "decode", b'{"a":"\x80"}', fault(MalformedMessage, "not UTF-8")),
    ("UTF-8 BOM", "parse", b"\xef\xbb\xbf{}", fault(CorruptionReport, "column 1")),
    (
        "UTF-8 BOM before a message",
        "decode",
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"result":{}}',
        fault(MalformedMessage),
    ),
    # ---------------------------------------------------------------- dump
    ("NaN: dump refuses", "dump", {"x": float("nan")}, fault(EncodeRefused, "nan")),
    (
        "100,000-deep value: dump refuses",
        "dump",
        deep_value(100_000),
        fault(EncodeRefused, "nesting deeper than %d" % MAX_DEPTH),
    ),
    ("5,000-digit integer: dump refuses", "dump", 10**5000, fault(EncodeRefused)),
    # ---------------------------------------------------------------- jsonrpc: ids
    (
        "true as an id",
        "decode",
        '{"jsonrpc":"2.0","id":true,"result":{}}',
        fault(BadMessage, "id True"),
    ),
    (
        "null id on a request",
        "decode",
        '{"jsonrpc":"2.0","id":null,"method":"ping"}',
        fault(BadMessage, "id None"),
    ),
    (
        "object id",
        "decode",
        '{"jsonrpc":"2.0","id":{"n":1},"result":{}}',
        fault(BadMessage, "id {'n': 1}"),
    ),
    (
        "string id is fine",
        "decode",
        '{"jsonrpc":"2.0","id":"7","result":{}}',
        Ok(Response("7", {})),
    ),
    # ---------------------------------------------------------------- jsonrpc: shape
    ("empty batch", "decode", "[]", fault(BadMessage, "batch")),
    ("a bare string", "decode", '"hello"', fault(BadMessage, "not an object")),
    (
        "result and error both",
        "decode",
        envelope('"result":{},"error":{"code":1,"message":"m"}'),
        fault(BadMessage, "both"),
    ),
    ("result and error both absent", "decode", envelope('"x":1'), fault(BadMessage, "neither")),
    (
        "no id and no method",
        "decode",
        '{"jsonrpc":"2.0","result":{}}',
        fault(BadMessage, "neither a method nor an id"),
    ),
    (
        "method and result",
        "decode",
        envelope('"method":"ping","result":{}'),
        fault(BadMessage, "both a method and a result"),
    ),
    (
        "method not a string",
        "decode",
        envelope('"method":7'),
        fault(BadMessage, "method is not a string"),
    ),
    ("jsonrpc 1.0", "decode", '{"jsonrpc":"1.0","id":1,"result":{}}', fault(BadMessage, "'1.0'")),
    ("jsonrpc missing", "decode", '{"id":1,"result":{}}', fault(BadMessage, "is None")),
    (
        "jsonrpc 2.0 as a number",
        "decode",
        '{"jsonrpc":2.0,"id":1,"result":{}}',
        fault(BadMessage, "is 2.0,"),
    ),
    (
        "jsonrpc member of a megabyte",
        "decode",
        '{"jsonrpc":"%s","id":1,"result":{}}' % ("v" * 1_000_000),
        fault(BadMessage, "vvv"),
    ),
    # ---------------------------------------------------------------- jsonrpc: error objects
    (
        "error code a string",
        "decode",
        envelope('"error":{"code":"-32601","message":"m"}'),
        fault(BadMessage, "error code '-32601'"),
    ),
    (
        "error code a float",
        "decode",
        envelope('"error":{"code":-32601.0,"message":"m"}'),
        fault(BadMessage, "error code -32601.0"),
    ),
    (
        "error code a bool",
        "decode",
        envelope('"error":{"code":true,"message":"m"}'),
        fault(BadMessage, "error code True"),
    ),
    (
        "error message missing",
        "decode",
        envelope('"error":{"code":-32601}'),
        fault(BadMessage, "error message is not a string"),
    ),
    (
        "error not an object",
        "decode",
        envelope('"error":"boom"'),
        fault(BadMessage, "error is not an object"),
    ),
    ("error null", "decode", envelope('"error":null'), fault(BadMessage, "error is not an object")),
    # ---------------------------------------------------------------- jsonrpc: extras ignored
    (
        "extras on a response",
        "decode",
        envelope('"result":{"a":1},"x":[1],"_meta":{}'),
        Ok(Response(1, {"a": 1})),
    ),
    (
        "extras on an error",
        "decode",
        envelope('"error":{"code":-1,"message":"m","data":2,"hint":"x"},"trace":"t"'),
        Ok(Response(1, None, RpcError(-1, "m", 2))),
    ),
    (
        "extras on a server request",
        "decode",
        envelope('"method":"ping","params":{},"z":0'),
        Ok(ServerRequest(1, "ping", {})),
    ),
    (
        "extras on a notification",
        "decode",
        '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","x":1}',
        Ok(Notification("notifications/tools/list_changed", None)),
    ),
    # ---------------------------------------------------------------- initialize
    (
        "unsupported protocol version",
        "initialize",
        init(protocolVersion="2099-01-01"),
        fault(ForeignVersionFault, "'2099-01-01'", *SUPPORTED_VERSIONS),
    ),
    (
        "protocol version missing",
        "initialize",
        init(protocolVersion=DROP),
        fault(ProtocolFault, "protocolVersion is missing"),
    ),
    (
        "protocol version a number",
        "initialize",
        init(protocolVersion=20250618),
        fault(ProtocolFault, "protocolVersion is a number"),
    ),
    (
        "protocol version a 5,000-digit value",
        "initialize",
        init(protocolVersion=10**5000),
        fault(ProtocolFault, "protocolVersion is a number"),
    ),
    (
        "protocol version a 100,000-deep value",
        "initialize",
        init(protocolVersion=deep_value(100_000)),
        fault(ProtocolFault, "protocolVersion is an array"),
    ),
    (
        "serverInfo missing",
        "initialize",
        init(serverInfo=DROP),
        fault(ProtocolFault, "serverInfo is not an object"),
    ),
    (
        "serverInfo without a name",
        "initialize",
        init(serverInfo={"version": "1"}),
        fault(ProtocolFault, "serverInfo.name"),
    ),
    (
        "serverInfo version not a string",
        "initialize",
        init(serverInfo={"name": "s", "version": 1}),
        fault(ProtocolFault, "serverInfo.version"),
    ),
    (
        "capabilities missing",
        "initialize",
        init(capabilities=DROP),
        fault(ProtocolFault, "capabilities is not an object"),
    ),
    (
        "tools capability not an object",
        "initialize",
        init(capabilities={"tools": True}),
        fault(ProtocolFault, "capabilities.tools is not an object"),
    ),
    (
        "listChanged not a boolean",
        "initialize",
        init(capabilities={"tools": {"listChanged": "yes"}}),
        fault(ProtocolFault, "listChanged"),
    ),
    (
        "instructions not a string",
        "initialize",
        init(instructions=["x"]),
        fault(ProtocolFault, "instructions"),
    ),
    ("initialize result an array", "initialize", [INIT], fault(ProtocolFault, "result")),
    (
        "unknown members everywhere in initialize",
        "initialize",
        {
            "protocolVersion": "2025-03-26",
            "x": 1,
            "_meta": {"a": 1},
            "serverInfo": {"name": "s", "version": "2", "websiteUrl": "http://x", "icons": []},
            "capabilities": {"tools": {"listChanged": False, "future": 1}},
        },
        # capabilities crosses raw by design (tolerant content); the decoded
        # ToolsCapability and every other field carry none of the extras.
        Ok(
            InitializeResult(
                "2025-03-26",
                ServerInfo("s", "2"),
                {"tools": {"listChanged": False, "future": 1}},
                ToolsCapability(False),
                None,
            )
        ),
    ),
    # ---------------------------------------------------------------- tools/list
    (
        "tools entry not an object",
        "tools",
        listing(GOOD_TOOLS + ["t3"]),
        fault(ProtocolFault, "tools[3] is not an object"),
    ),
    (
        "tool without a name",
        "tools",
        listing(GOOD_TOOLS + [tool(DROP)]),
        fault(ProtocolFault, "tools[3].name is not a non-empty string"),
    ),
    (
        "tool with an empty name",
        "tools",
        listing(GOOD_TOOLS + [tool("")]),
        fault(ProtocolFault, "tools[3].name"),
    ),
    (
        "tool with a numeric name",
        "tools",
        listing(GOOD_TOOLS + [tool(12)]),
        fault(ProtocolFault, "tools[3].name"),
    ),
    (
        "tool without inputSchema",
        "tools",
        listing(GOOD_TOOLS + [tool(inputSchema=DROP)]),
        fault(ProtocolFault, "tools[3].inputSchema is missing"),
    ),
    (
        "one liar among fifty",
        "tools",
        listing(
            [tool("t%d" % i) for i in range(25)]
            + [{"name": "liar"}]
            + [tool("u%d" % i) for i in range(24)]
        ),
        fault(ProtocolFault, "tools[25].inputSchema"),
    ),
    (
        "tool title not a string",
        "tools",
        listing([tool(title=3)]),
        fault(ProtocolFault, "tools[0].title"),
    ),
    (
        "tool annotations not an object",
        "tools",
        listing([tool(annotations=[])]),
        fault(ProtocolFault, "tools[0].annotations"),
    ),
    ("tools not an array", "tools", {"tools": {"t": {}}}, fault(ProtocolFault, "tools is not")),
    ("tools missing", "tools", {"nextCursor": "x"}, fault(ProtocolFault, "tools is not")),
    ("cursor a number", "tools", listing([], nextCursor=2), fault(ProtocolFault, "nextCursor")),
    ("cursor an object", "tools", listing([], nextCursor={}), fault(ProtocolFault, "nextCursor")),
    (
        "unknown members everywhere in tools/list",
        "tools",
        {
            "tools": [
                {
                    "name": "a",
                    "inputSchema": {},
                    "execution": {"taskSupport": "no"},
                    "_meta": {},
                    "icons": [1],
                }
            ],
            "nextCursor": "n",
            "_meta": {"page": 1},
        },
        Ok(ToolsPage((ToolDescriptor("a", {}),), "n")),
    ),
    # ---------------------------------------------------------------- tools/call
    (
        "content block without type",
        "call",
        {"content": [{"type": "text", "text": "a"}, {"text": "b"}]},
        fault(ProtocolFault, "content[1].type is not a string"),
    ),
    (
        "text block without text",
        "call",
        {"content": [{"type": "text"}]},
        fault(ProtocolFault, "content[0].text is not a string"),
    ),
    (
        "text block with a number",
        "call",
        {"content": [{"type": "text", "text": 5}]},
        fault(ProtocolFault, "content[0].text"),
    ),
    (
        "content block not an object",
        "call",
        {"content": [[]]},
        fault(ProtocolFault, "content[0] is not an object"),
    ),
    ("content missing", "call", {"isError": False}, fault(ProtocolFault, "content is not")),
    (
        "isError a string",
        "call",
        {"content": [], "isError": "true"},
        fault(ProtocolFault, "isError is not a boolean"),
    ),
    (
        "isError the number 1",
        "call",
        {"content": [], "isError": 1},
        fault(ProtocolFault, "isError is not a boolean"),
    ),
    (
        "isError null",
        "call",
        {"content": [], "isError": None},
        fault(ProtocolFault, "isError is not a boolean"),
    ),
    (
        "100,000-deep structuredContent crosses raw",
        "call",
        {"content": [], "structuredContent": DEEP},
        Holds(lambda got: got.structured_content is DEEP and got.content == ()),
    ),
    (
        "unknown members everywhere in tools/call",
        "call",
        {
            "content": [
                {"type": "text", "text": "t", "annotations": {"priority": 1}, "_meta": {}},
                {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
            ],
            "isError": True,
            "_meta": {"x": 1},
            "progress": 3,
        },
        Ok(
            CallToolResult(
                (
                    Text("t"),
                    Other("audio", {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}),
                ),
                True,
                None,
            )
        ),
    ),
    # ---------------------------------------------------------------- framing
    (
        "pending line past the cap",
        "frame64",
        [b"x" * 40, b"x" * 40],
        fault(LineTooLong, "the limit is 64"),
    ),
    (
        "completed line past the cap",
        "frame64",
        [b"x" * 65 + b"\n"],
        fault(LineTooLong, "the limit is 64"),
    ),
    ("line of exactly the cap", "frame64", [b"x" * 32, b"x" * 32 + b"\r\n"], Ok([b"x" * 64])),
    ("garbage before a good line", "frame64", [b"\n \n\r\n{}\n"], Ok([b"{}"])),
    (
        "17 MiB without a newline",
        "frame",
        [bytes(1024 * 1024)] * 17,
        fault(LineTooLong, "the limit is %d" % stdio.MAX_LINE_BYTES),
    ),
] + [
    # ---------------------------------------------------------------- the hostile lines
    # (tests/hostile.py): each as a whole line, to the decoder or to the framing
    (
        "hostile line: %s" % line.key,
        "frame" if line.fault is LineTooLong else "decode",
        [line.line] if line.fault is LineTooLong else line.line,
        fault(line.fault, line.reason),
    )
    for line in hostile.LINES
]


class HostileTable(unittest.TestCase):
    def test_names_are_unique(self) -> None:
        names = [name for name, _, _, _ in CASES]
        self.assertEqual(len(names), len(set(names)))

    def test_every_case(self) -> None:
        for name, layer, given, verdict in CASES:
            with self.subTest(name):
                self._check(LAYERS[layer], given, verdict)

    def _check(self, codec: Callable[[Any], Any], given: Any, verdict: Any) -> None:
        if isinstance(verdict, Ok):
            self.assertEqual(codec(given), verdict.value)
            return
        if isinstance(verdict, Holds):
            self.assertTrue(verdict.predicate(codec(given)))
            return
        with self.assertRaises(Exception) as caught:
            codec(given)
        error = caught.exception
        self.assertIs(type(error), verdict.cls, "%s: %s" % (type(error).__name__, error))
        for needle in verdict.needles:
            self.assertIn(needle, error.reason)  # type: ignore[attr-defined]
        self.assertLess(len(error.reason), 300)  # type: ignore[attr-defined]

    def test_unsupported_version_carries_both_sides(self) -> None:
        with self.assertRaises(ForeignVersionFault) as caught:
            protocol.decode_initialize(init(protocolVersion="1999-12-31"))
        self.assertEqual(caught.exception.server_version, "1999-12-31")
        self.assertEqual(caught.exception.supported, SUPPORTED_VERSIONS)

    def test_malformed_message_carries_the_parsers_report(self) -> None:
        with self.assertRaises(MalformedMessage) as caught:
            jsonrpc.decode(envelope('"result":Infinity'))
        self.assertIsInstance(caught.exception.report, CorruptionReport)
        self.assertEqual(caught.exception.report.reason, "Infinity is not JSON")


if __name__ == "__main__":
    unittest.main()
