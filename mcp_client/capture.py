"""Wire capture: every line sent and received, byte-exact and in order, as JSON lines.

One entry a line, numbered by ``seq`` in the order the client saw them::

    {"seq": 1, "event": "open", "detail": "python -m mcp_server_time"}
    {"seq": 2, "dir": "send", "text": "{\\"jsonrpc\\":\\"2.0\\",...}"}
    {"seq": 3, "dir": "recv", "text": "..."}
    {"seq": 4, "dir": "recv", "base64": "/w=="}          (a line that is not UTF-8)
    {"seq": 5, "event": "retired", "detail": "Exited(returncode=-9)"}

A line is its content without the ``\\n`` (or ``\\r\\n``) terminator; the bytes
are exact otherwise: ``text`` when they are valid UTF-8, ``base64`` when not.
Sent lines are recorded just before they are written. ``tools/replay.py``
reads these logs. Capturing changes nothing the client does.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from typing import IO, Dict, Iterator, List, Optional, Tuple, Union

__all__ = ["Capture", "CaptureTarget", "open_capture", "read_log", "line_bytes"]

CaptureTarget = Union[None, str, "os.PathLike[str]", IO[str]]


class Capture:
    """A thread-safe writer of capture entries.

    Entries are numbered and queued under one lock; whoever then finds the
    stream free writes and flushes every queued entry at once (and looks again
    after letting go), so threads recording at the same moment share one write
    and one flush instead of queueing for the stream one by one.
    """

    def __init__(self, stream: IO[str], owned: bool) -> None:
        self._stream = stream
        self._owned = owned
        self._lock = threading.Lock()  # the numbering and the queue
        self._writing = threading.Lock()  # the stream
        self._seq = 0
        self._queue: List[str] = []

    def line(self, direction: str, data: bytes, now: bool = True) -> None:
        """Record one wire line (``direction`` is ``"send"`` or ``"recv"``).

        ``now=False`` only numbers and queues it: it is written with the next
        entry written now, by :meth:`drain`, or at :meth:`close` -- for a reader
        recording every line of one read before one write.
        """
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            entry: Dict[str, object] = {"dir": direction,
                                        "base64": base64.b64encode(data).decode("ascii")}
            self._put_entry(entry, now)
            return
        # What json.dumps(entry, ensure_ascii=False, sort_keys=True) writes, byte for
        # byte, without its encoder set-up per call: the line is escaped once, in C.
        head = '{"dir": %s, "seq": ' % _quoted(direction)
        self._put(head, (', "text": ', _quoted(text), "}\n"), now)

    def event(self, kind: str, detail: str) -> None:
        """Record something that is not a line (open, framing fault, retirement)."""
        self._put_entry({"event": kind, "detail": detail})

    def _put_entry(self, entry: Dict[str, object], now: bool = True) -> None:
        with self._lock:
            self._seq += 1
            entry["seq"] = self._seq
            self._queue.append(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
        if now:
            self.drain()

    def _put(self, head: str, tail: Tuple[str, ...], now: bool) -> None:
        """One entry whose ``seq`` is its only member after ``head``. A long one
        stays in pieces, so the line is not copied once more to join them."""
        with self._lock:
            self._seq += 1
            if len(tail[1]) < _JOIN_BELOW:
                self._queue.append(head + str(self._seq) + "".join(tail))
            else:
                self._queue.extend((head, str(self._seq)) + tail)
        if now:
            self.drain()

    def drain(self) -> None:
        """Write what is queued, unless another thread is writing (it will)."""
        while self._queue and self._writing.acquire(False):
            try:
                self._write_queued()
            finally:
                self._writing.release()

    def _write_queued(self) -> None:
        """Write and flush what is queued (holding ``_writing``)."""
        with self._lock:
            pieces, self._queue = self._queue, []
        if pieces and not self._stream.closed:
            self._stream.writelines(pieces)
            self._stream.flush()

    def close(self) -> None:
        """Write what is queued; close the log if the capture opened it (a
        caller's file stays open)."""
        with self._writing:
            self._write_queued()
            if self._owned and not self._stream.closed:
                self._stream.close()


#: Entries shorter than this are joined into one string before they are written.
_JOIN_BELOW = 64 * 1024
_quoted = json.encoder.encode_basestring  # a JSON string, as ensure_ascii=False writes it


def open_capture(target: CaptureTarget) -> Optional[Capture]:
    """A :class:`Capture` for a path (created, truncated) or a writable text file."""
    if target is None:
        return None
    if isinstance(target, (str, os.PathLike)):
        return Capture(open(target, "w", encoding="utf-8"), owned=True)
    return Capture(target, owned=False)


def read_log(path: Union[str, "os.PathLike[str]"]) -> Iterator[Dict[str, object]]:
    """The entries of a capture log, in order."""
    with open(path, encoding="utf-8") as stream:
        for raw in stream:
            if raw.strip():
                yield json.loads(raw)


def line_bytes(entry: Dict[str, object]) -> bytes:
    """The exact bytes of a ``send``/``recv`` entry."""
    if "base64" in entry:
        return base64.b64decode(str(entry["base64"]))
    return str(entry["text"]).encode("utf-8")
