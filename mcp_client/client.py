"""The client: one MCP server, its lifecycle, and every call made to it.

This module is the public face: the public calls, the properties, the
constructors and the exit hook. A client's life is a :class:`State`: parked,
connecting, ready, then one of two permanent ends, ``CLOSED`` (you retired it)
and ``BROKEN`` (it failed under you). What it does is done by private parts
behind this face (CLAUDE.md's layout describes them).

Every death path -- failed write, EOF, a line too long, not UTF-8, not
JSON-RPC; ``stop``/``shutdown``; the owner of a ``prepare_owned`` client going
away; an unexpected error in a thread -- latches the reason and dooms every
call in flight; the reader thread then fails them with :class:`Unavailable`
and retires the server.

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
import time
import weakref

from . import protocol
from ._core import _connect
from ._core._census import ACTIVE
from ._core._requests import Requests
from ._core._session import Session
from ._core._state import State
from ._frozen import Frozen
from ._lazy import lazy_aliases
from ._os import threads as _threads
from ._version import __version__
from .errors import (
    CallTimedOut,
    CleanupUnconfirmed,
    ClientBroken,
    ClientClosed,
    ClientError,
    ClientInherited,
    HandshakeFailed,
    ProtocolFault,
    ResultMalformed,
    RetirementError,
    RetirementTimedOut,
    RetirementUnconfirmed,
    ServerError,
    StartError,
    ToolsNotDeclared,
    TooManyPages,
    TransportFailed,
    Unavailable,
    VersionUnsupported,
)
from .protocol import CallToolResult, ClientInfo, InitializeResult, ToolDescriptor
from .transport import ProcessTransport, Spawn, Transport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional, Tuple, Union

    # The capture module loads when a client first records (Session.open_capture).
    from .capture import Capture, CaptureTarget
    from .transport import Retirement

State.__module__ = __name__  # its public home, as help() and pydoc show it

__all__ = [
    "Options",
    "Client",
    "prepare",
    "prepare_owned",
    "start",
    "State",
    "ClientError",
    "Unavailable",
    "ClientClosed",
    "ClientBroken",
    "ClientInherited",
    "CallTimedOut",
    "ServerError",
    "ResultMalformed",
    "TooManyPages",
    "StartError",
    "TransportFailed",
    "HandshakeFailed",
    "VersionUnsupported",
    "ToolsNotDeclared",
    "CleanupUnconfirmed",
    "RetirementError",
    "RetirementTimedOut",
    "RetirementUnconfirmed",
]

log = logging.getLogger(__name__)

_CLIENT_INFO = ClientInfo("mcp_client", __version__)


class Options(Frozen):
    """Per-client settings; every ``timeout=`` argument of a call overrides its default.

    A frozen value: change one with ``dataclasses.replace(options, field=...)``
    (it works, though ``Options`` is not a dataclass), which checks it again.

    ``capture``: a path or a writable text file that receives the wire log
    (see :mod:`mcp_client.capture`); ``None`` records nothing.

    ``retire_grace``: seconds a retirement gives the server to exit by itself
    after its stdin is closed (the spec's stdio shutdown), for servers that
    flush state on EOF; then its group is SIGKILLed. The default, 0, kills at
    once, as the design card has it. The evidence is the server's own exit code
    when it exited in time, ``Exited(-9)`` otherwise. ``stop()`` still never
    blocks; ``shutdown()``'s default timeout is ``retire_timeout`` plus it.

    ``tolerated_noise_lines``: how many stdout lines that are not JSON at all
    (log lines, banners; each shown escaped and cut short) are skipped over the
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

    __slots__ = (
        "client_info",
        "handshake_timeout",
        "request_timeout",
        "max_tool_pages",
        "retire_timeout",
        "capture",
        "retire_grace",
        "tolerated_noise_lines",
    )
    client_info: ClientInfo
    handshake_timeout: float
    request_timeout: float
    max_tool_pages: int
    retire_timeout: float
    capture: CaptureTarget
    retire_grace: float
    tolerated_noise_lines: int

    def __init__(
        self,
        client_info: ClientInfo = _CLIENT_INFO,
        handshake_timeout: float = 30.0,
        request_timeout: float = 60.0,
        max_tool_pages: int = 64,
        retire_timeout: float = 10.0,
        capture: CaptureTarget = None,
        retire_grace: float = 0.0,
        tolerated_noise_lines: int = 0,
    ) -> None:
        if not isinstance(client_info, ClientInfo):
            raise TypeError(
                "Options.client_info must be a ClientInfo, not %s" % type(client_info).__name__
            )
        _check_seconds("handshake_timeout", handshake_timeout, infinite=True)
        _check_seconds("request_timeout", request_timeout, infinite=True)
        _check_seconds("retire_timeout", retire_timeout, infinite=False)
        _check_seconds("retire_grace", retire_grace, infinite=False, zero=True)
        _check_count("max_tool_pages", max_tool_pages, least=1)
        _check_count("tolerated_noise_lines", tolerated_noise_lines, least=0)
        self._assign(
            client_info,
            handshake_timeout,
            request_timeout,
            max_tool_pages,
            retire_timeout,
            capture,
            retire_grace,
            tolerated_noise_lines,
        )


def _check_seconds(field: str, value: object, infinite: bool, zero: bool = False) -> None:
    """A duration of ``Options``: a real number (not a bool), not NaN; positive
    (or 0 with ``zero``); finite unless ``infinite``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            "Options.%s must be a number of seconds, not %s" % (field, type(value).__name__)
        )
    wanted = ("at least 0" if zero else "positive") + ("" if infinite else " and finite")
    if (
        math.isnan(value)
        or value < 0
        or (value == 0 and not zero)
        or (math.isinf(value) and not infinite)
    ):
        raise ValueError("Options.%s must be %s seconds, not %r" % (field, wanted, value))


def _check_count(field: str, value: object, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("Options.%s must be an int, not %s" % (field, type(value).__name__))
    if value < least:
        raise ValueError("Options.%s must be at least %d, not %d" % (field, least, value))


if TYPE_CHECKING:
    TransportLike = Union[Transport, Spawn]
else:  # made on first use: typing is not imported with the client
    __getattr__ = lazy_aliases(globals(), TransportLike=lambda t: t.Union[Transport, Spawn])


def _as_transport(target: TransportLike) -> Transport:
    return ProcessTransport(target) if isinstance(target, Spawn) else target


class Client:
    """One MCP server over one transport. Every method is safe from any thread.

    Made by :func:`start` (spawn and handshake), :func:`prepare` (parked: no
    process, no thread, until :meth:`connect`) or :func:`prepare_owned`. The
    calls: :meth:`list_tools`, :meth:`call_tool`, :meth:`ping`; the end:
    :meth:`stop` (asks, never blocks) and :meth:`shutdown` (waits for the
    evidence); leaving a ``with`` block shuts down. A death of the server fails
    every call in flight with :class:`Unavailable` and latches the reason.
    """

    def __init__(self, transport: TransportLike, options: Optional[Options] = None) -> None:
        self._transport = _as_transport(transport)
        self.options = options or Options()
        self._session = Session(self._transport, self.options, self)
        self._lock = self._session.lock  # one lock; named here for a test's signal handler
        self._requests = Requests(self._session)
        self.initialize_result: Optional[InitializeResult] = None

    # ------------------------------------------------------------------ introspection

    @property
    def state(self) -> State:
        """Where the client is in its life: parked, connecting, ready, closed, broken."""
        return self._session.state

    @property
    def reason(self) -> Optional[Unavailable]:
        """The latched cause once the client is closed or broken."""
        return self._session.reason

    @property
    def pid(self) -> Optional[int]:
        """The server's pid while one was started (for diagnostics and tests)."""
        conn = self._session.conn
        return None if conn is None else conn.pid

    @property
    def in_flight(self) -> int:
        """How many calls await their answer now (for diagnostics and tests)."""
        return len(self._session.calls)

    @property
    def stderr_tail(self) -> str:
        """The server's last stderr lines so far (``""`` unless the transport
        captures its stderr); complete once the client is retired."""
        return self._session.stderr.text()

    @property
    def capture(self) -> Optional[Capture]:
        """The wire log's recorder (``Options.capture``) once ``connect`` opened
        it, else ``None``; its ``complete``, ``lost`` and ``failure`` say whether
        the log holds everything (final once the client is retired)."""
        return self._session.capture

    @property
    def noise_skipped(self) -> int:
        """How many stdout lines that are not JSON were skipped (``tolerated_noise_lines``)."""
        reader = self._session.reader
        return 0 if reader is None else reader.noise[0]

    @property
    def first_noise(self) -> Optional[str]:
        """The start of the first line skipped, as :func:`noise.show` gives it; ``None`` if none."""
        reader = self._session.reader
        return None if reader is None else reader.noise[1]

    def __repr__(self) -> str:
        return repr(self._session)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, kind: Optional[type], error: Optional[BaseException], tb: Any) -> None:
        if self._session.inherited():
            return  # a forked child leaving its parent's block: not its server to retire
        try:
            self.shutdown()
        except RetirementError:
            if error is None:
                raise
            log.warning("retirement unconfirmed while leaving a failed block", exc_info=True)

    # ------------------------------------------------------------------ lifecycle

    def connect(self) -> InitializeResult:
        """Spawn, handshake, check version and tools capability, send ``initialized``.

        On any failure what was spawned is retired before the :class:`StartError`
        is raised (or :class:`CleanupUnconfirmed` when that cannot be confirmed).
        """
        self._session.check_owner()
        self._session.begin_connect()
        try:
            _connect.open_transport(self._session, self._requests)
            result = _connect.handshake(self._session, self._requests)
        except StartError as failure:
            abandoned = self._abandon(failure)
            if abandoned is failure:
                raise
            raise abandoned from failure  # CleanupUnconfirmed, caused by the failure
        self.initialize_result = result
        return result

    def _abandon(self, failure: StartError) -> StartError:
        """Retire after a failed ``connect``; the error to raise (with the
        server's last stderr lines, when they were captured)."""
        self._session.request_retirement(ClientBroken(failure.reason))
        try:
            self._await_retirement(
                time.monotonic() + self.options.retire_timeout + self.options.retire_grace
            )
        except RetirementError as e:
            return CleanupUnconfirmed("%s; and retirement unconfirmed: %s" % (failure, e), self)
        if isinstance(failure, HandshakeFailed):
            failure.stderr_tail = self.stderr_tail
        return failure

    def stop(self) -> None:
        """Ask for retirement and return at once; in-flight calls fail :class:`ClientClosed`.

        Never blocks, and safe in a signal handler, even one that lands while
        the main thread is inside the client (its lock is re-entrant for that);
        ``shutdown`` there would wait for a reader that needs the lock back. In
        a process that inherited the client through ``fork`` it does nothing:
        the server is the parent's.
        """
        if not self._session.inherited():
            self._session.request_retirement(ClientClosed("client was stopped"))

    def shutdown(self, timeout: Optional[float] = None) -> Retirement:
        """Retire the server and return the evidence: :class:`NoResource` or ``Exited``.

        Idempotent: a client already retired (by a failed connect, a death, an
        earlier shutdown) returns the same evidence again. In a process that
        inherited the client through ``fork`` it raises :class:`ClientInherited`.
        """
        self._session.check_owner()
        if timeout is None:
            timeout = self.options.retire_timeout + self.options.retire_grace
        self._session.request_retirement(ClientClosed("client was shut down"))
        return self._await_retirement(time.monotonic() + timeout)

    def _await_retirement(self, deadline: float) -> Retirement:
        session = self._session
        answerer = None if session.reader is None else session.reader.answerer.last
        threads = (session.reader_thread, self._requests.timer.thread(), answerer)
        return session.await_retirement(deadline, threads)

    # ------------------------------------------------------------------ calls

    def list_tools(self, timeout: Optional[float] = None) -> Tuple[ToolDescriptor, ...]:
        """Every tool, following ``nextCursor`` for at most ``max_tool_pages`` pages.

        One deadline covers the whole listing.
        """
        return self._requests.list_all(
            protocol.TOOLS_LISTING, self._timeout(timeout), self.options.max_tool_pages
        )

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> CallToolResult:
        """Call the tool whose wire name is ``name``. ``isError`` is a result, not an exception."""
        params = protocol.call_tool_params(name, dict(arguments or {}))
        raw = self._requests.request(protocol.TOOLS_CALL, params, self._timeout(timeout))
        try:  # a result's shape fault is ResultMalformed, as for a listing's pages
            return protocol.decode_call_tool(raw)
        except ProtocolFault as e:
            raise ResultMalformed(e) from e

    def ping(self, timeout: Optional[float] = None) -> None:
        """Round-trip a ``ping``; the answer must be an object (the spec's empty result)."""
        raw = self._requests.request(protocol.PING, None, self._timeout(timeout))
        if type(raw) is not dict:
            raise ResultMalformed(ProtocolFault("ping result is not an object"))

    def _timeout(self, timeout: Optional[float]) -> float:
        return self.options.request_timeout if timeout is None else timeout


# ---------------------------------------------------------------------- constructors


def prepare(transport: TransportLike, options: Optional[Options] = None) -> Client:
    """A parked client: no process, no thread. Publish it before any ``connect``."""
    return Client(transport, options)


def prepare_owned(
    owner: object, transport: TransportLike, options: Optional[Options] = None
) -> Client:
    """As :func:`prepare`; the client is retired when ``owner`` is garbage-collected."""
    client = Client(transport, options)
    finalizer = weakref.finalize(owner, _owner_gone, client)
    # Exit is _retire_all_at_exit's job. (Python 3.9's typeshed leaves atexit out of
    # finalize's __slots__, which mypy 1 reads as no such attribute.)
    finalizer.atexit = False  # type: ignore[misc,unused-ignore]
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
