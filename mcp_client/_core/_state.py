"""The client's lifecycle as data: its states and the transitions allowed between them.

Two permanent end states, as trio has them: ``CLOSED`` (you retired it) and
``BROKEN`` (it failed under you); nothing leaves either. A move the table does
not allow is a bug of ours, never a server's doing.
"""

from __future__ import annotations

import enum

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict, Tuple

__all__ = ["State", "TRANSITIONS", "ENDED"]


class State(enum.Enum):
    """Where a client is in its life (``Client.state``): ``PARKED`` (prepared, no
    process), ``CONNECTING``, ``READY``, then one of the two ends, ``CLOSED`` (you
    retired it) or ``BROKEN`` (it failed under you), which nothing leaves."""

    PARKED = "parked"  # prepared: no process, no thread
    CONNECTING = "connecting"  # spawned; handshake under way
    READY = "ready"  # calls are served
    CLOSED = "closed"  # you retired it (permanent)
    BROKEN = "broken"  # it failed under you (permanent)


TRANSITIONS: Dict[State, Tuple[State, ...]] = {
    State.PARKED: (State.CONNECTING, State.CLOSED),
    State.CONNECTING: (State.READY, State.CLOSED, State.BROKEN),
    State.READY: (State.CLOSED, State.BROKEN),
    State.CLOSED: (),
    State.BROKEN: (),
}

#: The permanent states: the retirement has been latched.
ENDED = (State.CLOSED, State.BROKEN)
