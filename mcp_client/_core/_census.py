"""Which clients this process owns: the active set, and what ``fork`` changes.

* :data:`ACTIVE` -- every client with an open transport, so that none outlives
  the interpreter (the client module's ``atexit`` hook retires them all).
* :data:`FORKS` -- a generation bumped in a forked child. The child gets a copy
  of every client, but not their threads, and their locks in whatever state
  the parent's threads held them; so it must touch none of it. An inherited
  client compares its generation before taking any lock and is inert (a call
  raises ``ClientInherited``; ``stop`` and leaving a ``with`` block do nothing),
  and the child forgets the active set, so its ``atexit`` neither signals the
  parent's servers nor writes to the parent's pipes. The inherited descriptors
  stay open in the child until it exits or execs (close-on-exec), as
  ``subprocess``'s own do.
"""

from __future__ import annotations

import os
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Set

__all__ = ["ACTIVE", "FORKS"]


class ActiveSet:
    """A set guarded by its own lock (``_lock``: ``_members``)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # a signal handler may stop a client inside add()
        self._members: Set[object] = set()

    def add(self, member: object) -> None:
        with self._lock:
            self._members.add(member)

    def discard(self, member: object) -> None:
        with self._lock:
            self._members.discard(member)

    def snapshot(self) -> List[object]:
        with self._lock:
            return list(self._members)

    def forget(self) -> None:
        """In a forked child: none of these is ours. A new lock, since a parent's
        thread may have held the old one at the fork."""
        self._lock = threading.RLock()
        self._members = set()


class Forks:
    """The fork generation of this process (0 in the process that imported us)."""

    def __init__(self) -> None:
        self.generation = 0

    def after_in_child(self) -> None:
        self.generation += 1
        ACTIVE.forget()


ACTIVE = ActiveSet()
FORKS = Forks()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=FORKS.after_in_child)
