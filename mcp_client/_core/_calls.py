"""The calls a client waits on: a waiter for each, and the table that holds them.

* :class:`Call` -- one request awaiting its answer, and its caller's waiter.
* :class:`CallTable` -- the pending calls by the integer ids it mints, and,
  once a retirement has latched, the doomed ones its reader will fail.

The rule that makes settlement exactly-once: whoever takes a call out of the
table -- the reader (its answer), the timer (its deadline), its own caller (a
backstop), the outbox (a frame handed back), a retirement (doomed) -- settles
it; nobody else does. A second settlement is a bug of ours, and raises.

A listing's page is the one exception to "settles it", and keeps the rule for
its caller: the reader, taking a page's answer, may instead put the next page in
the table (:meth:`CallTable.mint_after`) and drop this one unsettled. The pages
share one waiter, and at any moment only the newest of them can be settled, so
the caller is still woken exactly once (see ``_requests.Walk``).
"""

from __future__ import annotations

import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from ..jsonvalue import JsonValue

__all__ = ["Call", "CallTable", "UNSENT", "INF"]

INF = float("inf")

#: What a call is settled with when its frame comes back unwritten (the outbox's
#: hand-back): its caller wakes and writes the frame itself.
UNSENT = object()


class Call:
    """One request awaiting its answer, and the caller's waiter for it.

    The waiter is one plain lock, held from birth and released by the
    settlement. A ``concurrent.futures.Future`` does the same job through a
    ``Condition`` (an ``RLock``, a lock per wait, a waiter list, a notify): ~6 us
    of CPU per call and, with 64 callers in flight, a convoy on that ``RLock``
    (measured in ``tools/bench.py``).

    ======== ==================================================================
    field    who writes it
    ======== ==================================================================
    frame    the caller, before queueing; the outbox's turn holder, once written
    _done,   the one settler (the table's rule); :meth:`reopen` only after its
    _result, waiter woke from an :data:`UNSENT` settlement
    _error
    ======== ==================================================================
    """

    __slots__ = (
        "id",
        "method",
        "timeout",
        "deadline",
        "frame",
        "_settled",
        "_done",
        "_result",
        "_error",
        "follow",
    )

    def __init__(
        self,
        ident: int,
        method: str,
        timeout: float,
        deadline: float,
        waiter: Optional[threading.Lock] = None,
    ) -> None:
        self.id = ident
        self.method = method
        self.timeout = timeout
        self.deadline = deadline
        self.frame: Optional[bytes] = None  # queued for the wire and not yet written
        #: What the reader does with this call's result instead of settling it
        #: (a listing's next step: see ``_requests.Walk``); ``None`` for a plain call.
        self.follow: Any = None
        # Held from birth, released only by the settlement; no try/finally, for
        # nothing must release it early. An interrupt here leaves no call: mint()
        # never returns this one, and nobody else ever sees its lock. A listing's
        # pages share the first page's waiter: its caller waits once, on all of them.
        if waiter is None:
            waiter = threading.Lock()
            waiter.acquire()
        self._settled = waiter
        self._done = False
        self._result: Any = None
        self._error: Optional[BaseException] = None

    def settle(self, result: Any) -> None:
        if self._done:  # the check in line: the reader runs this holding the GIL its caller needs
            self._settled_twice()
        self._done = True
        self._result = result
        self._settled.release()

    def fail(self, error: BaseException) -> None:
        if self._done:
            self._settled_twice()
        self._done = True
        self._error = error
        self._settled.release()

    @property
    def done(self) -> bool:
        """Settled (or failed) already."""
        return self._done

    def successor(self, ident: int) -> "Call":
        """The next page of a listing: a new call under ``ident``, with this one's
        method, timeout, deadline and ``follow``, waking the same waiter."""
        call = Call(ident, self.method, self.timeout, self.deadline, self._settled)
        call.follow = self.follow
        return call

    def reopen(self) -> None:
        """Unsettle a call settled as :data:`UNSENT` (its waiter has woken), before
        it goes back into the table to be sent again."""
        assert self._result is UNSENT
        self._done = False
        self._result = None

    def _settled_twice(self) -> None:
        # Loud rather than a silent replacement of an outcome a caller may be reading.
        raise RuntimeError("call %d (%s) settled twice" % (self.id, self.method))

    def wait(self, timeout: Optional[float]) -> bool:
        """``True`` once settled; waits at most ``timeout`` seconds (``None``: no limit)."""
        if timeout is None:
            return self._settled.acquire()
        return self._settled.acquire(True, min(timeout, threading.TIMEOUT_MAX))

    def unsent(self) -> bool:
        """Settled as :data:`UNSENT`: the frame came back unwritten."""
        return self._result is UNSENT and self._error is None

    def outcome(self) -> JsonValue:
        """The result (:data:`UNSENT` for a frame handed back), or the error
        raised; only after :meth:`wait` said ``True``."""
        error, self._error = self._error, None  # no cycle through the traceback
        if error is not None:
            raise error
        result: JsonValue = self._result
        return result


class CallTable:
    """The pending calls by id, and the doomed ones after a retirement's latch.

    Every field is guarded by the owning session's ``lock``: callers MUST hold
    it for every method. The latch moves ``pending`` to ``doomed`` with two
    stores of its own (``t.doomed, t.pending = t.pending, {}``), not a method
    call, so that an asynchronous exception cannot land between them (see the
    session's latch, ``Session.request_retirement``).
    """

    __slots__ = ("pending", "doomed", "_last_id")

    def __init__(self) -> None:
        self.pending: Dict[int, Call] = {}
        self.doomed: Dict[int, Call] = {}
        self._last_id = 0

    def __len__(self) -> int:
        return len(self.pending)

    def __contains__(self, ident: object) -> bool:
        return ident in self.pending

    def mint(self, method: str, timeout: float, deadline: float) -> Call:
        """A new call under the next id, pending."""
        self._last_id += 1
        call = Call(self._last_id, method, timeout, deadline)
        self.pending[call.id] = call
        return call

    def mint_after(self, call: Call) -> Call:
        """A new call under the next id that succeeds ``call`` (:meth:`Call.successor`), pending."""
        self._last_id += 1
        successor = call.successor(self._last_id)
        self.pending[successor.id] = successor
        return successor

    def add(self, call: Call) -> None:
        self.pending[call.id] = call

    def take(self, ident: object) -> Optional[Call]:
        return self.pending.pop(ident, None) if type(ident) is int else None

    def take_due(self, now: float) -> List[Call]:
        due = [call for call in self.pending.values() if call.deadline <= now]
        for call in due:
            del self.pending[call.id]
        return due

    def take_doomed(self) -> List[Call]:
        doomed, self.doomed = self.doomed, {}
        return list(doomed.values())

    def earliest(self) -> float:
        """The earliest pending deadline (:data:`INF` when none is pending)."""
        return min((call.deadline for call in self.pending.values()), default=INF)
