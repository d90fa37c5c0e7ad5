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
from .._os.threads import until
from ..errors import (
    CallTimedOut,
    ClientBroken,
    ClientClosed,
    ClientError,
    ProtocolFault,
    ResultMalformed,
    TooManyPages,
    WriteFailed,
    WriteStalled,
)
from ..jsonvalue import EncodeRefused, check, encode_checked
from ..stdio import frame_encoded_request, frame_request
from . import LOGGER
from ._calls import UNSENT, Call
from ._census import FORKS
from ._outbox import Outbox
from ._session import Session, fresh
from ._state import State
from ._timer import DeadlineTimer, Shot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, List, Optional, Tuple, Union

    from ..jsonvalue import JsonValue

__all__ = ["Requests", "Walk"]

log = logging.getLogger(LOGGER)

#: A caller's own backstop beyond its deadline, should the timer thread be starved.
TIMER_SLACK = 0.05

#: The next page of a walk is not asked for: its caller gave up.
_ABANDONED = ClientClosed("the listing was given up by its caller")

#: The next page of a walk: asked for, or why it was not (nothing: no next page).
if TYPE_CHECKING:
    _Ahead = Union[Call, ClientError, EncodeRefused, None]


class Walk:
    """One listing (``tools/list`` and its pages), walked by the reader thread.

    The caller sends the first request and sleeps. Each answer is taken by the
    reader, which asks for the next page at once -- from its own thread, if the
    frame can be written without waiting -- and then decodes this one while the
    server works on the next: the caller wakes once, for the whole listing, and
    no page waits on a thread hand-off. A page the reader cannot write (the
    pipe full, the writing turn taken) goes back to the caller to write
    (settled ``UNSENT``), as the outbox does with frames it cannot write.

    The pages share one waiter (:meth:`Call.successor`) and only ``current``,
    the newest, can be settled by anyone: the reader moves ``current`` on and
    the caller gives the walk up (``abandoned``) under the session's lock, so
    that a caller who times out, or is interrupted, either takes the newest
    page or leaves it to the reader, who then asks for nothing more.

    ==========  ====================================================
    field       who writes it
    ==========  ====================================================
    current     the caller (first page), the reader (each next), under the lock
    abandoned,  the caller, under the lock (``waiting``: it still waits, past
    waiting     its deadline, for the page the reader holds to be timed out)
    pages,      the reader, one page at a time
    items
    ==========  ====================================================
    """

    __slots__ = ("listing", "max_pages", "pages", "items", "current", "abandoned", "waiting")

    def __init__(self, listing: protocol.Listing, max_pages: int) -> None:
        self.listing = listing
        self.max_pages = max_pages
        self.pages = 0
        self.items: List[Any] = []
        self.current: Call = _NO_PAGE
        self.abandoned = False
        self.waiting = False


#: A walk's ``current`` before its first page is minted (never in any table).
_NO_PAGE = Call(0, "", 0.0, 0.0)


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

    def start(
        self,
        method: str,
        params: JsonValue,
        timeout: float,
        deadline: float,
        walk: Optional[Walk] = None,
    ) -> Call:
        """Register, frame and send one request; :meth:`wait_for` then waits for it
        (or, the first page of ``walk``, :meth:`_await_walk`)."""
        session = self._session
        if session.generation != FORKS.generation:
            session.check_owner()
        with session.lock:
            if session.state is not State.READY or method == protocol.INITIALIZE:
                session.check_open(method == protocol.INITIALIZE)
            call = self.calls.mint(method, timeout, deadline)
            if walk is not None:  # before its frame leaves: the answer may come at once
                call.follow, walk.current = walk, call
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

    # ------------------------------------------------------------------ listings

    def list_all(
        self, listing: protocol.Listing, timeout: float, max_pages: int
    ) -> Tuple[Any, ...]:
        """Every page of ``listing`` under one deadline, walked by the reader (see
        :class:`Walk`): the caller sends the first request and sleeps until the
        last page is in, or the walk fails."""
        walk = Walk(listing, max_pages)
        try:  # from before the first request: an interrupt anywhere gives the walk up
            self.start(
                listing.method, listing.params(None), timeout, time.monotonic() + timeout, walk
            )
            items = self._await_walk(walk)
        except BaseException:  # interrupted, or refused: nobody awaits its pages any more
            self._abandon(walk, timed_out=False)
            raise
        finally:  # the walk and its newest page name each other: a cycle, and the items in it
            with self._session.lock:
                walk.current = _NO_PAGE
        assert isinstance(items, tuple)
        return items

    def _await_walk(self, walk: Walk) -> Any:
        """The caller's wait for a walk: as :meth:`wait_for`, on whichever page is
        the walk's newest (the one whose settlement woke it)."""
        while True:
            page = walk.current
            if not page.wait(until(page.deadline + TIMER_SLACK)):
                self._abandon(walk, timed_out=True)
                page.wait(None)  # settled by now: by us, or by the reader holding it
            page = walk.current
            result = page.outcome()
            if result is not UNSENT:
                return result
            self._resend(page)

    def _abandon(self, walk: Walk, timed_out: bool) -> None:
        """The caller gives up on ``walk``: no further page is asked for, and the
        newest is taken (and, at its deadline, timed out) if it is in the table;
        if not, whoever holds it -- the reader, mid-page -- settles it."""
        with self._session.lock:
            walk.abandoned, walk.waiting = True, timed_out
            page = self.calls.take(walk.current.id)
        if page is not None and timed_out:
            self._timed_out([page])

    def follow(self, page: Call, raw: JsonValue) -> None:
        """(The reader's.) ``page`` of a walk is answered with ``raw``: ask for the
        next page, then decode this one while the server works on it."""
        walk: Walk = page.follow
        try:
            self._follow(walk, page, raw)
        except BaseException as e:  # a bug of ours: the caller must not sleep on
            held = page if walk.current is page else self.take(walk.current.id)
            if held is not None and not held.done:
                held.fail(ClientBroken("internal error in a listing: %r" % e))
            raise

    def _follow(self, walk: Walk, page: Call, raw: JsonValue) -> None:
        walk.pages += 1
        try:
            cursor = protocol.page_cursor(raw)
        except ProtocolFault as e:
            page.fail(ResultMalformed(e))
            return
        ahead: _Ahead = None
        if cursor is not None and walk.pages < walk.max_pages:
            ahead = self._ask_next(walk, page, cursor)
        try:
            walk.items.extend(walk.listing.items(raw))
        except ProtocolFault as e:
            self._end_walk(page, ahead, ResultMalformed(e))
            return
        if isinstance(ahead, Call):
            if ahead.frame is not None:  # not written: its caller writes it
                self._hand_back(ahead)
        elif ahead is _ABANDONED:
            if walk.waiting:  # else nobody awaits it: it is nobody's
                self._timed_out([page])
        elif ahead is not None:
            page.fail(ahead)
        elif cursor is None:
            page.settle(tuple(walk.items))
        else:
            page.fail(TooManyPages(walk.max_pages, walk.listing.method))

    def _ask_next(self, walk: Walk, page: Call, cursor: str) -> _Ahead:
        """The next page, asked for by the reader: pending, and written unless
        that would mean waiting (then its ``frame`` is kept, for its caller to
        write); or why it was not asked for, raised once this page is decoded."""
        session = self._session
        params = walk.listing.params(cursor)
        try:  # before an id is given: a cursor with a lone surrogate has no UTF-8 frame
            check(params, 1)
            encoded = encode_checked(params)
        except EncodeRefused as e:
            return e
        with session.lock:
            if walk.abandoned:
                return _ABANDONED
            try:
                session.check_open(False)
            except ClientError as e:
                return e
            ahead = self.calls.mint_after(page)
            walk.current = ahead
            self.timer.arm(ahead.deadline)
        data = session.recorded(frame_encoded_request(ahead.id, ahead.method, encoded))
        if not self._try_write(data):
            ahead.frame = data
        return ahead

    def _try_write(self, data: bytes) -> bool:
        """Write a frame from the reader without waiting; ``False`` when it was not.
        A stream poisoned meanwhile counts as written: the retirement it starts
        fails the page."""
        session = self._session
        assert session.conn is not None
        try:
            return self._outbox.try_send(session.conn, data)
        except WriteStalled:  # part of a frame only: nothing else may follow it
            session.request_retirement(ClientBroken("write to the server stalled mid-frame"))
        except WriteFailed as e:
            session.request_retirement(ClientBroken(e.reason))
        return True

    def _hand_back(self, ahead: Call) -> None:
        """A page the reader could not write goes to the caller, settled
        :data:`UNSENT` (unless its deadline or a retirement took it first)."""
        if self.take(ahead.id) is ahead:
            ahead.settle(UNSENT)

    def _end_walk(self, page: Call, ahead: _Ahead, error: ClientError) -> None:
        """A bad page fails the walk, through the page asked for after it if there
        is one (its answer, come what may, is then dropped as a late one)."""
        if not isinstance(ahead, Call):
            page.fail(error)
        elif self.take(ahead.id) is ahead:
            ahead.fail(error)

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
