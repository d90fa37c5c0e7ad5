"""What a client's parts share, and the only code that writes it.

A :class:`Session` is one client's shared state: the lock, the state and the
latched reason; the connection and the wake-up pipe; the capture and the stderr
tail; the table of calls and the custody of the retirement's evidence. The
parts -- :class:`~mcp_client._core._requests.Requests` on the callers'
threads, the :class:`~mcp_client._core._reader.Reader` thread, the steps of
``connect`` (:mod:`~mcp_client._core._connect`) -- hold the session and call
its methods: move, latch, retire, record the evidence, check open. They read
its fields; only this module writes them (``calls`` aside: its own module
guards its fields, under this lock). :class:`~mcp_client.client.Client` is the
public face and holds one.

==================  ==========  ================================================
field               guarded by  notes
==================  ==========  ================================================
state, reason       lock        written only by :meth:`move` and the latch
calls               lock        its fields: see :mod:`._calls`
conn, opening       lock        ``conn`` set once, by the opener (:meth:`adopt`)
wake_w              lock        set by :meth:`arm_wake`; closed by the reader,
                                at its end (:meth:`close_wake`)
reader,             none        set by the opener before the reader starts
reader_thread,                  (``Thread.start`` orders them), read after;
capture                         ``capture`` before the transport opens
stderr              none        a :class:`~mcp_client._core._tail.Tail`, pushed only by
                                the reader thread; read by any (``stderr_tail``,
                                a check that raises) as it is so far, and
                                complete once the reader has retired the client
shown_name          none        set once, by the handshake; a str, replaced whole
custody             its own     (see :mod:`._custody`)
==================  ==========  ================================================
"""

from __future__ import annotations

import os
import threading
import weakref

from ..errors import (
    ClientBroken,
    ClientInherited,
    HandshakeFailed,
    RetirementError,
    StartError,
    Unavailable,
)
from ..stdio import frame
from ..text import sanitize
from ..transport import Connection, NoResource, Transport
from ._calls import Call, CallTable
from ._census import ACTIVE, FORKS
from ._custody import Custody
from ._state import ENDED, TRANSITIONS, State
from ._tail import Tail

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - for annotations only
    from typing import Iterable, Optional

    from ..capture import Capture
    from ..client import Options
    from ..jsonvalue import JsonValue
    from ..transport import Retirement
    from ._reader import Reader

__all__ = ["Session", "fresh", "SHOWN_NAME"]

#: Characters of the server's name kept in log records and messages.
SHOWN_NAME = 100


class Session:
    """One client's shared state and the operations on it (see the module's table)."""

    def __init__(self, transport: Transport, options: "Options", member: object) -> None:
        self.transport = transport
        self.options = options
        # Re-entrant for one reason: a signal handler that calls stop() may run
        # in the main thread while that thread holds it (see Client.stop).
        self.lock = threading.RLock()
        self.state = State.PARKED
        self.reason: Optional[Unavailable] = None
        self.calls = CallTable()
        self.conn: Optional[Connection] = None
        self.opening = False  # transport.open() under way, outside the lock
        self.wake_w = -1
        self.reader: Optional["Reader"] = None
        self.reader_thread: Optional[threading.Thread] = None
        self.capture: Optional[Capture] = None
        self.stderr = Tail()  # the server's last stderr lines (the reader writes it)
        self.custody = Custody()
        self.shown_name = ""  # serverInfo.name fit for a log line (see name_server)
        self.generation = FORKS.generation  # a fork makes the child's copy inert
        self.owner_pid = os.getpid()
        # The census holds the client, the public face; a weak reference, so
        # that the client and its session make no cycle.
        self._member = weakref.ref(member)

    def __repr__(self) -> str:  # as the client's own: log records name it so
        return "<Client %s %s>" % (self.transport.describe(), self.state.value)

    # ------------------------------------------------------------------ ownership

    def inherited(self) -> bool:
        """Whether this process got the client through ``fork`` (see :mod:`._census`)."""
        return self.generation != FORKS.generation

    def check_owner(self) -> None:
        if self.inherited():
            raise ClientInherited(
                "client belongs to process %d, not to this process %d "
                "(inherited through fork)" % (self.owner_pid, os.getpid())
            )

    # ------------------------------------------------------------------ lifecycle

    def move(self, target: State) -> None:
        """One transition, under ``lock``; refused moves raise (a bug, not a server's fault)."""
        if target not in TRANSITIONS[self.state]:
            raise RuntimeError("client cannot go from %s to %s" % (self.state, target))
        self.state = target

    def begin_connect(self) -> None:
        """PARKED -> CONNECTING, with the open under way (see :meth:`adopt`)."""
        with self.lock:
            if self.state is not State.PARKED:
                raise StartError(
                    "connect() needs a parked client; this one is %s" % self.state.value
                )
            self.move(State.CONNECTING)
            self.opening = True

    def become_ready(self) -> None:
        """CONNECTING -> READY at the handshake's end, unless it died meanwhile."""
        with self.lock:
            if self.state is not State.CONNECTING:
                raise HandshakeFailed("client died during the handshake: %s" % self.reason)
            self.move(State.READY)

    def check_open(self, handshake: bool) -> None:
        if self.reason is not None:
            error = fresh(self.reason)
            if error.server is None:  # latched, but the reader has not named it yet
                error.server = self.shown_name or None
            raise error
        expected = State.CONNECTING if handshake else State.READY
        if self.state is not expected:
            raise Unavailable("client is %s, not %s" % (self.state.value, expected.value))

    def request_retirement(self, reason: Unavailable) -> None:
        """Latch ``reason`` (first one wins), doom every call, wake the reader.

        Never blocks. The rest -- failing the doomed calls, the kill, the
        reaping -- is the reader's (:meth:`Reader.finish`). The latch is
        straight-line stores under ``lock`` ending in the wake-up's one system
        call: an asynchronous exception lands before it (nothing happened) or
        after the wake-up (all of it did), never in between.
        """
        target = State.BROKEN if isinstance(reason, ClientBroken) else State.CLOSED
        with self.lock:
            if self.state in ENDED:
                return
            if target not in TRANSITIONS[self.state]:
                target = State.CLOSED  # a parked client cannot break: it only closes
            self.state, self.reason = target, reason
            table = self.calls
            table.doomed, table.pending = table.pending, {}
            unopened = self.conn is None and not self.opening  # else the opener records it
            if self.wake_w >= 0:
                try:
                    os.write(self.wake_w, b"x")
                except OSError:  # already signalled (full)
                    pass
        if unopened:
            self.record_retirement(NoResource(), None)

    # ------------------------------------------------------------------ the connect steps

    def open_capture(self) -> None:
        """The wire log of ``Options.capture`` (before the transport opens)."""
        if self.options.capture is None:
            return  # nothing to record: the capture module is not even loaded
        from ..capture import open_capture  # on first use: import mcp_client stays small

        self.capture = open_capture(self.options.capture)

    def adopt(self, conn: Optional[Connection]) -> bool:
        """Take custody of what the open gave (or nothing); whether a reason
        was latched meanwhile (then nothing opened is this one's to record)."""
        with self.lock:
            self.opening = False
            retired = self.reason is not None
            if conn is not None:
                self.conn = conn
                if self.capture is not None:  # before the reader can record a line
                    self.capture.event("open", self.transport.describe())
        return retired

    def arm_wake(self, wake_w: int) -> None:
        with self.lock:
            self.wake_w = wake_w
        member = self._member()
        if member is not None:
            ACTIVE.add(member)

    def started(self, reader: "Reader", thread: Optional[threading.Thread]) -> None:
        """The reader, and its thread once it runs (``None``: the opener retired it)."""
        self.reader, self.reader_thread = reader, thread

    def name_server(self, name: str) -> None:
        # Sanitized once, here, for every log record and message that names the
        # server: an escape or a newline in it could drive a terminal or forge a
        # log line. initialize_result keeps the name raw, as the protocol gave it.
        self.shown_name = sanitize(name, SHOWN_NAME)

    def server_name(self) -> str:
        """The server as log records name it: its ``serverInfo`` name, sanitized
        once at the handshake; before it, the transport's (our own) description."""
        return self.shown_name or self.transport.describe()

    # ------------------------------------------------------------------ the wire

    def outgoing(self, message: JsonValue) -> bytes:
        """``message`` framed, and recorded as sent in the capture: every frame
        we write goes through here, then through its writer (the outbox, the
        answerer, the connection). Every message is the package's own envelope
        (a minted id or the server's decoded one, a method of ``protocol``'s)
        around params its sender has checked (``Requests.start``), so it is
        encoded without a second walk."""
        return self.recorded(frame(message, checked=True))

    def recorded(self, data: bytes) -> bytes:
        """A frame about to be written, recorded as sent in the capture (every
        frame we write comes through here: see :meth:`outgoing`)."""
        if self.capture is not None:
            self.capture.line("send", data[:-1])
        return data

    def take(self, ident: object) -> Optional[Call]:
        """Take a call out of the table (its taker settles it)."""
        with self.lock:
            return self.calls.take(ident)

    # ------------------------------------------------------------------ retirement

    def final_reason(self) -> Unavailable:
        """The latched reason, completed for the doomed calls: the stderr tail, the server."""
        reason = self.reason
        assert reason is not None
        if not reason.stderr_tail:
            reason.stderr_tail = self.stderr.text()
        if reason.server is None:  # here, not in the latch, which stays straight-line
            reason.server = self.shown_name or None
        return reason

    def close_wake(self) -> None:
        with self.lock:
            os.close(self.wake_w)
            self.wake_w = -1

    def await_retirement(
        self, deadline: float, threads: Iterable[Optional[threading.Thread]]
    ) -> Retirement:
        if not self.custody.done:
            self._retire_unopened()
        return self.custody.wait(deadline, threads, self.transport.describe())

    def _retire_unopened(self) -> None:
        # A latch interrupted (by a signal handler's exception) before it could
        # record the evidence of a client that never opened anything.
        with self.lock:
            unopened = self.reason is not None and self.conn is None and not self.opening
        if unopened:
            self.record_retirement(NoResource(), None)

    def record_retirement(
        self, evidence: Optional[Retirement], fault: Optional[RetirementError]
    ) -> None:
        self.custody.record(evidence, fault, self._retired)

    def _retired(self, evidence: Optional[Retirement], fault: Optional[RetirementError]) -> None:
        """Once, just before ``shutdown`` can see the evidence: the census, the log."""
        member = self._member()
        if member is not None:
            ACTIVE.discard(member)
        if self.capture is not None:
            if self.reason is not None:  # here, not in the latch, which stays straight-line
                self.capture.died(self.reason)
            self.capture.event("retired", repr(evidence or fault))
            self.capture.close()


def fresh(reason: Unavailable) -> Unavailable:
    """A copy of the latched ``reason`` (its stderr tail too) for one more caller:
    one instance raised in many threads would grow one shared ``__traceback__``."""
    copy = type(reason)(reason.reason)
    copy.stderr_tail = reason.stderr_tail
    copy.server = reason.server
    return copy
