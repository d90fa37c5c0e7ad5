"""One table of exit statuses, :data:`TABLE`, for every command; one meaning per number.

=======  ==========  ==================================================================
status   name        meaning (the commands that give it)
=======  ==========  ==================================================================
0        ok          done: the report printed, the check passed, the replay matched,
                     ``serve``'s host closed stdin (every command)
1        no          the answer is no: ``codemode --check`` found a fault, ``--search``
                     or ``--describe`` found nothing; ``replay``: the client diverged
                     from the recording (as ``grep``, ``diff`` and mypy say 1)
2        usage       the command cannot run as given: a bad flag or value, a config that
                     cannot be used, an unknown ``--server``, a file that cannot be
                     opened; ``codemode``/``serve``: no jail to be had for the program
                     (every command)
3        spawn       no server could start: no such command, a bad ``--cwd``, a path the
                     jail would not show; ``codemode``/``serve``: none of the config's
                     servers started (``mcp-client``, ``codemode``, ``serve``)
4 - 10   handshake,  what failed in the main job: the handshake (4), the protocol version
         ...         (5), the listing (6), the generation (7), ``--call`` (8), the
                     shutdown (9), the ``--capture`` log (10) (``mcp-client``)
70       internal    a bug of mcp_client, with its traceback (every command;
                     ``EX_SOFTWARE`` of ``sysexits.h``)
124      wall-clock  the program ran past ``--wall-clock`` (``codemode``; ``timeout``'s)
130      interrupt   SIGINT (Ctrl-C); everything was shut down first (every command)
141      output      our stdout was closed (``... | head``) (``mcp-client``,
                     ``codemode``)
143      terminated  SIGTERM; everything was shut down first (every command)
=======  ==========  ==================================================================

``codemode`` running a program exits with the program's own status (``128 + N`` when
signal N ended it), which may be any number; the command's own are 2 and 3 before the
program starts, and 124, 130, 141 and 143.

:func:`run_command` is every command's way out: SIGTERM unwinds like Ctrl-C
(:class:`Stopped`), and the status is ``128 + N`` for signal N; a closed stdout is 141; an
unexpected exception is 70, after its traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from dataclasses import dataclass
from types import FrameType
from typing import Callable, Dict, Mapping, NoReturn, Optional, Tuple

__all__ = [
    "CALL",
    "CAPTURE",
    "COMMANDS",
    "Exit",
    "GENERATION",
    "HANDSHAKE",
    "INTERNAL",
    "INTERRUPTED",
    "LISTING",
    "NO",
    "OK",
    "OUTPUT_CLOSED",
    "SHUTDOWN",
    "SPAWN",
    "Stopped",
    "TABLE",
    "TERMINATED",
    "USAGE",
    "VERSION",
    "WALL_CLOCK",
    "codes",
    "run_command",
    "status_of",
    "stop",
    "summary",
]

OK = 0
NO = 1
USAGE = 2
SPAWN = 3
HANDSHAKE = 4
VERSION = 5
LISTING = 6
GENERATION = 7
CALL = 8
SHUTDOWN = 9
CAPTURE = 10
INTERNAL = 70
WALL_CLOCK = 124
INTERRUPTED = 130  # 128 + SIGINT
OUTPUT_CLOSED = 141  # 128 + SIGPIPE, as a shell reports a writer killed by it
TERMINATED = 143  # 128 + SIGTERM

#: The commands, by the names the table uses.
COMMANDS = ("mcp-client", "codemode", "serve", "replay")
_MAIN, _CODEMODE, _SERVE, _REPLAY = COMMANDS


@dataclass(frozen=True)
class Exit:
    """One exit status: its number, its name (the main job's ``what`` failed), the label
    ``--help`` gives it, what it means, and the commands that give it."""

    status: int
    name: str
    label: str
    meaning: str
    commands: Tuple[str, ...] = COMMANDS


#: Every exit status of every command (the module's table).
TABLE: Tuple[Exit, ...] = (
    Exit(OK, "ok", "ok", "done: the report printed, the check passed, the replay matched"),
    Exit(
        NO,
        "no",
        "no (a --check fault, nothing found, a replay diverged)",
        "the answer is no: --check found a fault, --search or --describe found nothing, "
        "the replay diverged",
        (_CODEMODE, _REPLAY),
    ),
    Exit(USAGE, "usage", "usage", "a bad flag or value, config, --server, file, or no jail"),
    Exit(SPAWN, "spawn", "no server started", "no server could start", (_MAIN, _CODEMODE, _SERVE)),
    Exit(HANDSHAKE, "handshake", "handshake", "initialize failed or was refused", (_MAIN,)),
    Exit(VERSION, "version", "version", "a protocol version this client does not speak", (_MAIN,)),
    Exit(LISTING, "listing", "listing", "tools/list failed", (_MAIN,)),
    Exit(GENERATION, "generation", "generation", "the generator refused the listing", (_MAIN,)),
    Exit(CALL, "call", "call", "--call failed", (_MAIN,)),
    Exit(SHUTDOWN, "shutdown", "shutdown", "the server could not be confirmed gone", (_MAIN,)),
    Exit(CAPTURE, "capture", "capture incomplete", "the --capture log is incomplete", (_MAIN,)),
    Exit(INTERNAL, "internal", "internal error", "a bug of mcp_client, with its traceback"),
    Exit(WALL_CLOCK, "wall-clock", "wall clock", "the program ran past --wall-clock", (_CODEMODE,)),
    Exit(INTERRUPTED, "interrupt", "SIGINT", "interrupted (Ctrl-C); everything shut down first"),
    Exit(OUTPUT_CLOSED, "output", "stdout closed", "our stdout was closed", (_MAIN, _CODEMODE)),
    Exit(TERMINATED, "terminated", "SIGTERM", "terminated (SIGTERM); everything shut down first"),
)


def codes(command: str) -> Dict[str, int]:
    """Name -> status of each failure ``command`` can exit with (0 left out)."""
    return {each.name: each.status for each in TABLE if command in each.commands and each.status}


def summary(command: str, labels: Optional[Mapping[str, str]] = None) -> str:
    """``exit status:`` and one ``  N label`` line per status of ``command``, for its
    ``--help``; ``labels`` says some of them in the command's own words."""
    words = dict(labels or {})
    return "\n".join(
        ["exit status:"]
        + [
            "  %3d %s" % (each.status, words.get(each.name, each.label))
            for each in TABLE
            if command in each.commands
        ]
    )


# ----------------------------------------------------------------------------- the way out


class Stopped(KeyboardInterrupt):
    """A signal asked the command to stop: raised in the main thread by :func:`stop`, it
    unwinds like Ctrl-C, through every shutdown on the way."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def stop(signum: int, frame: Optional[FrameType]) -> NoReturn:
    """A signal handler: raise :class:`Stopped`."""
    raise Stopped(signum)


def status_of(interrupt: KeyboardInterrupt) -> int:
    """``128 + N`` for the signal N that stopped the command: 130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + getattr(interrupt, "signum", signal.SIGINT)


Say = Callable[[str], None]


def run_command(work: Callable[[], int], name: str, say: Optional[Say] = None) -> int:
    """``work()``'s exit status, under the table's rules: SIGTERM raises :class:`Stopped`
    while it runs; an interrupt is ``128 + N`` (``say`` tells it); a closed stdout is
    :data:`OUTPUT_CLOSED`; an unexpected exception :data:`INTERNAL`, after its traceback."""
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return work()
    except KeyboardInterrupt as interrupt:
        if say is not None:
            say("terminated" if status_of(interrupt) == TERMINATED else "interrupted")
        return status_of(interrupt)
    except BrokenPipeError:  # our reader went away (| head); everything is already retired
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error
        return OUTPUT_CLOSED
    except Exception:
        traceback.print_exc()
        sys.stderr.write("%s: internal error: a bug of mcp_client (exit %d)\n" % (name, INTERNAL))
        return INTERNAL
    finally:
        signal.signal(signal.SIGTERM, previous)
