"""The client's behaviour, proved in-process through ChannelTransport's real pipes."""

from __future__ import annotations

import dataclasses
import gc
import io
import json
import threading
import time
import unittest
from typing import Any, Dict, List, Optional

import pytest

from mcp_client import (
    ChannelClosed,
    ChannelTransport,
    NoResource,
    Options,
    State,
    prepare,
    prepare_owned,
    start,
)
from mcp_client._core._connect import SHOWN_NAME
from mcp_client.capture import line_bytes
from mcp_client.errors import (
    CallTimedOut,
    CleanupUnconfirmed,
    ClientBroken,
    ClientClosed,
    EncodeRefused,
    HandshakeFailed,
    ResultMalformed,
    RetirementTimedOut,
    ServerError,
    StartError,
    ToolsNotDeclared,
    TooManyPages,
    Unavailable,
    VersionUnsupported,
)
from mcp_client.protocol import SUPPORTED_VERSIONS, Text
from mcp_client.transport import ChannelPeer, Connection, Transport

import hostile
from support import INIT_RESULT, LONG, OPTIONS, SHORT, answer, channel, wait_until, writes_idle


def _never(request: Dict[str, Any], peer: ChannelPeer) -> None:
    """A handler that never answers."""


class Lifecycle(unittest.TestCase):
    def test_start_list_call_ping_shutdown(self) -> None:
        client = start(channel(), OPTIONS)
        self.assertIs(client.state, State.READY)
        assert client.initialize_result is not None
        self.assertEqual(client.initialize_result.server_info.name, "peer")
        self.assertEqual([t.name for t in client.list_tools()], ["echo"])
        result = client.call_tool("echo", {"x": [1, "two"]})
        self.assertEqual(result.content, (Text('{"x": [1, "two"]}'),))
        self.assertFalse(result.is_error)
        client.ping()
        self.assertEqual(client.shutdown(), ChannelClosed())
        self.assertEqual(client.shutdown(), ChannelClosed(), "shutdown is idempotent")
        self.assertIs(client.state, State.CLOSED)
        with self.assertRaises(ClientClosed):
            client.call_tool("echo", {})

    def test_parked_client_retires_without_resources(self) -> None:
        client = prepare(channel(), OPTIONS)
        self.assertIs(client.state, State.PARKED)
        self.assertEqual(client.shutdown(), NoResource())
        self.assertEqual(client.shutdown(), NoResource())
        with self.assertRaises(StartError):
            client.connect()

    def test_calls_before_connect_are_unavailable(self) -> None:
        client = prepare(channel(), OPTIONS)
        with self.assertRaises(Unavailable):
            client.ping()
        client.shutdown()

    def test_connect_twice_is_refused(self) -> None:
        with start(channel(), OPTIONS) as client:
            with self.assertRaises(StartError):
                client.connect()

    def test_context_manager_retires(self) -> None:
        with start(channel(), OPTIONS) as client:
            client.ping()
        self.assertIs(client.state, State.CLOSED)
        self.assertEqual(client.shutdown(), ChannelClosed())


class Handshake(unittest.TestCase):
    def test_initialize_declares_empty_capabilities_then_initialized(self) -> None:
        seen: List[Dict[str, Any]] = []

        def serve(peer: ChannelPeer) -> None:
            while (line := peer.read_line()) is not None:  # noqa: E203
                message = json.loads(line)
                seen.append(message)
                if message.get("method") == "initialize":
                    answer(peer, message, INIT_RESULT)

        with start(ChannelTransport(serve), OPTIONS):
            pass
        self.assertEqual(seen[0]["params"]["capabilities"], {})
        self.assertEqual(seen[0]["params"]["protocolVersion"], "2025-06-18")
        self.assertEqual(seen[1], {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _refused(self, init: Dict[str, Any]) -> StartError:
        client = prepare(channel(init=init), OPTIONS)
        with self.assertRaises(StartError) as caught:
            client.connect()
        self.assertIs(client.state, State.BROKEN)
        self.assertEqual(client.shutdown(), ChannelClosed(), "what was spawned is retired")
        return caught.exception

    def test_wrong_version_is_refused_naming_both_sides(self) -> None:
        error = self._refused(dict(INIT_RESULT, protocolVersion="1999-01-01"))
        assert isinstance(error, VersionUnsupported)
        self.assertEqual(error.server_version, "1999-01-01")
        self.assertEqual(error.supported, SUPPORTED_VERSIONS)

    def test_older_supported_version_is_accepted(self) -> None:
        with start(channel(init=dict(INIT_RESULT, protocolVersion="2024-11-05")), OPTIONS) as c:
            assert c.initialize_result is not None
            self.assertEqual(c.initialize_result.protocol_version, "2024-11-05")

    def test_missing_tools_capability_is_refused(self) -> None:
        error = self._refused(dict(INIT_RESULT, capabilities={"prompts": {}}))
        self.assertIsInstance(error, ToolsNotDeclared)

    def test_the_refusal_names_the_capability_it_wanted(self) -> None:
        error = self._refused(dict(INIT_RESULT, capabilities={"prompts": {}}))
        self.assertIn("no tools capability (needed for tools/list)", str(error))

    def test_malformed_result_is_a_handshake_failure(self) -> None:
        error = self._refused({"protocolVersion": "2025-06-18", "capabilities": {}})
        self.assertIsInstance(error, HandshakeFailed)
        self.assertIn("serverInfo", str(error))

    def test_error_response_is_a_handshake_failure(self) -> None:
        def refuse(request: Dict[str, Any], peer: ChannelPeer) -> None:
            peer.send(
                {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "no"}}
            )

        client = prepare(channel({"initialize": refuse}), OPTIONS)
        with self.assertRaises(HandshakeFailed) as caught:
            client.connect()
        self.assertIsInstance(caught.exception.cause, ServerError)
        client.shutdown()

    def test_silent_server_times_out_the_handshake(self) -> None:
        options = Options(handshake_timeout=SHORT, retire_timeout=LONG)
        client = prepare(channel({"initialize": _never}), options)
        started = time.monotonic()
        with self.assertRaises(HandshakeFailed) as caught:
            client.connect()
        self.assertGreaterEqual(time.monotonic() - started, SHORT)
        self.assertIsInstance(caught.exception.cause, CallTimedOut)
        client.shutdown()

    def test_notifications_and_ping_before_the_initialize_answer(self) -> None:
        answers: List[Dict[str, Any]] = []

        def early(request: Dict[str, Any], peer: ChannelPeer) -> None:
            peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            peer.send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
            answers.append(json.loads(peer.read_line() or b"null"))
            answer(peer, request, INIT_RESULT)

        with start(channel({"initialize": early}), OPTIONS) as client:
            client.ping()
        self.assertEqual(answers, [{"jsonrpc": "2.0", "id": "srv-1", "result": {}}])


class _SlowOpen(Transport):
    """A transport whose ``open`` waits for the test's word."""

    def __init__(self) -> None:
        self.inner = channel()
        self.opening = threading.Event()
        self.proceed = threading.Event()

    def describe(self) -> str:
        return "slow-open"

    def open(self) -> Connection:
        self.opening.set()
        self.proceed.wait(LONG)
        return self.inner.open()


class Races(unittest.TestCase):
    def test_stop_during_open_still_retires_what_open_started(self) -> None:
        transport = _SlowOpen()
        client = prepare(transport, OPTIONS)
        failures: List[BaseException] = []

        def connect() -> None:
            try:
                client.connect()
            except StartError as e:
                failures.append(e)

        thread = threading.Thread(target=connect)
        thread.start()
        self.assertTrue(transport.opening.wait(LONG))
        client.stop()
        transport.proceed.set()
        thread.join(LONG)
        self.assertEqual(len(failures), 1)
        self.assertEqual(client.shutdown(), ChannelClosed(), "not NoResource: a peer was started")


class Unconfirmed(unittest.TestCase):
    """A server that does not die: retirement says so, and can be retried."""

    def _stubborn(self, refuse: bool) -> "tuple[ChannelTransport, threading.Event]":
        release = threading.Event()

        def serve(peer: ChannelPeer) -> None:
            request = json.loads(peer.read_line() or b"null")
            if refuse:
                peer.send(
                    {
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "error": {"code": -32603, "message": "no"},
                    }
                )
            else:
                answer(peer, request, INIT_RESULT)
            release.wait(LONG)  # deaf to EOF: it ends only when the test says so

        return ChannelTransport(serve), release

    def test_shutdown_times_out_and_a_retry_confirms(self) -> None:
        transport, release = self._stubborn(refuse=False)
        client = start(transport, Options(handshake_timeout=LONG, retire_timeout=SHORT))
        with self.assertRaises(RetirementTimedOut):
            client.shutdown()
        release.set()
        self.assertEqual(client.shutdown(timeout=LONG), ChannelClosed())

    def test_failed_connect_with_unconfirmed_cleanup_hands_the_client_back(self) -> None:
        transport, release = self._stubborn(refuse=True)
        client = prepare(transport, Options(handshake_timeout=LONG, retire_timeout=SHORT))
        with self.assertRaises(CleanupUnconfirmed) as caught:
            client.connect()
        self.assertIs(caught.exception.client, client)
        self.assertIn("initialize failed", caught.exception.reason)
        release.set()
        self.assertEqual(client.shutdown(timeout=LONG), ChannelClosed())


class ServerTraffic(unittest.TestCase):
    """What the client does with messages it did not ask for."""

    def test_server_requests_are_answered(self) -> None:
        replies: List[Dict[str, Any]] = []

        def ask_back(request: Dict[str, Any], peer: ChannelPeer) -> None:
            peer.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
            replies.append(json.loads(peer.read_line() or b"null"))
            peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": 8,
                    "method": "sampling/createMessage",
                    "params": {"messages": []},
                }
            )
            replies.append(json.loads(peer.read_line() or b"null"))
            answer(peer, request, {"content": []})

        with start(channel({"tools/call": ask_back}), OPTIONS) as client:
            client.call_tool("x", {})
        self.assertEqual(replies[0], {"jsonrpc": "2.0", "id": 7, "result": {}})
        self.assertEqual(replies[1]["id"], 8)
        self.assertEqual(replies[1]["error"]["code"], -32601)

    def test_unknown_late_string_and_duplicate_ids_are_dropped(self) -> None:
        def noisy(request: Dict[str, Any], peer: ChannelPeer) -> None:
            peer.send({"jsonrpc": "2.0", "id": 99999, "result": {"content": []}})
            peer.send({"jsonrpc": "2.0", "id": str(request["id"]), "result": {"content": []}})
            peer.send({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
            text = {"content": [{"type": "text", "text": "first"}]}
            answer(peer, request, text)
            answer(peer, request, {"content": [{"type": "text", "text": "second"}]})

        with self.assertLogs("mcp_client.client", level="DEBUG") as logs:
            with start(channel({"tools/call": noisy}), OPTIONS) as client:
                self.assertEqual(client.call_tool("x", {}).content, (Text("first"),))
                self.assertEqual(client.call_tool("x", {}).content, (Text("first"),))
                client.ping()
                self.assertIs(client.state, State.READY)
        dropped = "\n".join(logs.output)
        self.assertIn("dropped response for unknown or late id 99999", dropped)
        self.assertIn("dropped response for unknown or late id '", dropped)  # the string id
        self.assertIn("dropped notification notifications/message", dropped)

    def test_error_response_is_a_server_error_and_the_client_lives(self) -> None:
        def refuse(request: Dict[str, Any], peer: ChannelPeer) -> None:
            peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "error": {"code": -32602, "message": "unknown tool", "data": [1]},
                }
            )

        with start(channel({"tools/call": refuse}), OPTIONS) as client:
            with self.assertRaises(ServerError) as caught:
                client.call_tool("nope", {})
            self.assertEqual(caught.exception.rpc_error.code, -32602)
            self.assertEqual(caught.exception.rpc_error.data, [1])
            client.ping()

    def test_malformed_result_is_reported_and_the_client_lives(self) -> None:
        def lie(request: Dict[str, Any], peer: ChannelPeer) -> None:
            answer(peer, request, {"content": [{"text": "no type"}]})

        with start(channel({"tools/call": lie}), OPTIONS) as client:
            with self.assertRaises(ResultMalformed) as caught:
                client.call_tool("x", {})
            self.assertIn("content[0].type", caught.exception.fault.reason)
            client.ping()

    def test_is_error_is_a_result(self) -> None:
        def fail(request: Dict[str, Any], peer: ChannelPeer) -> None:
            answer(peer, request, {"content": [{"type": "text", "text": "bad"}], "isError": True})

        with start(channel({"tools/call": fail}), OPTIONS) as client:
            self.assertTrue(client.call_tool("x", {}).is_error)


@hostile.each("_dies_on")
class DeathPaths(unittest.TestCase):
    def _dies_on(self, line: hostile.Hostile) -> None:
        """A peer answers the call with the hostile ``line`` (``tests/hostile.py``)."""

        def answer_with_it(request: Dict[str, Any], peer: ChannelPeer) -> None:
            peer.write(line.answer(request["id"]) + b"\n")

        client = start(channel({"tools/call": answer_with_it}), OPTIONS)
        with self.assertRaises(ClientBroken) as caught:
            client.call_tool("x", {})
        self.assertTrue(caught.exception.reason.startswith(line.death), caught.exception.reason)
        self.assertIn(line.reason, caught.exception.reason)
        with self.assertRaises(ClientBroken) as again:
            client.ping()
        self.assertEqual(again.exception.reason, caught.exception.reason, "the reason is latched")
        self.assertIs(client.state, State.BROKEN)
        self.assertEqual(client.shutdown(), ChannelClosed())

    def test_failed_write(self) -> None:
        release, closed = threading.Event(), threading.Event()

        def stop_reading(peer: ChannelPeer) -> None:
            request = json.loads(peer.read_line() or b"null")
            answer(peer, request, INIT_RESULT)
            peer.read_line()  # notifications/initialized
            peer.close_input()  # ... and the pipe to us stays open: no EOF for the reader
            closed.set()
            release.wait(LONG)

        client = start(ChannelTransport(stop_reading), OPTIONS)
        self.assertTrue(closed.wait(LONG))
        with self.assertRaises(ClientBroken) as caught:
            client.call_tool("x", {})
        self.assertIn("write to the server failed", caught.exception.reason)
        self.assertIs(client.state, State.BROKEN)
        release.set()
        self.assertEqual(client.shutdown(), ChannelClosed())

    def test_eof(self) -> None:
        def hang_up(request: Dict[str, Any], peer: ChannelPeer) -> None:
            peer.close_output()

        client = start(channel({"tools/call": hang_up}), OPTIONS)
        with self.assertRaises(ClientBroken) as caught:
            client.call_tool("x", {})
        self.assertIn("closed its stdout", caught.exception.reason)
        client.shutdown()


class NamedServers(unittest.TestCase):
    """An ``Unavailable`` names the server once the handshake told its name (issue 20)."""

    def hang_up(self, name: str) -> Any:
        def hang_up(request: Dict[str, Any], peer: ChannelPeer) -> None:
            peer.close_output()

        init = dict(INIT_RESULT, serverInfo={"name": name, "version": "1"})
        return start(channel({"tools/call": hang_up}, init), OPTIONS)

    def test_a_broken_client_names_its_server_and_keeps_its_reason(self) -> None:
        client = self.hang_up("weather")
        for attempt in ("in flight", "after"):
            with self.subTest(attempt=attempt), self.assertRaises(ClientBroken) as caught:
                client.call_tool("x", {})
            self.assertEqual(caught.exception.reason, "server closed its stdout")
            self.assertEqual(caught.exception.server, "weather")
            self.assertEqual(str(caught.exception), "server closed its stdout (server weather)")
        client.shutdown()

    def test_a_closed_client_names_it_too(self) -> None:
        client = start(channel(), OPTIONS)
        client.shutdown()
        with self.assertRaises(ClientClosed) as caught:
            client.ping()
        self.assertEqual(str(caught.exception), "client was shut down (server peer)")

    def test_a_hostile_name_is_shown_inert_on_one_line(self) -> None:
        client = self.hang_up("evil\n\x1b[2J\u202e" + "x" * 200)
        with self.assertRaises(ClientBroken) as caught:
            client.call_tool("x", {})
        shown = str(caught.exception)
        self.assertTrue(shown.isprintable(), shown)
        # Sanitized the one way server text is (codegen.sanitize, at the handshake):
        # controls gone, the name capped at SHOWN_NAME characters.
        self.assertIn("(server evil [2J", shown)
        self.assertNotIn("\x1b", shown)
        self.assertLessEqual(len(shown), len("server closed its stdout (server )") + SHOWN_NAME)
        client.shutdown()

    def test_before_the_handshake_no_name_is_known(self) -> None:
        client = prepare(channel(), OPTIONS)
        client.stop()
        with self.assertRaises(Unavailable) as caught:
            client.ping()
        self.assertIsNone(caught.exception.server)
        self.assertEqual(str(caught.exception), "client was stopped")
        client.shutdown()


class Deadlines(unittest.TestCase):
    def test_an_infinite_timeout_is_no_overflow(self) -> None:
        with start(channel(), OPTIONS) as client:
            result = client.call_tool("echo", {"a": 1}, timeout=float("inf"))
            self.assertEqual(result.content, (Text('{"a": 1}'),))
            client.ping(timeout=1e12)

    def test_timeout_leaves_the_client_usable_and_drops_the_late_answer(self) -> None:
        late: List[Dict[str, Any]] = []

        def slow_first(request: Dict[str, Any], peer: ChannelPeer) -> None:
            if not late:
                late.append(request)  # answered later, after the deadline
                return
            answer(peer, late[0], {"content": [{"type": "text", "text": "late"}]})
            answer(peer, request, {"content": [{"type": "text", "text": "on time"}]})

        with start(channel({"tools/call": slow_first}), OPTIONS) as client:
            started = time.monotonic()
            with self.assertRaises(CallTimedOut) as caught:
                client.call_tool("x", {}, timeout=SHORT)
            self.assertGreaterEqual(time.monotonic() - started, SHORT)
            self.assertEqual(caught.exception.method, "tools/call")
            self.assertEqual(client.call_tool("x", {}).content, (Text("on time"),))

    @pytest.mark.slow
    def test_sixty_threads_with_mixed_timeouts_settle_exactly_once(self) -> None:
        def answer_fast_ones(request: Dict[str, Any], peer: ChannelPeer) -> None:
            if request["params"]["arguments"]["answer"]:
                answer(peer, request, {"content": [{"type": "text", "text": "ok"}]})

        outcomes: Dict[int, List[str]] = {n: [] for n in range(60)}

        def caller(n: int) -> None:
            try:
                client.call_tool("x", {"answer": n % 3 != 0}, timeout=SHORT * (1 + n % 4))
                outcomes[n].append("result")
            except CallTimedOut:
                outcomes[n].append("timeout")

        with start(channel({"tools/call": answer_fast_ones}), OPTIONS) as client:
            threads = [threading.Thread(target=caller, args=(n,)) for n in range(60)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(LONG)
        for n, seen in outcomes.items():
            self.assertEqual(seen, ["timeout" if n % 3 == 0 else "result"], "caller %d" % n)

    def test_stop_settles_every_call_in_flight(self) -> None:
        client = start(channel({"tools/call": _never}), OPTIONS)
        errors: List[BaseException] = []

        def caller() -> None:
            try:
                client.call_tool("x", {})
            except BaseException as e:  # noqa: B902 - recorded and asserted on below
                errors.append(e)

        threads = [threading.Thread(target=caller) for _ in range(8)]
        for thread in threads:
            thread.start()
        self.assertTrue(wait_until(lambda: client.in_flight == 8))  # all eight are on the wire
        client.stop()
        for thread in threads:
            thread.join(LONG)
        self.assertEqual(len(errors), 8)
        self.assertTrue(all(isinstance(e, ClientClosed) for e in errors), errors)
        self.assertEqual(client.shutdown(), ChannelClosed())

    def test_write_to_a_peer_that_never_reads_is_bounded(self) -> None:
        release = threading.Event()

        def never_read(peer: ChannelPeer) -> None:
            request = json.loads(peer.read_line() or b"null")
            answer(peer, request, INIT_RESULT)
            peer.read_line()  # notifications/initialized
            release.wait(LONG)  # ... and then nothing more is read

        client = start(ChannelTransport(never_read), OPTIONS)
        started = time.monotonic()
        with self.assertRaises(CallTimedOut):
            client.call_tool("x", {"blob": "y" * (4 * 1024 * 1024)}, timeout=SHORT)
        self.assertLess(time.monotonic() - started, LONG)
        self.assertIs(client.state, State.BROKEN, "a half-written frame poisons the stream")
        with self.assertRaises(ClientBroken):
            client.ping()
        release.set()
        self.assertEqual(client.shutdown(), ChannelClosed())


class Listing(unittest.TestCase):
    def _paged(self, pages: int, loop: bool = False) -> ChannelTransport:
        def page(request: Dict[str, Any], peer: ChannelPeer) -> None:
            cursor = int((request.get("params") or {}).get("cursor", "0"))
            nxt = "0" if loop else (str(cursor + 1) if cursor + 1 < pages else None)
            body: Dict[str, Any] = {
                "tools": [{"name": "t%d" % cursor, "inputSchema": {"type": "object"}}]
            }
            if nxt is not None:
                body["nextCursor"] = nxt
            answer(peer, request, body)

        return channel({"tools/list": page})

    def test_pages_are_followed(self) -> None:
        with start(self._paged(5), OPTIONS) as client:
            self.assertEqual([t.name for t in client.list_tools()], ["t0", "t1", "t2", "t3", "t4"])

    def test_a_looping_cursor_is_capped(self) -> None:
        options = Options(max_tool_pages=10, request_timeout=LONG)
        with start(self._paged(1, loop=True), options) as client:
            with self.assertRaises(TooManyPages) as caught:
                client.list_tools()
            self.assertEqual(caught.exception.pages, 10)
            client.ping()

    def test_the_cap_names_the_method(self) -> None:
        options = Options(max_tool_pages=3, request_timeout=LONG)
        with start(self._paged(1, loop=True), options) as client:
            with self.assertRaises(TooManyPages) as caught:
                client.list_tools()
            self.assertEqual(caught.exception.method, "tools/list")
            self.assertEqual(str(caught.exception), "tools/list still paginating after 3 pages")

    def test_one_lying_tool_fails_the_listing(self) -> None:
        def lie(request: Dict[str, Any], peer: ChannelPeer) -> None:
            answer(peer, request, {"tools": [{"name": "ok", "inputSchema": {}}, {"name": "bad"}]})

        with start(channel({"tools/list": lie}), OPTIONS) as client:
            with self.assertRaises(ResultMalformed) as caught:
                client.list_tools()
            self.assertIn("tools[1].inputSchema", caught.exception.fault.reason)


def paged(pages: List[Dict[str, Any]], seen: List[Optional[str]]) -> Any:
    def tools_list(request: Dict[str, Any], peer: ChannelPeer) -> None:
        cursor = (request.get("params") or {}).get("cursor")
        seen.append(cursor)
        answer(peer, request, pages[min(int(cursor or 0), len(pages) - 1)])

    return tools_list


def page(names: List[str], next_cursor: Optional[str]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"tools": [{"name": n, "inputSchema": {}} for n in names]}
    if next_cursor is not None:
        body["nextCursor"] = next_cursor
    return body


def _lying_page() -> Dict[str, Any]:
    """A page whose one tool has no ``inputSchema``, pointing on to page ``"2"``."""
    liar = page(["c"], "2")
    del liar["tools"][0]["inputSchema"]
    return liar


def _tap_try_send(client: Any) -> List[bool]:
    """What each of the reader's writes (``Outbox.try_send``) returned, from now on."""
    outbox = client._requests._outbox
    original = outbox.try_send
    results: List[bool] = []

    def tapped(*args: Any) -> bool:
        written: bool = original(*args)
        results.append(written)
        return written

    outbox.try_send = tapped
    return results


def _listing_failure(client: Any, failed: List[BaseException]) -> None:
    try:
        client.list_tools()
    except ResultMalformed as e:
        failed.append(e)


class Prefetch(unittest.TestCase):
    """``list_tools`` asks for the next page before decoding the current one: a bad
    page abandons that request cleanly, and no request goes past ``max_tool_pages``."""

    def test_pages_in_order(self) -> None:
        seen: List[Optional[str]] = []
        pages = [page(["a", "b"], "1"), page(["c"], "2"), page(["d"], None)]
        with start(channel({"tools/list": paged(pages, seen)}), OPTIONS) as client:
            self.assertEqual([t.name for t in client.list_tools()], ["a", "b", "c", "d"])
            self.assertEqual(seen, [None, "1", "2"])

    # The page after a bad one is asked for by the reader before the bad page is
    # decoded, and written by it when the writing turn is free at once; when not,
    # it is left for the caller to write. Either way a bad page fails the walk:
    # one test for each way, each made certain rather than left to the scheduler.

    def test_a_bad_page_drops_the_late_answer_to_the_page_the_reader_wrote(self) -> None:
        seen: List[Optional[str]] = []
        pages = [page(["a"], "1"), _lying_page(), page(["d"], None)]
        held: List[Any] = []

        listed = paged(pages, seen)

        def when_idle(request: Dict[str, Any], peer: ChannelPeer) -> None:
            # Answered once the writer of this request (the caller, for the first)
            # has let go of the writing turn and the writer's lock: then nobody
            # holds them when the answer comes, and the reader writes each next page.
            wait_until(lambda: writes_idle(held[0]))
            listed(request, peer)

        with start(channel({"tools/list": when_idle}), OPTIONS) as client:
            held.append(client)
            writes = _tap_try_send(client)
            with self.assertLogs("mcp_client.client", "DEBUG") as logged:
                with self.assertRaises(ResultMalformed) as caught:
                    client.list_tools()
                self.assertIn("tools[0].inputSchema", caught.exception.fault.reason)
                self.assertEqual(writes, [True, True], "the reader wrote pages 2 and 3")
                self.assertEqual(client.in_flight, 0, "the page asked for ahead is no one's now")
                client.ping()  # the server has answered page 3 (late) before the ping
            self.assertEqual(seen, [None, "1", "2"])
            late = [r for r in logged.output if "dropped response for unknown or late id" in r]
            self.assertEqual(len(late), 1, logged.output)
            self.assertIs(client.state, State.READY)

    def test_a_bad_page_leaves_unsent_the_page_the_reader_could_not_write(self) -> None:
        seen: List[Optional[str]] = []
        asked, go = threading.Event(), threading.Event()
        lying = paged([page(["a"], "1"), _lying_page(), page(["d"], None)], seen)

        def held_back(request: Dict[str, Any], peer: ChannelPeer) -> None:
            if (request.get("params") or {}).get("cursor") == "1":
                asked.set()
                go.wait(LONG)
            lying(request, peer)

        with start(channel({"tools/list": held_back}), OPTIONS) as client:
            writes = _tap_try_send(client)
            failed: List[BaseException] = []
            lister = threading.Thread(target=_listing_failure, args=(client, failed))
            lister.start()
            self.assertTrue(asked.wait(LONG))
            # The writer's lock is held here while the bad page is answered: the
            # reader cannot write page 3, and the bad page fails the walk meanwhile.
            with client._session.conn._writer._lock:
                go.set()
                lister.join(LONG)
                self.assertFalse(lister.is_alive(), "the caller woke with the lock still held")
            self.assertEqual(writes[-1], False, "the reader could not write page 3")
            [error] = failed
            assert isinstance(error, ResultMalformed), error
            self.assertIn("tools[0].inputSchema", error.fault.reason)
            self.assertEqual(client.in_flight, 0, "the page asked for ahead is no one's now")
            client.ping()  # any request written before it has been read by now
            self.assertEqual(seen, [None, "1"], "page 3 was never sent")
            self.assertIs(client.state, State.READY)

    def test_no_request_past_max_tool_pages(self) -> None:
        seen: List[Optional[str]] = []
        endless = [page(["t%d" % i], str(i + 1)) for i in range(10)]
        options = dataclasses.replace(OPTIONS, max_tool_pages=3)
        with start(channel({"tools/list": paged(endless, seen)}), options) as client:
            with self.assertRaises(TooManyPages):
                client.list_tools()
            client.ping()  # any request sent before it has been read by now
            self.assertEqual(seen, [None, "1", "2"])


class Arguments(unittest.TestCase):
    def test_non_json_arguments_are_refused_before_the_wire(self) -> None:
        with start(channel(), OPTIONS) as client:
            with self.assertRaises(EncodeRefused):
                client.call_tool("x", {"n": float("nan")})
            self.assertEqual(client.in_flight, 0)
            client.ping()


class Owned(unittest.TestCase):
    def test_owner_going_away_retires_the_client(self) -> None:
        class Owner:
            pass

        owner = Owner()
        client = prepare_owned(owner, channel({"tools/call": _never}), OPTIONS)
        client.connect()
        failures: List[BaseException] = []

        def caller() -> None:
            try:
                client.call_tool("x", {})
            except Unavailable as e:
                failures.append(e)

        thread = threading.Thread(target=caller)
        thread.start()
        self.assertTrue(wait_until(lambda: client.in_flight == 1))
        del owner
        gc.collect()
        thread.join(LONG)
        self.assertEqual(len(failures), 1)
        self.assertIn("stopped", str(failures[0]))
        self.assertEqual(client.shutdown(), ChannelClosed())

    def test_owned_parked_client_gives_no_resource_evidence(self) -> None:
        class Owner:
            pass

        owner = Owner()
        client = prepare_owned(owner, channel(), OPTIONS)
        del owner
        gc.collect()
        self.assertEqual(client.shutdown(), NoResource())


class Capture(unittest.TestCase):
    def test_every_line_is_recorded_in_order(self) -> None:
        log = io.StringIO()
        with start(channel(), Options(capture=log, request_timeout=LONG)) as client:
            client.call_tool("echo", {"a": "é"})
        entries = [json.loads(line) for line in log.getvalue().splitlines()]
        self.assertEqual([e["seq"] for e in entries], list(range(1, len(entries) + 1)))
        lines = [(e["dir"], json.loads(line_bytes(e))) for e in entries if "dir" in e]
        methods = [(d, m.get("method")) for d, m in lines]
        self.assertEqual(
            methods,
            [
                ("send", "initialize"),
                ("recv", None),
                ("send", "notifications/initialized"),
                ("send", "tools/call"),
                ("recv", None),
            ],
        )
        self.assertEqual(lines[3][1]["params"]["arguments"], {"a": "é"})
        self.assertEqual(entries[-1]["event"], "retired")


if __name__ == "__main__":
    unittest.main()
