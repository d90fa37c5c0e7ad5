"""The client: one MCP server, its lifecycle, and every call made to it.

This module keeps the lifecycle -- the moves of :mod:`._state`'s table, with
its two permanent end states, ``CLOSED`` (you retired it) and ``BROKEN`` (it
failed under you) -- the public calls, the constructors and the exit hook. The
parts, each in a module of its own:

* :mod:`~mcp_client._core._requests` -- a request's path on its caller's thread,
  through the table of pending calls and their waiters (:mod:`._calls`), the
  write combiner (:mod:`._outbox`) and the deadline timer (:mod:`._timer`).
* :mod:`~mcp_client._core._reader` -- the reader thread: settles answers, answers the
  server's requests (:mod:`._answers`), drains a captured stderr, and
  completes every retirement.
* :mod:`~mcp_client._core._connect` -- the steps of ``connect``: open, take custody,
  start the reader, handshake.
* :mod:`~mcp_client._core._custody` -- the retirement's evidence, recorded once;
  :mod:`~mcp_client._core._census` -- the active clients, and what ``fork`` changes.

Every death path -- failed write, EOF, a line too long, not UTF-8, not
JSON-RPC; ``stop``/``shutdown``; the owner of a ``prepare_owned`` client going
away; an unexpected error in a thread -- latches the reason and dooms every
call in flight (:meth:`Client._request_retirement`); the reader then fails
them with :class:`Unavailable` and retires the server.

Asynchronous exceptions (a signal handler raising in the main thread) can land
after any call returns. Blocking acquisitions are ``with`` blocks; the latch is
straight-line stores ending in the wake-up's one system call; a caller
interrupted on a request's way takes its call out of the table; and all that
follows a latch runs in the reader, which no handler interrupts.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple, Union

from . import protocol
from ._core import _connect, _threads
from ._core._census import ACTIVE, FORKS
from ._core._custody import Custody
from ._core._reader import Reader
from ._core._requests import Requests, decoded, fresh
from ._core._state import ENDED, TRANSITIONS, State
from ._version import __version__
from .capture import Capture, CaptureTarget
from .errors import (
    CallTimedOut,
    ClientBroken,
    ClientClosed,
    ClientError,
    ClientInherited,
    CleanupUnconfirmed,
    HandshakeFailed,
    ProtocolFault,
    ResultMalformed,
    RetirementError,
    RetirementTimedOut,
    RetirementUnconfirmed,
    ServerError,
    StartError,
    TooManyPages,
    ToolsNotDeclared,
    TransportFailed,
    Unavailable,
    VersionUnsupported,
)
from .protocol import CallToolResult, ClientInfo, InitializeResult, ToolDescriptor
from .tail import Tail
from .transport import Connection, NoResource, ProcessTransport, Retirement, Spawn, Transport

__all__ = [
    "Options", "Client", "prepare", "prepare_owned", "start", "State",
    "ClientError", "Unavailable", "ClientClosed", "ClientBroken", "ClientInherited",
    "CallTimedOut",
    "ServerError", "ResultMalformed", "TooManyPages",
    "StartError", "TransportFailed", "HandshakeFailed", "VersionUnsupported",
    "ToolsNotDeclared", "CleanupUnconfirmed",
    "RetirementError", "RetirementTimedOut", "RetirementUnconfirmed",
]

log = logging.getLogger(__name__)

#: A caller's own backstop beyond its deadline, should the timer thread be starved.
_TIMER_SLACK = 0.05


@dataclass(frozen=True)
class Options:
    """Per-client settings; every ``timeout=`` argument of a call overrides its default.

    ``capture``: a path or a writable text file that receives the wire log
    (see :mod:`mcp_client.capture`); ``None`` records nothing.

    ``retire_grace``: seconds a retirement gives the server to exit by itself
    after its stdin is closed (the spec's stdio shutdown), for servers that
    flush state on EOF; then its group is SIGKILLed. The default, 0, kills at
    once, as the design card has it. The evidence is the server's own exit code
    when it exited in time, ``Exited(-9)`` otherwise. ``stop()`` still never
    blocks; ``shutdown()``'s default timeout is ``retire_timeout`` plus it.

    ``tolerated_noise_lines``: how many stdout lines that are not JSON at all
    (log lines, banners; see :mod:`mcp_client.noise`) are skipped over the
    session, each logged at WARNING; the next one is a death, as is any JSON
    line that is not JSON-RPC. The spec forbids such lines, so 0 (none) is the
    default: opt in only for a server known to print them.

    Every duration and count is checked when the options are made (a
    ``TypeError`` or ``ValueError`` naming the field): seconds are an ``int``
    or ``float`` (never a ``bool``), never NaN. ``handshake_timeout`` and
    ``request_timeout`` are positive, and may be ``float("inf")`` (wait as long
    as it takes); ``retire_timeout`` is positive and finite, and
    ``retire_grace`` finite and at least 0, so that ``shutdown()`` always
    returns; ``max_tool_pages`` is an ``int`` of at least 1,
    ``tolerated_noise_lines`` one of at least 0.
    """

    client_info: ClientInfo = ClientInfo("mcp_client", __version__)
    handshake_timeout: float = 30.0
    request_timeout: float = 60.0
    max_tool_pages: int = 64
    retire_timeout: float = 10.0
    capture: CaptureTarget = None
    retire_grace: float = 0.0
    tolerated_noise_lines: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.client_info, ClientInfo):
            raise TypeError("Options.client_info must be a ClientInfo, not %s"
                            % type(self.client_info).__name__)
        _check_seconds("handshake_timeout", self.handshake_timeout, infinite=True)
        _check_seconds("request_timeout", self.request_timeout, infinite=True)
        _check_seconds("retire_timeout", self.retire_timeout, infinite=False)
        _check_seconds("retire_grace", self.retire_grace, infinite=False, zero=True)
        _check_count("max_tool_pages", self.max_tool_pages, least=1)
        _check_count("tolerated_noise_lines", self.tolerated_noise_lines, least=0)


def _check_seconds(field: str, value: object, infinite: bool, zero: bool = False) -> None:
    """A duration of ``Options``: a real number (not a bool), not NaN; positive
    (or 0 with ``zero``); finite unless ``infinite``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("Options.%s must be a number of seconds, not %s"
                        % (field, type(value).__name__))
    wanted = ("at least 0" if zero else "positive") + ("" if infinite else " and finite")
    if math.isnan(value) or value < 0 or (value == 0 and not zero) or (
            math.isinf(value) and not infinite):
        raise ValueError("Options.%s must be %s seconds, not %r" % (field, wanted, value))


def _check_count(field: str, value: object, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("Options.%s must be an int, not %s" % (field, type(value).__name__))
    if value < least:
        raise ValueError("Options.%s must be at least %d, not %d" % (field, least, value))


TransportLike = Union[Transport, Spawn]


def _as_transport(target: TransportLike) -> Transport:
    return ProcessTransport(target) if isinstance(target, Spawn) else target


class Client:
    """One MCP server over one transport. Every method is safe from any thread.

    ==================  ==========  ================================================
    field               guarded by  notes
    ==================  ==========  ================================================
    _state, _reason     _lock       written only by transitions and the latch
    _requests           _lock       its table, outbox and timer (see their modules)
    _conn, _opening     _lock       ``_conn`` set once, by the opener (``_adopt``)
    _wake_w             _lock       closed by the reader, under the lock, at its end
    _reader,            none        set by the opener before the reader starts
    _reader_thread,                 (``Thread.start`` orders them), read after
    _capture
    _stderr             none        written by the reader; read once it is retired
    _shown_name         none        set once, by the handshake; a str, replaced whole
    _custody            its own     (see :mod:`._custody`)
    ==================  ==========  ================================================
    """

    def __init__(self, transport: TransportLike, options: Optional[Options] = None) -> None:
        self._transport = _as_transport(transport)
        self.options = options or Options()
        # Re-entrant for one reason: a signal handler that calls stop() may run
        # in the main thread while that thread holds it (see Client.stop).
        self._lock = threading.RLock()
        self._state = State.PARKED
        self._reason: Optional[Unavailable] = None
        self._requests = Requests(self)
        self._conn: Optional[Connection] = None
        self._opening = False  # transport.open() under way, outside the lock
        self._reader: Optional[Reader] = None
        self._reader_thread: Optional[threading.Thread] = None
        self._wake_w = -1
        self._generation = FORKS.generation  # a fork makes the child's copy inert
        self._owner_pid = os.getpid()
        self._custody = Custody()
        self._stderr = Tail()  # the server's last stderr lines (the reader writes it)
        self._capture: Optional[Capture] = None
        self.initialize_result: Optional[InitializeResult] = None
        self._shown_name = ""  # serverInfo.name fit for a log line (see _connect.handshake)

    # ------------------------------------------------------------------ introspection

    @property
    def state(self) -> State:
        return self._state

    @property
    def reason(self) -> Optional[Unavailable]:
        """The latched cause once the client is closed or broken."""
        return self._reason

    @property
    def pid(self) -> Optional[int]:
        """The server's pid while one was started (for diagnostics and tests)."""
        return None if self._conn is None else self._conn.pid

    @property
    def in_flight(self) -> int:
        """How many calls await their answer now (for diagnostics and tests)."""
        return len(self._requests.calls)

    @property
    def stderr_tail(self) -> str:
        """The server's last stderr lines so far (``""`` unless the transport
        captures its stderr); complete once the client is retired."""
        return self._stderr.text()

    @property
    def capture(self) -> Optional[Capture]:
        """The wire log's recorder (``Options.capture``) once ``connect`` opened
        it, else ``None``; its ``complete``, ``lost`` and ``failure`` say whether
        the log holds everything (final once the client is retired)."""
        return self._capture

    @property
    def noise_skipped(self) -> int:
        """How many stdout lines that are not JSON were skipped (``tolerated_noise_lines``)."""
        return 0 if self._reader is None else self._reader.noise[0]

    @property
    def first_noise(self) -> Optional[str]:
        """The start of the first line skipped, as :func:`noise.show` gives it; ``None`` if none."""
        return None if self._reader is None else self._reader.noise[1]

    def __repr__(self) -> str:
        return "<Client %s %s>" % (self._transport.describe(), self._state.value)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, kind: Optional[type], error: Optional[BaseException], tb: Any) -> None:
        if self._inherited():
            return  # a forked child leaving its parent's block: not its server to retire
        try:
            self.shutdown()
        except RetirementError:
            if error is None:
                raise
            log.warning("retirement unconfirmed while leaving a failed block", exc_info=True)

    def _inherited(self) -> bool:
        """Whether this process got the client through ``fork`` (see :mod:`._census`)."""
        return self._generation != FORKS.generation

    def _check_owner(self) -> None:
        if self._inherited():
            raise ClientInherited("client belongs to process %d, not to this process %d "
                                  "(inherited through fork)" % (self._owner_pid, os.getpid()))

    # ------------------------------------------------------------------ lifecycle

    def _move(self, target: State) -> None:
        """One transition, under ``_lock``; refused moves raise (a bug, not a server's fault)."""
        if target not in TRANSITIONS[self._state]:
            raise RuntimeError("client cannot go from %s to %s" % (self._state, target))
        self._state = target

    def connect(self) -> InitializeResult:
        """Spawn, handshake, check version and tools capability, send ``initialized``.

        On any failure what was spawned is retired before the :class:`StartError`
        is raised (or :class:`CleanupUnconfirmed` when that cannot be confirmed).
        """
        self._check_owner()
        with self._lock:
            if self._state is not State.PARKED:
                raise StartError("connect() needs a parked client; this one is %s"
                                 % self._state.value)
            self._move(State.CONNECTING)
            self._opening = True
        try:
            _connect.open_transport(self)
            result = _connect.handshake(self)
        except StartError as failure:
            raise self._abandon(failure)
        return result

    def _abandon(self, failure: StartError) -> StartError:
        """Retire after a failed ``connect``; the error to raise (with the
        server's last stderr lines, when they were captured)."""
        self._request_retirement(ClientBroken(failure.reason))
        try:
            self._await_retirement(time.monotonic() + self.options.retire_timeout
                                   + self.options.retire_grace)
        except RetirementError as e:
            return CleanupUnconfirmed("%s; and retirement unconfirmed: %s" % (failure, e), self)
        if isinstance(failure, HandshakeFailed):
            failure.stderr_tail = self._stderr.text()
        return failure

    def stop(self) -> None:
        """Ask for retirement and return at once; in-flight calls fail :class:`ClientClosed`.

        Never blocks, and safe in a signal handler, even one that lands while
        the main thread is inside the client (its lock is re-entrant for that);
        ``shutdown`` there would wait for a reader that needs the lock back. In
        a process that inherited the client through ``fork`` it does nothing:
        the server is the parent's.
        """
        if not self._inherited():
            self._request_retirement(ClientClosed("client was stopped"))

    def shutdown(self, timeout: Optional[float] = None) -> Retirement:
        """Retire the server and return the evidence: :class:`NoResource` or ``Exited``.

        Idempotent: a client already retired (by a failed connect, a death, an
        earlier shutdown) returns the same evidence again. In a process that
        inherited the client through ``fork`` it raises :class:`ClientInherited`.
        """
        self._check_owner()
        if timeout is None:
            timeout = self.options.retire_timeout + self.options.retire_grace
        self._request_retirement(ClientClosed("client was shut down"))
        return self._await_retirement(time.monotonic() + timeout)

    def _request_retirement(self, reason: Unavailable) -> None:
        """Latch ``reason`` (first one wins), doom every call, wake the reader.

        Never blocks. The rest -- failing the doomed calls, the kill, the
        reaping -- is the reader's (:meth:`Reader.finish`). The latch is
        straight-line stores under ``_lock`` ending in the wake-up's one system
        call: an asynchronous exception lands before it (nothing happened) or
        after the wake-up (all of it did), never in between.
        """
        target = State.BROKEN if isinstance(reason, ClientBroken) else State.CLOSED
        with self._lock:
            if self._state in ENDED:
                return
            if target not in TRANSITIONS[self._state]:
                target = State.CLOSED  # a parked client cannot break: it only closes
            self._state, self._reason = target, reason
            table = self._requests.calls
            table.doomed, table.pending = table.pending, {}
            unopened = self._conn is None and not self._opening  # else the opener records it
            if self._wake_w >= 0:
                try:
                    os.write(self._wake_w, b"x")
                except OSError:  # already signalled (full)
                    pass
        if unopened:
            self._record_retirement(NoResource(), None)

    def _await_retirement(self, deadline: float) -> Retirement:
        if not self._custody.done:
            self._retire_unopened()
        answerer = None if self._reader is None else self._reader.answerer.last
        threads = (self._reader_thread, self._requests.timer.thread(), answerer)
        return self._custody.wait(deadline, threads, self._transport.describe())

    def _retire_unopened(self) -> None:
        # A latch interrupted (by a signal handler's exception) before it could
        # record the evidence of a client that never opened anything.
        with self._lock:
            unopened = self._reason is not None and self._conn is None and not self._opening
        if unopened:
            self._record_retirement(NoResource(), None)

    def _record_retirement(self, evidence: Optional[Retirement],
                           fault: Optional[RetirementError]) -> None:
        self._custody.record(evidence, fault, self._retired)

    def _retired(self, evidence: Optional[Retirement], fault: Optional[RetirementError]) -> None:
        """Once, just before ``shutdown`` can see the evidence: the census, the log."""
        ACTIVE.discard(self)
        if self._capture is not None:
            if self._reason is not None:  # here, not in the latch, which stays straight-line
                self._capture.died(self._reason)
            self._capture.event("retired", repr(evidence or fault))
            self._capture.close()

    # ------------------------------------------------------------------ for the reader

    def _fail_doomed(self) -> None:
        """Fail every call the latch doomed, with the reason and the stderr tail."""
        reason = self._reason
        assert reason is not None
        if not reason.stderr_tail:
            reason.stderr_tail = self._stderr.text()
        if reason.server is None:  # here, not in the latch, which stays straight-line
            reason.server = self._shown_name or None
        self._requests.fail_doomed(reason)

    def _close_wake(self) -> None:
        with self._lock:
            os.close(self._wake_w)
            self._wake_w = -1

    def _server_name(self) -> str:
        """The server as log records name it: its ``serverInfo`` name, sanitized
        once at the handshake; before it, the transport's (our own) description."""
        return self._shown_name or self._transport.describe()

    # ------------------------------------------------------------------ calls

    def list_tools(self, timeout: Optional[float] = None) -> Tuple[ToolDescriptor, ...]:
        """Every tool, following ``nextCursor`` for at most ``max_tool_pages`` pages.

        One deadline covers the whole listing.
        """
        return self._requests.list_tools(self._timeout(timeout), self.options.max_tool_pages)

    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None,
                  timeout: Optional[float] = None) -> CallToolResult:
        """Call the tool whose wire name is ``name``. ``isError`` is a result, not an exception."""
        params = protocol.call_tool_params(name, dict(arguments or {}))
        raw = self._requests.request("tools/call", params, self._timeout(timeout))
        return decoded(protocol.decode_call_tool, raw)

    def ping(self, timeout: Optional[float] = None) -> None:
        """Round-trip a ``ping``; the answer must be an object (the spec's empty result)."""
        raw = self._requests.request("ping", None, self._timeout(timeout))
        if type(raw) is not dict:
            raise ResultMalformed(ProtocolFault("ping result is not an object"))

    def _timeout(self, timeout: Optional[float]) -> float:
        return self.options.request_timeout if timeout is None else timeout

    def _check_open(self, handshake: bool) -> None:
        if self._reason is not None:
            error = fresh(self._reason)
            if error.server is None:  # latched, but the reader has not named it yet
                error.server = self._shown_name or None
            raise error
        expected = State.CONNECTING if handshake else State.READY
        if self._state is not expected:
            raise Unavailable("client is %s, not %s" % (self._state.value, expected.value))







# ---------------------------------------------------------------------- constructors


def prepare(transport: TransportLike, options: Optional[Options] = None) -> Client:
    """A parked client: no process, no thread. Publish it before any ``connect``."""
    return Client(transport, options)


def prepare_owned(owner: object, transport: TransportLike,
                  options: Optional[Options] = None) -> Client:
    """As :func:`prepare`; the client is retired when ``owner`` is garbage-collected."""
    client = Client(transport, options)
    finalizer = weakref.finalize(owner, _owner_gone, client)
    finalizer.atexit = False  # exit is _retire_all_at_exit's job
    return client


def _owner_gone(client: Client) -> None:
    # A finalizer runs wherever the collector ran -- possibly inside one of this
    # client's own locked sections -- so it only hands the work to a new thread.
    try:
        _threads.start(_threads.named(client.stop, "mcp-owner-gone"))
    except RuntimeError:
        log.warning("owner of %r gone, but no thread to stop it; retired at exit", client)


def start(transport: TransportLike, options: Optional[Options] = None) -> Client:
    """:func:`prepare` then :meth:`Client.connect`; returns the ready client."""
    client = prepare(transport, options)
    client.connect()
    return client


@atexit.register
def _retire_all_at_exit() -> None:
    """Interpreter exit retires every active client (none after a fork: see ``_census``)."""
    for client in ACTIVE.snapshot():
        assert isinstance(client, Client)
        try:
            client.shutdown()
        except RetirementError:
            log.warning("server of %r not confirmed gone at exit", client)
