"""Scripted MCP servers for the client's tests: ``python scripted.py BEHAVIOUR [ARGS...]``.

Standard library only, one behaviour per run; the catalogue, with what each one
expects from the client, is the docstring of ``tests/servers/__init__.py``.

Every behaviour is the well-behaved :class:`Server` with one handler replaced,
so each script does exactly one odd thing at exactly one point. Unless its
point is to stop reading, a server exits with status 0 when stdin reaches EOF.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

Message = Dict[str, Any]
Handler = Callable[[Message], None]

VERSION = "2025-06-18"
KNOWN_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
TOOLS_CAPABILITY: Message = {"tools": {"listChanged": False}}
LONG_SLEEP = 300.0  # "forever" for a test: the client retires servers with SIGKILL anyway

# Answers from timer threads (``slow``) and the main loop share stdout: one
# lock keeps every line whole.
_write_lock = threading.Lock()

#: Text for servers that try to drive a terminal or forge a log line: escapes
#: that would clear the screen, colour, set the title, ring, return the
#: carriage and reverse the text, and a newline that starts a forged record.
HOSTILE = "\x1b[2J\x1b[31mred\x1b]0;title\x07\rback\u202eRLO\nFORGED mcp_client.server: pwned"


# ---------------------------------------------------------------------- wire helpers


def write_line(data: bytes) -> None:
    """Write one line (``data`` must not hold a newline) and flush it at once."""
    with _write_lock:
        sys.stdout.buffer.write(data + b"\n")
        sys.stdout.buffer.flush()


def send(message: Any) -> None:
    write_line(json.dumps(message, separators=(",", ":")).encode("utf-8"))


def respond(request: Message, result: Message) -> None:
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def fail(request: Message, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": message}})


def read_message() -> Optional[Message]:
    """The next message from stdin, or ``None`` at EOF."""
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            send(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
            )
            continue
        if isinstance(message, dict):
            return message
        send(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
        )


def text_result(text: str) -> Message:
    return {"content": [{"type": "text", "text": text}]}


def echo_text(request: Message) -> str:
    """The echo tools' answer: the arguments as compact JSON with sorted keys."""
    arguments = request.get("params", {}).get("arguments", {})
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def tool(name: str) -> Message:
    return {
        "name": name,
        "description": "Echo the arguments back as JSON text.",
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
    }


def tool_names(count: int) -> List[str]:
    return ["echo"] + ["echo_%d" % index for index in range(1, count)] if count else []


def _strip_envelope(response: Message) -> Message:
    return {key: value for key, value in response.items() if key not in ("jsonrpc", "id")}


# ----------------------------------------------------------------------- the good server


class Server:
    """A correct MCP server; a behaviour swaps entries of :attr:`handlers`."""

    def __init__(
        self,
        tools: int = 2,
        pages: int = 1,
        version: Optional[str] = None,
        capabilities: Optional[Message] = None,
    ) -> None:
        names = tool_names(tools)
        # N pages, even when some come out empty, so a test can ask for an exact count.
        self.pages = [
            names[page * tools // pages : (page + 1) * tools // pages] for page in range(pages)
        ]
        self.version = version
        self.capabilities = TOOLS_CAPABILITY if capabilities is None else capabilities
        self.answers: Dict[Any, Message] = {}  # the client's responses to our requests, by id
        self.handlers: Dict[str, Handler] = {
            "initialize": self.initialize,
            "ping": self.ping,
            "tools/list": self.list_tools,
            "tools/call": self.call,
        }

    def run(self) -> None:
        """Serve until stdin reaches EOF."""
        message = read_message()
        while message is not None:
            self.dispatch(message)
            message = read_message()

    def dispatch(self, message: Message) -> None:
        method = message.get("method")
        if method is None:
            self.answers[message.get("id")] = message
        elif "id" in message:
            self.handlers.get(method, self.unknown)(message)
        # notifications (including notifications/initialized) need nothing

    def await_answer(self, ident: Any) -> Message:
        """Serve on until the client has answered our request ``ident``."""
        while ident not in self.answers:
            message = read_message()
            if message is None:
                sys.exit(0)
            self.dispatch(message)
        return self.answers[ident]

    def initialize(self, request: Message) -> None:
        respond(request, self.init_result(request))

    def init_result(self, request: Message) -> Message:
        asked = request.get("params", {}).get("protocolVersion")
        version = self.version or (asked if asked in KNOWN_VERSIONS else VERSION)
        return {
            "protocolVersion": version,
            "capabilities": self.capabilities,
            "serverInfo": {"name": "scripted", "version": "1.0"},
        }

    def ping(self, request: Message) -> None:
        respond(request, {})

    def list_tools(self, request: Message) -> None:
        cursor = request.get("params", {}).get("cursor")
        index = 0 if cursor is None else _page_index(cursor, len(self.pages))
        if index is None:
            fail(request, -32602, "Invalid cursor")
            return
        page: Message = {"tools": [tool(name) for name in self.pages[index]]}
        if index + 1 < len(self.pages):
            page["nextCursor"] = "page-%d" % (index + 1)
        respond(request, page)

    def call(self, request: Message) -> None:
        name = request.get("params", {}).get("name")
        if not any(name in page for page in self.pages):
            fail(request, -32602, "Unknown tool: %s" % name)
            return
        respond(request, text_result(echo_text(request)))

    def unknown(self, request: Message) -> None:
        fail(request, -32601, "Method not found: %s" % request.get("method"))


def _page_index(cursor: Any, pages: int) -> Optional[int]:
    digits = (
        cursor[len("page-") :] if isinstance(cursor, str) and cursor.startswith("page-") else ""
    )
    return int(digits) if digits.isdigit() and 0 < int(digits) < pages else None


# ---------------------------------------------------------------------------- behaviours


def good(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(prog="scripted.py good")
    parser.add_argument("--tools", type=int, default=2, help="tools in all (default 2)")
    parser.add_argument("--pages", type=int, default=1, help="tools/list pages (default 1)")
    options = parser.parse_args(argv)
    Server(tools=options.tools, pages=max(1, options.pages)).run()


def garbage_before_handshake(argv: List[str]) -> None:
    server = Server()

    def initialize(request: Message) -> None:
        write_line(b"Starting the server... (this line is not JSON)")
        server.initialize(request)

    server.handlers["initialize"] = initialize
    server.run()


def notify_before_init(argv: List[str]) -> None:
    server = Server()

    def initialize(request: Message) -> None:
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "id": "early-ping", "method": "ping"})
        server.initialize(request)

    def call(request: Message) -> None:
        answer = server.await_answer("early-ping")
        respond(request, text_result(json.dumps({"ping": _strip_envelope(answer)})))

    server.handlers["initialize"] = initialize
    _on_call(call, server)


def wrong_version(argv: List[str]) -> None:
    Server(version="1999-01-01").run()


def no_tools_capability(argv: List[str]) -> None:
    Server(capabilities={}).run()


def handshake_error(argv: List[str]) -> None:
    server = Server()
    server.handlers["initialize"] = lambda request: fail(request, -32603, "initialization refused")
    server.run()


def handshake_silent(argv: List[str]) -> None:
    server = Server()
    server.handlers["initialize"] = lambda request: None
    server.run()


def exit_immediately(argv: List[str]) -> None:
    os._exit(7)


def _on_call(answer: Handler, server: Optional[Server] = None) -> None:
    """Run a good server whose every ``tools/call`` is handled by ``answer``."""
    server = server or Server()
    server.handlers["tools/call"] = answer
    server.run()


def huge_line(argv: List[str]) -> None:
    size = int(argv[0])
    _on_call(lambda request: write_line(sized_line(request["id"], size)))


def sized_line(ident: Any, size: int) -> bytes:
    """A valid tools/call response of exactly ``size`` bytes (newline excluded), if that
    is at least its envelope's length; built as bytes, so 17 MiB costs one allocation."""
    head = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % (
        json.dumps(ident).encode("utf-8")
    )
    tail = b'"}]}}'
    return head + b"x" * max(0, size - len(head) - len(tail)) + tail


def deep_nesting(argv: List[str]) -> None:
    depth = int(argv[0]) if argv else 100000

    def call(request: Message) -> None:
        write_line(
            b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"deep"}],'
            b'"structuredContent":{"nested":%s%s}}}'
            % (json.dumps(request["id"]).encode(), b"[" * depth, b"]" * depth)
        )

    _on_call(call)


def invalid_utf8(argv: List[str]) -> None:
    # \xff never occurs in UTF-8; \xc3 without a continuation byte is a cut character.
    _on_call(
        lambda request: write_line(
            b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text",'
            b'"text":"bad \xff\xfe \xc3 bytes"}]}}' % json.dumps(request["id"]).encode()
        )
    )


def batch(argv: List[str]) -> None:
    _on_call(
        lambda request: send(
            [{"jsonrpc": "2.0", "id": request["id"], "result": text_result(echo_text(request))}]
        )
    )


def null_id_error(argv: List[str]) -> None:
    _on_call(
        lambda request: send(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        )
    )


def float_id(argv: List[str]) -> None:
    def call(request: Message) -> None:
        ident = request["id"]
        send(
            {
                "jsonrpc": "2.0",
                "id": float(ident) if isinstance(ident, int) else ident,
                "result": text_result(echo_text(request)),
            }
        )

    _on_call(call)


def duplicate_response(argv: List[str]) -> None:
    def call(request: Message) -> None:
        respond(request, text_result("first"))
        respond(request, text_result("second"))

    _on_call(call)


UNKNOWN_INT_ID = 987654321
UNKNOWN_STR_ID = "never-requested"


def unknown_ids(argv: List[str]) -> None:
    def call(request: Message) -> None:
        send({"jsonrpc": "2.0", "id": UNKNOWN_INT_ID, "result": text_result("stray int id")})
        send({"jsonrpc": "2.0", "id": UNKNOWN_STR_ID, "result": text_result("stray string id")})
        respond(request, text_result(echo_text(request)))

    _on_call(call)


def out_of_order(argv: List[str]) -> None:
    batch_size = int(argv[0]) if argv else 2
    held: List[Message] = []

    def call(request: Message) -> None:
        held.append(request)
        if len(held) == batch_size:
            for waiting in reversed(held):
                respond(waiting, text_result(echo_text(waiting)))
            del held[:]

    _on_call(call)


def exit_mid_call(argv: List[str]) -> None:
    _on_call(lambda request: os._exit(3))


def close_stdout(argv: List[str]) -> None:
    def call(request: Message) -> None:
        os.close(1)
        time.sleep(LONG_SLEEP)
        os._exit(0)  # skip the interpreter's flush of a stdout that no longer exists

    _on_call(call)


def fork_grandchild(argv: List[str]) -> None:
    server = Server()
    grandchild: List[int] = []

    def initialize(request: Message) -> None:
        # Forked before the handshake answer, so the pid file exists by the time connect returns.
        grandchild.append(_fork_sleeper())
        if argv:
            _write_atomically(argv[0], "%d\n" % grandchild[0])
        server.initialize(request)

    server.handlers["initialize"] = initialize
    _on_call(lambda request: respond(request, text_result(str(grandchild[0]))), server)


def _fork_sleeper() -> int:
    pid = os.fork()
    if pid == 0:
        # The grandchild stays in our process group and keeps the inherited pipes,
        # as a server left behind by an npx/uvx launcher does.
        try:
            time.sleep(LONG_SLEEP)
        finally:
            os._exit(0)
    return pid


def _write_atomically(path: str, text: str) -> None:
    with open(path + ".tmp", "w") as handle:
        handle.write(text)
    os.replace(path + ".tmp", path)


def never_answer(argv: List[str]) -> None:
    _on_call(lambda request: None)


def never_read(argv: List[str]) -> None:
    server = Server()

    def initialize(request: Message) -> None:
        server.initialize(request)
        time.sleep(LONG_SLEEP)  # stdin is never read again: the client's writes fill the pipe
        os._exit(0)

    server.handlers["initialize"] = initialize
    server.run()


def loop_cursor(argv: List[str]) -> None:
    server = Server()
    server.handlers["tools/list"] = lambda request: respond(
        request, {"tools": [tool("echo")], "nextCursor": "same-cursor"}
    )
    server.run()


def costly_tools() -> List[Message]:
    """Issue 25's hostile listing: three tools, 3.6 MB, each with one ``$defs`` entry
    whose key's description is 200k control characters, referenced 255 times."""
    described = {"type": "string", "description": "\x01" * 200_000}
    shared = {"type": "object", "properties": {"x": described}}
    return [
        {
            "name": "costly%d" % n,
            "inputSchema": {
                "type": "object",
                "$defs": {"Shared": shared},
                "properties": {"p%d" % i: {"$ref": "#/$defs/Shared"} for i in range(255)},
            },
        }
        for n in range(3)
    ]


def costly_listing(argv: List[str]) -> None:
    server = Server()
    server.handlers["tools/list"] = lambda request: respond(request, {"tools": costly_tools()})
    server.run()


def slow(argv: List[str]) -> None:
    default_delay = float(argv[0]) if argv else 1.0

    def call(request: Message) -> None:
        delay = request.get("params", {}).get("arguments", {}).get("delay", default_delay)
        # One timer thread per call, so a slow call never holds up a fast one.
        timer = threading.Timer(float(delay), respond, (request, text_result(echo_text(request))))
        timer.daemon = True  # EOF on stdin ends the process without waiting for timers
        timer.start()

    _on_call(call)


def server_requests(argv: List[str]) -> None:
    server = Server()
    asked: List[int] = []

    def call(request: Message) -> None:
        asked.append(len(asked) + 1)
        ping_id, other_id = asked[-1], "sampling-%d" % asked[-1]
        send({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
        send(
            {
                "jsonrpc": "2.0",
                "id": other_id,
                "method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 1},
            }
        )
        report = {
            "ping": _strip_envelope(server.await_answer(ping_id)),
            "sampling/createMessage": _strip_envelope(server.await_answer(other_id)),
        }
        respond(request, text_result(json.dumps(report, sort_keys=True)))

    _on_call(call, server)


def lying_tools(argv: List[str]) -> None:
    server = Server()
    server.handlers["tools/list"] = lambda request: respond(
        request, {"tools": [tool("echo"), {"name": "liar", "description": "has no inputSchema"}]}
    )
    server.run()


def stderr_noise(argv: List[str]) -> None:
    size = int(argv[0]) if argv else 1024 * 1024
    banner = b"[scripted] banner and log noise that is not part of the protocol "
    line = banner.ljust(99, b"=") + b"\n"
    sys.stderr.buffer.write(line * (size // len(line) + 1))
    sys.stderr.buffer.flush()
    server = Server()
    server.handlers = {
        method: _logged(method, handler) for method, handler in server.handlers.items()
    }
    server.run()


def _logged(method: str, handler: Handler) -> Handler:
    def logged(request: Message) -> None:
        sys.stderr.write("[scripted] handling %s\n" % method)
        sys.stderr.flush()
        handler(request)

    return logged


#: What ``noisy`` prints to stdout before answering: a wrapper's banner (one
#: line coloured with ANSI escapes), then an SDK server's ``console.log``.
NOISE_BANNER = [
    b"\x1b[1mweather-wrapper\x1b[0m v0.3: starting the server on stdio",
    b"Loaded 3 tools from ./tools (took 12 ms)",
]
NOISE_LOG = b"[Mock SDK Server] Executing %s with id %s"


def noisy(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(prog="scripted.py noisy")
    parser.add_argument("--banner", type=int, default=2, help="banner lines (default 2)")
    options = parser.parse_args(argv)
    server = Server()
    server.handlers = {
        method: _noisy(method, handler) for method, handler in server.handlers.items()
    }
    initialize = server.handlers["initialize"]

    def banner_first(request: Message) -> None:
        for index in range(options.banner):
            write_line(NOISE_BANNER[index % len(NOISE_BANNER)])
        initialize(request)

    server.handlers["initialize"] = banner_first
    server.run()


def _noisy(method: str, handler: Handler) -> Handler:
    def noisy(request: Message) -> None:
        if method != "initialize":  # its noise is the banner
            write_line(NOISE_LOG % (method.encode(), json.dumps(request["id"]).encode()))
        handler(request)

    return noisy


def json_noise(argv: List[str]) -> None:
    def call(request: Message) -> None:
        write_line(b'{"hello": 1}')
        respond(request, text_result(echo_text(request)))

    _on_call(call)


def binary_noise(argv: List[str]) -> None:
    size = int(argv[0])
    server = Server()

    def initialize(request: Message) -> None:
        # Not UTF-8 from its first byte, control bytes throughout, no newline.
        pattern = bytes(range(0x80, 0x100)) + bytes(range(0, 10)) + bytes(range(11, 32))
        write_line((pattern * (size // len(pattern) + 1))[:size])
        server.initialize(request)

    server.handlers["initialize"] = initialize
    server.run()


def hostile_text(argv: List[str]) -> None:
    server = Server(tools=1)

    def initialize(request: Message) -> None:
        sys.stderr.write("stderr %s\n" % HOSTILE)
        sys.stderr.flush()
        send({"jsonrpc": "2.0", "method": "notify" + HOSTILE})
        send({"jsonrpc": "2.0", "id": "asked", "method": "ask" + HOSTILE})
        result = server.init_result(request)
        result["serverInfo"] = {"name": "name" + HOSTILE, "version": "v" + HOSTILE}
        respond(request, result)

    def list_tools(request: Message) -> None:
        entry = tool("echo")
        entry["description"] = "description " + HOSTILE
        respond(request, {"tools": [entry]})

    def call(request: Message) -> None:
        sys.stderr.write("call %s\n" % HOSTILE)
        sys.stderr.flush()
        if request.get("params", {}).get("name") == "echo":
            respond(request, text_result("result " + HOSTILE))
        else:
            fail(request, -32602, "error " + HOSTILE)

    server.handlers.update({"initialize": initialize, "tools/list": list_tools, "tools/call": call})
    server.run()


BEHAVIOURS: Dict[str, Callable[[List[str]], None]] = {
    "good": good,
    "garbage_before_handshake": garbage_before_handshake,
    "notify_before_init": notify_before_init,
    "wrong_version": wrong_version,
    "no_tools_capability": no_tools_capability,
    "huge_line": huge_line,
    "deep_nesting": deep_nesting,
    "invalid_utf8": invalid_utf8,
    "batch": batch,
    "null_id_error": null_id_error,
    "float_id": float_id,
    "duplicate_response": duplicate_response,
    "unknown_ids": unknown_ids,
    "out_of_order": out_of_order,
    "exit_mid_call": exit_mid_call,
    "close_stdout": close_stdout,
    "fork_grandchild": fork_grandchild,
    "never_answer": never_answer,
    "never_read": never_read,
    "loop_cursor": loop_cursor,
    "slow": slow,
    "costly_listing": costly_listing,
    "server_requests": server_requests,
    "lying_tools": lying_tools,
    "stderr_noise": stderr_noise,
    "handshake_error": handshake_error,
    "handshake_silent": handshake_silent,
    "exit_immediately": exit_immediately,
    "noisy": noisy,
    "json_noise": json_noise,
    "binary_noise": binary_noise,
    "hostile_text": hostile_text,
}


def main(argv: List[str]) -> int:
    if not argv or argv[0] not in BEHAVIOURS:
        sys.stderr.write(
            "usage: scripted.py BEHAVIOUR [ARGS...]; one of: %s\n" % ", ".join(BEHAVIOURS)
        )
        return 2
    try:
        BEHAVIOURS[argv[0]](argv[1:])
    except BrokenPipeError:
        # The client went away mid-write (e.g. it refused a huge line): not our failure.
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
