"""The promise under forks, interrupts, huge deadlines, stalls and failing threads.

One test class per way the promise was seen to break (issue 9), each against a
real child process unless the point is a unit's own contract.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
from typing import Any, Dict, List

import pytest

from mcp_client import (
    Exited,
    ProcessTransport,
    State,
    start,
)
from mcp_client import (
    client as client_module,
)
from mcp_client._core._calls import Call
from mcp_client._os import threads as _threads
from mcp_client.errors import CallTimedOut, ClientBroken, TransportFailed, Unavailable

from support import LONG, OPTIONS, SHORT, server, text_of, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))

MIB = 1024 * 1024


class Interrupted(Exception):
    """What the tests' signal handlers raise, as a harness's KeyboardInterrupt would."""


#: The storm's handler raises only while this is set: inside the client's calls.
ARMED = [True]


def _raise_interrupted(signum: int, frame: Any) -> None:
    if ARMED[0]:
        raise Interrupted()


class SignalCase(unittest.TestCase):
    """Restores SIGALRM and its timer however a test ends."""

    def setUp(self) -> None:
        ARMED[0] = True
        self.previous = signal.signal(signal.SIGALRM, _raise_interrupted)

    def tearDown(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        # signal.signal runs any handler still pending before it swaps: disarmed
        # first, so a late alarm is a no-op rather than an Interrupted in the runner.
        ARMED[0] = False
        signal.signal(signal.SIGALRM, self.previous)
        ARMED[0] = True


class Fork(unittest.TestCase):
    """Item 1: a forked child finds its inherited client inert, and leaves the
    parent's server, pipes and client alone."""

    def test_child_exits_at_once_and_the_parent_keeps_serving(self) -> None:
        harness = os.path.join(HERE, "harnesses", "fork_child.py")
        done = subprocess.run(
            [sys.executable, harness],
            capture_output=True,
            text=True,
            timeout=4 * LONG,
            env=dict(os.environ, PYTHONPATH=os.path.dirname(HERE)),  # this checkout's client
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        report: Dict[str, Any] = json.loads(done.stdout)
        child = report["child"]
        self.assertTrue(child["call"].startswith("ClientInherited: "), child)
        self.assertIn("inherited through fork", child["call"])
        self.assertEqual(child["shutdown"], "ClientInherited")
        self.assertEqual(report["child_status"], 0)
        # retire_timeout is 30 s: an atexit that tried to retire would take it.
        self.assertLess(report["child_seconds"], 10.0)
        self.assertEqual(report["parent_state_after_child"], "ready")
        self.assertEqual(report["parent_answer"], '{"from":"parent"}')
        self.assertEqual(report["parent_evidence"], repr(Exited(-9)))


class HugeDeadline(unittest.TestCase):
    """Item 2: any positive timeout works, when the write must wait for room."""

    def test_month_long_and_infinite_timeouts_wait_for_room(self) -> None:
        with start(server("reliability", "slow_reader", "0.5"), OPTIONS) as client:
            for timeout in (30 * 86400.0, float("inf")):
                result = client.call_tool("size", {"blob": "x" * (4 * MIB)}, timeout=timeout)
                self.assertEqual(text_of(result), str(4 * MIB))
            # Nothing was glued to a half frame: the stream is still clean.
            self.assertEqual(text_of(client.call_tool("echo", {"n": 1})), '{"n":1}')


class InterruptedWrite(SignalCase):
    """Item 3: an exception cutting a large frame short poisons the stream."""

    def test_a_frame_cut_short_breaks_the_client(self) -> None:
        # The server reads nothing for LONG, so the 8 MiB frame fills the pipe and
        # waits for room; the alarm is armed only then, once part of it has left
        # (an alarm armed before the call could land while the argument is still
        # being encoded, on a loaded machine: nothing written, nothing torn).
        client = start(server("reliability", "slow_reader", str(LONG)), OPTIONS)
        writer = client._session.conn._writer
        await_room = writer._await_room
        armed: List[int] = []

        def arm_once_begun(deadline: float, written: int) -> None:
            if written and not armed:
                armed.append(written)
                signal.setitimer(signal.ITIMER_REAL, 0.05)
            await_room(deadline, written)

        writer._await_room = arm_once_begun
        try:
            with self.assertRaises(Interrupted):
                client.call_tool("size", {"blob": "x" * (8 * MIB)}, timeout=LONG)
            self.assertTrue(armed, "the frame never waited for room")
            self.assertIs(client.state, State.BROKEN)
            self.assertIn("cut short", str(client.reason))
            # At once, with the latched reason: a call on a poisoned stream would
            # otherwise be written and fail, or wait, on its own account.
            with self.assertRaises(ClientBroken) as caught:
                client.call_tool("echo", {"n": 1}, timeout=LONG)
            self.assertIn("cut short", str(caught.exception))
        finally:
            self.assertEqual(client.shutdown(), Exited(-9))


@pytest.mark.slow
@unittest.skipIf(
    sys.version_info < (3, 11),
    "the storm guarantee holds on CPython 3.11+: 3.9 and 3.10 check for a pending signal at "
    "more points (before a call as well as after it), and a storm there left the server "
    "writer's lock held in about 1 run in 4 (README, Reliability; an open gap)",
)
class InterruptStorm(SignalCase):
    """Item 4: exceptions raised every millisecond into a loop of calls leave
    the client working or broken with a typed error, never wedged."""

    def test_the_client_survives_a_storm(self) -> None:
        client = start(server("good"), OPTIONS)
        interrupted = self.storm(client, seconds=2.0, large_every=7)
        self.assertGreater(interrupted, 100, "the storm must actually have hit")
        try:
            result = client.call_tool("echo", {"after": "storm"}, timeout=LONG)
        except Unavailable:
            self.assertIs(client.state, State.BROKEN)
        else:
            self.assertIs(client.state, State.READY)
            self.assertEqual(text_of(result), '{"after":"storm"}')
        self.assertIsInstance(client.shutdown(timeout=LONG), Exited)

    def test_small_frames_only_a_storm_changes_nothing(self) -> None:
        # Only a frame cut short may break the client; with frames a pipe takes
        # whole, an exception every millisecond leaves it as it was.
        client = start(server("good"), OPTIONS)
        self.assertGreater(self.storm(client, seconds=1.5, large_every=0), 100)
        self.assertEqual(
            text_of(client.call_tool("echo", {"after": "storm"}, timeout=LONG)), '{"after":"storm"}'
        )
        self.assertIs(client.state, State.READY)
        # An interrupted call leaves the table at once, or -- if the storm hits its
        # handler too -- at its deadline (2 s), when the timer collects it.
        self.assertTrue(wait_until(lambda: client.in_flight == 0))
        self.assertEqual(client.shutdown(timeout=LONG), Exited(-9))

    def storm(self, client: Any, seconds: float, large_every: int) -> int:
        """Calls under an exception every millisecond; returns how many were hit.

        The storm is over when this returns, not a moment later: the timer is
        disarmed, the handler stays disarmed for the rest of the test (tearDown
        re-arms it), and any alarm already pending is run here, harmlessly. An
        alarm can also land inside a finalizer the garbage collector runs during
        a call; that exception is unraisable, so for the storm's length the hook
        is ``list.append``, a C function no handler can interrupt (pytest's own
        hook is Python, and an Interrupted inside it fails whichever test runs
        next). Only Interrupted may arrive there; anything else is re-raised.
        """
        interrupted = 0
        stop_at = time.monotonic() + seconds
        unraisable: List[Any] = []
        ARMED[0] = False
        previous_hook = sys.unraisablehook
        sys.unraisablehook = unraisable.append
        signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
        try:
            for turn in range(10**9):
                if time.monotonic() > stop_at:
                    break
                large = large_every and turn % large_every == 0
                blob = "y" * (64 * 1024 if large else 10)
                try:
                    try:
                        ARMED[0] = True
                        client.call_tool("echo", {"blob": blob}, timeout=2.0)
                    finally:
                        ARMED[0] = False
                except Interrupted:
                    interrupted += 1
                except (Unavailable, CallTimedOut):
                    pass
        finally:
            ARMED[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, _raise_interrupted)  # runs what is pending
            sys.unraisablehook = previous_hook
        for args in unraisable:
            if not isinstance(args.exc_value, Interrupted):
                raise AssertionError(
                    "unraisable during the storm: %r in %r" % (args.exc_value, args.object)
                ) from args.exc_value
        return interrupted


@pytest.mark.slow
class ServerPingDuringUpload(unittest.TestCase):
    """Item 5: the reader never blocks on a write while answers wait to be read."""

    def test_an_answer_is_read_while_an_upload_is_stuck(self) -> None:
        outcomes: Dict[str, Any] = {}

        def call(label: str, name: str, arguments: Dict[str, Any], timeout: float) -> None:
            try:
                outcomes[label] = text_of(client.call_tool(name, arguments, timeout=timeout))
            except Exception as e:  # recorded for the assertions below
                outcomes[label] = e

        with start(server("reliability", "ping_in_stall", "3.0"), OPTIONS) as client:
            later = threading.Thread(target=call, args=("later", "later", {"delay": 1.0}, 2.5))
            later.start()
            stall = threading.Thread(target=call, args=("stall", "stall", {}, LONG))
            stall.start()
            time.sleep(0.1)  # the stall is under way: the server reads nothing now
            upload = threading.Thread(
                target=call, args=("upload", "size", {"blob": "z" * (8 * MIB)}, LONG)
            )
            upload.start()
            for thread in (later, stall, upload):
                thread.join(2 * LONG)
            self.assertEqual(outcomes["later"], '{"delay":1.0}')
            self.assertEqual(outcomes["stall"], "stalled")
            self.assertEqual(outcomes["upload"], str(8 * MIB))
            # The ping was answered, once the server read again.
            self.assertEqual(text_of(client.call_tool("answers", {})), "p")


class ThreadStartFailure(unittest.TestCase):
    """Item 7: no thread to be had is a typed failure or a fallback, never a
    raw ``RuntimeError``, and shutdown still returns its evidence."""

    def refuse(self, prefix: str) -> List[str]:
        refused: List[str] = []
        real = _threads.start

        def start_thread(thread: threading.Thread) -> None:
            if thread.name.startswith(prefix):
                refused.append(thread.name)
                raise RuntimeError("can't start new thread")
            real(thread)

        _threads.start = start_thread  # type: ignore[assignment]
        self.addCleanup(setattr, _threads, "start", real)
        return refused

    def test_no_timer_thread_the_caller_keeps_its_deadline(self) -> None:
        client = start(server("never_answer"), OPTIONS)
        refused = self.refuse("mcp-timer")
        try:
            with self.assertRaises(CallTimedOut):
                client.call_tool("echo", {}, timeout=SHORT)
            self.assertTrue(refused)
            self.assertIs(client.state, State.READY)
        finally:
            self.assertEqual(client.shutdown(), Exited(-9))

    def test_no_reader_thread_fails_the_start_and_reaps_the_child(self) -> None:
        self.refuse("mcp-reader")
        client = client_module.prepare(server("good"), OPTIONS)
        with self.assertRaises(TransportFailed) as caught:
            client.connect()
        self.assertIn("cannot start the reader thread", str(caught.exception))
        self.assertEqual(client.shutdown(), Exited(-9))


class KillNeverWaitsForTheReaper(unittest.TestCase):
    """Item 8: ``kill`` goes through while another thread waits to reap."""

    def test_kill_while_waiting(self) -> None:
        conn = ProcessTransport(server("never_answer")).open()
        evidence: List[Any] = []
        waiter = threading.Thread(target=lambda: evidence.append(conn.wait(None)))
        waiter.start()
        time.sleep(0.1)  # the waiter is blocked until the child exits
        killer = threading.Thread(target=conn.kill)
        killer.start()
        killer.join(5.0)
        self.assertFalse(killer.is_alive(), "kill() waited behind the reaper")
        waiter.join(LONG)
        self.assertEqual(evidence, [Exited(-9)])
        conn.close_output()
        conn.dispose_input(time.monotonic() + LONG)


class SettledOnce(unittest.TestCase):
    """Item 9: a second settlement is loud and changes nothing."""

    def test_second_settlement_raises_and_keeps_the_first(self) -> None:
        call = Call(1, "tools/call", 1.0, time.monotonic() + 1.0)
        call.settle({"first": True})
        with self.assertRaises(RuntimeError):
            call.settle({"second": True})
        with self.assertRaises(RuntimeError):
            call.fail(Unavailable("late"))
        self.assertTrue(call.wait(0))
        self.assertEqual(call.outcome(), {"first": True})


class SignalRouting(unittest.TestCase):
    """Item 11: the client's threads block asynchronous signals, so the kernel
    delivers SIGTERM to the main thread, whose wait it interrupts at once."""

    @staticmethod
    def blocked(thread: threading.Thread) -> int:
        with open("/proc/self/task/%d/status" % thread.native_id) as status:
            for line in status:
                if line.startswith("SigBlk:"):
                    return int(line.split()[1], 16)
        raise AssertionError("no SigBlk line")

    def assert_blocks(self, thread: threading.Thread, signum: int) -> None:
        if thread.native_id is None:  # still starting (it inherits a blocked mask)
            return
        try:
            mask = self.blocked(thread)
        except FileNotFoundError:  # a timer that fired and ended meanwhile
            return
        self.assertTrue(mask & (1 << (signum - 1)), thread.name)

    @unittest.skipUnless(os.path.isdir("/proc/self/task"), "needs Linux /proc")
    def test_client_threads_block_sigterm_and_the_main_thread_does_not(self) -> None:
        with start(server("never_answer"), OPTIONS) as client:
            gate = threading.Event()
            outcome: List[Any] = []

            def slow_call() -> None:
                gate.set()
                try:
                    client.call_tool("echo", {}, timeout=SHORT)
                except CallTimedOut as e:
                    outcome.append(e)

            caller = threading.Thread(target=slow_call)
            caller.start()
            gate.wait(LONG)
            ours = [t for t in threading.enumerate() if t.name.startswith("mcp-")]
            self.assertTrue(any(t.name.startswith("mcp-reader") for t in ours))
            for thread in ours:
                self.assert_blocks(thread, signal.SIGTERM)
                self.assert_blocks(thread, signal.SIGINT)
            caller.join(LONG)
        self.assertFalse(self.blocked(threading.main_thread()) & (1 << (signal.SIGTERM - 1)))

    def test_sigterm_interrupts_a_main_thread_waiting_for_an_answer(self) -> None:
        code = (
            "import signal, sys, time\n"
            "sys.path.insert(0, %r)\n"
            "from support import server\n"
            "from mcp_client import start, Options\n"
            "def bye(signum, frame):\n"
            "    raise SystemExit(42)\n"
            "signal.signal(signal.SIGTERM, bye)\n"
            "client = start(server('never_answer'), Options(request_timeout=120))\n"
            "print('waiting', flush=True)\n"
            "try:\n"
            "    client.call_tool('echo', {})\n"
            "finally:\n"
            "    client.shutdown()\n" % HERE
        )
        harness = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        try:
            assert harness.stdout is not None
            self.assertEqual(harness.stdout.readline(), "waiting\n")
            time.sleep(0.2)  # the main thread is in the call's wait
            harness.send_signal(signal.SIGTERM)
            self.assertEqual(harness.wait(timeout=2 * LONG), 42)
        finally:
            if harness.poll() is None:
                harness.kill()
                harness.wait()
            harness.stdout.close()  # type: ignore[union-attr]


if __name__ == "__main__":
    unittest.main()
