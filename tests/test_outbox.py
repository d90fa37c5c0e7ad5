"""The write combiner on its own, against a fake connection (no pipes, no threads of ours)."""

from __future__ import annotations

import threading
import time
import unittest
from typing import List, Optional

from support import LONG

from mcp_client._calls import CallTable
from mcp_client._outbox import Outbox
from mcp_client.errors import WriteStalled
from mcp_client.transport import ATOMIC_WRITE_BYTES, Connection, Retirement


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


class OutboxTest(unittest.TestCase):

    def setUp(self) -> None:
        self.lock = threading.Lock()
        self.calls = CallTable()
        self.outbox = Outbox(self.lock, self.calls)
        self.conn = FakeConnection()

    def mint(self) -> "object":
        with self.lock:
            return self.calls.mint("tools/call", LONG, time.monotonic() + LONG)

    def test_a_lone_small_frame_is_written_at_once_by_its_caller(self) -> None:
        call = self.mint()
        self.outbox.send(self.conn, frame_of(1), call)  # type: ignore[arg-type]
        self.assertEqual(self.conn.writes, [frame_of(1)])
        self.assertEqual(self.outbox.queued(), 0)

    def test_a_large_frame_is_written_whole_by_its_caller(self) -> None:
        data = b"y" * (ATOMIC_WRITE_BYTES * 3) + b"\n"
        self.outbox.send(self.conn, data, self.mint())  # type: ignore[arg-type]
        self.assertEqual(self.conn.writes, [data])

    def test_frames_queued_behind_the_holder_go_out_in_atomic_batches_in_order(self) -> None:
        self.conn.hold_first.set()
        holder = threading.Thread(target=self.outbox.send,
                                  args=(self.conn, frame_of(0), self.mint()))
        holder.start()
        self.assertTrue(self.conn.holding.wait(LONG))
        frames = [frame_of(n, 200) for n in range(1, 41)]  # 8,000 bytes: several batches
        for data in frames:  # each returns at once: the holder will write it
            self.outbox.send(self.conn, data, self.mint())  # type: ignore[arg-type]
        self.assertEqual(self.outbox.queued(), 40)
        self.conn.release.set()
        holder.join(LONG)
        self.assertEqual(self.conn.writes[0], frame_of(0))
        batches = self.conn.writes[1:]
        self.assertGreater(len(batches), 1)
        self.assertTrue(all(len(batch) <= ATOMIC_WRITE_BYTES for batch in batches))
        self.assertEqual(b"".join(batches), b"".join(frames))

    def test_a_frame_whose_call_left_the_table_is_not_written(self) -> None:
        self.conn.hold_first.set()
        holder = threading.Thread(target=self.outbox.send,
                                  args=(self.conn, frame_of(0), self.mint()))
        holder.start()
        self.assertTrue(self.conn.holding.wait(LONG))
        kept, gone = self.mint(), self.mint()
        self.outbox.send(self.conn, frame_of(1), kept)  # type: ignore[arg-type]
        self.outbox.send(self.conn, frame_of(2), gone)  # type: ignore[arg-type]
        with self.lock:
            self.calls.take(gone.id)  # type: ignore[attr-defined]  # timed out meanwhile
        self.conn.release.set()
        holder.join(LONG)
        self.assertEqual(self.conn.writes, [frame_of(0), frame_of(1)])

    def test_a_stalled_holder_hands_the_queue_back_to_its_callers(self) -> None:
        self.conn.hold_first.set()
        holder_call = self.mint()
        stalled: List[BaseException] = []

        def hold() -> None:
            try:
                self.outbox.send(self.conn, frame_of(0), holder_call)  # type: ignore[arg-type]
            except WriteStalled as e:
                stalled.append(e)

        holder = threading.Thread(target=hold)
        holder.start()
        self.assertTrue(self.conn.holding.wait(LONG))
        queued = [self.mint() for _ in range(3)]
        for n, call in enumerate(queued, 1):
            self.outbox.send(self.conn, frame_of(n), call)  # type: ignore[arg-type]
        self.conn.stall = True
        self.conn.release.set()
        holder.join(LONG)
        self.assertEqual(len(stalled), 1)  # the holder's own frame stalled: its timeout
        self.assertEqual(self.conn.writes, [])
        self.assertEqual(self.outbox.queued(), 0)
        for call in queued:  # each is out of the table, and woken to write it itself
            self.assertTrue(call.wait(0))  # type: ignore[attr-defined]
            self.assertTrue(call.unsent())  # type: ignore[attr-defined]
            self.assertNotIn(call.id, self.calls)  # type: ignore[attr-defined]


if __name__ == "__main__":
    unittest.main()
