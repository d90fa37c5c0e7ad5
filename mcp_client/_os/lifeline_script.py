"""An unjailed server's lifeline: its process group dies with the harness, even by SIGKILL.

Not imported by the package: :mod:`mcp_client._os.lifeline` starts a server through
it as::

    python -I -S -B .../mcp_client/lifeline.py LIFELINE STATUS -- ARGV...

in the session and process group that ``Popen(start_new_session=True)`` made, so
it must stay a self-contained script (it imports ``os``, ``sys`` and ``_signal``,
nothing of ``mcp_client``). ``LIFELINE`` is the read end of a pipe whose only write
end the harness holds and never writes; ``STATUS`` a pipe for the one report it can
make, why the exec failed.

What it does:

1. forks a watchdog, twice (the middle process exits at once, so the watchdog is
   no child of the server's: a server that waits for its children never meets
   it). The watchdog stays in the server's process group -- which keeps the
   group's id from being reused while it lives -- holds nothing but the
   lifeline (``/dev/null`` on 0, 1 and 2, every other descriptor closed: the
   server's pipes reach EOF when the server is done with them), and blocks on
   the lifeline. Its EOF means the harness closed it or died, and the watchdog
   SIGKILLs the group, itself included. No pid namespace: none is needed, the
   group is the server's and its children's unless one leaves it (``setsid``),
   which only a jail's pid namespace can stop;
2. puts back the signal dispositions Python changed (``SIGPIPE``, ``SIGXFSZ``
   ignored stay ignored across an exec), and execs the server in its own
   place: the harness's ``Popen`` *is* the server, so its exit status, and the
   client's ``Exited(...)`` evidence, are the server's own. The status pipe is
   close-on-exec: its EOF is the success report.

Not ``PR_SET_PDEATHSIG``: it fires when the *thread* that forked the child ends,
and a harness may start a server from a thread that then ends.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `typing` would cost every supervised start a few milliseconds
if TYPE_CHECKING:
    import signal
    from typing import List, NoReturn, Sequence
else:
    try:  # the C module under `signal`: `enum` alone costs ~6 ms
        import _signal as signal
    except ImportError:  # not CPython
        import signal

#: Exit status of a server that could not be started (the shell's convention).
NOT_STARTED = 127


def watch(lifeline: int) -> NoReturn:
    """The watchdog: hold nothing but the lifeline; at its EOF, kill the group."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, lifeline)
        os.closerange(lifeline + 1, 1 << 16)
        while True:
            try:
                if not os.read(lifeline, 1):  # never written: EOF is the message
                    break
            except InterruptedError:
                continue
        os.killpg(0, signal.SIGKILL)  # our own group: the server's, ours too
    finally:
        os._exit(0)


def start_watchdog(lifeline: int) -> None:
    """Fork the watchdog as a grandchild, and reap the child between."""
    middle = os.fork()
    if middle == 0:
        try:
            if os.fork() == 0:
                watch(lifeline)
        finally:
            os._exit(0)
    os.waitpid(middle, 0)
    os.close(lifeline)


def report(status: int, what: str, error: BaseException) -> NoReturn:
    """Why the server was not started, on the status pipe; then exit."""
    data = ("%s: %s: %s" % (what, type(error).__name__, error)).encode("utf-8", "replace")
    while data:
        data = data[os.write(status, data) :]
    os._exit(NOT_STARTED)


def become_server(argv: Sequence[str], status: int) -> NoReturn:
    try:
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(signum, signal.SIG_DFL)
        os.execvp(argv[0], list(argv))
    except BaseException as e:  # anything at all: the harness must hear why
        report(status, "exec", e)
    os._exit(NOT_STARTED)


def main(args: List[str]) -> NoReturn:
    end = args.index("--")
    lifeline, status = int(args[0]), int(args[1])
    os.set_inheritable(status, False)  # close-on-exec: its EOF says the exec worked
    try:
        start_watchdog(lifeline)
    except BaseException as e:  # no watchdog, no server: never one without its lifeline
        report(status, "watchdog", e)
    become_server(args[end + 1 :], status)


if __name__ == "__main__":
    main(sys.argv[1:])
