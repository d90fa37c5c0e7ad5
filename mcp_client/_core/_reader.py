"""The reader thread: one per active client, and the only thread that ends it.

:class:`Reader` drains the server's stdout through ``poll`` into a bounded
:class:`~mcp_client.stdio.Buffer`, decodes each line, and settles the call it
answers (its caller is waiting on it); it answers the server's own requests
through an :class:`~mcp_client._core._answers.Answerer`, skips tolerated noise, and
drains a captured stderr into the session's :class:`~mcp_client._core._tail.Tail`.
When the client is retired -- by a death it found itself, or by a latch
elsewhere that wakes it through its wake-up pipe -- it completes the
retirement (:meth:`Reader.finish`): fails the doomed calls, ends the server,
reaps it, closes every descriptor and records the evidence. No signal handler
runs in this thread (its signals are blocked), so nothing cuts that short.
(When no reader thread can be started, the opener runs :meth:`Reader.finish`
itself, once, in its own thread.)

=============  ======================================================
field          who touches it
=============  ======================================================
_buffer,       this thread only (``noise`` is read by others: two
_noise,        ints and a str, each replaced whole)
_first_noise,
_stderr_done,
_sink_failed
answerer       this thread (``reply``), its own thread, and ``shutdown``
               (``last``, to join it); see :mod:`._answers`
=============  ======================================================
"""

from __future__ import annotations

import logging
import os
import select
import time

from .. import jsonrpc, protocol
from ..errors import (
    ClientBroken,
    FramingFault,
    MalformedMessage,
    MessageFault,
    RetirementError,
    RetirementTimedOut,
    ServerError,
)
from ..stdio import Buffer
from ..text import sanitize
from ..transport import Connection, write_all
from . import LOGGER
from . import _noise as noise
from ._answers import Answerer
from ._requests import Requests
from ._session import Session
from ._tail import LINE_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Optional, Tuple

    from ..transport import Retirement

__all__ = ["Reader"]

log = logging.getLogger(LOGGER)
#: Characters of a server's method name shown in a log record (sanitized: server text).
_SHOWN_METHOD = 100
#: Each line a server writes to a captured stderr, with ``extra={"server": name}``.
server_log = logging.getLogger("mcp_client.server")

#: How long a retirement waits for a broken server's stderr to reach EOF before
#: it fails the calls, so that what the server said as it died reaches them.
STDERR_SETTLE = 0.2
#: One read of stderr a selector turn (stdout's size is the Buffer's to choose);
#: less when its lines are logged, each line a record (``Reader._stderr_chunk``).
_STDERR_READ = 64 * 1024
_STDERR_LOGGED_READ = 4 * 1024
#: The most read of what an ended server left in its stderr pipe, and the most of its
#: lines logged (the tail keeps the end of it whole; the rest is counted).
_STDERR_LEFT = 1024 * 1024
_LEFT_LOGGED = 20

if TYPE_CHECKING:
    Evidence = Tuple[Optional[Retirement], Optional[RetirementError]]


class Reader:
    """Reads one connection for one client, then retires it."""

    def __init__(self, session: Session, requests: Requests, conn: Connection, wake_r: int) -> None:
        self._session = session
        self._requests = requests
        self._conn = conn
        self._wake_r = wake_r
        self._buffer = Buffer()
        self._noise = 0
        self._first_noise: Optional[str] = None
        self._stderr_done = False
        self._sink_failed = False
        self.answerer = Answerer(
            session.lock, conn, session.request_retirement, lambda: session.reason is not None
        )

    @property
    def noise(self) -> Tuple[int, Optional[str]]:
        """How many noise lines were skipped, and the first one as shown."""
        return self._noise, self._first_noise

    def run(self) -> None:
        """The thread's body: read until the client is retired, then retire it."""
        try:
            self._drain()
        except Exception as e:  # a bug of ours must not strand callers: die loudly
            log.exception("reader thread failed")
            self._session.request_retirement(ClientBroken("internal error in the reader: %r" % e))
        finally:
            self.finish()

    # ------------------------------------------------------------------ reading

    def _drain(self) -> None:
        # poll(2) itself, not a selectors.Selector: what runs between settling a
        # call and blocking again holds the GIL its caller needs to wake up, and
        # the selector's Python layer was a third of it. A hang-up or an error
        # on a descriptor is reported whatever was asked for, and its read says
        # EOF (stdout) or fails as one (stderr).
        conn, wake_r, session = self._conn, self._wake_r, self._session
        read_fd, stderr_fd = conn.read_fd, conn.stderr_fd
        poller = select.poll()
        poller.register(read_fd, select.POLLIN)
        poller.register(wake_r, select.POLLIN)
        if stderr_fd is not None:  # drained always: the server never blocks on it
            poller.register(stderr_fd, select.POLLIN)
        poll = poller.poll
        while session.reason is None:
            for fd, _ in poll():
                if fd == read_fd:
                    if not self._read_some():
                        return
                elif fd == wake_r:
                    return
                elif self._stderr_chunk(fd) < 0:
                    poller.unregister(fd)

    def _read_some(self) -> bool:
        """Read what is there and dispatch it; ``False`` once the client must stop reading."""
        capture, buffer = self._session.capture, self._buffer
        try:
            chunk = os.read(self._conn.read_fd, buffer.read_size())
        except BlockingIOError:
            return True
        if not chunk:
            if capture is not None:
                capture.eof()
            self._session.request_retirement(ClientBroken("server closed its stdout"))
            return False
        try:
            lines = buffer.push(chunk)
        except FramingFault as e:
            if capture is not None:
                capture.event("framing-fault", e.reason)
            self._session.request_retirement(ClientBroken("framing: %s" % e.reason))
            return False
        for line in lines:
            if not self._dispatch(line):
                return False
        if capture is not None:
            capture.drain()  # the read's lines, recorded one by one, in one write
        return True

    def _dispatch(self, line: bytes) -> bool:
        if self._session.capture is not None:
            self._session.capture.line("recv", line, now=False)
        try:
            message = jsonrpc.decode(line)
        except MessageFault as e:
            return self._refuse(line, e)
        if isinstance(message, jsonrpc.Response):
            self._settle(message)
        elif isinstance(message, jsonrpc.ServerRequest):
            self._answer(message)
        else:
            log.debug("dropped notification %s", sanitize(message.method, _SHOWN_METHOD))
        return self._session.reason is None

    def _refuse(self, line: bytes, fault: MessageFault) -> bool:
        """Skip ``line`` if it is noise and still tolerated (``True``); else die."""
        tolerated = self._session.options.tolerated_noise_lines
        if not isinstance(fault, MalformedMessage):  # JSON, yet not JSON-RPC: a lie, not a log
            reason = fault.reason
        elif self._noise < tolerated:
            self._skip_noise(line, tolerated)
            return True
        else:
            reason = noise.refusal(fault, line, self._noise)
        self._session.request_retirement(ClientBroken("server sent an invalid line: %s" % reason))
        return False

    def _skip_noise(self, line: bytes, tolerated: int) -> None:
        # Recorded as a capture event too, so that a replay tolerates as many.
        self._noise += 1
        shown = noise.show(line)
        if self._first_noise is None:
            self._first_noise = shown
        log.warning(
            "%r skipped stdout line %d of %d tolerated, not JSON: %s",
            self._session,
            self._noise,
            tolerated,
            shown,
        )
        if self._session.capture is not None:
            self._session.capture.event("noise-skipped", "%d of %d" % (self._noise, tolerated))

    def _settle(self, response: jsonrpc.Response) -> None:
        call = self._session.take(response.id)
        if call is None:
            log.debug("dropped response for unknown or late id %r", response.id)
        elif response.error is not None:
            call.fail(ServerError(response.error))
        elif call.follow is not None:  # a listing's page: the walk goes on here
            self._requests.follow(call, response.result)
        else:
            call.settle(response.result)

    def _answer(self, request: jsonrpc.ServerRequest) -> None:
        if request.method == protocol.PING:  # the spec's MUST: answer promptly, empty result
            reply = jsonrpc.result_response(request.id, {})
        else:
            log.debug("refused server request %s", sanitize(request.method, _SHOWN_METHOD))
            reply = jsonrpc.error_response(
                request.id,
                jsonrpc.METHOD_NOT_FOUND,
                "method not found: this client serves no requests",
            )
        self.answerer.reply(self._session.outgoing(reply))

    # ------------------------------------------------------------------ stderr

    def read_stderr(self, deadline: float) -> bool:
        """Read the server's stderr until its EOF or ``deadline``; whether it is still open."""
        fd = self._conn.stderr_fd
        if fd is None or self._stderr_done:
            return False
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            if self._stderr_chunk(fd) < 0:
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000.0):
                return True

    def _stderr_left(self) -> None:
        """What the ended server left in its stderr pipe (its last words, and for
        a file, bytes it wrote before the SIGKILL): read until the pipe is empty,
        at most :data:`_STDERR_LEFT` -- a writer that outlived the group could
        refill it for ever. Kept in the tail (or copied to the file) whole, but
        logged by its last :data:`_LEFT_LOGGED` lines and a count of the rest: a
        flood's pipeful is tens of thousands of lines, and a record a line would
        hold the retirement for seconds."""
        fd = self._conn.stderr_fd
        if fd is None or self._stderr_done:
            return
        left = _Leftover(self._session.stderr.unfinished())
        while left.taken < _STDERR_LEFT and left.add(self._left_chunk(fd)):
            pass
        if self._conn.stderr_sink is None and server_log.isEnabledFor(logging.INFO):
            self._log_left(left)

    def _left_chunk(self, fd: int) -> bytes:
        """One read of what is left (b"" once the pipe is empty or closed), kept."""
        try:
            chunk = os.read(fd, _STDERR_READ)
        except OSError:  # empty now (EAGAIN), or closed under us: the end either way
            return b""
        sink = self._conn.stderr_sink
        if sink is not None:
            self._copy_stderr(sink, chunk)
        elif chunk:
            self._session.stderr.push(chunk)
        self._stderr_done = not chunk
        return chunk

    def _log_left(self, left: "_Leftover") -> None:
        shown = left.lines(ended=self._stderr_done)
        unfinished = self._stderr_done and not left.end.endswith(b"\n") and bool(left.end)
        skipped = left.count + unfinished - len(shown)
        if skipped > 0:
            server_log.info(
                "%s: ... %d more lines of stderr, left when it ended, not logged (the "
                "last %d follow)", self._session.server_name(), skipped, len(shown),
                extra={"server": self._session.server_name()},
            )  # fmt: skip
        self._log_stderr(shown)

    def _stderr_chunk(self, fd: int) -> int:
        """One bounded turn of the server's stderr: a single read, kept, logged or
        copied; the bytes read, ``0`` when none are there now, ``-1`` at its EOF.

        Never until EAGAIN: a server writing faster than we log would hold the
        reader here, and stdout, the wake-up pipe and retirement behind it (issue
        17). One read a turn makes a flood cost the server's time -- it blocks on
        a full pipe -- never our callers'. Logged, the read is smaller: each of
        its lines is a log record.
        """
        sink = self._conn.stderr_sink
        logged = sink is None and server_log.isEnabledFor(logging.INFO)
        try:
            chunk = os.read(fd, _STDERR_LOGGED_READ if logged else _STDERR_READ)
        except BlockingIOError:
            return 0
        except OSError:  # closed under us: as good as EOF
            chunk = b""
        if sink is not None:
            self._copy_stderr(sink, chunk)
        elif chunk:
            self._log_stderr(self._session.stderr.push(chunk, lines=logged))
        else:
            self._log_stderr(self._session.stderr.close() if logged else [])
        self._stderr_done = not chunk
        return len(chunk) if chunk else -1

    def _copy_stderr(self, sink: int, chunk: bytes) -> None:
        """Into the stderr file of a jailed server (which may not hold it itself)."""
        if self._sink_failed or not chunk:
            return  # dropped, still drained: the server never blocks on its stderr
        try:
            write_all(sink, chunk)
        except OSError as e:  # a full disk, a file size limit: keep serving the calls
            self._sink_failed = True
            log.warning(
                "%r: writing the server's stderr file failed (%s); the rest of its "
                "stderr is dropped",
                self._session,
                e,
            )

    def _log_stderr(self, lines: List[str]) -> None:
        if lines:
            name = self._session.server_name()
            for line in lines:
                server_log.info("%s: %s", name, line, extra={"server": name})

    # ------------------------------------------------------------------ retirement

    def finish(self) -> None:
        """Complete the retirement: tell the doomed calls why, end the server
        (at once, or after ``retire_grace``), reap it, close every descriptor.

        The calls are failed once a broken server's stderr has had a moment to
        say why it died (:data:`STDERR_SETTLE`), so their error carries it.
        """
        session, conn = self._session, self._conn
        session.request_retirement(ClientBroken("reader stopped"))  # no-op when already latched
        settle = STDERR_SETTLE if isinstance(session.reason, ClientBroken) else 0.0
        self.read_stderr(time.monotonic() + settle)
        self._requests.fail_doomed()
        session.close_wake()
        os.close(self._wake_r)
        evidence, fault = self._end_server()
        self._stderr_left()
        conn.close_stderr()
        conn.dispose_input(time.monotonic() + session.options.retire_timeout)
        session.record_retirement(evidence, fault)

    def _end_server(self) -> Evidence:
        """Kill and reap; with a grace, first EOF and a wait for the server's own exit."""
        conn, grace = self._conn, self._session.options.retire_grace
        try:
            if grace > 0:
                exited = self._await_polite_exit(time.monotonic() + grace)
                if exited is not None:
                    conn.close_output()
                    return exited, None
            conn.kill()  # whoever gets here first kills; kill is idempotent and never waits
            conn.close_output()  # a server blocked writing to us must not block its end
            return conn.wait(None), None
        except RetirementError as e:
            conn.close_output()
            return None, e

    def _await_polite_exit(self, deadline: float) -> Optional[Retirement]:
        """The spec's stdio shutdown: close the server's stdin and wait until
        ``deadline`` for it to exit by itself (draining its stderr meanwhile)."""
        conn = self._conn
        conn.close_input()
        while True:
            try:
                return conn.wait(time.monotonic())  # a look, never a wait
            except RetirementTimedOut:
                pass
            if time.monotonic() >= deadline:
                return None
            if not self.read_stderr(min(deadline, time.monotonic() + 0.02)):
                time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))


class _Leftover:
    """What an ended server left in its stderr: its size, its lines counted, and the
    bytes that may hold its last :data:`_LEFT_LOGGED` lines (the rest not kept)."""

    __slots__ = ("taken", "count", "end")

    def __init__(self, unfinished: bytes) -> None:
        self.taken = 0
        self.count = 0
        self.end = bytearray(unfinished)  # the line the live reads left unfinished

    def add(self, chunk: bytes) -> bool:
        """Take ``chunk``; whether there may be more."""
        self.taken += len(chunk)
        self.count += chunk.count(b"\n")
        self.end += chunk
        room = _LEFT_LOGGED * (LINE_BYTES + 1)
        if len(self.end) > 2 * room:  # trimmed now and then: bounded, amortised
            del self.end[: len(self.end) - room]
        return bool(chunk)

    def lines(self, ended: bool) -> List[str]:
        """The last lines, as the tail shows them (blank ones skipped): the complete
        ones, and the unfinished last one when the stream ``ended``."""
        pieces = bytes(self.end).split(b"\n")
        if not ended:
            pieces = pieces[:-1]  # unfinished: the writer outlived the reading
        if len(self.end) >= _LEFT_LOGGED * (LINE_BYTES + 1):
            pieces = pieces[1:]  # the first may be the end of a longer line
        shown = [noise.show(piece.rstrip(b"\r"), LINE_BYTES) for piece in pieces]
        return [line for line in shown if line.strip()][-_LEFT_LOGGED:]
