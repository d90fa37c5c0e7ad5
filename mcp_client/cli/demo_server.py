"""A small MCP server over stdio that ships inside the package.

``python -m mcp_client`` starts it when no server command is given, so the
client, the code generator and the benchmarks always have a well-behaved peer.
It speaks MCP 2025-06-18 (and accepts 2025-03-26 and 2024-11-05): newline-
delimited JSON-RPC 2.0 on stdin/stdout, diagnostics only on stderr (silent
unless ``--verbose``), and it exits with status 0 when its stdin reaches EOF.

The tools are picked to exercise the interesting cases for code generation:

* ``add``          -- integers in, text plus ``structuredContent`` out, with an ``outputSchema``;
* ``join_words``   -- a required ``list[str]``, an optional string with a default, an optional
  integer;
* ``reverse-text`` -- a name that must be mangled (a hyphen), and a boolean flag;
* ``count_by``     -- only partly typed: an array of objects and an ``anyOf`` beside a plain string;
* ``divide``       -- answers ``isError: true`` when dividing by zero.

Errors follow the 2025-06-18 tools page: an unknown tool and arguments that do
not match the tool's ``inputSchema`` are protocol errors (-32602); a tool that
ran and failed is a result with ``isError: true``.

Only the standard library is used, and nothing from the rest of the package,
so the file also runs by path (``python .../demo_server.py``) in a child whose
environment does not put the package on ``sys.path``. Every result is a pure
function of the request: no clocks, no randomness.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import math
import os
import sys
import warnings
from dataclasses import dataclass
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple

__all__ = [
    "SERVER_NAME",
    "SERVER_VERSION",
    "LATEST_VERSION",
    "KNOWN_VERSIONS",
    "TOOLS",
    "DemoTool",
    "DemoServer",
    "violation",
    "serve",
    "main",
]

JsonObject = Dict[str, Any]

#: The classes' names before they were renamed: code mode's own server has a ``Server``
#: and a ``Tool`` (:mod:`mcp_client.codemode._mcp_server`), this one the demo's.
_RENAMED = {"Tool": "DemoTool", "Server": "DemoServer"}


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        warnings.warn(
            "demo_server.%s is now %s" % (name, _RENAMED[name]), DeprecationWarning, stacklevel=2
        )
        return globals()[_RENAMED[name]]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


SERVER_NAME = "mcp-client-demo"
SERVER_VERSION = "1.0.0"
LATEST_VERSION = "2025-06-18"
#: Revisions this server speaks; any other request is answered with the latest (spec: Lifecycle).
KNOWN_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
INSTRUCTIONS = (
    "Demo server bundled with mcp_client. Its tools are deterministic: add, divide, "
    "join_words, reverse-text and count_by."
)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RpcFailure(Exception):
    """A request that must be answered with a JSON-RPC error instead of a result."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ToolFailure(Exception):
    """A tool ran and failed: reported as a result with ``isError: true``."""


# ------------------------------------------------------------------------ tool results


def _text(text: str) -> JsonObject:
    return {"type": "text", "text": text}


def _result(text: str, structured: Optional[JsonObject] = None) -> JsonObject:
    result: JsonObject = {"content": [_text(text)]}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def _error_result(message: str) -> JsonObject:
    return {"content": [_text(message)], "isError": True}


# ---------------------------------------------------------------------- the tool bodies
# Each body receives arguments already checked against its inputSchema, so it
# may index required members directly.


def _add(args: JsonObject) -> JsonObject:
    total = args["a"] + args["b"]
    return _result(str(total), {"sum": total})


def _divide(args: JsonObject) -> JsonObject:
    a, b = args["a"], args["b"]
    if b == 0:
        raise ToolFailure("cannot divide %s by zero" % json.dumps(a))
    try:
        quotient = a / b
    except OverflowError:  # two huge JSON integers: the true quotient has no float
        quotient = math.inf
    if not math.isfinite(quotient):
        raise ToolFailure("the quotient of %s and %s is not a finite number" % (a, b))
    return _result(json.dumps(quotient), {"quotient": quotient})


def _join_words(args: JsonObject) -> JsonObject:
    words: List[str] = args["words"]
    limit: Optional[int] = args.get("limit")
    chosen = words if limit is None else words[:limit]
    return _result(args.get("separator", " ").join(chosen), {"count": len(chosen)})


def _reverse_text(args: JsonObject) -> JsonObject:
    reversed_text: str = args["text"][::-1]
    return _result(reversed_text.upper() if args.get("upper", False) else reversed_text)


def _count_by(args: JsonObject) -> JsonObject:
    counts: Dict[str, int] = {}
    missing: Optional[str] = args.get("missing", "(missing)")
    for record in args["records"]:
        label = _label(record, args["key"], missing)
        if label is not None:
            counts[label] = counts.get(label, 0) + 1
    # Most frequent first, ties by label, so the text never depends on dict order.
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    text = "\n".join("%s: %d" % item for item in ranked) or "(no records)"
    return _result(text, {"counts": dict(ranked)})


def _label(record: JsonObject, key: str, missing: Optional[str]) -> Optional[str]:
    # Strings count as themselves, anything else by its JSON text (so 1 and "1" share a label).
    if key not in record:
        return missing
    value = record[key]
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


# ------------------------------------------------------------------------ tool catalogue


@dataclass(frozen=True)
class DemoTool:
    """One listed tool: its ``tools/list`` entry and the body that runs it."""

    name: str
    description: str
    input_schema: JsonObject
    body: Callable[[JsonObject], JsonObject]
    output_schema: Optional[JsonObject] = None
    title: Optional[str] = None

    def descriptor(self) -> JsonObject:
        """The tool as ``tools/list`` lists it."""
        entry: JsonObject = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {"readOnlyHint": True, "idempotentHint": True},
        }
        if self.title is not None:
            entry["title"] = self.title
        if self.output_schema is not None:
            entry["outputSchema"] = self.output_schema
        return entry


def _object_schema(properties: JsonObject, required: Sequence[str]) -> JsonObject:
    # additionalProperties false: a misspelt argument is refused rather than ignored.
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_INTEGER = {"type": "integer"}
_NUMBER = {"type": "number"}

TOOLS: Tuple[DemoTool, ...] = (
    DemoTool(
        "add",
        "Add two integers.",
        _object_schema(
            {
                "a": dict(_INTEGER, description="First addend."),
                "b": dict(_INTEGER, description="Second addend."),
            },
            ["a", "b"],
        ),
        _add,
        output_schema=_object_schema({"sum": _INTEGER}, ["sum"]),
        title="Add",
    ),
    DemoTool(
        "divide",
        "Divide a by b. Dividing by zero is reported as a tool error.",
        _object_schema(
            {
                "a": dict(_NUMBER, description="Dividend."),
                "b": dict(_NUMBER, description="Divisor."),
            },
            ["a", "b"],
        ),
        _divide,
    ),
    DemoTool(
        "join_words",
        "Join words with a separator, optionally only the first few.",
        _object_schema(
            {
                "words": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Words to join.",
                },
                "separator": {
                    "type": "string",
                    "default": " ",
                    "description": "Placed between words.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Join at most this many.",
                },
            },
            ["words"],
        ),
        _join_words,
    ),
    DemoTool(
        "reverse-text",
        "Reverse a string, code point by code point.",
        _object_schema(
            {
                "text": {"type": "string", "description": "The text to reverse."},
                "upper": {
                    "type": "boolean",
                    "default": False,
                    "description": "Upper-case the result.",
                },
            },
            ["text"],
        ),
        _reverse_text,
        title="Reverse text",
    ),
    DemoTool(
        "count_by",
        "Count records by the value of one key; most frequent first.",
        _object_schema(
            {
                "records": {
                    "type": "array",
                    "description": "The records to count.",
                    "items": {"type": "object", "additionalProperties": True},
                },
                "key": {"type": "string", "description": "The member to group by."},
                "missing": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": "(missing)",
                    "description": "Label for records without the key; null skips them.",
                },
            },
            ["records", "key"],
        ),
        _count_by,
    ),
)


# --------------------------------------------------------------- argument validation
# The subset of JSON Schema the tools above use: type, items, properties,
# required, additionalProperties, anyOf, minimum. Returns the first violation.

_TYPE_TESTS: Dict[str, Callable[[Any], bool]] = {
    # bool is an int subclass in Python, but JSON true is neither integer nor number.
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def violation(value: Any, schema: JsonObject, path: str) -> Optional[str]:
    """The first way ``value`` breaks ``schema`` (named by ``path``), or ``None``."""
    if "anyOf" in schema:
        return _any_of(value, schema["anyOf"], path)
    kind = schema.get("type")
    if kind is not None and not _TYPE_TESTS[kind](value):
        return "%s must be of type %s" % (path, kind)
    if kind == "array":
        return _items(value, schema.get("items", {}), path)
    if kind == "object":
        return _members(value, schema, path)
    if "minimum" in schema and value < schema["minimum"]:
        return "%s must be at least %s" % (path, schema["minimum"])
    return None


def _any_of(value: Any, options: List[JsonObject], path: str) -> Optional[str]:
    if any(violation(value, option, path) is None for option in options):
        return None
    return "%s matches none of its allowed types" % path


def _items(value: List[Any], schema: JsonObject, path: str) -> Optional[str]:
    for index, item in enumerate(value):
        found = violation(item, schema, "%s[%d]" % (path, index))
        if found is not None:
            return found
    return None


def _members(value: JsonObject, schema: JsonObject, path: str) -> Optional[str]:
    properties: JsonObject = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            return "%s.%s is required" % (path, name)
    for name, member in value.items():
        if name in properties:
            found = violation(member, properties[name], "%s.%s" % (path, name))
            if found is not None:
                return found
        elif schema.get("additionalProperties", True) is False:
            return "%s.%s is not a known argument" % (path, name)
    return None


# ----------------------------------------------------------------------------- cursors
# Opaque to clients (spec: Pagination); inside, just the offset of the next page.

_CURSOR_PREFIX = "demo-offset:"


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode((_CURSOR_PREFIX + str(offset)).encode("ascii")).decode("ascii")


def _offset(cursor: Any, total: int) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
    except (AttributeError, UnicodeError, binascii.Error, ValueError):
        text = ""
    digits = text[len(_CURSOR_PREFIX) :] if text.startswith(_CURSOR_PREFIX) else ""
    if not digits.isdigit() or not 0 < int(digits) < total:
        raise RpcFailure(INVALID_PARAMS, "Invalid cursor")
    return int(digits)


# ------------------------------------------------------------------------------ server


def _success(ident: Any, result: JsonObject) -> JsonObject:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _failure(ident: Any, code: int, message: str) -> JsonObject:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _refuse_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


class DemoServer:
    """The protocol logic, free of I/O: one inbound line in, at most one reply out."""

    def __init__(self, tools: Sequence[DemoTool] = TOOLS, page_size: Optional[int] = None) -> None:
        self._tools = tuple(tools)
        self._by_name = {tool.name: tool for tool in self._tools}
        self._page_size = page_size
        self._methods: Dict[str, Callable[[JsonObject], JsonObject]] = {
            "initialize": self._initialize,
            "ping": lambda params: {},
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
        }

    def handle_line(self, line: bytes) -> Optional[JsonObject]:
        """The reply owed for one wire line, or ``None`` when nothing is owed."""
        try:
            message = json.loads(line, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return _failure(None, PARSE_ERROR, "Parse error")
        return self.handle(message)

    def handle(self, message: Any) -> Optional[JsonObject]:
        """The reply owed for one decoded message, or ``None``."""
        if not isinstance(message, dict):
            return _failure(None, INVALID_REQUEST, "Invalid Request: not a single JSON object")
        if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method", ""), str):
            return _failure(_usable_id(message), INVALID_REQUEST, "Invalid Request")
        if "method" not in message or "id" not in message:
            return None  # a notification, or a response to nothing we sent: nothing owed
        if _usable_id(message) is None:
            return _failure(
                None, INVALID_REQUEST, "Invalid Request: id must be an integer or string"
            )
        return self._request(message["id"], message["method"], message.get("params", {}))

    def _request(self, ident: Any, method: str, params: Any) -> JsonObject:
        handler = self._methods.get(method)
        try:
            if handler is None:
                raise RpcFailure(METHOD_NOT_FOUND, "Method not found: %s" % method)
            if not isinstance(params, dict):
                raise RpcFailure(INVALID_PARAMS, "params must be an object")
            return _success(ident, handler(params))
        except RpcFailure as failure:
            return _failure(ident, failure.code, failure.message)
        except (ArithmeticError, RecursionError, ValueError) as error:
            # A bug or an input past what the bodies handle: a demo must answer, not die.
            return _failure(ident, INTERNAL_ERROR, "Internal error: %s" % type(error).__name__)

    def _initialize(self, params: JsonObject) -> JsonObject:
        requested = params.get("protocolVersion")
        return {
            "protocolVersion": requested if requested in KNOWN_VERSIONS else LATEST_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
            "instructions": INSTRUCTIONS,
        }

    def _list_tools(self, params: JsonObject) -> JsonObject:
        cursor = params.get("cursor")
        start = 0 if cursor is None else _offset(cursor, len(self._tools))
        end = len(self._tools) if self._page_size is None else start + self._page_size
        page: JsonObject = {"tools": [tool.descriptor() for tool in self._tools[start:end]]}
        if end < len(self._tools):
            page["nextCursor"] = _cursor(end)
        return page

    def _call_tool(self, params: JsonObject) -> JsonObject:
        name = params.get("name")
        tool = self._by_name.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RpcFailure(INVALID_PARAMS, "Unknown tool: %s" % _show(name))
        arguments = params.get("arguments", {})
        found = violation(arguments, tool.input_schema, "arguments")
        if found is not None:
            raise RpcFailure(
                INVALID_PARAMS, "Invalid arguments for tool %s: %s" % (tool.name, found)
            )
        try:
            return tool.body(arguments)
        except ToolFailure as failure:
            return _error_result(str(failure))


def _usable_id(message: JsonObject) -> Any:
    ident = message.get("id")
    return ident if type(ident) in (int, str) else None


def _show(value: Any) -> str:
    return json.dumps(value)[:100]


# ------------------------------------------------------------------------------- stdio


def _encode(reply: JsonObject) -> bytes:
    # ensure_ascii: a lone surrogate arriving as "\ud800" escapes back out
    # instead of failing to encode as UTF-8; the output is always one line.
    return json.dumps(reply, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def serve(
    server: DemoServer, stdin: IO[bytes], stdout: IO[bytes], log: Optional[IO[str]] = None
) -> int:
    """Answer lines from ``stdin`` until EOF; returns the exit status (0)."""
    for line in stdin:
        if not line.strip():
            continue
        reply = server.handle_line(line)
        if log is not None:
            log.write("%s: %s\n" % (SERVER_NAME, _describe(line, reply)))
        if reply is not None:
            stdout.write(_encode(reply))
            stdout.flush()
    return 0


def _describe(line: bytes, reply: Optional[JsonObject]) -> str:
    outcome = "no reply" if reply is None else ("error" if "error" in reply else "result")
    return "%d bytes in, %s" % (len(line), outcome)


def _arguments(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_client.demo_server",
        description="A deterministic demo MCP server on stdin/stdout (newline-delimited JSON-RPC).",
    )
    parser.add_argument(
        "--page-size",
        type=_positive,
        default=None,
        metavar="N",
        help="tools per tools/list page (default: all in one page)",
    )
    parser.add_argument("--verbose", action="store_true", help="log one line per message to stderr")
    return parser.parse_args(argv)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the demo server on this process's stdin and stdout."""
    options = _arguments(argv)
    server = DemoServer(page_size=options.page_size)
    try:
        return serve(
            server, sys.stdin.buffer, sys.stdout.buffer, sys.stderr if options.verbose else None
        )
    except BrokenPipeError:
        # The client went away mid-reply. Point stdout at /dev/null so the
        # interpreter's final flush does not print a second traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
