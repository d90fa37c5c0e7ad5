"""The evidence of one retirement: recorded once, awaited by anyone.

A retirement is *completed* by the reader (or by whoever finds that nothing
was ever started), and :meth:`Custody.record` takes its evidence once; every
``shutdown`` then :meth:`Custody.wait`\\ s for it, joins the client's threads
within the same deadline, and returns it (or raises the fault that stood in
for it). Termination requests are not evidence: only this is.

==========  ==========  ==============================================
field       guarded by  meaning
==========  ==========  ==============================================
_recorded   _lock       the evidence was taken (once)
_evidence,  none        written before ``_done`` is set, read after it
_fault
_done       itself      an ``Event``: the evidence is there
==========  ==========  ==============================================
"""

from __future__ import annotations

import threading

from .._os.threads import until
from ..errors import RetirementError, RetirementTimedOut

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Iterable, Optional

    from ..transport import Retirement

__all__ = ["Custody"]


class Custody:
    """One client's retirement evidence."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # a signal handler may record inside record()
        self._recorded = False
        self._evidence: Optional[Retirement] = None
        self._fault: Optional[RetirementError] = None
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def record(
        self,
        evidence: Optional[Retirement],
        fault: Optional[RetirementError],
        before: Callable[[Optional[Retirement], Optional[RetirementError]], None],
    ) -> None:
        """Take the evidence, unless some was taken already; ``before`` runs
        once, first, so that what it records is complete when a waiter wakes."""
        with self._lock:
            if self._recorded:
                return
            self._recorded = True
        self._evidence, self._fault = evidence, fault
        before(evidence, fault)
        self._done.set()

    def wait(
        self, deadline: float, threads: Iterable[Optional[threading.Thread]], what: str
    ) -> Retirement:
        """The evidence, once recorded and ``threads`` have ended, by ``deadline``."""
        if not self._done.wait(until(deadline)):
            raise RetirementTimedOut("server %s not confirmed gone in time" % what)
        for thread in threads:
            if thread is not None and thread is not threading.current_thread():
                thread.join(until(deadline))
                if thread.is_alive():
                    raise RetirementTimedOut("thread %s has not ended" % thread.name)
        if self._fault is not None:
            raise self._fault
        assert self._evidence is not None
        return self._evidence
