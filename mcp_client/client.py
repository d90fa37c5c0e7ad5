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

from . import __version__, jsonrpc, protocol
from .capture import Capture, CaptureTarget, open_capture
from .errors import (
    CallTimedOut,
    ClientBroken,
    ClientClosed,
    ClientError,
    CleanupUnconfirmed,
    FramingFault,
    HandshakeFailed,
    MessageFault,
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
    UnsupportedVersion,
    VersionUnsupported,
    WriteFailed,
    WriteStalled,
)
from .jsonvalue import EncodeRefused, JsonValue
from .protocol import CallToolResult, ClientInfo, InitializeResult, ToolDescriptor
from .stdio import Buffer, frame
from .transport import (
    Connection,
    NoResource,
    ProcessTransport,
    Retirement,
    Spawn,
    Transport,
)

__all__ = [
    "Options", "Client", "prepare", "prepare_owned", "start", "State",
    "ClientError", "Unavailable", "ClientClosed", "ClientBroken", "CallTimedOut",
    "ServerError", "ResultMalformed", "TooManyPages",
    "StartError", "TransportFailed", "HandshakeFailed", "VersionUnsupported",
    "ToolsNotDeclared", "CleanupUnconfirmed",
    "RetirementError", "RetirementTimedOut", "RetirementUnconfirmed",
]

log = logging.getLogger(__name__)

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
_BATCH_BYTES = getattr(select, "PIPE_BUF", 512)


@dataclass(frozen=True)
class Options:
    """Per-client settings; every ``timeout=`` argument of a call overrides its default.

    ``capture``: a path or a writable text file that receives the wire log
    (see :mod:`mcp_client.capture`); ``None`` records nothing.
    """

    client_info: ClientInfo = ClientInfo("mcp_client", __version__)
    handshake_timeout: float = 30.0
    request_timeout: float = 60.0
    max_tool_pages: int = 64
    retire_timeout: float = 10.0
    capture: CaptureTarget = None


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

    __slots__ = ("id", "method", "timeout", "deadline", "frame", "_settled", "_result", "_error")

    def __init__(self, ident: int, method: str, timeout: float, deadline: float) -> None:
        self.id = ident
        self.method = method
        self.timeout = timeout
        self.deadline = deadline
        self.frame: Optional[bytes] = None  # queued for the wire and not yet written
        self._settled = threading.Lock()
        self._settled.acquire()
        self._result: Any = None
        self._error: Optional[BaseException] = None

    def settle(self, result: Any) -> None:
        self._result = result
        self._settled.release()

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._settled.release()

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
        self._turn = threading.Lock()  # the writing turn: whoever holds it writes them
        self._conn: Optional[Connection] = None
        self._opening = False  # transport.open() under way, outside the lock
        self._reader: Optional[threading.Thread] = None
        self._timer: Optional[threading.Timer] = None
        self._timer_deadline = float("inf")
        self._last_timer: Optional[threading.Timer] = None  # joined by shutdown
        self._wake_w = -1
        self._retired = threading.Event()
        self._evidence: Optional[Retirement] = None
        self._retire_fault: Optional[RetirementError] = None
        self._capture: Optional[Capture] = None
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
    def pid(self) -> Optional[int]:
        """The server's pid while one was started (for diagnostics and tests)."""
        return None if self._conn is None else self._conn.pid

    def __repr__(self) -> str:
        return "<Client %s %s>" % (self._transport.describe(), self._state.value)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, kind: Optional[type], error: Optional[BaseException], tb: Any) -> None:
        try:
            self.shutdown()
        except RetirementError:
            if error is None:
                raise
            log.warning("retirement unconfirmed while leaving a failed block", exc_info=True)

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
        """
        with self._lock:
            self._opening = False
            retired = self._reason is not None
            if conn is not None:
                self._conn = conn
                if self._capture is not None:  # before the reader can record a line
                    self._capture.event("open", self._transport.describe())
                self._start_reader(conn)
        if conn is None:
            if retired:
                self._record_retirement(NoResource(), None)
            return
        if retired:
            conn.kill()
            self._wake_reader()

    def _start_reader(self, conn: Connection) -> None:
        wake_r, self._wake_w = os.pipe()
        _ACTIVE.add(self)
        self._reader = threading.Thread(
            target=self._read_loop, args=(conn, wake_r), daemon=True,
            name="mcp-reader-%s" % (conn.pid or id(self)),
        )
        self._reader.start()

    def _handshake(self) -> InitializeResult:
        params = protocol.initialize_params(self.options.client_info)
        try:
            raw = self._request("initialize", params, self.options.handshake_timeout)
            result = protocol.decode_initialize(raw)
        except UnsupportedVersion as e:
            raise VersionUnsupported(e) from e
        except (ClientError, ProtocolFault) as e:
            raise HandshakeFailed("initialize failed: %s" % e, e) from e
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
        """Retire after a failed ``connect``; the error to raise."""
        self._request_retirement(ClientBroken(failure.reason))
        try:
            self._await_retirement(time.monotonic() + self.options.retire_timeout)
        except RetirementError as e:
            return CleanupUnconfirmed("%s; and retirement unconfirmed: %s" % (failure, e), self)
        return failure

    def stop(self) -> None:
        """Ask for retirement and return at once; in-flight calls fail :class:`ClientClosed`."""
        self._request_retirement(ClientClosed("client was stopped"))

    def shutdown(self, timeout: Optional[float] = None) -> Retirement:
        """Retire the server and return the evidence: :class:`NoResource` or ``Exited``.

        Idempotent: a client already retired (by a failed connect, a death, an
        earlier shutdown) returns the same evidence again.
        """
        timeout = self.options.retire_timeout if timeout is None else timeout
        self._request_retirement(ClientClosed("client was shut down"))
        return self._await_retirement(time.monotonic() + timeout)

    def _request_retirement(self, reason: Unavailable) -> None:
        """Latch ``reason`` (first one wins), fail every call, kill, wake the reader."""
        with self._lock:
            if self._state in (State.CLOSED, State.BROKEN):
                return
            self._move(State.BROKEN if isinstance(reason, ClientBroken) else State.CLOSED)
            self._reason = reason
            calls = list(self._pending.values())
            self._pending.clear()
            timer, self._timer = self._timer, None
            conn, opening = self._conn, self._opening
        log.debug("%r retiring: %s", self, reason)
        if timer is not None:
            timer.cancel()
            self._last_timer = timer
        for call in calls:
            call.fail(_fresh(reason))
        if conn is not None:
            conn.kill()
            self._wake_reader()
        elif not opening:  # else the opener records it (see _adopt)
            self._record_retirement(NoResource(), None)

    def _wake_reader(self) -> None:
        with self._lock:  # the reader closes _wake_w under this lock on its way out
            if self._wake_w >= 0:
                try:
                    os.write(self._wake_w, b"x")
                except OSError:  # already signalled (full) or closing
                    pass

    def _await_retirement(self, deadline: float) -> Retirement:
        if not self._retired.wait(max(0.0, deadline - time.monotonic())):
            raise RetirementTimedOut("server %s not confirmed gone in time"
                                     % self._transport.describe())
        self._join_threads(deadline)
        if self._retire_fault is not None:
            raise self._retire_fault
        assert self._evidence is not None
        return self._evidence

    def _join_threads(self, deadline: float) -> None:
        for thread in (self._reader, self._last_timer):
            if thread is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    raise RetirementTimedOut("thread %s has not ended" % thread.name)

    def _record_retirement(self, evidence: Optional[Retirement],
                           fault: Optional[RetirementError]) -> None:
        self._evidence, self._retire_fault = evidence, fault
        _ACTIVE.discard(self)
        if self._capture is not None:
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
        """Register, frame and send one request; :meth:`_await` then waits for it."""
        call = self._register(method, timeout, deadline)
        try:
            data = frame(jsonrpc.request(call.id, method, params))
        except EncodeRefused:
            self._unregister(call.id)
            raise
        self._send(data, call)
        return call

    def _register(self, method: str, timeout: float, deadline: float) -> _Call:
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
        call's timeout, a failure or a half-written frame the client's death."""
        try:
            if len(data) <= _BATCH_BYTES:
                self._send_queued(conn, data, call)
            else:
                conn.write(data, call.deadline)
        except WriteStalled as e:
            self._settle_timeout(call)
            if e.written:  # a half-written frame poisons the stream for everyone
                self._request_retirement(ClientBroken("write to the server stalled mid-frame"))
        except WriteFailed as e:
            self._request_retirement(ClientBroken(e.reason))

    def _send_queued(self, conn: Connection, data: bytes, call: _Call) -> None:
        """Write a small frame now if the writing turn is free and no frame is
        queued; else queue it, and write the queue if the turn is free then.

        A caller that finds the turn taken does not wait for it: the holder
        writes every frame queued before it lets go, and looks again after
        letting go, so a frame queued meanwhile is written by one or the other.
        A holder that stalls hands what is left back to its callers instead.
        """
        stalled = False
        if not self._outbox and self._turn.acquire(False):
            try:
                conn.write(data, call.deadline)
            except WriteStalled as e:
                if e.written:  # not whole after all: the stream is poisoned
                    raise
                stalled = True
            finally:
                self._turn.release()
        else:
            call.frame = data
            self._outbox.append(call)
        if self._outbox and self._take_turns(conn, call.deadline, stalled) or stalled:
            raise WriteStalled(0)

    def _take_turns(self, conn: Connection, deadline: float, stalled: bool) -> bool:
        """Write (or, once stalled, hand back) the queue for as long as the turn
        is free and anything is queued; whether a write stalled."""
        while self._outbox and self._turn.acquire(False):
            try:
                if stalled:
                    self._hand_back()
                else:
                    self._write_queued(conn, deadline)
            except WriteStalled:
                stalled = True
                self._hand_back()
            finally:
                self._turn.release()
        return stalled

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
        while True:
            if not call.wait(max(0.0, call.deadline - time.monotonic() + _TIMER_SLACK)):
                self._settle_timeout(call)
                call.wait(None)  # settled by now: by us, or by whoever took it just before
            if not call.unsent():
                return call.outcome()
            self._resend(call)

    def _settle_timeout(self, call: _Call) -> None:
        if self._unregister(call.id) is call:
            call.fail(CallTimedOut(call.method, call.timeout))

    # ------------------------------------------------------------------ the timer

    def _arm_timer(self, deadline: float) -> None:
        """Arm the one timer for ``deadline`` (under ``_lock``)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer_deadline = deadline
        self._timer = threading.Timer(_lock_timeout(deadline), self._on_timer)
        self._timer.name = "mcp-timer-%s" % (self.pid or id(self))
        self._timer.daemon = True
        self._timer.start()

    def _on_timer(self) -> None:
        try:
            for call in self._take_due_calls():
                call.fail(CallTimedOut(call.method, call.timeout))
        except Exception:  # a death path like any other: never leave callers hanging
            log.exception("timer thread failed")
            self._request_retirement(ClientBroken("internal error in the timer thread"))

    def _take_due_calls(self) -> List[_Call]:
        now = time.monotonic()
        with self._lock:
            if self._timer is not threading.current_thread():
                return []  # superseded or cancelled while firing
            self._timer, self._timer_deadline = None, float("inf")
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
            while self._reason is None:
                for key, _ in selector.select():
                    if key.fd == wake_r:
                        return
                    if not self._read_some(conn.read_fd, buffer):
                        return

    def _read_some(self, fd: int, buffer: Buffer) -> bool:
        """Read what is there and dispatch it; ``False`` once the client must stop reading."""
        try:
            chunk = os.read(fd, _READ_SIZE_LARGE if buffer.pending_bytes else _READ_SIZE)
        except BlockingIOError:
            return True
        if not chunk:
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
            self._request_retirement(ClientBroken("server sent an invalid line: %s" % e.reason))
            return False
        if isinstance(message, jsonrpc.Response):
            self._settle(message)
        elif isinstance(message, jsonrpc.ServerRequest):
            self._answer(message)
        else:
            log.debug("dropped notification %s", message.method)
        return self._reason is None

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
        conn = self._conn
        assert conn is not None
        if self._capture is not None:
            self._capture.line("send", data[:-1])
        try:
            conn.write(data, time.monotonic() + _ANSWER_TIMEOUT)
        except WriteStalled as e:
            if e.written:
                self._request_retirement(ClientBroken("answer to the server stalled mid-frame"))
        except WriteFailed as e:
            self._request_retirement(ClientBroken(e.reason))

    def _finish(self, conn: Connection, wake_r: int) -> None:
        """The reader's way out: complete the retirement and close every descriptor."""
        self._request_retirement(ClientBroken("reader stopped"))  # no-op when already latched
        with self._lock:
            os.close(self._wake_w)
            self._wake_w = -1
        os.close(wake_r)
        conn.close_output()  # first: a server blocked writing to us must not block its end
        try:
            evidence: Optional[Retirement] = conn.wait(None)
            fault: Optional[RetirementError] = None
        except RetirementError as e:
            evidence, fault = None, e
        self._record_retirement(evidence, fault)


def _lock_timeout(deadline: float) -> float:
    """Seconds until ``deadline``, as a lock's ``acquire`` takes them."""
    return min(max(0.0, deadline - time.monotonic()), threading.TIMEOUT_MAX)


def _fresh(reason: Unavailable) -> Unavailable:
    # One instance raised in many threads would grow one shared __traceback__;
    # every caller gets its own copy of the latched reason instead.
    return type(reason)(reason.reason)


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


_ACTIVE = _ActiveClients()


@atexit.register
def _retire_all_at_exit() -> None:
    for client in _ACTIVE.snapshot():
        try:
            client.shutdown()
        except RetirementError:
            log.warning("server of %r not confirmed gone at exit", client)
