"""The write combiner: how a caller's request frame reaches the connection.

A frame larger than ``PIPE_BUF`` is written by its own caller, under the
connection's write lock. A small one is written at once when the writing turn
is free and nothing is queued; otherwise it is queued, and whoever holds the
turn writes the queue in batches of at most ``PIPE_BUF`` bytes. A pipe takes
such a write whole or not at all, so a batch can stall but never leave half a
frame on the wire, and 64 callers in flight make one system call, not 64 that
each hand the GIL over. A caller that finds the turn taken does not wait for
it: the holder writes every frame queued before it lets go and looks again
after letting go, so a frame queued meanwhile is written by one or the other.
A holder that stalls past its deadline hands the queued frames back to their
callers (settled :data:`~mcp_client._core._calls.UNSENT`), who write them by their
own deadlines.

======  ==========================================================================
field   guarded by
======  ==========================================================================
_queue  ``collections.deque``'s own thread-safe appends and pops (documented by
        the standard library); only the turn's holder pops or pushes back
_turn   itself: an ``RLock`` taken without waiting, *inside* the ``try`` whose
        ``finally`` releases it with one bare ``release()`` (``RuntimeError``
        when not ours), so that no exception, however it lands, leaves it held
_calls  the owner's ``_lock`` (held here around every look at the table)
======  ==========================================================================
"""

from __future__ import annotations

import collections
import threading
import time

from ..errors import WriteFailed, WriteStalled
from ..transport import ATOMIC_WRITE_BYTES, Connection
from ._calls import UNSENT, Call, CallTable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Deque, List, Optional

__all__ = ["Outbox"]


class Outbox:
    """Frames on their way to one connection."""

    def __init__(self, lock: "threading.RLock", calls: CallTable) -> None:
        self._lock = lock
        self._calls = calls
        self._queue: Deque[Call] = collections.deque()
        self._turn = threading.RLock()

    def send(self, conn: Connection, data: bytes, call: Call) -> None:
        """Write ``call``'s frame ``data`` by its deadline, alone or with others.

        Raises ``WriteStalled(0)`` when nothing of it was written in time,
        ``WriteStalled(n)``/``WriteFailed`` when the stream is now poisoned.
        """
        if len(data) > ATOMIC_WRITE_BYTES:
            conn.write(data, call.deadline)
            return
        sent = self._write_alone(conn, data, call.deadline) if not self._queue else None
        if sent is None:
            call.frame = data
            self._queue.append(call)
        stalled = sent is False
        if self._queue and self._take_turns(conn, call.deadline, stalled) or stalled:
            raise WriteStalled(0)

    def try_send(self, conn: Connection, data: bytes) -> bool:
        """Write a small frame now or not at all, never waiting (the reader's way:
        it must never block on a server that may be blocked on it); whether it
        was written. ``False`` -- the turn taken, frames queued, the pipe full --
        leaves the frame to its caller. Raises as :meth:`send` for a stream poisoned.

        A frame queued by somebody else while this held the turn is handed back
        to its caller: the holder must look again after letting go (the rule
        above), and here it cannot wait to write it.
        """
        if len(data) > ATOMIC_WRITE_BYTES or self._queue:
            return False
        now = time.monotonic()  # a deadline already here: every wait returns at once
        sent = self._write_alone(conn, data, now)
        if self._queue:
            self._take_turns(conn, now, True)
        return sent is True

    def queued(self) -> int:
        """How many frames wait for a turn (for tests and diagnostics)."""
        return len(self._queue)

    def _write_alone(self, conn: Connection, data: bytes, deadline: float) -> Optional[bool]:
        """Write ``data`` under the turn: ``True`` written, ``False`` stalled
        (nothing written), ``None`` the turn was taken."""
        turn = self._turn
        try:  # the acquire inside the try: interrupted after it, the finally releases
            if not turn.acquire(False):
                return None
            conn.write(data, deadline)
            return True
        except WriteStalled as e:
            if e.written:  # not whole after all: the stream is poisoned
                raise
            return False
        finally:
            try:  # inline, not a helper: see transport's _PipeWriter.write
                turn.release()
            except RuntimeError:  # not ours: the turn was taken
                pass

    def _take_turns(self, conn: Connection, deadline: float, stalled: bool) -> bool:
        """Write (or, once stalled, hand back) the queue for as long as the turn
        is free and anything is queued; whether a write stalled."""
        turn = self._turn
        while self._queue:
            try:  # as in _write_alone: acquired inside, released in the finally
                if not turn.acquire(False):
                    break
                stalled = self._serve_turn(conn, deadline, stalled)
            finally:
                try:
                    turn.release()
                except RuntimeError:  # not ours: the turn was taken
                    pass
        return stalled

    def _serve_turn(self, conn: Connection, deadline: float, stalled: bool) -> bool:
        if not stalled:
            try:
                self._write_queued(conn, deadline)
                return False
            except WriteStalled:
                pass
        self._hand_back()
        return True

    def _write_queued(self, conn: Connection, deadline: float) -> None:
        """Write queued frames in batches until none is left (under the turn); a
        batch that stalls until ``deadline`` goes back to the queue's head."""
        while self._queue:
            if time.monotonic() > deadline:
                raise WriteStalled(0)
            batch = self._next_batch()
            try:
                conn.write(b"".join([call.frame or b"" for call in batch]), deadline)
            except WriteStalled as e:
                if e.written:  # not a whole batch after all: the stream is poisoned
                    raise WriteFailed("write to the server stalled mid-frame") from e
                self._queue.extendleft(reversed(batch))
                raise
            for call in batch:
                call.frame = None

    def _next_batch(self) -> List[Call]:
        """Frames from the head of the queue, up to ``PIPE_BUF`` bytes; the frame
        of a call settled meanwhile (timed out) is dropped."""
        batch: List[Call] = []
        size = 0
        queue = self._queue
        with self._lock:
            pending = self._calls.pending  # under the lock: a latch replaces it
            while queue and size + len(queue[0].frame or b"") <= ATOMIC_WRITE_BYTES:
                call = queue.popleft()
                if call.id in pending:
                    batch.append(call)
                    size += len(call.frame or b"")
        return batch

    def _hand_back(self) -> None:
        """Give every queued frame back to its caller (under the turn): each call
        leaves the table -- no answer can come for a frame never written -- and
        is settled :data:`UNSENT`, so its caller writes it by its own deadline."""
        queue = self._queue
        while queue:
            call = queue.popleft()
            with self._lock:
                taken = self._calls.take(call.id) is call
            if taken:
                call.settle(UNSENT)
