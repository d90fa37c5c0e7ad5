"""The promise under load: many callers, many calls in flight at a death, many
clients in a row and many at once.

Each test is bounded (a few seconds on an idle machine) and asserts behaviour,
never speed: every time bound below is one for wedges, generous for a busy
machine. Random plans are seeded; a failure names its seed, and
``MCP_STRESS_SEED=<seed>`` replays the same plan.
"""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import threading
import time
import unittest
from typing import Any, Dict, List, Optional, Set, Tuple

import pytest

from mcp_client import (
    Client,
    Exited,
    State,
    start,
)
from mcp_client.errors import CallTimedOut, ClientBroken
from mcp_client.protocol import CallToolResult

from procs import PROC, client_threads, open_fds, process_stats, rss_bytes
from support import LONG, OPTIONS, server, text_of

NO_PROC = "needs Linux /proc (descriptors, children and RSS are read there)"

#: How far past its deadline a call may end before it counts as wedged. Not a
#: speed assertion: a call is expected to end within milliseconds of it.
WEDGE_SLACK = 2.0
#: A timeout no call of test 2 may come near: waiting for it would be obvious.
HELD_TIMEOUT = 60.0
MIB = 1024 * 1024


def seed() -> int:
    chosen = os.environ.get("MCP_STRESS_SEED")
    return int(chosen) if chosen else random.SystemRandom().randrange(2**32)


def thread_names() -> List[str]:
    return [thread.name for thread in client_threads()]


def children() -> Set[int]:
    """Pids whose parent is this process, zombies included (a zombie is unreaped)."""
    me = os.getpid()
    return {pid for pid, fields in process_stats() if int(fields[1]) == me}


def live_clients() -> int:
    return sum(1 for obj in gc.get_objects() if isinstance(obj, Client))


def join_all(threads: List[threading.Thread], deadline: float) -> List[str]:
    """Join every thread by ``deadline``; the names of those still running."""
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [thread.name for thread in threads if thread.is_alive()]


@pytest.mark.slow
class ConcurrentCalls(unittest.TestCase):
    """16 callers share one client; each call has its own latency and timeout."""

    THREADS = 16
    CALLS_EACH = 25

    def test_no_crossed_answers_and_every_call_ends_by_its_deadline(self) -> None:
        chosen = seed()
        rng = random.Random(chosen)
        # (token, delay, timeout) per call, planned up front so a seed replays it.
        plans = [
            [
                (
                    "t%02d-%02d-%08x" % (worker, turn, rng.getrandbits(32)),
                    round(rng.uniform(0.0, 0.2), 3),
                    rng.uniform(0.05, 0.4),
                )
                for turn in range(self.CALLS_EACH)
            ]
            for worker in range(self.THREADS)
        ]
        outcomes: List[Tuple[str, float, float, float, Any]] = []
        record = threading.Lock()
        gate = threading.Barrier(self.THREADS + 1)

        def caller(plan: List[Tuple[str, float, float]]) -> None:
            gate.wait(LONG)
            for token, delay, timeout in plan:
                began = time.monotonic()
                try:
                    outcome: Any = client.call_tool(
                        "echo", {"token": token, "delay": delay}, timeout=timeout
                    )
                except BaseException as e:  # every outcome is judged below
                    outcome = e
                with record:
                    outcomes.append((token, delay, timeout, time.monotonic() - began, outcome))

        client = start(server("slow"), OPTIONS)
        try:
            threads = [
                threading.Thread(target=caller, args=(plan,), name="caller-%d" % n, daemon=True)
                for n, plan in enumerate(plans)
            ]
            for thread in threads:
                thread.start()
            gate.wait(LONG)
            longest = max(sum(timeout for _, _, timeout in plan) for plan in plans)
            wedged = join_all(threads, time.monotonic() + longest + LONG)
            self.assertEqual(wedged, [], "callers never returned (seed %d)" % chosen)
            self.assertEqual(len(outcomes), self.THREADS * self.CALLS_EACH)

            failures: List[str] = []
            succeeded = timed_out = 0
            for token, delay, timeout, took, outcome in outcomes:
                where = "%s (delay %.3f, timeout %.3f, took %.3f)" % (token, delay, timeout, took)
                if took > timeout + WEDGE_SLACK:
                    failures.append("%s: ended %.3f s past its deadline" % (where, took - timeout))
                if isinstance(outcome, CallToolResult):
                    succeeded += 1
                    answer = json.loads(text_of(outcome))
                    if answer.get("token") != token or answer.get("delay") != delay:
                        failures.append("%s: crossed answer %r" % (where, answer))
                elif isinstance(outcome, CallTimedOut):
                    timed_out += 1
                    if took < timeout:
                        failures.append("%s: timed out early" % where)
                    if (outcome.method, outcome.timeout) != ("tools/call", timeout):
                        failures.append("%s: wrong timeout %r" % (where, outcome))
                else:
                    failures.append("%s: unexpected %r" % (where, outcome))
            self.assertEqual(failures[:10], [], "%d bad calls (seed %d)" % (len(failures), chosen))
            # Both ways a call ends must actually have been exercised.
            self.assertGreater(succeeded, 0, "no call succeeded (seed %d)" % chosen)
            self.assertGreater(timed_out, 0, "no call timed out (seed %d)" % chosen)

            # Late answers to timed-out calls were dropped; the channel is intact.
            self.assertIs(client.state, State.READY)
            after = client.call_tool("echo", {"token": "after", "delay": 0}, timeout=LONG)
            self.assertEqual(text_of(after), '{"delay":0,"token":"after"}')
        finally:
            evidence = client.shutdown()
        self.assertEqual(evidence, Exited(-9))


class DeathWithCallsInFlight(unittest.TestCase):
    """50 calls are in flight when the server is killed: all end at once."""

    CALLS = 50

    def test_every_call_in_flight_fails_promptly_when_the_server_dies(self) -> None:
        assert LONG * 2 < HELD_TIMEOUT, "the join bound must be far below the calls' timeout"
        outcomes: Dict[int, Tuple[float, BaseException]] = {}
        record = threading.Lock()

        def caller(n: int) -> None:
            try:
                client.call_tool("held", {"n": n}, timeout=HELD_TIMEOUT)
                outcome: BaseException = AssertionError("call %d was answered" % n)
            except BaseException as e:  # judged below
                outcome = e
            with record:
                outcomes[n] = (time.monotonic(), outcome)

        client = start(server("stress", "hold"), OPTIONS)
        evidence: Optional[object] = None
        try:
            threads = [
                threading.Thread(target=caller, args=(n,), name="held-%d" % n, daemon=True)
                for n in range(self.CALLS)
            ]
            for thread in threads:
                thread.start()
            # In flight means the server holds it: wait until it holds all 50.
            until = time.monotonic() + LONG
            held = 0
            while held < self.CALLS and time.monotonic() < until:
                held = int(text_of(client.call_tool("count", timeout=LONG)))
                if held < self.CALLS:
                    time.sleep(0.01)
            self.assertEqual(held, self.CALLS, "the server never held every call")
            self.assertEqual(outcomes, {}, "a call ended before the server died")

            assert client.pid is not None
            killed_at = time.monotonic()
            os.kill(client.pid, signal.SIGKILL)
            wedged = join_all(threads, killed_at + LONG)
            self.assertEqual(wedged, [], "calls still waiting %.0f s after the death" % LONG)

            self.assertEqual(sorted(outcomes), list(range(self.CALLS)))
            for n, (ended, outcome) in sorted(outcomes.items()):
                self.assertIsInstance(outcome, ClientBroken, "call %d: %r" % (n, outcome))
                self.assertLess(ended - killed_at, LONG, "call %d waited" % n)
            # One death, one latched reason, told to every caller.
            self.assertIs(client.state, State.BROKEN)
            assert client.reason is not None
            broken = [e for _, e in outcomes.values() if isinstance(e, ClientBroken)]
            self.assertEqual({e.reason for e in broken}, {client.reason.reason})
            # Later calls fail fast with it too, without waiting for their timeout.
            begun = time.monotonic()
            with self.assertRaises(ClientBroken):
                client.call_tool("held", {"n": -1}, timeout=HELD_TIMEOUT)
            self.assertLess(time.monotonic() - begun, LONG)
        finally:
            evidence = client.shutdown()
        self.assertEqual(evidence, Exited(-9))


@pytest.mark.slow
@unittest.skipUnless(PROC, NO_PROC)
class ManyCycles(unittest.TestCase):
    """150 start/list/call/shutdown cycles leave nothing behind."""

    WARM_UP = 5
    CYCLES = 150
    RSS_BOUND = 32 * MIB

    def cycle(self, n: int) -> None:
        client = start(server("good"), OPTIONS)
        try:
            self.assertEqual([tool.name for tool in client.list_tools()], ["echo", "echo_1"])
            self.assertEqual(text_of(client.call_tool("echo", {"cycle": n})), '{"cycle":%d}' % n)
        finally:
            evidence = client.shutdown()
        self.assertEqual(evidence, Exited(-9))

    def test_resources_return_to_baseline(self) -> None:
        for n in range(self.WARM_UP):  # imports, allocator arenas, thread stacks
            self.cycle(n)
        gc.collect()
        fds, kids, rss, clients = open_fds(), children(), rss_bytes(), live_clients()

        for n in range(self.CYCLES):
            self.cycle(n)

        gc.collect()
        # shutdown joined every thread and closed every descriptor before returning:
        # nothing here waits for them to go away.
        self.assertEqual(thread_names(), [])
        self.assertEqual(sorted(open_fds() - fds), [], "descriptors leaked")
        self.assertEqual(sorted(children() - kids), [], "children left unreaped")
        self.assertLessEqual(live_clients(), clients, "Client objects kept alive")
        grown = rss_bytes() - rss
        self.assertLess(grown, self.RSS_BOUND, "RSS grew %.1f MiB" % (grown / MIB))


@pytest.mark.slow
class ManyClientsAtOnce(unittest.TestCase):
    """40 clients alive at once, each with its own server and reader."""

    CLIENTS = 40
    STARTERS = 4

    def test_forty_clients_serve_and_retire(self) -> None:
        clients: List[Client] = []
        errors: List[BaseException] = []
        record = threading.Lock()

        def starter(count: int) -> None:
            for _ in range(count):
                try:
                    client = start(server("good"), OPTIONS)
                except BaseException as e:  # judged below
                    with record:
                        errors.append(e)
                    return
                with record:
                    clients.append(client)

        evidence: List[object] = []
        try:
            threads = [
                threading.Thread(
                    target=starter,
                    args=(self.CLIENTS // self.STARTERS,),
                    name="starter-%d" % n,
                    daemon=True,
                )
                for n in range(self.STARTERS)
            ]
            for thread in threads:
                thread.start()
            self.assertEqual(join_all(threads, time.monotonic() + 4 * LONG), [])
            self.assertEqual(errors, [])
            self.assertEqual(len(clients), self.CLIENTS)

            pids = {client.pid for client in clients}
            self.assertNotIn(None, pids)
            self.assertEqual(len(pids), self.CLIENTS, "servers share a pid")
            readers = set(thread_names())
            for client in clients:
                self.assertIs(client.state, State.READY)
                self.assertIn("mcp-reader-%s" % client.pid, readers)
            for n, client in enumerate(clients):
                result = client.call_tool("echo", {"client": n}, timeout=LONG)
                self.assertEqual(text_of(result), '{"client":%d}' % n)
        finally:
            for client in clients:
                evidence.append(client.shutdown())
        self.assertEqual(evidence, [Exited(-9)] * self.CLIENTS)
        self.assertEqual(thread_names(), [])


if __name__ == "__main__":
    unittest.main()
