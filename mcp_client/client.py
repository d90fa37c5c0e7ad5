"""The client: one MCP server, its lifecycle, and every call made to it.

Mechanics (the design card's, in threads):

* One named **reader thread** per active client drains the server's stdout
  through ``selectors`` into a bounded :class:`~mcp_client.stdio.Buffer`,
  decodes each line and settles the waiter (:class:`_Call`) of the request
  whose minted integer id it answers. Callers write their own requests, bounded
  by their deadline, and wait on their call: no hand-off on the way out, one on
  the way back. Small frames are *combined*: a caller queues its frame and takes
  the writing turn, and whoever has the turn writes every frame queued so far
  in one ``write`` of at most ``PIPE_BUF`` bytes (atomic: all or nothing), so
  64 callers in flight do not make 64 system calls that each hand the GIL over.
* **Deadlines**: each call has one, from ``time.monotonic()``. One
  ``threading.Timer`` per client is armed for the earliest pending deadline and
  re-armed as deadlines come and go; it settles due calls with
  :class:`CallTimedOut`. A caller also stops waiting at its own deadline, so no
  caller ever waits past it even if the timer is starved.
* **Lifecycle** is a table of allowed transitions (:data:`_TRANSITIONS`) with two
  permanent end states: ``CLOSED`` (you retired it) and ``BROKEN`` (it failed
  under you). Every death path -- failed write, EOF, a line that is too long,
  not UTF-8, not JSON-RPC; ``stop``/``shutdown``; the owner of a
  ``prepare_owned`` client going away; an unexpected error in a thread --
  settles every in-flight call with :class:`Unavailable` at once, latches the
  reason and retires the server.
* **Retirement** is SIGKILL to the server's process group. It is *requested*
  without blocking (``stop``) and *completed* by the reader thread on its way
  out: it reaps the child, records the evidence, closes every descriptor and
  sets ``_retired``. ``shutdown`` waits for that, bounded by its deadline.
"""

from __future__ import annotations

import atexit
import collections
import enum
import logging
import os
import select
import selectors
import threading
import time
import weakref
from dataclasses import dataclass
from typing import (
    Any, Callable, Deque, Dict, List, Mapping, Optional, Set, Tuple, TypeVar, Union,
)

from . import _threads, jsonrpc, noise, protocol
from ._version import __version__
from .capture import Capture, CaptureTarget, open_capture
from .errors import (
    CallTimedOut,
    ClientBroken,
    ClientClosed,
    ClientError,
    ClientInherited,
    CleanupUnconfirmed,
    ForeignVersionFault,
    FramingFault,
    HandshakeFailed,
    MalformedMessage,
    MessageFault,
    ProtocolFault,
    ResultMalformed,
    RetirementError,
    RetirementTimedOut,
    RetirementUnconfirmed,
    ServerError,
    StartError,
    StderrTail,
    TooManyPages,
    ToolsNotDeclared,
    TransportFailed,
    Unavailable,
    VersionUnsupported,
    WriteFailed,
    WriteStalled,
)
from .jsonvalue import EncodeRefused, JsonValue
from .protocol import CallToolResult, ClientInfo, InitializeResult, ToolDescriptor
from .stdio import Buffer, frame
from .tail import Tail
from .transport import (
    ATOMIC_WRITE_BYTES,
    Connection,
    NoResource,
    ProcessTransport,
    Retirement,
    Spawn,
    Transport,
)

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
#: Each line a server writes to a captured stderr, with ``extra={"server": name}``.
_SERVER_LOG = logging.getLogger("mcp_client.server")
#: How long a retirement waits for the server's stderr to reach EOF before it
#: fails the calls, so that what the server said as it died reaches them.
_STDERR_SETTLE = 0.2

#: Reads are small while lines are small: a 1 MiB ``os.read`` allocates (and
#: page-faults) a 1 MiB buffer every time, ~10 us, more than a small message costs
#: to decode. A line still pending after a read is a large one: read big then.
_READ_SIZE = 64 * 1024
_READ_SIZE_LARGE = 1024 * 1024
#: How long the reader may block answering a server's own request (ping) when
#: the server is not reading: past it, the answer is dropped (or, half-written,
#: the stream is poisoned and the client dies).
_ANSWER_TIMEOUT = 5.0
#: A caller's own backstop beyond its deadline, should the timer thread be starved.
_TIMER_SLACK = 0.05
#: Small frames are written in batches of at most this many bytes: a pipe takes
#: a write of up to ``PIPE_BUF`` bytes whole or not at all, so a batch can stall
#: but never leave half a frame on the wire.
_BATCH_BYTES = ATOMIC_WRITE_BYTES
_INF = float("inf")


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
    """

    client_info: ClientInfo = ClientInfo("mcp_client", __version__)
    handshake_timeout: float = 30.0
    request_timeout: float = 60.0
    max_tool_pages: int = 64
    retire_timeout: float = 10.0
    capture: CaptureTarget = None
    retire_grace: float = 0.0
    tolerated_noise_lines: int = 0


class State(enum.Enum):
    PARKED = "parked"          # prepared: no process, no thread
    CONNECTING = "connecting"  # spawned; handshake under way
    READY = "ready"            # calls are served
    CLOSED = "closed"          # you retired it (permanent)
    BROKEN = "broken"          # it failed under you (permanent)


_TRANSITIONS: Dict[State, Tuple[State, ...]] = {
    State.PARKED: (State.CONNECTING, State.CLOSED),
    State.CONNECTING: (State.READY, State.CLOSED, State.BROKEN),
    State.READY: (State.CLOSED, State.BROKEN),
    State.CLOSED: (),
    State.BROKEN: (),
}
_ENDED = (State.CLOSED, State.BROKEN)


class _Call:
    """One request awaiting its answer, and the caller's waiter for it.

    Whoever takes a call out of ``Client._pending`` -- the reader, the timer, a
    timed-out caller, a retirement -- settles it, so it is settled exactly once
    (a second settlement is a bug and raises). The waiter is one plain lock,
    held from birth and released by the settlement: a ``concurrent.futures.Future``
    did the same job with a ``Condition`` (an ``RLock``, a lock per wait, a
    waiter list, a notify), which cost ~6 us of CPU per call and, with 64
    callers in flight, its own convoy on that ``RLock`` -- more than a round
    trip's share of the budget (see ``tools/bench.py``).
    """

    __slots__ = ("id", "method", "timeout", "deadline", "frame", "_settled", "_done",
                 "_result", "_error")

    def __init__(self, ident: int, method: str, timeout: float, deadline: float) -> None:
        self.id = ident
        self.method = method
        self.timeout = timeout
        self.deadline = deadline
        self.frame: Optional[bytes] = None  # queued for the wire and not yet written
        self._settled = threading.Lock()
        self._settled.acquire()
        self._done = False
        self._result: Any = None
        self._error: Optional[BaseException] = None

    def settle(self, result: Any) -> None:
        self._mark_settled()
        self._result = result
        self._settled.release()

    def fail(self, error: BaseException) -> None:
        self._mark_settled()
        self._error = error
        self._settled.release()

    def reopen(self) -> None:
        """Unsettle a call settled as :data:`_UNSENT` (its waiter has woken), before
        it goes back into the table to be sent again."""
        assert self._result is _UNSENT
        self._done = False
        self._result = None

    def _mark_settled(self) -> None:
        # Exactly once is the table's discipline (whoever pops a call settles it);
        # a second settlement is a bug of ours, made loud rather than a silent
        # replacement of the outcome a caller may be reading.
        if self._done:
            raise RuntimeError("call %d (%s) settled twice" % (self.id, self.method))
        self._done = True

    def wait(self, timeout: Optional[float]) -> bool:
        """``True`` once settled; waits at most ``timeout`` seconds (``None``: no limit)."""
        if timeout is None:
            return self._settled.acquire()
        return self._settled.acquire(True, min(timeout, threading.TIMEOUT_MAX))

    def unsent(self) -> bool:
        """Settled as :data:`_UNSENT`: the frame came back unwritten (see ``_hand_back``)."""
        return self._result is _UNSENT and self._error is None

    def outcome(self) -> JsonValue:
        """The result, or the error raised; only after :meth:`wait` said ``True``."""
        error, self._error = self._error, None  # no cycle through the traceback
        if error is not None:
            raise error
        result: JsonValue = self._result
        return result


#: What a call is settled with when its frame comes back unwritten (``_hand_back``).
_UNSENT = object()

#: The next page of a listing: asked for, or why it could not be.
_Ahead = Union[_Call, ClientError, EncodeRefused, None]

TransportLike = Union[Transport, Spawn]


def _as_transport(target: TransportLike) -> Transport:
    return ProcessTransport(target) if isinstance(target, Spawn) else target


class Client:
    """One MCP server over one transport. Every method is safe from any thread."""

    def __init__(self, transport: TransportLike, options: Optional[Options] = None) -> None:
        self._transport = _as_transport(transport)
        self.options = options or Options()
        self._lock = threading.Lock()
        self._state = State.PARKED
        self._reason: Optional[Unavailable] = None
        self._pending: Dict[int, _Call] = {}
        self._next_id = 0
        self._outbox: Deque[_Call] = collections.deque()  # small frames awaiting a turn
        self._turn = threading.RLock()  # the writing turn: whoever holds it writes them
        self._conn: Optional[Connection] = None
        self._opening = False  # transport.open() under way, outside the lock
        self._reader: Optional[threading.Thread] = None
        self._timer: Optional[_Timer] = None
        self._timer_deadline = _INF
        self._last_timer: Optional[_Timer] = None  # joined by shutdown
        self._doomed: Dict[int, _Call] = {}  # latched by a retirement; the reader fails them
        self._answers: Deque[Tuple[bytes, float]] = collections.deque()  # for the answerer
        self._answerer: Optional[threading.Thread] = None  # writes answers the reader could not
        self._last_answerer: Optional[threading.Thread] = None  # joined by shutdown
        self._wake_w = -1
        self._generation = _FORKS.generation  # a fork makes the child's copy inert
        self._owner_pid = os.getpid()
        self._retired = threading.Event()
        self._recorded = False  # the evidence is recorded once (under _lock)
        self._stderr = Tail()  # the server's last stderr lines (reader only)
        self._stderr_done = False  # its stderr reached EOF (reader only)
        self._evidence: Optional[Retirement] = None
        self._retire_fault: Optional[RetirementError] = None
        self._capture: Optional[Capture] = None
        self._noise_skipped = 0  # written by the reader only
        self._first_noise: Optional[str] = None
        self.initialize_result: Optional[InitializeResult] = None

    # ------------------------------------------------------------------ introspection

    @property
    def state(self) -> State:
        return self._state

    @property
    def reason(self) -> Optional[Unavailable]:
        """The latched cause once the client is closed or broken."""
        return self._reason

    @property
    def stderr_tail(self) -> str:
        """The server's last stderr lines so far (``""`` unless the transport
        captures its stderr); complete once the client is retired."""
        return self._stderr.text()

    @property
    def pid(self) -> Optional[int]:
        """The server's pid while one was started (for diagnostics and tests)."""
        return None if self._conn is None else self._conn.pid

    @property
    def noise_skipped(self) -> int:
        """How many stdout lines that are not JSON were skipped (``tolerated_noise_lines``)."""
        return self._noise_skipped

    @property
    def first_noise(self) -> Optional[str]:
        """The start of the first line skipped, as :func:`noise.show` gives it; ``None`` if none."""
        return self._first_noise

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
        """Whether this process got the client through ``fork`` (see :data:`_FORKS`)."""
        return self._generation != _FORKS.generation

    def _check_owner(self) -> None:
        if self._inherited():
            raise ClientInherited("client belongs to process %d, not to this process %d "
                                  "(inherited through fork)" % (self._owner_pid, os.getpid()))

    # ------------------------------------------------------------------ lifecycle

    def _move(self, target: State) -> None:
        """One transition, under ``_lock``; refused moves raise (a bug, not a server's fault)."""
        if target not in _TRANSITIONS[self._state]:
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
            self._open()
            result = self._handshake()
        except StartError as failure:
            raise self._abandon(failure)
        return result

    def _open(self) -> None:
        try:
            self._capture = open_capture(self.options.capture)
        except OSError as e:
            raise TransportFailed("cannot open the capture log: %s" % e) from e
        conn: Optional[Connection] = None
        try:
            conn = self._transport.open()
        finally:
            self._adopt(conn)

    def _adopt(self, conn: Optional[Connection]) -> None:
        """Take custody of what ``open`` gave (``None``: nothing was started).

        A ``stop`` that raced the open left the evidence to us: it cannot kill
        what it could not see yet, and must not report ``NoResource`` for it.
        The reader, once started, sees the latched reason and retires the server.
        """
        with self._lock:
            self._opening = False
            retired = self._reason is not None
            if conn is not None:
                self._conn = conn
                if self._capture is not None:  # before the reader can record a line
                    self._capture.event("open", self._transport.describe())
        if conn is None:
            if retired:
                self._record_retirement(NoResource(), None)
            return
        self._start_reader(conn)

    def _start_reader(self, conn: Connection) -> None:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)  # a wake-up never blocks whoever sends it
        reader = _threads.named(self._read_loop, "mcp-reader-%s" % (conn.pid or id(self)),
                                (conn, wake_r))
        with self._lock:
            self._wake_w = wake_w
        _ACTIVE.add(self)
        try:
            _threads.start(reader)
        except RuntimeError as e:  # out of threads: retire here, in the opener's thread
            self._request_retirement(ClientBroken("cannot start the reader thread: %s" % e))
            self._finish(conn, wake_r)
            raise TransportFailed("cannot start the reader thread: %s" % e) from e
        self._reader = reader

    def _handshake(self) -> InitializeResult:
        params = protocol.initialize_params(self.options.client_info)
        try:
            raw = self._request("initialize", params, self.options.handshake_timeout)
            result = protocol.decode_initialize(raw)
        except ForeignVersionFault as e:
            raise VersionUnsupported(e) from e
        except (ClientError, ProtocolFault) as e:
            text = e.headline() if isinstance(e, StderrTail) else str(e)
            raise HandshakeFailed("initialize failed: %s" % text, e) from e
        if result.tools is None:
            raise ToolsNotDeclared("server %r declares no tools capability"
                                   % result.server_info.name)
        self._notify("notifications/initialized")
        with self._lock:
            if self._state is not State.CONNECTING:
                raise HandshakeFailed("client died during the handshake: %s" % self._reason)
            self._move(State.READY)
        self.initialize_result = result
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

        Never blocks. In a process that inherited the client through ``fork`` it
        does nothing: the server is the parent's.
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

        Never blocks. Everything else -- failing the doomed calls, the kill, the
        reaping -- is the reader's (:meth:`_finish`), a thread no signal handler
        interrupts. The latch itself is straight-line stores under ``_lock`` and
        ends with the wake-up's one system call: an asynchronous exception can
        land before the latch (nothing happened) or after the wake-up (all of it
        did), never in between.
        """
        target = State.BROKEN if isinstance(reason, ClientBroken) else State.CLOSED
        with self._lock:
            if self._state in _ENDED:
                return
            if target not in _TRANSITIONS[self._state]:
                target = State.CLOSED  # a parked client cannot break: it only closes
            self._state, self._reason = target, reason
            self._doomed, self._pending = self._pending, {}
            self._last_timer = self._timer or self._last_timer
            self._timer, self._timer_deadline = None, _INF
            parked = self._conn is None and not self._opening  # else the opener records it
            if self._wake_w >= 0:
                try:
                    os.write(self._wake_w, b"x")
                except OSError:  # already signalled (full)
                    pass
        if parked:
            self._record_retirement(NoResource(), None)

    def _wake_reader(self) -> None:
        with self._lock:  # the reader closes _wake_w under this lock on its way out
            if self._wake_w >= 0:
                try:
                    os.write(self._wake_w, b"x")
                except OSError:  # already signalled (full) or closing
                    pass

    def _await_retirement(self, deadline: float) -> Retirement:
        if not self._retired.is_set():
            self._retire_unopened()
        if not self._retired.wait(_lock_timeout(deadline)):
            raise RetirementTimedOut("server %s not confirmed gone in time"
                                     % self._transport.describe())
        self._join_threads(deadline)
        if self._retire_fault is not None:
            raise self._retire_fault
        assert self._evidence is not None
        return self._evidence

    def _retire_unopened(self) -> None:
        # A latch interrupted (by a signal handler's exception) before it could
        # record the evidence of a client that never opened anything.
        with self._lock:
            unopened = self._reason is not None and self._conn is None and not self._opening
        if unopened:
            self._record_retirement(NoResource(), None)

    def _join_threads(self, deadline: float) -> None:
        timer = None if self._last_timer is None else self._last_timer.thread
        for thread in (self._reader, timer, self._last_answerer):
            if thread is not None and thread is not threading.current_thread():
                thread.join(_lock_timeout(deadline))
                if thread.is_alive():
                    raise RetirementTimedOut("thread %s has not ended" % thread.name)

    def _record_retirement(self, evidence: Optional[Retirement],
                           fault: Optional[RetirementError]) -> None:
        with self._lock:  # once: the opener and a late latch may both find it unopened
            if self._recorded:
                return
            self._recorded = True
        self._evidence, self._retire_fault = evidence, fault
        _ACTIVE.discard(self)
        if self._capture is not None:
            if self._reason is not None:  # recorded here, not in the latch: that stays straight-line
                self._capture.died(self._reason)
            self._capture.event("retired", repr(evidence or fault))
            self._capture.close()
        self._retired.set()

    # ------------------------------------------------------------------ calls

    def list_tools(self, timeout: Optional[float] = None) -> Tuple[ToolDescriptor, ...]:
        """Every tool, following ``nextCursor`` for at most ``max_tool_pages`` pages.

        One deadline covers the whole listing.
        """
        timeout = self.options.request_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        tools: List[ToolDescriptor] = []
        ahead: _Ahead = self._start("tools/list", protocol.tools_list_params(None),
                                    timeout, deadline)
        for page in range(1, self.options.max_tool_pages + 1):
            assert isinstance(ahead, _Call)
            raw = self._await(ahead)
            cursor = _decoded(protocol.page_cursor, raw)
            ahead = None
            if cursor is not None and page < self.options.max_tool_pages:
                ahead = self._ask_ahead(cursor, timeout, deadline)
            tools.extend(self._page_tools(raw, ahead))
            if cursor is None:
                return tuple(tools)
        raise TooManyPages(self.options.max_tool_pages)

    def _ask_ahead(self, cursor: str, timeout: float, deadline: float) -> _Ahead:
        """Ask for the next page before this one is decoded, so that the server
        works on it meanwhile. A failure to ask is kept, and raised only after
        this page has been decoded: what a listing raises does not change."""
        try:
            return self._start("tools/list", protocol.tools_list_params(cursor), timeout, deadline)
        except (ClientError, EncodeRefused) as e:
            return e

    def _page_tools(self, raw: JsonValue, ahead: _Ahead) -> Tuple[ToolDescriptor, ...]:
        """The tools of one page; a bad page abandons the page already asked for
        (its answer, come what may, is dropped as a late one)."""
        try:
            tools = _decoded(protocol.decode_tools_page, raw).tools
        except BaseException:
            if isinstance(ahead, _Call):
                self._unregister(ahead.id)
            raise
        if isinstance(ahead, Exception):
            raise ahead
        return tools

    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None,
                  timeout: Optional[float] = None) -> CallToolResult:
        """Call the tool whose wire name is ``name``. ``isError`` is a result, not an exception."""
        params = protocol.call_tool_params(name, dict(arguments or {}))
        raw = self._request("tools/call", params, self._timeout(timeout))
        return _decoded(protocol.decode_call_tool, raw)

    def ping(self, timeout: Optional[float] = None) -> None:
        """Round-trip a ``ping``; the answer must be an object (the spec's empty result)."""
        raw = self._request("ping", None, self._timeout(timeout))
        if type(raw) is not dict:
            raise ResultMalformed(ProtocolFault("ping result is not an object"))

    def _timeout(self, timeout: Optional[float]) -> float:
        return self.options.request_timeout if timeout is None else timeout

    def _request(self, method: str, params: JsonValue, timeout: float) -> JsonValue:
        return self._await(self._start(method, params, timeout, time.monotonic() + timeout))

    def _start(self, method: str, params: JsonValue, timeout: float, deadline: float) -> _Call:
        """Register, frame and send one request; :meth:`_await` then waits for it.

        A call abandoned on the way (a refused encoding, an interrupt) leaves the
        table at once: no answer is awaited for it, nor a deadline kept.
        """
        call = self._register(method, timeout, deadline)
        try:
            self._send(frame(jsonrpc.request(call.id, method, params)), call)
        except BaseException:
            self._unregister(call.id)
            raise
        return call

    def _register(self, method: str, timeout: float, deadline: float) -> _Call:
        self._check_owner()
        with self._lock:
            if self._state is not State.READY or method == "initialize":
                self._check_open(method == "initialize")
            self._next_id += 1
            call = _Call(self._next_id, method, timeout, deadline)
            self._pending[call.id] = call
            if deadline < self._timer_deadline:
                self._arm_timer(deadline)
        return call

    def _check_open(self, handshake: bool) -> None:
        if self._reason is not None:
            raise _fresh(self._reason)
        expected = State.CONNECTING if handshake else State.READY
        if self._state is not expected:
            raise Unavailable("client is %s, not %s" % (self._state.value, expected.value))

    def _unregister(self, ident: int) -> Optional[_Call]:
        with self._lock:
            return self._pending.pop(ident, None)

    def _send(self, data: bytes, call: _Call) -> None:
        conn = self._conn
        assert conn is not None
        if self._capture is not None:
            self._capture.line("send", data[:-1])
        self._write_frame(conn, data, call)

    def _write_frame(self, conn: Connection, data: bytes, call: _Call) -> None:
        """Write one request (a small one perhaps with others); a stall is the
        call's timeout, a failure or a frame cut short the client's death.

        A frame cut short by an exception from elsewhere (a signal handler's
        ``KeyboardInterrupt``) poisons the stream just as a stall does: the
        exception goes on to the caller, and the client dies ``ClientBroken``.
        """
        try:
            if len(data) <= ATOMIC_WRITE_BYTES:
                self._send_queued(conn, data, call)
            else:
                conn.write(data, call.deadline)
        except WriteStalled as e:
            self._settle_timeout(call)
            if e.written:  # a half-written frame poisons the stream for everyone
                self._request_retirement(ClientBroken("write to the server stalled mid-frame"))
        except WriteFailed as e:
            self._request_retirement(ClientBroken(e.reason))
        except BaseException as e:
            if conn.torn:
                self._request_retirement(ClientBroken(
                    "a frame was cut short by %s: the stream is poisoned" % type(e).__name__))
            raise

    def _send_queued(self, conn: Connection, data: bytes, call: _Call) -> None:
        """Write a small frame now if the writing turn is free and no frame is
        queued; else queue it, and write the queue if the turn is free then.

        A caller that finds the turn taken does not wait for it: the holder
        writes every frame queued before it lets go, and looks again after
        letting go, so a frame queued meanwhile is written by one or the other.
        A holder that stalls hands what is left back to its callers instead.
        """
        sent = self._write_alone(conn, data, call) if not self._outbox else None
        if sent is None:
            call.frame = data
            self._outbox.append(call)
        stalled = sent is False
        if self._outbox and self._take_turns(conn, call.deadline, stalled) or stalled:
            raise WriteStalled(0)

    def _write_alone(self, conn: Connection, data: bytes, call: _Call) -> Optional[bool]:
        """Write ``data`` under the turn: ``True`` written, ``False`` stalled
        (nothing written), ``None`` the turn was taken. The turn is released on
        every exit, however it is interrupted (see ``_PipeWriter``'s discipline)."""
        turn = self._turn
        try:
            if not turn.acquire(False):
                return None
            conn.write(data, call.deadline)
            return True
        except WriteStalled as e:
            if e.written:  # not whole after all: the stream is poisoned
                raise
            return False
        finally:
            try:
                turn.release()
            except RuntimeError:  # not ours: the turn was taken
                pass

    def _take_turns(self, conn: Connection, deadline: float, stalled: bool) -> bool:
        """Write (or, once stalled, hand back) the queue for as long as the turn
        is free and anything is queued; whether a write stalled."""
        turn = self._turn
        while self._outbox:
            try:
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
        """Write queued frames, a batch of at most ``_BATCH_BYTES`` at a time,
        until none is left (under the turn). A batch is written whole or not at
        all; one that stalls until ``deadline`` goes back to the queue's head."""
        while self._outbox:
            if time.monotonic() > deadline:
                raise WriteStalled(0)
            batch = self._next_batch()
            try:
                conn.write(b"".join([call.frame or b"" for call in batch]), deadline)
            except WriteStalled as e:
                if e.written:  # not a whole batch after all: the stream is poisoned
                    raise WriteFailed("write to the server stalled mid-frame") from e
                self._outbox.extendleft(reversed(batch))
                raise
            for call in batch:
                call.frame = None

    def _next_batch(self) -> List[_Call]:
        """Frames from the head of the queue, up to ``_BATCH_BYTES``; the frame
        of a call that has been settled meanwhile (timed out) is dropped."""
        batch: List[_Call] = []
        size = 0
        outbox, pending = self._outbox, self._pending
        while outbox and size + len(outbox[0].frame or b"") <= _BATCH_BYTES:
            call = outbox.popleft()
            if call.id in pending:
                batch.append(call)
                size += len(call.frame or b"")
        return batch

    def _hand_back(self) -> None:
        """Give every queued frame back to its caller (under the turn).

        Each call is taken out of ``_pending`` -- no answer can come for a frame
        never written -- and settled as :data:`_UNSENT`, which sends its caller
        to write the frame itself, by its own deadline (:meth:`_resend`).
        """
        outbox = self._outbox
        while outbox:
            call = outbox.popleft()
            with self._lock:
                taken = self._pending.pop(call.id, None) is call
            if taken:
                call.settle(_UNSENT)

    def _resend(self, call: _Call) -> None:
        """Send again the frame of a call :meth:`_hand_back` gave back, pending
        again meanwhile -- unless its deadline has passed: then it has timed out."""
        call.reopen()
        with self._lock:
            self._check_open(call.method == "initialize")
            self._pending[call.id] = call
            if call.deadline < self._timer_deadline:
                self._arm_timer(call.deadline)
        conn = self._conn
        assert conn is not None
        if time.monotonic() >= call.deadline:
            self._settle_timeout(call)
        else:
            self._write_frame(conn, call.frame or b"", call)

    def _notify(self, method: str) -> None:
        conn = self._conn
        assert conn is not None
        data = frame(jsonrpc.notification(method))
        if self._capture is not None:
            self._capture.line("send", data[:-1])
        try:
            conn.write(data, time.monotonic() + self.options.handshake_timeout)
        except (WriteStalled, WriteFailed) as e:
            self._request_retirement(ClientBroken("%s failed: %s" % (method, e)))
            raise HandshakeFailed("cannot send %s: %s" % (method, e), e) from e

    def _await(self, call: _Call) -> JsonValue:
        try:
            while True:
                if not call.wait(_lock_timeout(call.deadline + _TIMER_SLACK)):
                    self._settle_timeout(call)
                    call.wait(None)  # settled by now: by us, or by whoever took it just before
                if not call.unsent():
                    return call.outcome()
                self._resend(call)
        except BaseException:  # interrupted: nobody awaits its answer any more
            self._unregister(call.id)
            raise

    def _settle_timeout(self, call: _Call) -> None:
        if self._unregister(call.id) is call:
            if self._capture is not None:  # before the caller can send anything else
                self._capture.timed_out(call.id, call.method)
            call.fail(CallTimedOut(call.method, call.timeout))

    # ------------------------------------------------------------------ the timer

    def _arm_timer(self, deadline: float) -> None:
        """Arm the one timer for ``deadline`` (under ``_lock``).

        A timer that cannot start (no thread to be had) is no timer: each caller
        still stops at its own deadline (:meth:`_await`), and the next call that
        registers tries again.
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_deadline = None, _INF
        timer = _Timer(_lock_timeout(deadline), self._on_timer,
                       "mcp-timer-%s" % (self.pid or id(self)))
        try:
            _threads.start(timer.thread)
        except RuntimeError as e:
            log.warning("cannot start the deadline timer (%s); callers keep their own", e)
            return
        self._timer, self._timer_deadline = timer, deadline
        self._last_timer = timer

    def _on_timer(self, timer: "_Timer") -> None:
        try:
            for call in self._take_due_calls(timer):
                call.fail(CallTimedOut(call.method, call.timeout))
        except Exception:  # a death path like any other: never leave callers hanging
            log.exception("timer thread failed")
            self._request_retirement(ClientBroken("internal error in the timer thread"))

    def _take_due_calls(self, timer: "_Timer") -> List[_Call]:
        now = time.monotonic()
        with self._lock:
            if self._timer is not timer:
                return []  # superseded or cancelled while firing
            self._timer, self._timer_deadline = None, _INF
            due = [call for call in self._pending.values() if call.deadline <= now]
            for call in due:
                del self._pending[call.id]
            if self._pending:
                self._arm_timer(min(call.deadline for call in self._pending.values()))
        return due

    # ------------------------------------------------------------------ the reader

    def _read_loop(self, conn: Connection, wake_r: int) -> None:
        try:
            self._drain(conn, wake_r)
        except Exception as e:  # a bug of ours must not strand callers: die loudly
            log.exception("reader thread failed")
            self._request_retirement(ClientBroken("internal error in the reader: %r" % e))
        finally:
            self._finish(conn, wake_r)

    def _drain(self, conn: Connection, wake_r: int) -> None:
        buffer = Buffer()
        with selectors.DefaultSelector() as selector:
            selector.register(conn.read_fd, selectors.EVENT_READ)
            selector.register(wake_r, selectors.EVENT_READ)
            if conn.stderr_fd is not None:  # drained always: the server never blocks on it
                selector.register(conn.stderr_fd, selectors.EVENT_READ)
            while self._reason is None:
                for key, _ in selector.select():
                    if key.fd == wake_r:
                        return
                    if key.fd == conn.stderr_fd:
                        if not self._stderr_chunk(key.fd):
                            selector.unregister(key.fd)
                    elif not self._read_some(conn.read_fd, buffer):
                        return

    def _read_some(self, fd: int, buffer: Buffer) -> bool:
        """Read what is there and dispatch it; ``False`` once the client must stop reading."""
        try:
            chunk = os.read(fd, buffer.read_size())
        except BlockingIOError:
            return True
        if not chunk:
            if self._capture is not None:
                self._capture.eof()
            self._request_retirement(ClientBroken("server closed its stdout"))
            return False
        try:
            lines = buffer.push(chunk)
        except FramingFault as e:
            self._record_raw_fault(e)
            self._request_retirement(ClientBroken("framing: %s" % e.reason))
            return False
        for line in lines:
            if not self._dispatch(line):
                return False
        if self._capture is not None:
            self._capture.drain()  # the read's lines, recorded one by one, in one write
        return True

    def _record_raw_fault(self, fault: FramingFault) -> None:
        if self._capture is not None:
            self._capture.event("framing-fault", fault.reason)

    def _dispatch(self, line: bytes) -> bool:
        if self._capture is not None:
            self._capture.line("recv", line, now=False)
        try:
            message = jsonrpc.decode(line)
        except MessageFault as e:
            return self._refuse(line, e)
        if isinstance(message, jsonrpc.Response):
            self._settle(message)
        elif isinstance(message, jsonrpc.ServerRequest):
            self._answer(message)
        else:
            log.debug("dropped notification %s", message.method)
        return self._reason is None

    def _refuse(self, line: bytes, fault: MessageFault) -> bool:
        """Skip ``line`` if it is noise and still tolerated (``True``); else die."""
        tolerated = self.options.tolerated_noise_lines
        if not isinstance(fault, MalformedMessage):  # JSON, yet not JSON-RPC: a lie, not a log
            reason = fault.reason
        elif self._noise_skipped < tolerated:
            self._skip_noise(line, tolerated)
            return True
        else:
            reason = noise.refusal(fault, line, self._noise_skipped)
        self._request_retirement(ClientBroken("server sent an invalid line: %s" % reason))
        return False

    def _skip_noise(self, line: bytes, tolerated: int) -> None:
        # Recorded as a capture event too, so that a replay tolerates as many.
        self._noise_skipped += 1
        shown = noise.show(line)
        if self._first_noise is None:
            self._first_noise = shown
        log.warning("%r skipped stdout line %d of %d tolerated, not JSON: %s",
                    self, self._noise_skipped, tolerated, shown)
        if self._capture is not None:
            self._capture.event("noise-skipped", "%d of %d" % (self._noise_skipped, tolerated))

    def _settle(self, response: jsonrpc.Response) -> None:
        call = self._unregister(response.id) if type(response.id) is int else None
        if call is None:
            log.debug("dropped response for unknown or late id %r", response.id)
        elif response.error is not None:
            call.fail(ServerError(response.error))
        else:
            call.settle(response.result)

    def _answer(self, request: jsonrpc.ServerRequest) -> None:
        if request.method == "ping":  # the spec's MUST: answer promptly, empty result
            reply = jsonrpc.result_response(request.id, {})
        else:
            log.debug("refused server request %s", request.method)
            reply = jsonrpc.error_response(request.id, jsonrpc.METHOD_NOT_FOUND,
                                           "method not found: this client serves no requests")
        self._reply(frame(reply))

    def _reply(self, data: bytes) -> None:
        """Answer a server's request without ever blocking the reader.

        Written at once when the writer is free and the pipe has room; else
        queued for the answerer thread, which writes it by its own deadline, so
        answers already on their way to the caller are never kept waiting behind
        a large upload, and no caller waits behind an answer past its deadline.
        """
        conn = self._conn
        assert conn is not None
        if self._capture is not None:
            self._capture.line("send", data[:-1])
        if not self._answers and len(data) <= ATOMIC_WRITE_BYTES:
            try:
                conn.write(data, 0.0)  # a deadline already past: try once, never wait
                return
            except WriteStalled:
                pass  # nothing of it was written: a small frame is written whole or not
            except WriteFailed as e:
                self._request_retirement(ClientBroken(e.reason))
                return
        self._queue_answer(conn, data)

    def _queue_answer(self, conn: Connection, data: bytes) -> None:
        answerer = None
        with self._lock:
            self._answers.append((data, time.monotonic() + _ANSWER_TIMEOUT))
            if self._answerer is None:
                answerer = self._answerer = _threads.named(
                    self._answer_loop, "mcp-answer-%s" % (conn.pid or id(self)), (conn,))
        if answerer is None:
            return  # the running answerer takes it
        try:
            _threads.start(answerer)
        except RuntimeError as e:
            with self._lock:
                dropped, self._answerer = len(self._answers), None
                self._answers.clear()
            log.debug("dropped %d answers to the server: no thread for them (%s)", dropped, e)
            return
        self._last_answerer = answerer

    def _answer_loop(self, conn: Connection) -> None:
        while True:
            with self._lock:
                if not self._answers or self._reason is not None:
                    dropped = len(self._answers)
                    self._answers.clear()
                    self._answerer = None
                    break
                data, deadline = self._answers.popleft()
            self._write_answer(conn, data, deadline)
        if dropped:
            log.debug("dropped %d answers to the server: the client is retired", dropped)

    def _write_answer(self, conn: Connection, data: bytes, deadline: float) -> None:
        try:
            conn.write(data, deadline)
        except WriteStalled as e:
            if e.written:
                self._request_retirement(ClientBroken("answer to the server stalled mid-frame"))
            else:
                log.debug("dropped an answer to the server: it did not read it in %ss",
                          _ANSWER_TIMEOUT)
        except WriteFailed as e:
            self._request_retirement(ClientBroken(e.reason))

    def _finish(self, conn: Connection, wake_r: int) -> None:
        """The reader's way out: settle what the retirement doomed, end the
        server (at once, or after ``retire_grace``), reap it, and close every
        descriptor. Only the reader (or an opener whose reader could not start)
        runs it, so no signal handler can cut it short.

        The doomed calls are failed once the server's stderr has had a moment
        to tell why it died (:data:`_STDERR_SETTLE`), so the error carries it.
        """
        self._request_retirement(ClientBroken("reader stopped"))  # no-op when already latched
        settle = _STDERR_SETTLE if isinstance(self._reason, ClientBroken) else 0.0
        self._read_stderr(conn, time.monotonic() + settle)
        self._attach_tail()
        self._fail_doomed()
        with self._lock:
            os.close(self._wake_w)
            self._wake_w = -1
            timer = self._last_timer
        os.close(wake_r)
        if timer is not None:
            timer.cancel()
        evidence, fault = self._end_server(conn)
        conn.dispose_input(time.monotonic() + self.options.retire_timeout)
        self._record_retirement(evidence, fault)

    def _end_server(self, conn: Connection) -> Tuple[Optional[Retirement], Optional[RetirementError]]:
        """Kill and reap; with a grace, first EOF and a wait for the server's own exit."""
        grace = self.options.retire_grace
        try:
            if grace > 0:
                exited = self._await_polite_exit(conn, time.monotonic() + grace)
                if exited is not None:
                    conn.close_output()
                    return exited, None
            conn.kill()  # whoever gets here first kills; kill is idempotent and never waits
            conn.close_output()  # a server blocked writing to us must not block its end
            return conn.wait(None), None
        except RetirementError as e:
            conn.close_output()
            return None, e

    def _await_polite_exit(self, conn: Connection, deadline: float) -> Optional[Retirement]:
        """The spec's stdio shutdown: close the server's stdin and wait until
        ``deadline`` for it to exit by itself (draining its stderr meanwhile)."""
        conn.close_input()
        while True:
            try:
                return conn.wait(time.monotonic())  # a look, never a wait
            except RetirementTimedOut:
                pass
            if time.monotonic() >= deadline:
                return None
            if not self._read_stderr(conn, min(deadline, time.monotonic() + 0.02)):
                time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))

    def _read_stderr(self, conn: Connection, deadline: float) -> bool:
        """Read the server's stderr until its EOF or ``deadline``; whether it is still open."""
        fd = conn.stderr_fd
        if fd is None or self._stderr_done:
            return False
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            if not self._stderr_chunk(fd):
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000.0):
                return True

    def _stderr_chunk(self, fd: int) -> bool:
        """Take what the server's stderr holds now; ``False`` at its EOF."""
        while True:
            try:
                chunk = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                return True
            except OSError:  # closed under us: as good as EOF
                chunk = b""
            logged = _SERVER_LOG.isEnabledFor(logging.INFO)
            if not chunk:
                self._stderr_done = True
                self._log_stderr(self._stderr.close() if logged else [])
                return False
            self._log_stderr(self._stderr.push(chunk, lines=logged))

    def _log_stderr(self, lines: List[str]) -> None:
        if lines:
            name = self._server_name()
            for line in lines:
                _SERVER_LOG.info("%s: %s", name, line, extra={"server": name})

    def _server_name(self) -> str:
        result = self.initialize_result
        return result.server_info.name if result is not None else self._transport.describe()

    def _attach_tail(self) -> None:
        reason = self._reason
        if reason is not None and not reason.stderr_tail:
            reason.stderr_tail = self._stderr.text()

    def _fail_doomed(self) -> None:
        with self._lock:
            doomed, self._doomed = self._doomed, {}
            reason = self._reason
        assert reason is not None
        for call in doomed.values():
            call.fail(_fresh(reason))


def _lock_timeout(deadline: float) -> float:
    """Seconds until ``deadline``, as a lock's ``acquire`` takes them."""
    return min(max(0.0, deadline - time.monotonic()), threading.TIMEOUT_MAX)


def _fresh(reason: Unavailable) -> Unavailable:
    # One instance raised in many threads would grow one shared __traceback__;
    # every caller gets its own copy of the latched reason instead.
    fresh = type(reason)(reason.reason)
    fresh.stderr_tail = reason.stderr_tail
    return fresh


_T = TypeVar("_T")


def _decoded(decode: Callable[[JsonValue], _T], raw: JsonValue) -> _T:
    try:
        return decode(raw)
    except ProtocolFault as e:
        raise ResultMalformed(e) from e


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
    threading.Thread(target=client.stop, name="mcp-owner-gone", daemon=True).start()


def start(transport: TransportLike, options: Optional[Options] = None) -> Client:
    """:func:`prepare` then :meth:`Client.connect`; returns the ready client."""
    client = prepare(transport, options)
    client.connect()
    return client


# ---------------------------------------------------------------------- interpreter exit


class _ActiveClients:
    """Every client with an open transport, so none outlives the interpreter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: Set[Client] = set()

    def add(self, client: Client) -> None:
        with self._lock:
            self._clients.add(client)

    def discard(self, client: Client) -> None:
        with self._lock:
            self._clients.discard(client)

    def snapshot(self) -> List[Client]:
        with self._lock:
            return list(self._clients)

    def forget(self) -> None:
        """In a forked child: none of these is ours. A new lock, since a parent's
        thread may have held the old one at the fork."""
        self._lock = threading.Lock()
        self._clients = set()


_ACTIVE = _ActiveClients()


class _Forks:
    """What a ``fork`` changes for this package, reset in the child at once.

    The child gets a copy of every client, but not their threads, and their
    locks in whatever state the parent's threads held them. So it must touch
    none of it: it bumps ``generation``, which makes every inherited client
    inert (a call raises :class:`ClientInherited` before taking any lock; stop
    and ``with``-exit do nothing), and forgets the active set, so its ``atexit``
    neither signals the parent's servers nor writes to the parent's pipes.
    The inherited descriptors stay open in the child until it exits or execs
    (they are close-on-exec), as ``subprocess``'s own do.
    """

    def __init__(self) -> None:
        self.generation = 0

    def after_in_child(self) -> None:
        self.generation += 1
        _ACTIVE.forget()


_FORKS = _Forks()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_FORKS.after_in_child)


class _Timer:
    """The deadline timer's thread: fires ``fire(self)`` after ``delay`` unless
    cancelled first. ``threading.Timer``'s shape, on a thread made by
    :mod:`~mcp_client._threads` (signals blocked, startable through the seam)."""

    def __init__(self, delay: float, fire: Callable[["_Timer"], None], name: str) -> None:
        self._delay = delay
        self._fire = fire
        self._cancelled = threading.Event()
        self.thread = _threads.named(self._run, name)

    def cancel(self) -> None:
        self._cancelled.set()

    def _run(self) -> None:
        if not self._cancelled.wait(self._delay):
            self._fire(self)


@atexit.register
def _retire_all_at_exit() -> None:
    for client in _ACTIVE.snapshot():
        try:
            client.shutdown()
        except RetirementError:
            log.warning("server of %r not confirmed gone at exit", client)
