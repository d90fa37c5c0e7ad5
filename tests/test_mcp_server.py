"""The stdio MCP server's loop (``mcp_client._mcp_server``) on real pipes, with tools of
the tests' own: the handshake, the methods, hostile lines, concurrency, cancellation.

The code-mode tools on top of it are ``tests/test_serve.py``'s; the SDK clients that
judge both are ``tests/test_serve_hosts.py``'s.
"""

from __future__ import annotations

import json
import os
import select
import threading
import unittest
from typing import Any, Dict, List, Optional, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_client.codemode._mcp_server import (
    CallContext,
    HostFailed,
    Identity,
    Refused,
    Server,
    Tool,
    negotiate,
)
from mcp_client.jsonvalue import JsonValue
from mcp_client.stdio import MAX_LINE_BYTES

from strategies import examples
from support import LONG, SHORT

SCHEMA: Dict[str, JsonValue] = {"type": "object"}


def echo(arguments: Dict[str, JsonValue]) -> Dict[str, JsonValue]:
    text = json.dumps(arguments, sort_keys=True)
    return {"content": [{"type": "text", "text": text}], "structuredContent": arguments}


def refuse(arguments: Dict[str, JsonValue]) -> Refused:
    return Refused("no, never: %s" % sorted(arguments))


def crash(arguments: Dict[str, JsonValue]) -> Dict[str, JsonValue]:
    raise ZeroDivisionError("the tool's own bug")


def unencodable(arguments: Dict[str, JsonValue]) -> Dict[str, JsonValue]:
    return {"content": [{"type": "text", "text": "\ud800"}]}  # a lone surrogate


class Gate:
    """A tool that waits until released; ``entered`` counts the calls inside it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def __call__(self, arguments: Dict[str, JsonValue]) -> Dict[str, JsonValue]:
        self.entered.release()
        self.release.wait(LONG)
        return echo(arguments)


class Peer:
    """The host's side of a :class:`Server` running on a thread of the test's own."""

    def __init__(self, tools: List[Tool], max_running: int = 4) -> None:
        self.to_server, self.writer = os.pipe()
        self.reader, self.from_server = os.pipe()
        identity = Identity("probe", "1.0", "Probe", "use the tools")
        self.server = Server(
            identity,
            tools,
            read_fd=self.to_server,
            write_fd=self.from_server,
            max_running=max_running,
        )
        self.thread = threading.Thread(target=self.server.serve, name="test-serve")
        self.thread.start()
        self.pending = b""

    def send(self, message: Union[bytes, Dict[str, Any]]) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(self.writer, view) :]

    def request(self, ident: Any, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def receive(self, timeout: float = LONG) -> Optional[Dict[str, Any]]:
        """The next line the server wrote, parsed; ``None`` when none came in ``timeout``."""
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.reader], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self.reader, 1 << 16)
            if not chunk:
                return None
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        answer: Dict[str, Any] = json.loads(line)
        return answer

    def answer(self, ident: Any, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        self.request(ident, method, params)
        got = self.receive()
        assert got is not None, "no answer to %s" % method
        return got

    def close(self) -> None:
        os.close(self.writer)
        self.thread.join(LONG)
        assert self.server.join(LONG)
        for fd in (self.to_server, self.reader, self.from_server):
            os.close(fd)


class ServerCase(unittest.TestCase):
    def peer(self, *tools: Tool, max_running: int = 4) -> Peer:
        default = [Tool({"name": "echo", "inputSchema": SCHEMA}, echo)]
        peer = Peer(list(tools) or default, max_running)
        self.addCleanup(peer.close)
        return peer

    def assertError(self, answer: Dict[str, Any], ident: Any, code: int) -> str:
        self.assertEqual(answer["id"], ident, answer)
        self.assertEqual(answer["error"]["code"], code, answer)
        self.assertNotIn("result", answer)
        return str(answer["error"]["message"])


class Handshake(ServerCase):
    def test_initialize_names_us_and_gives_the_instructions(self) -> None:
        answer = self.peer().answer(1, "initialize", {"protocolVersion": "2025-06-18"})
        self.assertEqual(
            answer,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "probe", "version": "1.0", "title": "Probe"},
                    "instructions": "use the tools",
                },
            },
        )

    def test_the_version_is_the_hosts_when_we_speak_it_else_ours(self) -> None:
        self.assertEqual(negotiate("2025-03-26"), "2025-03-26")
        self.assertEqual(negotiate("2024-11-05"), "2024-11-05")
        for foreign in ("2099-01-01", None, 7, ["2025-06-18"]):
            self.assertEqual(negotiate(foreign), "2025-06-18")
        peer = self.peer()
        answer = peer.answer("a", "initialize", {"protocolVersion": "2099-01-01"})
        self.assertEqual(answer["result"]["protocolVersion"], "2025-06-18")

    def test_ping_and_the_initialized_notification(self) -> None:
        peer = self.peer()
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.assertEqual(peer.answer(2, "ping"), {"jsonrpc": "2.0", "id": 2, "result": {}})


class Methods(ServerCase):
    def test_tools_list_gives_every_descriptor(self) -> None:
        tools = [
            Tool({"name": "echo", "inputSchema": SCHEMA}, echo),
            Tool({"name": "refuse", "inputSchema": SCHEMA, "title": "No"}, refuse),
        ]
        answer = self.peer(*tools).answer(1, "tools/list", {})
        self.assertEqual(answer["result"], {"tools": [tool.descriptor for tool in tools]})

    def test_a_call_is_answered_with_the_tools_result(self) -> None:
        answer = self.peer().answer(1, "tools/call", {"name": "echo", "arguments": {"a": [1]}})
        self.assertEqual(answer["result"]["structuredContent"], {"a": [1]})
        answer = self.peer().answer(2, "tools/call", {"name": "echo"})  # arguments optional
        self.assertEqual(answer["result"]["structuredContent"], {})

    def test_bad_calls_are_invalid_params(self) -> None:
        tools = [
            Tool({"name": "echo", "inputSchema": SCHEMA}, echo),
            Tool({"name": "refuse", "inputSchema": SCHEMA}, refuse),
        ]
        peer = self.peer(*tools)
        message = self.assertError(peer.answer(1, "tools/call", {"name": "nope"}), 1, -32602)
        self.assertEqual(message, "unknown tool 'nope'; the tools: echo, refuse")
        bad = peer.answer(2, "tools/call", {"name": "echo", "arguments": [1]})
        self.assertError(bad, 2, -32602)
        refused = peer.answer(3, "tools/call", {"name": "refuse", "arguments": {"x": 1}})
        self.assertEqual(self.assertError(refused, 3, -32602), "no, never: ['x']")
        peer.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": [1]})
        self.assertError(peer.receive() or {}, 4, -32602)

    def test_an_unknown_method_is_method_not_found_and_a_notification_is_ignored(self) -> None:
        peer = self.peer()
        peer.send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}})
        answer = peer.answer(1, "resources/list")
        self.assertEqual(self.assertError(answer, 1, -32601), "method not found: resources/list")
        self.assertEqual(peer.answer(2, "ping")["id"], 2, "nothing was said in between")

    def test_a_responses_from_the_host_is_ignored(self) -> None:
        peer = self.peer()
        peer.send({"jsonrpc": "2.0", "id": 9, "result": {}})
        self.assertEqual(peer.answer(3, "ping")["id"], 3)

    def test_a_tool_that_raises_is_an_internal_error_and_the_server_goes_on(self) -> None:
        tools = [
            Tool({"name": "crash", "inputSchema": SCHEMA}, crash),
            Tool({"name": "bad", "inputSchema": SCHEMA}, unencodable),
            Tool({"name": "echo", "inputSchema": SCHEMA}, echo),
        ]
        peer = self.peer(*tools)
        with self.assertLogs("mcp_client._mcp_server", "ERROR"):
            self.assertError(peer.answer(1, "tools/call", {"name": "crash"}), 1, -32603)
            self.assertError(peer.answer(2, "tools/call", {"name": "bad"}), 2, -32603)
        self.assertIn("result", peer.answer(3, "tools/call", {"name": "echo"}))


class HostileLines(ServerCase):
    def test_lines_that_are_not_json_rpc_get_the_json_rpc_errors(self) -> None:
        peer = self.peer()
        cases = [
            (b"not json\n", None, -32700),
            (b"\xff\xfe{}\n", None, -32700),
            (b"[1, 2]\n", None, -32600),
            (b'{"jsonrpc": "2.0", "id": 3, "method": 7}\n', 3, -32600),
            (b'{"jsonrpc": "1.0", "id": "x", "method": "ping"}\n', "x", -32600),
            (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}\n', None, -32600),
            (b'{"jsonrpc": "2.0"}\n', None, -32600),
            (b"[" * 100000 + b"\n", None, -32700),
            (b'{"jsonrpc": "2.0", "id": 4, "method": "\\ud800"}\n', 4, -32601),
            (b'{"jsonrpc": "2.0", "id": "\\udfff", "method": "nope"}\n', None, -32601),
            (b'{"jsonrpc": "2.0", "id": "\\udfff", "method": "ping"}\n', None, -32603),
        ]
        for line, ident, code in cases:
            peer.send(line)
            self.assertError(peer.receive() or {}, ident, code)
        self.assertEqual(peer.answer(1, "ping")["result"], {})

    def test_a_line_over_the_cap_is_refused_and_the_next_is_served(self) -> None:
        peer = self.peer()
        writer = threading.Thread(
            target=peer.send, args=(b"x" * (MAX_LINE_BYTES + 10) + b'\n{"jsonrpc": "2.0"',)
        )
        writer.start()  # the server reads while we write: the pipe holds 64 KiB
        message = self.assertError(peer.receive() or {}, None, -32600)
        self.assertIn("a line over 16777216 bytes", message)
        writer.join(LONG)
        peer.send(b', "id": 5, "method": "ping"}\n')  # the line after the long one, whole
        self.assertEqual(peer.answer(6, "ping")["id"], 5)

    def test_a_long_line_cut_anywhere_is_skipped_to_its_end(self) -> None:
        peer = self.peer()
        peer.send(b"y" * (1 << 20))
        peer.send(b"y" * MAX_LINE_BYTES)  # past the cap, still no newline
        self.assertError(peer.receive() or {}, None, -32600)
        peer.send(b"y" * 1000 + b"\n")  # its end: nothing more is said about it
        self.assertEqual(peer.answer(7, "ping")["id"], 7)

    @settings(max_examples=examples(60), deadline=None)
    @given(st.lists(st.binary(max_size=200).map(lambda b: b.replace(b"\n", b"")), max_size=8))
    def test_any_bytes_get_at_most_one_answer_a_line_and_the_server_goes_on(
        self, lines: List[bytes]
    ) -> None:
        peer = Peer([Tool({"name": "echo", "inputSchema": SCHEMA}, echo)])
        try:
            peer.send(b"".join(line + b"\n" for line in lines))
            peer.request("last", "ping")
            answers = []
            while True:
                answer = peer.receive()
                assert answer is not None, "the server stopped answering"
                answers.append(answer)
                if answer.get("id") == "last":
                    break
            self.assertLessEqual(len(answers) - 1, len(lines))
        finally:
            peer.close()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8,
)  # fmt: skip
METHODS = st.sampled_from(
    ["initialize", "ping", "tools/list", "tools/call", "notifications/cancelled", "x/y"]
)
MESSAGES = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"])},
    optional={
        "id": JSON,
        "method": METHODS | st.text(max_size=6),
        "params": JSON | st.fixed_dictionaries({"name": st.just("echo"), "arguments": JSON}),
        "result": JSON,
    },
)


@pytest.mark.slow
class HostileMessages(ServerCase):
    @settings(max_examples=examples(80), deadline=None)
    @given(st.lists(MESSAGES, max_size=6))
    def test_any_json_gets_at_most_one_answer_each_and_the_server_goes_on(
        self, messages: List[Dict[str, Any]]
    ) -> None:
        peer = Peer([Tool({"name": "echo", "inputSchema": SCHEMA}, echo)])
        try:
            # ensure_ascii: a lone surrogate crosses as its escape, as a hostile host sends it
            peer.send(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
            self.assertTrue(peer.server.join(LONG))
            peer.request("last", "ping")
            answers = 0
            while (peer.receive() or {"id": "last"}).get("id") != "last":
                answers += 1
            self.assertLessEqual(answers, len(messages))
        finally:
            peer.close()


class Concurrency(ServerCase):
    def test_calls_run_at_the_same_time(self) -> None:
        gate = Gate()
        peer = self.peer(Tool({"name": "gate", "inputSchema": SCHEMA}, gate))
        for ident in (1, 2, 3):
            peer.request(ident, "tools/call", {"name": "gate", "arguments": {"n": ident}})
        for _ in range(3):  # all three are inside the tool at once
            self.assertTrue(gate.entered.acquire(timeout=LONG))
        self.assertEqual(peer.server.running, 3)
        self.assertEqual(peer.answer(4, "ping")["id"], 4, "the reader is never held up")
        gate.release.set()
        answered = {(peer.receive() or {}).get("id") for _ in range(3)}
        self.assertEqual(answered, {1, 2, 3})

    def test_a_call_past_the_limit_is_answered_busy_at_once(self) -> None:
        gate = Gate()
        peer = self.peer(Tool({"name": "gate", "inputSchema": SCHEMA}, gate), max_running=1)
        peer.request(1, "tools/call", {"name": "gate"})
        self.assertTrue(gate.entered.acquire(timeout=LONG))
        busy = peer.answer(2, "tools/call", {"name": "gate"})
        self.assertTrue(busy["result"]["isError"])
        self.assertIn("busy: 1 calls are running", busy["result"]["content"][0]["text"])
        gate.release.set()
        self.assertEqual((peer.receive() or {}).get("id"), 1)
        gate.release.set()
        self.assertEqual(peer.answer(3, "tools/call", {"name": "gate"})["id"], 3)

    def test_a_cancelled_call_is_not_answered(self) -> None:
        gate = Gate()
        peer = self.peer(Tool({"name": "gate", "inputSchema": SCHEMA}, gate))
        peer.request(1, "tools/call", {"name": "gate"})
        self.assertTrue(gate.entered.acquire(timeout=LONG))
        cancel = {"requestId": 1, "reason": "the user gave up"}
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        self.assertEqual(peer.answer(2, "ping")["id"], 2)  # lines are taken in order: it was seen
        gate.release.set()
        self.assertTrue(peer.server.join(LONG))
        self.assertEqual(peer.answer(3, "ping")["id"], 3, "no answer to the cancelled call")
        self.assertIsNone(peer.receive(SHORT))


class Asking:
    """A tool given its call's context: reports progress, asks the host, waits to be
    cancelled; what it saw is kept for the test."""

    def __init__(self, question: Optional[Dict[str, Any]] = None, wait: bool = False) -> None:
        self.question = question
        self.wait = wait
        self.entered = threading.Event()
        self.seen: Dict[str, Any] = {}

    def __call__(self, arguments: Dict[str, JsonValue], context: CallContext) -> Dict[str, Any]:
        self.seen["capabilities"] = context.host_capabilities
        self.seen["reports"] = context.reports_progress
        context.progress("first")
        context.progress("second")
        self.entered.set()
        if self.wait:
            self.seen["cancelled"] = context.cancelled.wait(LONG)
        if self.question is not None:
            try:
                self.seen["answer"] = context.ask("elicitation/create", self.question, SHORT)
            except HostFailed as e:
                self.seen["failed"] = str(e)
        return echo(arguments)


class Context(ServerCase):
    """A tool made with ``context=True``: progress, a request of ours to the host, and
    the call's cancellation, each on the wire as the host sees it."""

    def tool(self, asking: Asking) -> Tool:
        return Tool({"name": "ask", "inputSchema": SCHEMA}, asking, context=True)

    def test_progress_goes_out_with_the_requests_token_and_only_with_one(self) -> None:
        asking = Asking()
        peer = self.peer(self.tool(asking))
        peer.request(1, "tools/call", {"name": "ask", "_meta": {"progressToken": "t1"}})
        first, second, answer = peer.receive(), peer.receive(), peer.receive()
        for got, step, message in ((first, 1, "first"), (second, 2, "second")):
            self.assertEqual(got["method"], "notifications/progress")  # type: ignore[index]
            self.assertEqual(got["params"], {"progressToken": "t1", "progress": step,  # type: ignore[index]
                                             "message": message})  # fmt: skip
        self.assertEqual(answer["id"], 1)  # type: ignore[index]
        self.assertTrue(asking.seen["reports"])
        peer.request(2, "tools/call", {"name": "ask"})
        self.assertEqual((peer.receive() or {}).get("id"), 2, "no progress without a token")

    def test_a_question_to_the_host_and_its_answer(self) -> None:
        asking = Asking({"message": "may I?", "requestedSchema": {"type": "object"}})
        peer = self.peer(self.tool(asking))
        peer.answer(0, "initialize", {"capabilities": {"elicitation": {}}})
        peer.request(1, "tools/call", {"name": "ask"})
        asked = peer.receive()
        self.assertEqual(asked["method"], "elicitation/create")  # type: ignore[index]
        self.assertEqual(asked["params"]["message"], "may I?")  # type: ignore[index]
        peer.send({"jsonrpc": "2.0", "id": 12345, "result": {"action": "decline"}})  # not ours
        peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}})  # type: ignore[index]
        self.assertEqual((peer.receive() or {}).get("id"), 1)
        self.assertEqual(asking.seen["answer"], {"action": "accept"})
        self.assertEqual(asking.seen["capabilities"], {"elicitation": {}})

    def test_the_hosts_error_or_silence_is_a_failure_the_tool_sees(self) -> None:
        asking = Asking({"message": "may I?"})
        peer = self.peer(self.tool(asking))
        peer.request(1, "tools/call", {"name": "ask"})
        asked = peer.receive()
        error = {"code": -32601, "message": "no elicitation here"}
        peer.send({"jsonrpc": "2.0", "id": asked["id"], "error": error})  # type: ignore[index]
        self.assertEqual((peer.receive() or {}).get("id"), 1)
        self.assertIn("error -32601: no elicitation here", asking.seen["failed"])
        silent = Asking({"message": "anyone?"})
        peer = self.peer(self.tool(silent))
        peer.request(1, "tools/call", {"name": "ask"})
        self.assertEqual((peer.receive() or {}).get("method"), "elicitation/create")
        self.assertEqual((peer.receive() or {}).get("id"), 1)  # after SHORT, unanswered
        self.assertEqual(silent.seen["failed"], "no answer from the host in time")

    def test_a_cancelled_call_is_told_and_not_answered(self) -> None:
        asking = Asking(wait=True)
        peer = self.peer(self.tool(asking))
        peer.request(7, "tools/call", {"name": "ask"})
        self.assertTrue(asking.entered.wait(LONG))
        cancel = {"requestId": 7, "reason": "the user gave up"}
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        self.assertTrue(peer.server.join(LONG))
        self.assertTrue(asking.seen["cancelled"])
        self.assertEqual(peer.answer(8, "ping")["id"], 8, "no answer to the cancelled call")

    def test_the_host_going_away_cancels_the_calls_and_fails_the_questions(self) -> None:
        asking = Asking({"message": "still there?"})
        peer = self.peer(self.tool(asking))
        peer.request(1, "tools/call", {"name": "ask"})
        self.assertEqual((peer.receive() or {}).get("method"), "elicitation/create")
        os.close(peer.writer)  # EOF: the host is gone
        peer.writer = os.open(os.devnull, os.O_WRONLY)  # for close()
        peer.thread.join(LONG)
        self.assertTrue(peer.server.join(LONG))
        self.assertEqual(asking.seen["failed"], "the host went away")


class WriteSide(ServerCase):
    def test_a_host_that_stopped_reading_ends_nothing_but_its_answers(self) -> None:
        peer = self.peer()
        os.close(peer.reader)
        peer.reader = os.open(os.devnull, os.O_RDONLY)  # for close(); the pipe's end is gone
        with self.assertLogs("mcp_client._mcp_server", "WARNING") as logs:
            peer.request(1, "ping")
            peer.request(2, "tools/call", {"name": "echo"})
            self.assertTrue(peer.server.join(LONG))
            os.close(peer.writer)
            peer.thread.join(LONG)
            peer.writer = os.open(os.devnull, os.O_WRONLY)
        self.assertFalse(peer.thread.is_alive())
        self.assertEqual(len(logs.records), 1, "said once")
        self.assertIn("writing to the host failed", logs.output[0])


if __name__ == "__main__":
    unittest.main()
