"""The performance paths (``tools/bench.py``) against the plain ones they replace.

Each fast path is held to the behaviour of the obvious code:

- ``jsonvalue._too_deep`` (a walk by ``gc`` referents) says what ``depth() >
  MAX_DEPTH`` says, at the boundary, for leaf dicts that CPython untracks, and
  after a collection has untracked what it could.
- ``jsonvalue.encode`` (one reused C encoder) writes what ``json.dumps`` writes.
- Small frames are combined into batched writes: under load every caller still
  gets its own answer; a writer that stalls hands the queued frames back to
  their callers, who send them themselves once the server reads again.
- ``list_tools`` asks for the next page before decoding the current one: a bad
  page abandons that request cleanly, and no request goes past
  ``max_tool_pages``.
"""

from __future__ import annotations

import base64
import gc
import io
import json
import threading
import time
import unittest
from typing import Any, Dict, List, Optional

from hypothesis import given
from hypothesis import strategies as st

from mcp_client import Options, State, jsonvalue, start
from mcp_client.capture import open_capture
from mcp_client.errors import (
    CallTimedOut, CorruptionReport, ResultMalformed, TooManyPages, WriteStalled,
)
from mcp_client.jsonvalue import MAX_DEPTH, MAX_INT_DIGITS, _too_deep, depth, encode, parse
from mcp_client.protocol import Text
from mcp_client.transport import ChannelPeer, Connection, Transport

from support import LONG, OPTIONS, SHORT, answer, channel
from strategies import json_values, property_settings

PROPERTY = property_settings(300)

JSON_VALUES = json_values(40, width=4, text=8, keys=4)


def chain(levels: int, leaf: Any, kinds: str) -> Any:
    """``levels`` containers deep around ``leaf``, cycling through ``kinds`` ("l"/"d")."""
    value = leaf
    for level in range(levels):
        value = [value] if kinds[level % len(kinds)] == "l" else {"k": value}
    return value


class Depth(unittest.TestCase):
    def _agrees(self, value: Any) -> None:
        self.assertEqual(_too_deep(value), depth(value) > MAX_DEPTH, depth(value))

    def test_boundary_chains_with_every_kind_of_leaf(self) -> None:
        leaves = [1, "s", None, [], {}, {"a": 1}, [1, 2], {"a": {}}, {"a": []}]
        for levels in (0, 1, 2, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1):
            for leaf in leaves:
                for kinds in ("l", "d", "ld", "dl", "lld"):
                    with self.subTest(levels=levels, leaf=leaf, kinds=kinds):
                        self._agrees(chain(levels, leaf, kinds))

    def test_after_a_collection_untracks_what_it_can(self) -> None:
        values = [chain(levels, {"a": 1, "b": "c"}, kinds)
                  for levels in (MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1) for kinds in ("d", "ld")]
        gc.collect()
        for value in values:
            self._agrees(value)

    def test_wide_and_shallow(self) -> None:
        self._agrees({"tools": [{"name": str(i), "schema": {"p": {"type": "x"}}}
                                for i in range(1000)]})

    @PROPERTY
    @given(JSON_VALUES, st.integers(0, MAX_DEPTH + 2), st.sampled_from(["l", "d", "ld"]))
    def test_any_value_at_any_depth(self, value: Any, levels: int, kinds: str) -> None:
        self._agrees(chain(levels, value, kinds))


# Fragments that steer random text into the parser's interesting states.
TOKENS = ["{", "}", "[", "]", ",", ":", " ", "\n", "\r", "\t", '"a"', '"\\u00e9"', '"\\ud800"',
          '"\\', '"', "0", "-", "1", "12", ".5", "e3", "1e400", "true", "null", "NaN",
          "Infinity", "\ufeff", "\x00", "9" * 30, "9" * (MAX_INT_DIGITS + 1)]


def strict(text: str) -> Any:
    """What the strict path says: the value, or the refusal's reason."""
    try:
        return ("value", jsonvalue._parse(text, jsonvalue._DECODER.decode))
    except CorruptionReport as e:
        return ("refused", e.reason)


def fast(text: str) -> Any:
    try:
        return ("value", parse(text))
    except CorruptionReport as e:
        return ("refused", e.reason)


class Parsing(unittest.TestCase):
    @PROPERTY
    @given(st.lists(st.sampled_from(TOKENS), max_size=30).map("".join))
    def test_the_fast_path_says_what_the_strict_one_says(self, text: str) -> None:
        self.assertEqual(repr(fast(text)), repr(strict(text)))

    @PROPERTY
    @given(JSON_VALUES, st.sampled_from(["", " ", "\n", " \t\r\n "]))
    def test_values_with_whitespace_around(self, value: Any, space: str) -> None:
        text = space + json.dumps(value) + space
        self.assertEqual(repr(fast(text)), repr(strict(text)))


class Encoding(unittest.TestCase):
    @PROPERTY
    @given(JSON_VALUES)
    def test_what_json_dumps_would_write(self, value: Any) -> None:
        expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        self.assertEqual(encode(value), expected.encode("utf-8"))


class StallingTransport(Transport):
    """Another transport, whose writes, while ``stall`` is set, wait out their
    deadline and write nothing (a server that does not read its input)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.stall = threading.Event()
        self.stalled = threading.Event()  # a write is stalling now

    def describe(self) -> str:
        return self.inner.describe()

    def open(self) -> Connection:
        conn = self.inner.open()
        write = conn.write

        def stalling(data: bytes, deadline: float) -> None:
            if self.stall.is_set():
                self.stalled.set()
                time.sleep(max(0.0, deadline - time.monotonic()))
                raise WriteStalled(0)
            write(data, deadline)

        conn.write = stalling  # type: ignore[method-assign]
        return conn


def wait_until(check: Any, timeout: float = LONG) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.002)


class Combining(unittest.TestCase):
    def test_every_caller_gets_its_own_answer(self) -> None:
        failures: List[str] = []
        with start(channel(), OPTIONS) as client:
            def caller(n: int) -> None:
                for k in range(40):
                    arguments = {"caller": n, "call": k}
                    result = client.call_tool("echo", arguments)
                    if result.content != (Text(json.dumps(arguments, sort_keys=True)),):
                        failures.append("%d/%d got %r" % (n, k, result.content))

            threads = [threading.Thread(target=caller, args=(n,)) for n in range(32)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(LONG)
            self.assertEqual(failures, [])
            self.assertEqual(client.in_flight, 0)

    def test_a_stalled_writer_hands_the_queue_back(self) -> None:
        transport = StallingTransport(channel())
        outcomes: Dict[str, Any] = {}
        with start(transport, OPTIONS) as client:
            def caller(who: str, timeout: float) -> None:
                try:
                    outcomes[who] = client.call_tool("echo", {"who": who}, timeout=timeout)
                except Exception as e:  # recorded and asserted on below
                    outcomes[who] = e

            transport.stall.set()
            holder = threading.Thread(target=caller, args=("holder", SHORT))
            holder.start()
            transport.stalled.wait(LONG)  # the holder has the turn and is stuck in it
            others = [threading.Thread(target=caller, args=(who, LONG)) for who in "bcdefg"]
            for thread in others:
                thread.start()
            wait_until(lambda: client._requests._outbox.queued() == 6)  # queued behind the holder
            transport.stall.clear()  # the server reads again; the holder's write ends stalled
            for thread in [holder] + others:
                thread.join(LONG)
            self.assertIsInstance(outcomes["holder"], CallTimedOut)
            for who in "bcdefg":
                self.assertEqual(outcomes[who].content, (Text('{"who": "%s"}' % who),))
            self.assertIs(client.state, State.READY)
            self.assertEqual(client.in_flight, 0)
            client.ping()


class Capturing(unittest.TestCase):
    def test_entries_are_what_json_dumps_writes_however_long(self) -> None:
        for data in [b'{"a":"\xc3\xa9\\n"}', b"\xff\xfe", "\t\x01\u2028\U0001F600\"\\".encode(),
                     b'"' * 70000, ("\u00e9" * 40000).encode()]:
            with self.subTest(size=len(data)):
                log = io.StringIO()
                capture = open_capture(log)
                assert capture is not None
                capture.line("recv", data)
                capture.close()  # the writer thread writes the entry; close lets it finish
                entry: Dict[str, Any] = {"dir": "recv", "seq": 1}
                try:
                    entry["text"] = data.decode("utf-8")
                except UnicodeDecodeError:
                    entry["base64"] = base64.b64encode(data).decode("ascii")
                expected = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
                self.assertEqual(log.getvalue(), expected)

    def test_many_callers_one_log_in_order(self) -> None:
        log = io.StringIO()
        options = Options(capture=log, request_timeout=LONG, retire_timeout=LONG)
        with start(channel(), options) as client:
            def caller(n: int) -> None:
                for k in range(25):
                    client.call_tool("echo", {"n": n, "k": k})

            threads = [threading.Thread(target=caller, args=(n,)) for n in range(16)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(LONG)
        entries = [json.loads(line) for line in log.getvalue().splitlines()]
        self.assertEqual([e["seq"] for e in entries], list(range(1, len(entries) + 1)))
        sent: Dict[Any, int] = {}
        answered = 0
        for index, entry in enumerate(entries):
            message = json.loads(entry["text"]) if "text" in entry else {}
            if entry.get("dir") == "send" and "id" in message:
                sent[message["id"]] = index
            elif entry.get("dir") == "recv" and "id" in message:
                self.assertLess(sent[message["id"]], index, "a request is logged before its answer")
                answered += 1
        self.assertEqual(answered, 16 * 25 + 1)  # and the handshake
        self.assertEqual(entries[-1]["event"], "retired")


class Deadlines(unittest.TestCase):
    def test_an_infinite_timeout_is_no_overflow(self) -> None:
        with start(channel(), OPTIONS) as client:
            result = client.call_tool("echo", {"a": 1}, timeout=float("inf"))
            self.assertEqual(result.content, (Text('{"a": 1}'),))
            client.ping(timeout=1e12)


class RealStalls(unittest.TestCase):
    def test_a_server_that_stops_reading_for_a_while(self) -> None:
        """Frames just under PIPE_BUF fill the pipe while the peer sleeps: short
        deadlines expire on time, long ones are answered once it reads again."""
        resume = threading.Event()

        def sleepy(request: Dict[str, Any], peer: ChannelPeer) -> None:
            if request["params"]["arguments"].get("pause"):
                resume.wait(1.0)  # reads nothing meanwhile
            answer(peer, request, {"content": [{"type": "text", "text": str(request["id"])}]})

        outcomes: Dict[int, Any] = {}
        with start(channel({"tools/call": sleepy}), OPTIONS) as client:
            def caller(n: int) -> None:
                timeout = SHORT if n % 2 == 0 else LONG
                started = time.monotonic()
                try:
                    client.call_tool("x", {"pad": "p" * 3900, "pause": n == 0}, timeout=timeout)
                    outcomes[n] = "answered"
                except CallTimedOut:
                    outcomes[n] = "timed out"
                if time.monotonic() - started > timeout + 0.5:
                    outcomes[n] = "waited past its deadline"

            # the short ones first: one of them is likely to be the writer that
            # finds the pipe full, and to hand the queue behind it back
            order = sorted(range(48), key=lambda n: n % 2)
            threads = [threading.Thread(target=caller, args=(n,)) for n in order]
            threads[0].start()
            time.sleep(0.05)  # the peer is asleep on the first call now
            for thread in threads[1:]:
                thread.start()
            for thread in threads:
                thread.join(LONG)
            self.assertIs(client.state, State.READY)
            client.ping()
        self.assertEqual(sorted(set(outcomes.values()) - {"answered", "timed out"}), [])
        self.assertTrue(all(outcomes[n] == "answered" for n in range(48) if n % 2))


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


class Prefetch(unittest.TestCase):
    def test_pages_in_order(self) -> None:
        seen: List[Optional[str]] = []
        pages = [page(["a", "b"], "1"), page(["c"], "2"), page(["d"], None)]
        with start(channel({"tools/list": paged(pages, seen)}), OPTIONS) as client:
            self.assertEqual([t.name for t in client.list_tools()], ["a", "b", "c", "d"])
            self.assertEqual(seen, [None, "1", "2"])

    def test_a_bad_page_abandons_the_page_asked_for_ahead(self) -> None:
        seen: List[Optional[str]] = []
        liar = page(["c"], "2")
        del liar["tools"][0]["inputSchema"]
        pages = [page(["a"], "1"), liar, page(["d"], None)]
        with start(channel({"tools/list": paged(pages, seen)}), OPTIONS) as client:
            with self.assertRaises(ResultMalformed) as caught:
                client.list_tools()
            self.assertIn("tools[0].inputSchema", caught.exception.fault.reason)
            self.assertEqual(client.in_flight, 0, "the page asked for ahead is no one's now")
            client.ping()  # its late answer was dropped; the channel stays open
            self.assertEqual(seen, [None, "1", "2"])
            self.assertIs(client.state, State.READY)

    def test_no_request_past_max_tool_pages(self) -> None:
        seen: List[Optional[str]] = []
        endless = [page(["t%d" % i], str(i + 1)) for i in range(10)]
        options = Options(handshake_timeout=LONG, request_timeout=LONG, retire_timeout=LONG,
                          max_tool_pages=3)
        with start(channel({"tools/list": paged(endless, seen)}), options) as client:
            with self.assertRaises(TooManyPages):
                client.list_tools()
            client.ping()  # any request sent before it has been read by now
            self.assertEqual(seen, [None, "1", "2"])


if __name__ == "__main__":
    unittest.main()
