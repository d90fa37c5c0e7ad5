"""The path of one request: registered, sent, awaited, timed out.

:class:`Requests` holds a client's table of pending calls
(:class:`~mcp_client._core._calls.CallTable`), its write combiner
(:class:`~mcp_client._core._outbox.Outbox`) and its deadline timer
(:class:`~mcp_client._core._timer.DeadlineTimer`), and walks each request through
them on its caller's thread: mint an id and register the call, frame and
send it (a stall is the call's timeout; a failure, or a frame cut short, the
client's death), and wait -- on the call's own waiter, until the answer, the
timer, a retirement, or the caller's own backstop settles it.

Every field of the three parts is guarded by the session's ``lock`` (see their
modules; the table is the session's). A caller interrupted on the way (an
exception from a signal handler) takes its call out of the table: no answer is
awaited for it any more.
"""

from __future__ import annotations

import logging
import time

from .. import protocol
from ..errors import (
    CallTimedOut,
    ClientBroken,
    ClientError,
    ProtocolFault,
    ResultMalformed,
    TooManyPages,
    WriteFailed,
    WriteStalled,
)
from ..jsonvalue import EncodeRefused, check
from ..stdio import frame_request
from . import LOGGER
from ._calls import UNSENT, Call
from ._census import FORKS
from ._outbox import Outbox
from ._session import Session, fresh
from ._state import State
from ._threads import until
from ._timer import DeadlineTimer, Shot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, List, Optional, Tuple, TypeVar, Union

    from ..jsonvalue import JsonValue

__all__ = ["Requests"]

log = logging.getLogger(LOGGER)

#: A caller's own backstop beyond its deadline, should the timer thread be starved.
TIMER_SLACK = 0.05

#: The next page of a listing: asked for, or why it could not be.
if TYPE_CHECKING:
    _Ahead = Union[Call, ClientError, EncodeRefused, None]


class Requests:
    """Every request of one client, from its id to its outcome."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.calls = session.calls
        self._outbox = Outbox(session.lock, self.calls)
        self.timer = DeadlineTimer(
            self._on_timer,
            lambda: (
                "mcp-timer-%s"
                % (
                    session.conn.pid
                    if session.conn is not None and session.conn.pid
                    else id(session)
                )
            ),
        )

    def request(self, method: str, params: JsonValue, timeout: float) -> JsonValue:
        """Send one request and return its result (or raise what settled it)."""
        return self.wait_for(self.start(method, params, timeout, time.monotonic() + timeout))

    def start(self, method: str, params: JsonValue, timeout: float, deadline: float) -> Call:
        """Register, frame and send one request; :meth:`wait_for` then waits for it."""
        session = self._session
        if session.generation != FORKS.generation:
            session.check_owner()
        with session.lock:
            if session.state is not State.READY or method == protocol.INITIALIZE:
                session.check_open(method == protocol.INITIALIZE)
            call = self.calls.mint(method, timeout, deadline)
            self.timer.arm(deadline)
        try:
            check(params, 1)  # the caller's part, one level inside the envelope; the rest is ours
            self._send(session.recorded(frame_request(call.id, method, params)), call)
        except BaseException:
            self.take(call.id)
            raise
        return call

    def wait_for(self, call: Call) -> JsonValue:
        try:
            while True:
                if not call.wait(until(call.deadline + TIMER_SLACK)):
                    self._settle_timeout(call)
                    call.wait(None)  # settled by now: by us, or by whoever took it just before
                result = call.outcome()  # UNSENT: the frame came back unwritten
                if result is not UNSENT:
                    return result
                self._resend(call)
        except BaseException:  # interrupted: nobody awaits its answer any more
            self.take(call.id)
            raise

    def take(self, ident: object) -> Optional[Call]:
        """Take a call out of the table (its taker settles it)."""
        return self._session.take(ident)

    def list_all(
        self, listing: protocol.Listing, timeout: float, max_pages: int
    ) -> Tuple[Any, ...]:
        """Every page of ``listing`` under one deadline, each page asked for
        before the one before it is decoded, so the server works meanwhile."""
        deadline = time.monotonic() + timeout
        items: List[Any] = []
        ahead: _Ahead = self.start(listing.method, listing.params(None), timeout, deadline)
        for page in range(1, max_pages + 1):
            assert isinstance(ahead, Call)
            raw = self.wait_for(ahead)
            cursor = decoded(protocol.page_cursor, raw)
            ahead = None
            if cursor is not None and page < max_pages:
                ahead = self._ask_ahead(listing, cursor, timeout, deadline)
            items.extend(self._page_items(listing, raw, ahead))
            if cursor is None:
                return tuple(items)
        raise TooManyPages(max_pages, listing.method)

    def _ask_ahead(
        self, listing: protocol.Listing, cursor: str, timeout: float, deadline: float
    ) -> _Ahead:
        """Ask for the next page now. A failure to ask is kept, and raised only
        after this page has been decoded: what a listing raises does not change."""
        try:
            return self.start(listing.method, listing.params(cursor), timeout, deadline)
        except (ClientError, EncodeRefused) as e:
            return e

    def _page_items(
        self, listing: protocol.Listing, raw: JsonValue, ahead: _Ahead
    ) -> Tuple[Any, ...]:
        """The items of one page; a bad page abandons the page already asked for
        (its answer, come what may, is dropped as a late one)."""
        try:
            items = decoded(listing.items, raw)
        except BaseException:
            if isinstance(ahead, Call):
                self.take(ahead.id)
            raise
        if isinstance(ahead, Exception):
            raise ahead
        return items

    def fail_doomed(self) -> None:
        """Fail every call a retirement's latch doomed, with the reason and the
        stderr tail (the reader calls it)."""
        reason = self._session.final_reason()
        with self._session.lock:
            doomed = self.calls.take_doomed()
            self.timer.cancel()
        for call in doomed:
            call.fail(fresh(reason))

    def _send(self, data: bytes, call: Call) -> None:
        """A stall is the call's timeout; a failure, or a frame cut short by a
        stall or by an exception from elsewhere (a signal handler's
        ``KeyboardInterrupt``), poisons the stream: the client dies
        ``ClientBroken``, and the exception goes on to the caller."""
        session = self._session
        conn = session.conn
        assert conn is not None
        try:
            self._outbox.send(conn, data, call)
        except WriteStalled as e:
            self._settle_timeout(call)
            if e.written:  # a half-written frame poisons the stream for everyone
                session.request_retirement(ClientBroken("write to the server stalled mid-frame"))
        except WriteFailed as e:
            session.request_retirement(ClientBroken(e.reason))
        except BaseException as e:
            if conn.torn:
                session.request_retirement(
                    ClientBroken(
                        "a frame was cut short by %s: the stream is poisoned" % type(e).__name__
                    )
                )
            raise

    def _resend(self, call: Call) -> None:
        """Send again the frame of a call the outbox gave back, pending again
        meanwhile -- unless its deadline has passed: then it has timed out."""
        call.reopen()
        with self._session.lock:
            self._session.check_open(call.method == protocol.INITIALIZE)
            self.calls.add(call)
            self.timer.arm(call.deadline)
        if time.monotonic() >= call.deadline:
            self._settle_timeout(call)
        else:
            self._send(call.frame or b"", call)

    def _settle_timeout(self, call: Call) -> None:
        if self.take(call.id) is call:
            self._timed_out([call])

    def _timed_out(self, calls: List[Call]) -> None:
        capture = self._session.capture
        for call in calls:
            if capture is not None:  # before the caller can send anything else
                capture.timed_out(call.id, call.method)
            call.fail(CallTimedOut(call.method, call.timeout))

    def _on_timer(self, shot: Shot) -> None:
        """The timer fired: time out what is due, re-arm for what is left."""
        try:
            now = time.monotonic()
            with self._session.lock:
                if not self.timer.claim(shot):
                    return  # superseded or cancelled while firing
                due = self.calls.take_due(now)
                if self.calls:  # re-armed for what is left, whether or not any was due
                    self.timer.arm(self.calls.earliest())
            self._timed_out(due)
        except Exception:  # a death path like any other: never leave callers hanging
            log.exception("timer thread failed")
            self._session.request_retirement(ClientBroken("internal error in the timer thread"))


if TYPE_CHECKING:
    _T = TypeVar("_T")


def decoded(decode: Callable[[JsonValue], _T], raw: JsonValue) -> _T:
    """``decode(raw)``, a result's shape fault raised as :class:`ResultMalformed`."""
    try:
        return decode(raw)
    except ProtocolFault as e:
        raise ResultMalformed(e) from e
