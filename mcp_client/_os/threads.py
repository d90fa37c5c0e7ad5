"""The package's own threads: one way to make them, one seam to start them.

* Every thread the client starts (reader, deadline timer, answerer, capture
  writer) is made by :func:`named` and started by :func:`start`. A process out
  of threads or memory mappings raises ``RuntimeError: can't start new thread``
  there; tests make :func:`start` fail on purpose to prove that every caller
  copes, without exhausting anything.
* Each of these threads blocks the asynchronous signals before it runs. The
  kernel hands a process-directed signal (SIGINT, SIGTERM, SIGALRM...) to any
  thread that does not block it, and CPython then only sets a flag that the
  *main* thread checks between bytecodes: a main thread blocked in a lock's
  timed wait -- a call waiting for its answer -- would not run its handler until
  that wait ended, up to the call's whole timeout. With ours blocking them, the
  signal goes to the main thread, whose wait it interrupts at once.
"""

from __future__ import annotations

import signal
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Set, Tuple

__all__ = ["named", "start", "until"]

# Signals the kernel raises in the faulting thread itself: never blocked.
_SYNCHRONOUS = frozenset(
    getattr(signal, name)
    for name in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS", "SIGABRT")
    if hasattr(signal, name)
)


def named(target: Callable[..., None], name: str, args: Tuple[Any, ...] = ()) -> threading.Thread:
    """A daemon thread called ``name`` that runs ``target(*args)`` with signals blocked."""
    return threading.Thread(target=_quiet, args=(target, args), name=name, daemon=True)


def start(thread: threading.Thread) -> None:
    """Start ``thread`` with the asynchronous signals blocked from its first
    instruction (a new thread inherits its creator's mask, so the creator
    blocks them around the start and restores its own mask after, however it
    is interrupted). The fault-injection seam: tests replace it."""
    if not hasattr(signal, "pthread_sigmask"):
        thread.start()
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())  # only a look: nothing changes
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, _asynchronous())
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def until(deadline: float) -> float:
    """Seconds until ``deadline`` (monotonic), as a lock's, an event's or a
    join's wait takes them: never negative, never past ``threading.TIMEOUT_MAX``
    (an infinite deadline waits in turns of that), NaN as 0. Every wait of the
    package is bounded through here."""
    remaining = deadline - time.monotonic()
    return min(remaining, threading.TIMEOUT_MAX) if remaining > 0 else 0.0


def _quiet(target: Callable[..., None], args: Tuple[Any, ...]) -> None:
    _block_signals()
    target(*args)


def _block_signals() -> None:
    if hasattr(signal, "pthread_sigmask"):  # POSIX; elsewhere there is nothing to route
        signal.pthread_sigmask(signal.SIG_BLOCK, _asynchronous())


def _asynchronous() -> Set["signal.Signals"]:
    return set(signal.valid_signals()) - _SYNCHRONOUS
