"""Answers to a server's own requests, written without ever blocking the reader.

The reader answers a server's ``ping`` (and refuses any other request) by
:meth:`Answerer.reply`: written at once when the connection's writer is free
and the pipe has room, else queued for a short-lived answerer thread that
writes it by its own deadline (:data:`ANSWER_TIMEOUT`). So answers already on
their way to callers are never kept waiting behind a large upload, and no
caller waits behind an answer past its deadline (it waits for the writer lock
only until its own deadline). An answer that cannot be written in time is
dropped and logged, like every other drop; one cut short poisons the stream.

=========  ==============  ===============================================
field      guarded by      meaning
=========  ==============  ===============================================
_queue     _lock (the      answers (frame, deadline) for the thread
           session's)
_thread    _lock           the running answerer, or ``None``
last       none            the last answerer started: written by the
                           reader thread only, once it started, a thread
                           replaced whole; read by shutdown to join it
=========  ==============  ===============================================
"""

from __future__ import annotations

import collections
import logging
import threading
import time

from .._os import threads as _threads
from ..errors import ClientBroken, Unavailable, WriteFailed, WriteStalled
from ..transport import ATOMIC_WRITE_BYTES, Connection
from . import LOGGER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Deque, Optional, Tuple

__all__ = ["Answerer", "ANSWER_TIMEOUT"]

log = logging.getLogger(LOGGER)

#: How long an answer may wait for the server to read it; past it, it is dropped.
ANSWER_TIMEOUT = 5.0


class Answerer:
    """Writes one client's answers to its server's requests."""

    def __init__(
        self,
        lock: "threading.RLock",
        conn: Connection,
        retire: Callable[[Unavailable], None],
        retired: Callable[[], bool],
    ) -> None:
        self._lock = lock
        self._conn = conn
        self._retire = retire
        self._retired = retired
        self._queue: Deque[Tuple[bytes, float]] = collections.deque()
        self._thread: Optional[threading.Thread] = None
        self.last: Optional[threading.Thread] = None

    def reply(self, data: bytes) -> None:
        """Send ``data`` (a framed answer); never blocks. Reader thread only."""
        if not self._queue and len(data) <= ATOMIC_WRITE_BYTES:
            try:
                self._conn.write(data, 0.0)  # a deadline already past: try once, never wait
                return
            except WriteStalled:
                pass  # nothing of it was written: a small frame is written whole or not
            except WriteFailed as e:
                self._retire(ClientBroken(e.reason))
                return
        self._enqueue(data)

    def _enqueue(self, data: bytes) -> None:
        thread = None
        with self._lock:
            self._queue.append((data, time.monotonic() + ANSWER_TIMEOUT))
            if self._thread is None:
                name = "mcp-answer-%s" % (self._conn.pid or id(self))
                thread = self._thread = _threads.named(self._run, name)
        if thread is None:
            return  # the running answerer takes it
        try:
            _threads.start(thread)
        except RuntimeError as e:
            with self._lock:
                dropped, self._thread = len(self._queue), None
                self._queue.clear()
            log.debug("dropped %d answers to the server: no thread for them (%s)", dropped, e)
            return
        self.last = thread

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue or self._retired():
                    dropped = len(self._queue)
                    self._queue.clear()
                    self._thread = None
                    break
                data, deadline = self._queue.popleft()
            self._write(data, deadline)
        if dropped:
            log.debug("dropped %d answers to the server: the client is retired", dropped)

    def _write(self, data: bytes, deadline: float) -> None:
        try:
            self._conn.write(data, deadline)
        except WriteStalled as e:
            if e.written:
                self._retire(ClientBroken("answer to the server stalled mid-frame"))
            else:
                log.debug(
                    "dropped an answer to the server: it did not read it in %ss", ANSWER_TIMEOUT
                )
        except WriteFailed as e:
            self._retire(ClientBroken(e.reason))
