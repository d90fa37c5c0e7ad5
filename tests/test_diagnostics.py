"""What a server said before it died, and a polite goodbye (issue 12).

Against real child processes: ``stderr="capture"`` keeps the server's last
stderr lines for the errors its death raises and logs each line; with
``retire_grace`` a retirement closes stdin first and waits for the server's
own exit before the SIGKILL.
"""

from __future__ import annotations

import logging
import os
import signal
import tempfile
import time
import tracemalloc
import unittest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client import (
    Exited,
    Options,
    ProcessTransport,
    prepare,
    start,
)
from mcp_client._core._tail import LINE_BYTES, TAIL_BYTES, Tail
from mcp_client.errors import ClientBroken, HandshakeFailed, Unavailable
from mcp_client.transport import CAPTURE

from servers import alive
from strategies import property_settings
from support import LONG, OPTIONS, server, text_of, wait_until

MIB = 1024 * 1024


class TailRing(unittest.TestCase):
    """The ring itself: bounded, last lines kept, every byte shown safely."""

    def test_keeps_the_last_lines_within_the_budget(self) -> None:
        tail = Tail()
        lines = tail.push(b"".join(b"line %d\n" % n for n in range(100000)), lines=True)
        self.assertEqual(len(lines), 100000)
        kept = tail.text().split("\n")
        self.assertEqual(kept[-1], "line 99999")
        self.assertLessEqual(len(tail.text().encode()) + 1, TAIL_BYTES)
        self.assertEqual(kept, ["line %d" % n for n in range(100000 - len(kept), 100000)])

    def test_an_endless_line_is_cut_and_counted(self) -> None:
        tail = Tail()
        for _ in range(1000):
            self.assertEqual(tail.push(b"x" * 4096, lines=True), [])
        (line,) = tail.push(b"\n", lines=True)
        self.assertTrue(line.startswith("x" * 100))
        self.assertIn("more bytes]", line)
        self.assertLessEqual(len(line), LINE_BYTES + 40)

    def test_a_last_line_without_newline_counts_at_eof(self) -> None:
        tail = Tail()
        tail.push(b"Traceback\nValueError: boom", lines=True)
        self.assertEqual(tail.close(), ["ValueError: boom"])
        self.assertEqual(tail.last(1), ["ValueError: boom"])

    @property_settings(200)
    @given(st.lists(st.binary(max_size=3000), max_size=40))
    def test_total_bounded_and_printable(self, chunks: list) -> None:  # type: ignore[type-arg]
        tail = Tail()
        for chunk in chunks:
            for line in tail.push(chunk, lines=True):
                self.assertTrue(line.isprintable(), line)
        tail.close()
        self.assertLessEqual(len(tail.text().encode()), TAIL_BYTES + LINE_BYTES + 64)
        self.assertTrue(all(line.isprintable() for line in tail.text().split("\n")))

    def test_a_long_line_is_shown_by_its_start_and_its_true_length(self) -> None:
        # Issue 17 item 9: it was shown as a fragment of its middle, "[8192 more bytes]".
        line = b"FATAL: the index is corrupt " + b"x" * 300000
        for size in (1, 4096, 65536, len(line) + 20):
            tail = Tail()
            stream = b"starting\n" + line + b"\nexiting\n"
            logged = []
            for offset in range(0, len(stream), size if size > 1 else 7):
                logged += tail.push(stream[offset : offset + (size if size > 1 else 7)], lines=True)
            shown = tail.text().split("\n")
            self.assertEqual(shown[-1], "exiting")
            self.assertTrue(shown[-2].startswith("FATAL: the index is corrupt xxx"), shown[-2][:60])
            self.assertTrue(shown[-2].endswith(" [%d more bytes]" % (len(line) - LINE_BYTES)))
            self.assertEqual(shown[-2], logged[1], "the tail and the log record say the same")

    def test_a_line_cut_by_the_trim_is_shown_whole(self) -> None:
        # The raw bytes kept (TAIL_BYTES + LINE_BYTES = 9216) are trimmed back to
        # that once they pass twice that: the last push here does, and the cut
        # falls 18 bytes into the line (9200 bytes before it, 9211 after).
        tail = Tail()
        for chunk in (
            b"a" * 4599,
            b"b" * 4599,
            b"the line the trim cuts",
            b"c" * 4599,
            b"d" * 4610,
        ):
            tail.push(chunk + b"\n")
        self.assertEqual(tail.text().split("\n")[0], "the line the trim cuts")

    @pytest.mark.slow
    @property_settings(200)
    @given(
        st.lists(
            st.one_of(
                st.binary(max_size=3000),
                st.builds(
                    lambda n, c: c * n,
                    st.integers(0, 40000),
                    st.sampled_from([b"y", b"\n", b"z\n", b" "]),
                ),
            ),
            max_size=30,
        )
    )
    def test_the_tail_is_the_end_of_what_was_logged(self, chunks: list) -> None:  # type: ignore[type-arg]
        tail, logged = Tail(), []
        for chunk in chunks:
            logged += tail.push(chunk, lines=True)
        logged += tail.close()
        kept = tail.text().split("\n") if tail.text() else []
        self.assertEqual(kept, logged[len(logged) - len(kept) :])


class StderrInErrors(unittest.TestCase):
    def test_a_traceback_before_the_handshake_explains_the_failure(self) -> None:
        transport = ProcessTransport(server("diagnostics", "traceback_before_init"), stderr=CAPTURE)
        client = prepare(transport, OPTIONS)
        with self.assertRaises(HandshakeFailed) as caught:
            client.connect()
        message = str(caught.exception)
        self.assertIn("LookupError: no such profile: 'prod'", message)
        self.assertTrue(message.rstrip().endswith("LookupError: no such profile: 'prod'"))
        self.assertIn("Traceback (most recent call last):", caught.exception.stderr_tail)
        self.assertEqual(client.shutdown(), Exited(1))

    def test_a_death_mid_call_carries_what_it_wrote(self) -> None:
        transport = ProcessTransport(server("diagnostics", "stderr_then_die"), stderr=CAPTURE)
        client = start(transport, OPTIONS)
        with self.assertRaises(Unavailable) as caught:
            client.call_tool("echo", {}, timeout=LONG)
        self.assertIsInstance(caught.exception, ClientBroken)
        self.assertIn("fatal: lost the database", caught.exception.stderr_tail)
        self.assertIn("fatal: lost the database", str(caught.exception))
        with self.assertRaises(Unavailable) as later:  # every later call says it too
            client.call_tool("echo", {}, timeout=LONG)
        self.assertIn("fatal: lost the database", later.exception.stderr_tail)
        self.assertEqual(client.shutdown(), Exited(3))

    def test_not_captured_means_empty(self) -> None:
        client = start(server("diagnostics", "stderr_then_die"), OPTIONS)
        with self.assertRaises(Unavailable) as caught:
            client.call_tool("echo", {}, timeout=LONG)
        self.assertEqual(caught.exception.stderr_tail, "")
        self.assertNotIn("server stderr", str(caught.exception))
        self.assertEqual(client.shutdown(), Exited(3))

    def test_a_long_fatal_line_keeps_its_start_and_its_length(self) -> None:
        transport = ProcessTransport(server("diagnostics", "long_fatal_line"), stderr=CAPTURE)
        client = start(transport, OPTIONS)
        with self.assertRaises(Unavailable) as caught:
            client.call_tool("echo", {}, timeout=LONG)
        self.assertEqual(client.shutdown(), Exited(3))
        *_, fatal, last = caught.exception.stderr_tail.split("\n")
        self.assertEqual(last, "exiting")
        said = "FATAL: the index is corrupt; "  # a 300,000-byte line (servers/diagnostics.py)
        self.assertEqual(
            fatal,
            (said + "x" * (LINE_BYTES - len(said)) + " [%d more bytes]" % (300000 - LINE_BYTES)),
        )
        self.assertIn(fatal, str(caught.exception))

    def test_lines_reach_the_server_logger(self) -> None:
        transport = ProcessTransport(server("diagnostics", "stderr_then_die"), stderr=CAPTURE)
        client = start(transport, OPTIONS)
        with self.assertLogs("mcp_client.server", logging.INFO) as logs:
            with self.assertRaises(Unavailable):
                client.call_tool("echo", {}, timeout=LONG)
            client.shutdown()
        messages = [record.getMessage() for record in logs.records]
        self.assertTrue(any(m.endswith("fatal: lost the database") for m in messages), messages)
        self.assertTrue(all(getattr(r, "server", None) == "scripted" for r in logs.records))


@pytest.mark.slow
class StderrFlood(unittest.TestCase):
    """100 MB of stderr while calls run: the calls work, memory stays bounded,
    and the tail is the true end of what was written."""

    def test_flood(self) -> None:
        transport = ProcessTransport(server("diagnostics", "stderr_flood"), stderr=CAPTURE)
        client = start(transport, OPTIONS)
        tracemalloc.start()
        try:
            self.assertEqual(text_of(client.call_tool("flood", {"mb": 100})), "started")
            deadline = time.monotonic() + 8 * LONG
            calls = 0
            while text_of(client.call_tool("flooded", {})) != "yes":
                echoed = text_of(client.call_tool("echo", {"n": calls}))
                self.assertEqual(echoed, '{"n":%d}' % calls)
                calls += 1
                self.assertLess(time.monotonic(), deadline, "the flood never ended")
            evidence = client.shutdown()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        self.assertEqual(evidence, Exited(-9))
        self.assertGreater(calls, 0)
        self.assertLess(peak, 16 * MIB)
        last = client.stderr_tail.split("\n")
        self.assertTrue(last[-1].startswith("flood done after line "), last[-3:])
        final = int(last[-1].rsplit(" ", 1)[1])
        self.assertEqual(last[-2], "flood line %d" % final)
        self.assertEqual(last[-3], "flood line %d" % (final - 1))


class _Counting(logging.Handler):
    """Formats every record, as a real handler would, and counts them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0
        self.last = ""
        self.after_last = 0  # records after the last "not logged" one

    def emit(self, record: logging.LogRecord) -> None:
        self.format(record)
        self.count += 1
        if "not logged" in record.getMessage():
            self.last = record.getMessage()
            self.after_last = 0
        else:
            self.after_last += 1


@pytest.mark.slow
class LoggedStderrFlood(unittest.TestCase):
    """Issue 17 item 7: a server writing stderr faster than the reader can log it
    (``mcp_client.server`` at INFO) starved stdout, so pings timed out and
    ``shutdown()`` raised ``RetirementTimedOut``: the reader read stderr until
    EAGAIN, which never came."""

    def setUp(self) -> None:
        logger = logging.getLogger("mcp_client.server")
        self.handler = _Counting()
        saved = logger.level, logger.propagate
        logger.addHandler(self.handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # pytest's own handler would keep every record

        def restore() -> None:
            logger.removeHandler(self.handler)
            logger.setLevel(saved[0])
            logger.propagate = saved[1]

        self.addCleanup(restore)

    def test_calls_and_retirement_never_wait_behind_it(self) -> None:
        transport = ProcessTransport(server("diagnostics", "stderr_flood"), stderr=CAPTURE)
        client = start(transport, OPTIONS)
        self.assertEqual(text_of(client.call_tool("flood", {"mb": 100000})), "started")
        self.assertTrue(wait_until(lambda: self.handler.count > 10000), "the flood never began")
        for n in range(20):  # each answered by the server, and so read, within LONG
            client.ping(timeout=LONG)
            self.assertEqual(
                text_of(client.call_tool("echo", {"n": n}, timeout=LONG)), '{"n":%d}' % n
            )
        self.assertEqual(text_of(client.call_tool("flooded", {}, timeout=LONG)), "no")
        self.assertEqual(client.shutdown(), Exited(-9))
        # (Its very last line may be cut short: the SIGKILL can land mid-write.)
        self.assertTrue(client.stderr_tail.split("\n")[-2].startswith("flood line "))

    def test_what_is_left_in_the_pipe_is_logged_by_its_last_lines(self) -> None:
        # What the killed server left in its stderr pipe (a pipeful: thousands of lines)
        # is kept in the tail whole, but logged by its last lines and a count: a record
        # a line held shutdown() past its timeout.
        transport = ProcessTransport(server("diagnostics", "stderr_flood"), stderr=CAPTURE)
        client = start(transport, OPTIONS)
        self.assertEqual(text_of(client.call_tool("flood", {"mb": 100000})), "started")
        self.assertTrue(wait_until(lambda: self.handler.count > 10000), "the flood never began")
        self.assertEqual(client.shutdown(timeout=LONG), Exited(-9))
        # The live reads log a line a record until the kill; what is left after it is
        # one record that counts it, then its last lines (at most 20).
        self.assertIn("more lines of stderr, left when it ended, not logged", self.handler.last)
        self.assertLessEqual(self.handler.after_last, 20, "a record a line of the leftover")
        self.assertTrue(client.stderr_tail.split("\n")[-2].startswith("flood line "))


class Grace(unittest.TestCase):
    def test_a_server_that_flushes_on_eof_is_given_the_time(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            state = os.path.join(folder, "state")
            client = start(
                server("diagnostics", "eof_flush", state),
                Options(retire_grace=LONG, retire_timeout=LONG),
            )
            self.assertEqual(client.shutdown(), Exited(0))
            with open(state) as written:
                self.assertEqual(written.read(), "flushed")

    def test_a_grandchild_left_behind_goes_with_the_group(self) -> None:
        # Issue 17 item 12: the server's own Exited(0), and the grandchild survived.
        client = start(
            server("diagnostics", "grandchild_on_eof"),
            Options(retire_grace=LONG, retire_timeout=LONG),
        )
        grandchild = int(text_of(client.call_tool("spawn", {})))
        self.assertTrue(alive(grandchild))
        self.assertEqual(client.shutdown(), Exited(0))
        self.assertTrue(
            wait_until(lambda: not alive(grandchild)), "the grandchild outlived the retirement"
        )

    def test_a_server_that_ignores_eof_is_killed_when_the_grace_ends(self) -> None:
        client = start(
            server("diagnostics", "ignore_eof"), Options(retire_grace=0.5, retire_timeout=LONG)
        )
        begun = time.monotonic()
        self.assertEqual(client.shutdown(), Exited(-9))
        taken = time.monotonic() - begun
        self.assertGreaterEqual(taken, 0.5)  # the whole grace was given
        self.assertLess(taken, LONG)

    def test_stop_never_blocks_on_the_grace(self) -> None:
        client = start(
            server("diagnostics", "ignore_eof"), Options(retire_grace=LONG, retire_timeout=LONG)
        )
        begun = time.monotonic()
        client.stop()
        self.assertLess(time.monotonic() - begun, 0.5 * LONG)
        pid = client.pid
        assert pid is not None
        os.killpg(pid, signal.SIGKILL)  # end the grace early for the test (its own session)
        self.assertEqual(client.shutdown(), Exited(-9))


if __name__ == "__main__":
    unittest.main()
