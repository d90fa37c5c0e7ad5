"""capture: the log format (one validated reader), the writer thread, and the end of a session.

What is proved here:
- ``read_log`` is total: any text gives entries or ``LogError`` (never another
  exception), and it reads back exactly what the writer wrote, for any lines
  and events.
- The writer writes each entry as ``json.dumps`` would, however long its line;
  many callers' lines land in one log in order (a request before its answer).
- A capture never holds up a call: with the log going to a pipe nobody reads
  (a FIFO, a pipe's file object), calls to a real server process complete by
  their deadlines, the queue stays within its bound (memory does not grow
  with the traffic), and once the pipe is read again the log says what was
  dropped (a ``dropped`` marker, ``seq`` numbers skipped). Shutdown is bounded
  too, with the pipe never read at all, and leaves no thread and no descriptor
  (the leak check of ``conftest.py``). A stream that fails ends the capture,
  loudly in the log, never the calls.
- The log records the session's end: ``eof`` when the server closes its
  stdout, ``died`` with the latched reason (``ClientBroken: ...``,
  ``ClientClosed: ...``), ``timed-out`` with the request's id and method.
"""

from __future__ import annotations

import base64
import io
import json
import os
import tempfile
import threading
import time
import unittest
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client import NoResource, Options, prepare, start
from mcp_client import capture as capture_module
from mcp_client._os import threads as _threads
from mcp_client.capture import (
    CLOSE_TIMEOUT,
    CaptureTarget,
    Event,
    LogEntry,
    WireLine,
    line_bytes,
    open_capture,
    read_log,
)
from mcp_client.errors import (
    CallTimedOut,
    ClientBroken,
    LogError,
    SymlinkRefused,
    TransportFailed,
)

from procs import rss_bytes
from strategies import property_settings
from support import LONG, SHORT, channel, server, wait_until

PROPERTY = property_settings(300)
MIB = 1024 * 1024


def entries_of(text: str) -> List[LogEntry]:
    # split("\n"), as a file is read: splitlines() would also cut at U+0085 or
    # U+2028, which JSON text may hold as they are.
    return list(read_log(text.split("\n")))


def events_of(text: str) -> List[Event]:
    return [entry for entry in entries_of(text) if isinstance(entry, Event)]


class Drain:
    """Reads a pipe's read end to EOF in a thread, once started."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.data = bytearray()
        self.thread = threading.Thread(target=self._run, name="test-drain", daemon=True)

    def _run(self) -> None:
        os.set_blocking(self.fd, True)
        while True:
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return
            self.data += chunk

    def text(self) -> str:
        self.thread.join(LONG)
        self.assert_done()
        return self.data.decode("utf-8")

    def assert_done(self) -> None:
        if self.thread.is_alive():
            raise AssertionError("the capture's writer never closed the pipe")


# ----------------------------------------------------------------------------- reading

_MEMBERS = st.dictionaries(
    st.sampled_from(["seq", "dir", "text", "base64", "event", "detail", "id", "method", "x"]),
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.text(max_size=6)
    | st.sampled_from(["send", "recv", "/w==", "timed-out", "\ud800"]),
    max_size=6,
)


class Reader(unittest.TestCase):
    @PROPERTY
    @given(st.lists(st.text(max_size=40), max_size=6))
    def test_any_text_is_entries_or_a_log_error(self, lines: List[str]) -> None:
        try:
            got = list(read_log(lines))
        except LogError as e:
            self.assertRegex(e.reason, r"\Aline \d+: ")
        else:
            self.assertLessEqual(len(got), len(lines))

    @pytest.mark.slow
    @PROPERTY
    @given(st.lists(_MEMBERS, max_size=5))
    def test_any_objects_are_entries_or_a_log_error(self, objects: List[Dict[str, Any]]) -> None:
        lines = [json.dumps(item) for item in objects]
        try:
            got = list(read_log(lines))
        except LogError:
            return
        for entry in got:
            self.assertIsInstance(entry, (WireLine, Event))
            if isinstance(entry, WireLine):
                self.assertIn(entry.direction, ("send", "recv"))
                self.assertIsInstance(entry.data, bytes)

    def test_deep_nesting_and_lone_surrogates_are_log_errors(self) -> None:
        for line, error in [
            ("[" * 100000, "not JSON"),
            ('{"seq": 1, "dir": "send", "text": "\\ud800"}', "not valid Unicode"),
            ('{"seq": 1, "event": 3}', "neither a wire line"),
            ('{"seq": 1, "event": "x", "detail": 3}', "detail is not a string"),
            ('{"seq": 1, "event": "timed-out", "id": 1}', "needs an id"),
        ]:
            with self.subTest(line=line[:40]), self.assertRaises(LogError) as caught:
                list(read_log([line]))
            self.assertIn(error, caught.exception.reason)

    def test_unknown_events_are_kept(self) -> None:
        (entry,) = read_log(['{"seq": 4, "event": "something-new", "extra": [1]}'])
        self.assertEqual(entry, Event(4, "something-new"))

    def test_line_bytes_is_the_readers(self) -> None:
        self.assertEqual(line_bytes({"dir": "recv", "base64": "/w=="}), b"\xff")
        with self.assertRaises(LogError):
            line_bytes({"dir": "recv"})

    @pytest.mark.slow
    @PROPERTY
    @given(
        st.lists(
            st.tuples(st.sampled_from(["send", "recv"]), st.binary(max_size=30))
            | st.tuples(st.just("event"), st.text(max_size=20)),
            max_size=8,
        )
    )
    def test_what_the_writer_writes_the_reader_reads(self, records: List[Tuple[str, Any]]) -> None:
        log = io.StringIO()
        capture = open_capture(log)
        assert capture is not None
        for kind, payload in records:
            if kind == "event":
                capture.event("note", payload)
            else:
                capture.line(kind, payload)
        capture.timed_out(7, "tools/call")
        capture.close()
        got = entries_of(log.getvalue())
        self.assertEqual([entry.seq for entry in got], list(range(1, len(records) + 2)))
        for entry, (kind, payload) in zip(got, records):
            if kind == "event":
                assert isinstance(entry, Event)
                self.assertEqual(entry.kind, "note")
                self.assertEqual(
                    entry.detail.encode("utf-8", "backslashreplace"),
                    payload.encode("utf-8", "backslashreplace"),
                )
            else:
                self.assertEqual(entry, WireLine(entry.seq, kind, payload))
        self.assertEqual(
            got[-1], Event(len(records) + 1, "timed-out", "tools/call id 7", 7, "tools/call")
        )


# ----------------------------------------------------------------------------- the writer


def options(target: CaptureTarget, timeout: float = LONG) -> Options:
    return Options(
        handshake_timeout=LONG, request_timeout=timeout, retire_timeout=LONG, capture=target
    )


def call_big(client: Any, count: int, size: int, timeout: float) -> List[str]:
    """``count`` echo calls of ``size`` bytes each, in a thread; what went wrong, if anything."""
    problems: List[str] = []

    def work() -> None:
        for number in range(count):
            started = time.monotonic()
            try:
                client.call_tool("echo", {"pad": "p" * size, "n": number}, timeout=timeout)
            except CallTimedOut as e:
                problems.append("call %d timed out: %s" % (number, e))
            if time.monotonic() - started > timeout + 1.0:
                problems.append("call %d waited past its deadline" % number)

    worker = threading.Thread(target=work, name="test-caller", daemon=True)
    worker.start()
    worker.join(count * (timeout + 1.0))
    if worker.is_alive():
        problems.append("a caller is stuck")
    return problems


class Capturing(unittest.TestCase):
    """The writer's entries are what ``json.dumps`` writes; many callers, one ordered log."""

    def test_entries_are_what_json_dumps_writes_however_long(self) -> None:
        for data in [
            b'{"a":"\xc3\xa9\\n"}',
            b"\xff\xfe",
            "\t\x01\u2028\U0001f600\"\\".encode(),
            b'"' * 70000,
            ("\u00e9" * 40000).encode(),
        ]:
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
        with start(channel(), options(log)) as client:

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


@unittest.skipUnless(os.path.exists("/proc/self/status"), "needs Linux /proc")
class PipeNobodyReads(unittest.TestCase):
    """A capture into a pipe nobody reads: calls go on, memory stays bounded."""

    def setUp(self) -> None:
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.fifo = os.path.join(directory.name, "wire.fifo")
        os.mkfifo(self.fifo)

    def test_a_fifo_drops_and_says_so_and_calls_keep_their_deadlines(self) -> None:
        limit = 1 * MIB
        original = capture_module.QUEUE_LIMIT
        capture_module.QUEUE_LIMIT = limit
        self.addCleanup(setattr, capture_module, "QUEUE_LIMIT", original)
        reader = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)  # there, but not reading yet
        self.addCleanup(os.close, reader)
        drain = Drain(reader)
        client = start(server("good"), options(self.fifo))
        try:
            before = rss_bytes()
            # 24 MiB of lines each way through a 1 MiB queue into a 64 KiB pipe.
            problems = call_big(client, 48, 512 * 1024, timeout=5.0)
            grown = rss_bytes() - before
            drain.thread.start()  # read again: the writer catches up
            client.ping()
        finally:
            client.shutdown()
        self.assertEqual(problems, [])
        self.assertLess(grown, 32 * MIB, "the queue held what it should have dropped")
        text = drain.text()
        dropped = [event for event in events_of(text) if event.kind == "dropped"]
        self.assertTrue(dropped, "no dropped marker in the log")
        self.assertRegex(dropped[0].detail, r"\A\d+ entries \(\d+ bytes of lines\) not recorded")
        kinds = [event.kind for event in events_of(text)]
        self.assertEqual(kinds[-2:], ["died", "retired"])
        # The capture's own account agrees with its markers, entry for entry.
        marked = sum(int(event.detail.split()[0]) for event in dropped)
        assert client.capture is not None
        self.assertEqual((client.capture.lost, client.capture.failure), (marked, None))
        self.assertFalse(client.capture.complete)

    def test_a_pipe_never_read_at_all_is_let_go_at_shutdown(self) -> None:
        read_end, write_end = os.pipe()
        self.addCleanup(os.close, read_end)
        stream = os.fdopen(write_end, "w", encoding="utf-8")
        self.addCleanup(stream.close)
        client = start(server("good"), options(stream))
        try:
            problems = call_big(client, 8, 256 * 1024, timeout=5.0)
        finally:
            started = time.monotonic()
            with self.assertLogs("mcp_client.capture", "WARNING") as logged:
                client.shutdown()
            took = time.monotonic() - started
        self.assertEqual(problems, [])
        self.assertRegex(logged.output[-1], r"took nothing .* \d+ entries are not recorded")
        # Bounded: the writer gives up on a stream that takes nothing; a thread
        # stuck in write would make the leak check fail after this test.
        self.assertLess(took, CLOSE_TIMEOUT + LONG / 2)
        self.assertFalse([t for t in threading.enumerate() if t.name.startswith("mcp-capture")])
        self.assertGreater(len(os.read(read_end, 1 << 20)), 0, "it wrote while it could")

    def test_a_stream_that_fails_ends_the_capture_not_the_calls(self) -> None:
        reader = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
        client = start(server("good"), options(self.fifo))
        try:
            with self.assertLogs("mcp_client.capture", "WARNING") as logged:
                os.close(reader)  # EPIPE from now on
                for number in range(3):
                    client.call_tool("echo", {"n": number})

                def logged_yet() -> bool:
                    client.ping()
                    return bool(logged.records)

                wait_until(logged_yet)
            client.ping()
        finally:
            client.shutdown()
        self.assertIn("capture stopped", logged.output[0])


class Targets(unittest.TestCase):
    def test_a_fifo_without_a_reader_is_refused_at_open(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            fifo = os.path.join(directory, "wire.fifo")
            os.mkfifo(fifo)
            with self.assertRaises(OSError):
                open_capture(fifo)

    def test_a_path_is_created_and_truncated(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "wire.jsonl")
            with open(path, "w") as old:
                old.write("stale\n" * 100)
            capture = open_capture(path)
            assert capture is not None
            capture.event("open", "x")
            capture.close()
            with open(path) as written:
                self.assertEqual(entries_of(written.read()), [Event(1, "open", "x")])

    def refuse_writer_threads(self) -> None:
        real = _threads.start

        def refuse(thread: threading.Thread) -> None:
            if thread.name.startswith("mcp-capture"):
                raise RuntimeError("can't start new thread")
            real(thread)

        _threads.start = refuse  # type: ignore[assignment]
        self.addCleanup(setattr, _threads, "start", real)

    def test_no_writer_thread_is_an_os_error_and_nothing_is_left_open(self) -> None:
        self.refuse_writer_threads()
        with tempfile.TemporaryDirectory() as directory:
            with self.assertRaises(OSError) as caught:  # (its descriptor: the leak check)
                open_capture(os.path.join(directory, "wire.jsonl"))
        self.assertIn("cannot start the capture's writer thread", str(caught.exception))

    def test_a_capture_that_cannot_open_fails_the_connect_at_once(self) -> None:
        self.refuse_writer_threads()
        with tempfile.TemporaryDirectory() as directory:
            target = os.path.join(directory, "wire.jsonl")
            client = prepare(server("good"), Options(retire_timeout=2.0, capture=target))
            with self.assertRaises(TransportFailed) as caught:
                client.connect()
            self.assertIn("cannot open the capture log", str(caught.exception))
            self.assertEqual(client.shutdown(), NoResource())

    def test_a_link_planted_at_the_path_is_refused_and_its_target_untouched(self) -> None:
        # Issue 17 item 4: the log would be truncated and written through the link.
        with tempfile.TemporaryDirectory() as directory:
            target = os.path.join(directory, "authorized_keys")
            with open(target, "w") as planted:
                planted.write("ssh-ed25519 AAAA the owner's key\n")
            link = os.path.join(directory, "wire.jsonl")
            os.symlink(target, link)
            client = prepare(server("good"), Options(retire_timeout=2.0, capture=link))
            with self.assertRaises(SymlinkRefused) as caught:
                client.connect()
            self.assertIsInstance(caught.exception, TransportFailed)
            self.assertEqual(caught.exception.path, link)
            self.assertEqual(client.shutdown(), NoResource())  # nothing was started
            with open(target) as planted:
                self.assertEqual(planted.read(), "ssh-ed25519 AAAA the owner's key\n")

    def test_a_callers_regular_file_stays_open(self) -> None:
        with tempfile.TemporaryFile("w+", encoding="utf-8") as stream:
            capture = open_capture(stream)
            assert capture is not None
            capture.line("recv", b"\xff")
            capture.close()
            self.assertFalse(stream.closed)
            stream.seek(0)
            self.assertEqual(entries_of(stream.read()), [WireLine(1, "recv", b"\xff")])


# ----------------------------------------------------------------------------- the session's end


class Completeness(unittest.TestCase):
    """``Capture.complete``, ``lost`` and ``failure``: what the log lacks, and why
    (issue 17 item 10; the CLI's exit status is made from them)."""

    def test_a_whole_log_is_complete(self) -> None:
        client = start(server("good"), options(io.StringIO()))
        client.ping()
        client.shutdown()
        assert client.capture is not None
        self.assertEqual(
            (client.capture.complete, client.capture.lost, client.capture.failure), (True, 0, None)
        )

    def test_a_device_that_is_full_loses_every_entry_and_says_why(self) -> None:
        client = start(server("good"), options("/dev/full"))  # opens; every write fails
        client.ping()
        client.shutdown()
        capture = client.capture
        assert capture is not None
        self.assertFalse(capture.complete)
        self.assertEqual(capture.failure, "OSError: [Errno 28] No space left on device")
        # open, initialize and its answer, initialized, ping and its answer, died, retired
        self.assertEqual(capture.lost, 8)

    def test_a_write_that_never_returns_is_incomplete_once_closed(self) -> None:
        class Hung(io.StringIO):  # no descriptor: written through itself, like a disk that hangs
            released = threading.Event()

            def writelines(self, lines: Any) -> None:
                self.released.wait(LONG)

        stream = Hung()
        self.addCleanup(stream.released.set)
        capture = open_capture(stream)
        assert capture is not None
        capture.event("open")
        self.assertTrue(capture.complete)  # in flight, not lost
        capture.close(timeout=SHORT)
        self.assertEqual(capture.failure, "the writer was still writing when the capture closed")
        self.assertFalse(capture.complete)
        stream.released.set()
        wait_until(lambda: capture.failure is None)  # it did write, in the end
        self.assertTrue(capture.complete)

    def test_no_capture_is_none(self) -> None:
        client = start(server("good"), options(None))
        client.shutdown()
        self.assertIsNone(client.capture)


class SessionEnd(unittest.TestCase):
    def session(self, behaviour: str, work: Any) -> List[Event]:
        log = io.StringIO()
        client = start(server(behaviour), options(log))
        try:
            work(client)
        finally:
            client.shutdown()
        return events_of(log.getvalue())

    def test_eof_then_the_reason_then_the_evidence(self) -> None:
        def call(client: Any) -> None:
            with self.assertRaises(ClientBroken):
                client.call_tool("echo", {})

        events = self.session("exit_mid_call", call)
        self.assertEqual(
            [(e.kind, e.detail) for e in events[-3:]],
            [
                ("eof", ""),
                ("died", "ClientBroken: server closed its stdout (server scripted)"),
                ("retired", "Exited(returncode=3)"),
            ],
        )

    def test_a_shutdown_is_recorded_as_the_reason(self) -> None:
        events = self.session("good", lambda client: client.ping())
        self.assertEqual(
            [(e.kind, e.detail) for e in events[-2:]],
            [
                ("died", "ClientClosed: client was shut down (server scripted)"),
                ("retired", "Exited(returncode=-9)"),
            ],
        )
        self.assertNotIn("eof", [e.kind for e in events])

    def test_a_timeout_names_its_request(self) -> None:
        def late(client: Any) -> None:
            with self.assertRaises(CallTimedOut):
                client.call_tool("echo", {}, timeout=SHORT)

        events = self.session("never_answer", late)
        timed_out = [(e.ident, e.method) for e in events if e.kind == "timed-out"]
        # (Whoever settles the timeout records it: the timer thread, most often.)
        self.assertEqual(timed_out, [(2, "tools/call")])


if __name__ == "__main__":
    unittest.main()
