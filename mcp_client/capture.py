"""Wire capture: every line sent and received, byte-exact and in order, as JSON lines.

The log holds one JSON object a line (members sorted), numbered by ``seq`` in
the order the client saw them::

    {"detail": "python -m mcp_server_time", "event": "open", "seq": 1}
    {"dir": "send", "seq": 2, "text": "{\\"jsonrpc\\":\\"2.0\\",...}"}
    {"dir": "recv", "seq": 3, "text": "..."}
    {"base64": "/w==", "dir": "recv", "seq": 4}             (a line that is not UTF-8)
    {"detail": "tools/call id 5", "event": "timed-out", "id": 5, "method": "tools/call", "seq": 9}
    {"detail": "", "event": "eof", "seq": 10}
    {"detail": "ClientBroken: server closed its stdout", "event": "died", "seq": 11}
    {"detail": "Exited(returncode=-9)", "event": "retired", "seq": 12}

A wire line is its content without the ``\\n`` (or ``\\r\\n``) terminator, its
bytes exact otherwise: ``text`` when they are valid UTF-8, ``base64`` when not.
Sent lines are recorded just before they are written. Events: ``open`` (the
transport), ``framing-fault`` (a line too long; its bytes are not kept),
``timed-out`` (a call's deadline passed: the request's ``id`` and ``method``),
``eof`` (the server closed its stdout), ``died`` (why the client stopped
serving calls, ``<class>: <reason>``, once), ``retired`` (the evidence),
``dropped`` (below); other modules add their own, and a reader keeps events it
does not know. :func:`read_log` is the one reader: it validates every entry,
and :class:`LogError` names the first bad line. :mod:`mcp_client.replay` reads
logs through it. Capturing changes nothing the client does.

**A capture never holds up a call.** Recording an entry numbers it and queues
its bytes under a lock held for microseconds; a daemon thread of the capture's
own (``mcp-capture-N``, made and started like the client's others) formats
and writes them. The queue is bounded
(``QUEUE_LIMIT`` bytes of line data): when the stream cannot keep up (a full
pipe, a slow disk), an entry that does not fit is *dropped*, not waited for --
a diagnostic is never worth a missed deadline -- and the loss is recorded where
it happened, as soon as an entry fits again (or at close), its ``seq`` numbers
skipped::

    {"bytes": 52428800, "detail": "...", "entries": 1200, "event": "dropped", "seq": 5201}

A stream that fails (``EPIPE``, ``ENOSPC``) ends the capture: the rest is not
written. Drops and failures are also logged (warnings on ``mcp_client.capture``,
from the writer thread, never from the caller's), and :attr:`Capture.lost` and
:attr:`Capture.failure` say so to whoever holds the capture (the CLI's exit
status does): how many entries recorded are not in the log, and why the stream
ended early.

**Nothing is left behind.** A path is opened non-blocking and written through
``poll``, so a FIFO or terminal nobody drains never blocks the writer thread
(a FIFO without a reader is refused at open: ``ENXIO``). A file object is
written through itself when it is a regular file or has no descriptor
(``io.StringIO``); a pipe, terminal or socket object is written through a
non-blocking descriptor of our own opened from ``/proc/self/fd`` (Linux), or
refused when none can be had. :meth:`Capture.close` lets the writer finish for
at most ``CLOSE_TIMEOUT`` seconds, giving up as soon as the stream takes nothing
for ``CLOSE_STALL``; the thread then ends and a descriptor of ours is closed.
(The kernel has no non-blocking writes to regular files: a disk that hangs can
still hold the writer inside ``write``; ``close`` then returns at its deadline
and leaves the daemon thread to the disk.)
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import logging
import os
import select
import stat
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import (
    IO,
    Callable,
    Deque,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Tuple,
    Union,
)

from ._os import threads as _threads
from ._os.files import open_for_writing
from .errors import LogError

__all__ = [
    "Capture",
    "CaptureTarget",
    "open_capture",
    "QUEUE_LIMIT",
    "CLOSE_TIMEOUT",
    "CLOSE_STALL",
    "WireLine",
    "Event",
    "LogEntry",
    "LogError",
    "read_log",
    "load_log",
    "line_bytes",
]

log = logging.getLogger(__name__)

CaptureTarget = Union[None, str, "os.PathLike[str]", IO[str]]

#: Bytes of line data the queue holds at most; past it, entries are dropped.
QUEUE_LIMIT = 32 * 1024 * 1024
#: The longest :meth:`Capture.close` lets the writer finish.
CLOSE_TIMEOUT = 1.0
#: While closing, a stream that takes nothing for this long is given up on.
CLOSE_STALL = 0.2
#: While the stream takes nothing, how often the writer looks whether to close.
_LOOK_AGAIN = 0.1
#: The writer formats and writes about this many bytes of line data at a time.
_BATCH = 256 * 1024
#: What an event costs in the queue's account, besides its detail.
_EVENT_COST = 64

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_names = itertools.count(1)

Fields = Dict[str, Union[int, str]]
#: A queued entry: its seq, and a wire line (direction, bytes) or an event's members.
_Queued = Tuple[int, Union[Tuple[str, bytes], Fields], int]


# ----------------------------------------------------------------------------- writing


class Capture:
    """A thread-safe recorder of capture entries, written by a thread of its own."""

    def __init__(self, sink: "_Sink", limit: Optional[int] = None) -> None:
        self._sink = sink
        self._limit = QUEUE_LIMIT if limit is None else limit
        self._lock = threading.Lock()  # everything below; held for microseconds
        self._ready = threading.Condition(self._lock)
        self._queue: Deque[_Queued] = deque()
        self._queued = 0  # bytes of line data queued or being written
        self._seq = 0
        self._lost = (0, 0)  # entries and bytes dropped since the last marker
        self._waiting = False  # the writer waits for entries
        self._closing: Optional[float] = None  # close()'s deadline, once it is called
        self._over = False  # the stream failed or was given up on: nothing more is written
        self._dropped = 0  # entries dropped for the queue's limit, over the whole capture
        self._discarded = 0  # entries not written because the stream ended early
        self._writing = 0  # entries of the batch the writer is writing now
        self._failure: Optional[str] = None  # why the stream ended early
        self._thread = _threads.named(self._run, "mcp-capture-%d" % next(_names))
        _threads.start(self._thread)  # RuntimeError when no thread can be had

    # ------------------------------------------------------------ recording

    def line(self, direction: str, data: bytes, now: bool = True) -> None:
        """Record one wire line (``direction`` is ``"send"`` or ``"recv"``).

        ``now=False`` leaves the writer asleep until :meth:`drain` or the next
        entry recorded now: the reader records every line of one read, then
        wakes the writer once.
        """
        self._put((direction, data), len(data), now)

    def event(self, kind: str, detail: str = "", **members: Union[int, str]) -> None:
        """Record something that is not a wire line (open, framing fault, ...)."""
        fields: Fields = {
            key: _clean(value) if isinstance(value, str) else value
            for key, value in members.items()
        }
        fields.update(event=kind, detail=_clean(detail))
        self._put(fields, _EVENT_COST + len(detail), True)

    def eof(self) -> None:
        """The server closed its stdout."""
        self.event("eof")

    def died(self, reason: BaseException) -> None:
        """Why the client stopped serving calls (the reason it latched)."""
        self.event("died", "%s: %s" % (type(reason).__name__, reason))

    def timed_out(self, ident: int, method: str) -> None:
        """The call of request ``ident`` reached its deadline unanswered."""
        self.event("timed-out", "%s id %d" % (method, ident), id=ident, method=method)

    def drain(self) -> None:
        """Wake the writer for what was recorded with ``now=False``."""
        if self._queue:
            with self._lock:
                self._wake()

    def _put(self, item: Union[Tuple[str, bytes], Fields], size: int, now: bool) -> None:
        with self._lock:
            if self._over or self._closing is not None:
                if self._failure is not None:  # after a close it is not lost: it is late
                    self._discarded += 1
                return  # nothing more is written; the writer has said so
            if self._queued + size > self._limit:  # behind: drop it rather than wait
                self._seq += 1
                self._dropped += 1
                self._lost = (self._lost[0] + 1, self._lost[1] + size)
                return
            if self._lost[0]:
                self._mark_lost()
            self._seq += 1
            self._queue.append((self._seq, item, size))
            self._queued += size
            if now:
                self._wake()

    def _mark_lost(self) -> None:
        """Queue the ``dropped`` marker for the entries lost since the last one
        (under ``_lock``; it may pass the limit: it is small, and one a gap)."""
        entries, size = self._lost
        self._lost = (0, 0)
        self._seq += 1
        fields: Fields = {
            "event": "dropped",
            "entries": entries,
            "bytes": size,
            "detail": "%d entries (%d bytes of lines) not recorded: the capture stream fell "
            "behind" % (entries, size),
        }
        self._queue.append((self._seq, fields, _EVENT_COST))
        self._queued += _EVENT_COST

    def _wake(self) -> None:
        if self._waiting:  # under _lock
            self._ready.notify()

    # ------------------------------------------------------------ what the log lacks

    @property
    def lost(self) -> int:
        """Entries recorded but not in the log: dropped while the stream fell
        behind, or left unwritten when it failed (some of a batch cut short by a
        failed write may be in the log, the last of them cut)."""
        with self._lock:
            return self._dropped + self._discarded

    @property
    def failure(self) -> Optional[str]:
        """Why the stream ended before the capture was closed (``"OSError: [Errno
        28] No space left on device"``, a stream given up on at close, a writer
        still inside a write when :meth:`close` gave up on it: a disk that
        hangs); ``None`` while it has not."""
        closing = self._closing
        if (
            self._failure is None
            and closing is not None
            and time.monotonic() > closing
            and self._thread.is_alive()
        ):
            return "the writer was still writing when the capture closed"
        return self._failure

    @property
    def complete(self) -> bool:
        """Whether the log holds every entry recorded so far (final once closed)."""
        return self.lost == 0 and self.failure is None

    # ------------------------------------------------------------ closing

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Let the writer finish (``timeout`` at most, less if the stream stalls),
        then end it; a descriptor of ours is closed, a caller's stream stays open."""
        with self._lock:
            if self._closing is None:
                self._closing = time.monotonic() + timeout
                if self._lost[0] and not self._over:
                    self._mark_lost()
                self._ready.notify()
            deadline = self._closing
        if self._thread is not threading.current_thread():
            self._thread.join(max(0.0, deadline - time.monotonic()) + _LOOK_AGAIN)

    def _close_deadline(self) -> Optional[float]:
        return self._closing

    # ------------------------------------------------------------ the writer thread

    def _run(self) -> None:
        try:
            self._write_until_closed()
        except Exception as e:  # the stream failed (or a bug): the capture ends, calls go on
            self._failure = "%s: %s" % (type(e).__name__, e)
            log.warning("capture stopped: %s; later entries are not recorded", self._failure)
        finally:
            self._finish()

    def _write_until_closed(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            items, size = batch
            for _, item, _ in items:
                if isinstance(item, dict) and _is_marker(item):
                    log.warning("capture: %s", item["detail"])
            if not self._sink.write(_format(items), self._close_deadline):
                with self._lock:
                    left = len(items) + len(self._queue) + self._lost[0]
                self._failure = "the stream took nothing for %gs at close" % CLOSE_STALL
                log.warning("capture: %s; %d entries are not recorded", self._failure, left)
                return
            with self._lock:
                self._queued -= size
                self._writing = 0

    def _take(self) -> Optional[Tuple[List[_Queued], int]]:
        """The next batch to write, waiting for one; ``None`` once closed and empty."""
        with self._lock:
            while not self._queue and self._closing is None:
                self._waiting = True
                self._ready.wait()
                self._waiting = False
            items: List[_Queued] = []
            size = 0
            while self._queue and size < _BATCH:
                items.append(self._queue.popleft())
                size += items[-1][2]
            self._writing = _entries(items)
            return (items, size) if items else None

    def _finish(self) -> None:
        with self._lock:
            self._over = True
            self._discarded += self._writing + _entries(self._queue)
            self._writing = 0
            self._queue.clear()
            self._queued = 0
        self._sink.close()


def _entries(items: Iterable[_Queued]) -> int:
    """How many of ``items`` are entries recorded (a ``dropped`` marker is not
    one: the entries it stands for are counted in ``Capture._dropped``)."""
    return sum(1 for _, item, _ in items if not _is_marker(item))


def _is_marker(item: Union[Tuple[str, bytes], Fields]) -> bool:
    return isinstance(item, dict) and item.get("event") == "dropped" and "entries" in item


def _format(items: List[_Queued]) -> List[str]:
    pieces: List[str] = []
    for seq, item, _ in items:
        if isinstance(item, dict):
            pieces.append(
                json.dumps(dict(item, seq=seq), ensure_ascii=False, sort_keys=True) + "\n"
            )
        else:
            pieces.extend(_line_entry(seq, item[0], item[1]))
    return pieces


def _line_entry(seq: int, direction: str, data: bytes) -> List[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        entry = {"dir": direction, "seq": seq, "base64": base64.b64encode(data).decode("ascii")}
        return [json.dumps(entry, sort_keys=True) + "\n"]
    # What json.dumps(entry, ensure_ascii=False, sort_keys=True) writes, byte for
    # byte, without its encoder set-up per entry: the line is escaped once, in C.
    return ['{"dir": %s, "seq": %d, "text": ' % (_quoted(direction), seq), _quoted(text), "}\n"]


_quoted = json.encoder.encode_basestring  # a JSON string, as ensure_ascii=False writes it


def _clean(text: str) -> str:
    """``text`` with any lone surrogate spelt out, so the log stays valid UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# ----------------------------------------------------------------------------- sinks


class _Sink:
    """Where the writer thread puts formatted entries."""

    def write(self, pieces: List[str], closing: Callable[[], Optional[float]]) -> bool:
        """Write ``pieces``; ``False`` when given up on at close. Raises ``OSError``."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _StreamSink(_Sink):
    """A caller's file object that cannot block for long: in memory, or a regular file."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, pieces: List[str], closing: Callable[[], Optional[float]]) -> bool:
        self._stream.writelines(pieces)
        self._stream.flush()
        return True

    def close(self) -> None:
        """Nothing: the caller's stream stays open."""


class _FdSink(_Sink):
    """A non-blocking descriptor of our own, written through ``poll``: never stuck."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)

    def write(self, pieces: List[str], closing: Callable[[], Optional[float]]) -> bool:
        view = memoryview("".join(pieces).encode("utf-8", "backslashreplace"))
        while view:
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                if not self._writable(closing):
                    return False
        return True

    def _writable(self, closing: Callable[[], Optional[float]]) -> bool:
        """Wait until the stream takes bytes again; ``False`` if, closing, it does not."""
        while True:
            deadline = closing()
            wait = (
                _LOOK_AGAIN if deadline is None else min(CLOSE_STALL, deadline - time.monotonic())
            )
            if wait <= 0:
                return False
            if self._poll.poll(wait * 1000):
                return True
            if deadline is not None:
                return False

    def close(self) -> None:
        os.close(self._fd)


def open_capture(target: CaptureTarget, limit: Optional[int] = None) -> Optional[Capture]:
    """A :class:`Capture` for a path (created, truncated) or a writable text file;
    ``OSError`` when it cannot be opened or written without blocking,
    :class:`SymlinkRefused` when the path is a symbolic link (never followed)."""
    if target is None:
        return None
    if isinstance(target, (str, os.PathLike)):
        # Non-blocking: a FIFO or a terminal nobody drains must not hold the writer.
        fd = open_for_writing(target, os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, "the capture log")
        return _started(_FdSink(fd), limit, fd)
    sink = _stream_sink(target)
    return _started(sink, limit, sink._fd if isinstance(sink, _FdSink) else None)


def _stream_sink(stream: IO[str]) -> _Sink:
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: in memory
        return _StreamSink(stream)
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return _StreamSink(stream)
    # A pipe, terminal or socket could block the writer for good: write it through a
    # non-blocking open file description of our own (the caller's keeps its flags).
    # /proc/self/fd/N is a link by design (to the caller's own stream): followed.
    stream.flush()
    try:
        return _FdSink(os.open("/proc/self/fd/%d" % fd, os.O_WRONLY | os.O_NONBLOCK | _O_CLOEXEC))
    except OSError as e:
        raise OSError(
            e.errno,
            "a capture stream that is not a regular file is written through "
            "a non-blocking descriptor of its own, and none could be opened (%s); "
            "give a path instead" % e.strerror,
        ) from None


def _started(sink: _Sink, limit: Optional[int], fd: Optional[int]) -> Capture:
    try:
        return Capture(sink, limit)
    except RuntimeError as e:  # no thread could be started
        if fd is not None:
            os.close(fd)
        raise OSError("cannot start the capture's writer thread: %s" % e) from None


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class WireLine:
    """A recorded wire line: ``direction`` ``"send"`` (the client's) or ``"recv"``."""

    seq: int
    direction: str
    data: bytes


@dataclass(frozen=True)
class Event:
    """A recorded event; a ``timed-out`` one names its request (``ident``, ``method``)."""

    seq: int
    kind: str
    detail: str = ""
    ident: Union[int, str, None] = None
    method: Optional[str] = None


LogEntry = Union[WireLine, Event]


def read_log(lines: Iterable[str]) -> Iterator[LogEntry]:
    """The entries of a capture log, in order, each validated; blank lines are skipped.

    Raises :class:`LogError` naming the first line that is not JSON, not an
    object, has no increasing integer ``seq``, or is neither a valid wire line
    nor an event.
    """
    last: Optional[int] = None
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        entry = _object(raw, number)
        seq = entry.get("seq")
        if type(seq) is not int:
            raise LogError("line %d: seq is not an integer" % number)
        if last is not None and seq <= last:
            raise LogError("line %d: seq %d does not follow %d" % (number, seq, last))
        last = seq
        yield _entry(entry, seq, "line %d: " % number)


def load_log(path: Union[str, "os.PathLike[str]"]) -> List[LogEntry]:
    """Every entry of the log at ``path``; :class:`LogError` when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as stream:
            return list(read_log(stream))
    except (OSError, UnicodeDecodeError) as e:
        raise LogError("cannot read %s: %s" % (path, e)) from None


def line_bytes(entry: Dict[str, object]) -> bytes:
    """The exact bytes of a ``send``/``recv`` entry; :class:`LogError` if it has none."""
    return _line_bytes(entry, "")


def _object(raw: str, number: int) -> Dict[str, object]:
    try:
        entry = json.loads(raw)
    except ValueError as e:
        raise LogError("line %d: not JSON (%s)" % (number, e)) from None
    except RecursionError:
        raise LogError("line %d: not JSON (nested too deeply)" % number) from None
    if type(entry) is not dict:
        raise LogError("line %d: not a JSON object" % number)
    return entry


def _entry(entry: Dict[str, object], seq: int, where: str) -> LogEntry:
    direction = entry.get("dir")
    if direction is None:
        return _event(entry, seq, where)
    if not isinstance(direction, str) or direction not in ("send", "recv"):
        raise LogError("%sdir is %r, not 'send' or 'recv'" % (where, direction))
    return WireLine(seq, direction, _line_bytes(entry, where))


def _line_bytes(entry: Dict[str, object], where: str) -> bytes:
    text, packed = entry.get("text"), entry.get("base64")
    if type(text) is str and packed is None:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no bytes were ever like that
            raise LogError("%stext is not valid Unicode" % where) from None
    if type(packed) is str and text is None:
        try:
            return base64.b64decode(packed, validate=True)
        except (binascii.Error, ValueError):
            raise LogError("%sbase64 member is not base64" % where) from None
    raise LogError("%sa wire line needs exactly one of text and base64 (strings)" % where)


def _event(entry: Dict[str, object], seq: int, where: str) -> Event:
    kind, detail = entry.get("event"), entry.get("detail", "")
    if type(kind) is not str:
        raise LogError("%sneither a wire line (dir) nor an event" % where)
    if type(detail) is not str:
        raise LogError("%sdetail is not a string" % where)
    ident, method = entry.get("id"), entry.get("method")
    ident = ident if type(ident) is int or type(ident) is str else None
    method = method if type(method) is str else None
    if kind == "timed-out" and (ident is None or method is None):
        raise LogError("%sa timed-out event needs an id (integer or string) and a method" % where)
    return Event(seq, kind, detail, ident, method)
