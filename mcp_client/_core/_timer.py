"""The deadline timer: one thread, armed for the earliest pending deadline.

A client keeps at most one live shot: arming for an earlier deadline cancels
the shot in place and starts another; a shot that fires hands itself to the
client's callback, which claims it (:meth:`DeadlineTimer.claim`), times out what
is due and re-arms for what is left. A shot that cannot be started (no thread
to be had) is no shot: callers keep their own deadlines, and the next arming
tries again.

=========  ==============  =================================================
field      guarded by      meaning
=========  ==============  =================================================
_current   owner's _lock   the live shot, or ``None``
_deadline  owner's _lock   what ``_current`` is armed for (:data:`INF`: none)
_last      owner's _lock   the last shot started: joined by ``shutdown``
=========  ==============  =================================================

Callers MUST hold the owning client's lock for :meth:`arm`, :meth:`claim` and
:meth:`cancel`; :meth:`thread` may be read without it once the client is
retired (nothing arms it any more).
"""

from __future__ import annotations

import logging
import threading

from .._os import threads as _threads
from .._os.threads import until
from . import LOGGER
from ._calls import INF

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional

__all__ = ["DeadlineTimer", "Shot"]

log = logging.getLogger(LOGGER)


class Shot:
    """One arming: fires ``fire(self)`` after ``delay`` unless cancelled first
    (``threading.Timer``'s shape, on a thread from :mod:`~mcp_client._core._threads`)."""

    def __init__(self, delay: float, fire: Callable[["Shot"], None], name: str) -> None:
        self._delay = delay
        self._fire = fire
        self._cancelled = threading.Event()
        self.thread = _threads.named(self._run, name)

    def cancel(self) -> None:
        self._cancelled.set()

    def _run(self) -> None:
        if not self._cancelled.wait(self._delay):
            self._fire(self)


class DeadlineTimer:
    """Arm, claim, cancel and join the one shot of a client."""

    def __init__(self, fire: Callable[[Shot], None], name: Callable[[], str]) -> None:
        self._fire = fire
        self._name = name
        self._current: Optional[Shot] = None
        self._deadline = INF
        self._last: Optional[Shot] = None

    def arm(self, deadline: float) -> None:
        """Fire at ``deadline`` if that is earlier than the shot armed now."""
        if deadline >= self._deadline:
            return
        self.cancel()
        shot = Shot(until(deadline), self._fire, self._name())
        try:
            _threads.start(shot.thread)
        except RuntimeError as e:
            log.warning("cannot start the deadline timer (%s); callers keep their own", e)
            return
        self._current, self._deadline, self._last = shot, deadline, shot

    def claim(self, shot: Shot) -> bool:
        """Whether ``shot`` is the live one (then it is spent); a superseded or
        cancelled shot that fired anyway claims nothing."""
        if shot is not self._current:
            return False
        self._current, self._deadline = None, INF
        return True

    def cancel(self) -> None:
        if self._current is not None:
            self._current.cancel()
            self._current, self._deadline = None, INF

    def thread(self) -> Optional[threading.Thread]:
        """The last shot's thread, for ``shutdown`` to join."""
        return None if self._last is None else self._last.thread
