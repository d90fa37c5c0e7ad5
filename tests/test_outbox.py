"""The write combiner: on its own against a fake connection (no pipes, no threads of
ours), then through a client, under load and stalls.

Small frames are combined into batched writes: under load every caller still
gets its own answer; a writer that stalls hands the queued frames back to their
callers, who send them themselves once the server reads again.
"""

from __future__ import annotations

import json
import threading
import time
import unittest
from typing import Any, Dict, List, Optional, Tuple

from mcp_client import State, start
from mcp_client._core._calls import Call, CallTable
from mcp_client._core._outbox import Outbox
from mcp_client.errors import CallTimedOut, WriteStalled
from mcp_client.protocol import Text
from mcp_client.transport import (
    ATOMIC_WRITE_BYTES,
    ChannelPeer,
    Connection,
    Retirement,
    Transport,
)

from support import LONG, OPTIONS, SHORT, answer, channel, wait_until


class FakeConnection(Connection):
    """Records every write; the first write can be held until released, and
    writes can be made to stall (nothing written) on demand."""

    def __init__(self) -> None:  # no descriptors: write() is replaced below
        self.writes: List[bytes] = []
        self.hold_first = threading.Event()
        self.holding = threading.Event()
        self.release = threading.Event()
        self.stall = False

    def write(self, data: bytes, deadline: float) -> None:
        if self.hold_first.is_set() and not self.writes:
            self.holding.set()
            self.release.wait(LONG)
        if self.stall:
            raise WriteStalled(0)
        self.writes.append(bytes(data))

    @property
    def torn(self) -> bool:
        return False

    def kill(self) -> None:
        pass

    def wait(self, deadline: Optional[float]) -> Retirement:
        raise NotImplementedError

    def close_output(self) -> None:
        pass


def frame_of(n: int, size: int = 40) -> bytes:
    body = b"%d:" % n
    return body + b"x" * (size - len(body) - 1) + b"\n"


class Sending(unittest.TestCase):
    def setUp(self) -> None:
        self.lock = threading.RLock()  # the client's lock is re-entrant
        self.calls = CallTable()
        self.outbox = Outbox(self.lock, self.calls)
        self.conn = FakeConnection()

    def mint(self) -> Call:
        with self.lock:
            return self.calls.mint("tools/call", LONG, time.monotonic() + LONG)

    def hold_the_turn(self) -> Tuple[threading.Thread, List[BaseException]]:
        """A caller whose lone frame's write is held by the connection (until
        ``release``), so that it keeps the writing turn; what it raised, if anything."""
        self.conn.hold_first.set()
        call = self.mint()
        stalled: List[BaseException] = []

        def hold() -> None:
            try:
                self.outbox.send(self.conn, frame_of(0), call)
            except WriteStalled as e:
                stalled.append(e)

        holder = threading.Thread(target=hold)
        holder.start()
        self.assertTrue(self.conn.holding.wait(LONG))
        return holder, stalled

    def test_a_lone_small_frame_is_written_at_once_by_its_caller(self) -> None:
        call = self.mint()
        self.outbox.send(self.conn, frame_of(1), call)
        self.assertEqual(self.conn.writes, [frame_of(1)])
        self.assertEqual(self.outbox.queued(), 0)

    def test_a_large_frame_is_written_whole_by_its_caller(self) -> None:
        data = b"y" * (ATOMIC_WRITE_BYTES * 3) + b"\n"
        self.outbox.send(self.conn, data, self.mint())
        self.assertEqual(self.conn.writes, [data])

    def test_frames_queued_behind_the_holder_go_out_in_atomic_batches_in_order(self) -> None:
        holder, _ = self.hold_the_turn()
        frames = [frame_of(n, 200) for n in range(1, 41)]  # 8,000 bytes: several batches
        for data in frames:  # each returns at once: the holder will write it
            self.outbox.send(self.conn, data, self.mint())
        self.assertEqual(self.outbox.queued(), 40)
        self.conn.release.set()
        holder.join(LONG)
        self.assertEqual(self.conn.writes[0], frame_of(0))
        batches = self.conn.writes[1:]
        self.assertGreater(len(batches), 1)
        self.assertTrue(all(len(batch) <= ATOMIC_WRITE_BYTES for batch in batches))
        self.assertEqual(b"".join(batches), b"".join(frames))

    def test_a_frame_whose_call_left_the_table_is_not_written(self) -> None:
        holder, _ = self.hold_the_turn()
        kept, gone = self.mint(), self.mint()
        self.outbox.send(self.conn, frame_of(1), kept)
        self.outbox.send(self.conn, frame_of(2), gone)
        with self.lock:
            self.calls.take(gone.id)  # timed out meanwhile
        self.conn.release.set()
        holder.join(LONG)
        self.assertEqual(self.conn.writes, [frame_of(0), frame_of(1)])

    def test_a_stalled_holder_hands_the_queue_back_to_its_callers(self) -> None:
        holder, stalled = self.hold_the_turn()
        queued = [self.mint() for _ in range(3)]
        for n, call in enumerate(queued, 1):
            self.outbox.send(self.conn, frame_of(n), call)
        self.conn.stall = True
        self.conn.release.set()
        holder.join(LONG)
        self.assertEqual(len(stalled), 1)  # the holder's own frame stalled: its timeout
        self.assertEqual(self.conn.writes, [])
        self.assertEqual(self.outbox.queued(), 0)
        for call in queued:  # each is out of the table, and woken to write it itself
            self.assertTrue(call.wait(0))
            self.assertTrue(call.unsent())
            self.assertNotIn(call.id, self.calls)


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
            # queued behind the holder:
            self.assertTrue(wait_until(lambda: client._requests._outbox.queued() == 6))
            transport.stall.clear()  # the server reads again; the holder's write ends stalled
            for thread in [holder] + others:
                thread.join(LONG)
            self.assertIsInstance(outcomes["holder"], CallTimedOut)
            for who in "bcdefg":
                self.assertEqual(outcomes[who].content, (Text('{"who": "%s"}' % who),))
            self.assertIs(client.state, State.READY)
            self.assertEqual(client.in_flight, 0)
            client.ping()


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


if __name__ == "__main__":
    unittest.main()
