"""The jail's first process: pid 1 of the pid namespace bubblewrap makes.

Not imported by the package: :mod:`mcp_client.jail.spawn` reads this file's text
and runs it inside the jail as::

    python -I -S -B -c SOURCE LIFELINE STATUS CGROUPS [RLIMIT_X=N ...] -- ARGV...

so it must stay a self-contained script (standard library only, nothing from
``mcp_client``). ``LIFELINE`` and ``STATUS`` are descriptor numbers, ``CGROUPS``
a comma-separated list of them (``-`` for none), see :func:`mcp_client.jail.invocation`.
It imports nothing beyond ``os``, ``resource``, ``select``, ``_signal``, ``sys``
and ``_ctypes`` (the C module alone: ~0.5 ms, where ``ctypes`` costs ~4):
``json``, ``typing`` or even ``signal`` (each pulling in ``re``, ``enum``,
``functools``...) would each add 6-9 ms to its start-up, which every jailed
handshake waits for.

What it does, in order, before any server code runs:

0. makes itself non-dumpable (``PR_SET_DUMPABLE`` 0): the server has its uid
   and, without this, the kernel's leave to ``ptrace`` it or to open
   ``/proc/1/mem`` for writing -- to stop it or to rewrite it, so that it
   never sees its lifeline break (the seccomp filter refuses ``ptrace`` too).
   The server's exec makes the server dumpable again, as any exec does;
1. joins the jail's cgroups (pids when ``max_processes`` asked for one, memory
   for ``memory_bytes``) by writing ``0`` -- itself -- to each ``cgroup.procs``
   descriptor the harness opened: from here on every process of the jail is
   counted, and there is no moment at which the server could fork outside the
   limits;
2. reports ``up`` on the status pipe, so the harness can tell a jail that never
   came up (bubblewrap's own failure) from a server that did not;
3. forks the server: the child sets the rlimits (on itself only: this init
   stays unlimited, so a tight ``memory_bytes`` cannot stop the jail from
   working), restores the signal dispositions Python changed, and execs; an
   exec failure is reported on the status pipe (which is close-on-exec, so its
   EOF *is* the success report);
4. supervises: reaps every orphan the namespace hands it, and exits when either
   the server exits -- with the server's own status, ``128 + N`` for a signal N,
   as bubblewrap propagates it -- or the lifeline pipe reports EOF: the harness
   closed it, or died. Its exit takes the namespace, daemons and all, with it.
"""

from __future__ import annotations

import os
import resource
import select
import sys

TYPE_CHECKING = False  # `typing` would cost the init as much again as its own start-up
if TYPE_CHECKING:
    import signal
    from typing import List, NoReturn, Optional, Sequence, Tuple
else:
    try:  # the C module under `signal`, which builds IntEnums: `enum` alone costs ~6 ms
        import _signal as signal
    except ImportError:  # not CPython
        import signal

#: Exit status when the lifeline breaks: as if SIGKILLed, which is what follows.
LIFELINE_BROKEN = 128 + 9
#: Exit status of a server that could not be started (the shell's convention).
NOT_STARTED = 127
#: Exit status when the cgroup could not be joined (nothing was started).
NO_CGROUP = 125
#: prctl(2)'s option for the "dumpable" attribute.
PR_SET_DUMPABLE = 4


def report(fd: int, *words: str) -> None:
    """One line on the status pipe (``up``, or ``failed WHAT WHY``); read at EOF."""
    data = " ".join(words).replace("\n", " ").encode("utf-8", "replace") + b"\n"
    while data:
        data = data[os.write(fd, data) :]


def become_undumpable(status: int) -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)``: the init's memory and ptrace are no longer the uid's."""
    try:
        import _ctypes  # the C half of ctypes: no Python modules behind it

        program = _ctypes.dlopen(None)  # type: ignore[arg-type]  # dlopen(NULL): us, and libc
        prctl = _ctypes.dlsym(program, "prctl")
        failed = _ctypes.call_function(prctl, (PR_SET_DUMPABLE, 0, 0, 0, 0)) != 0
        why = "prctl(PR_SET_DUMPABLE) refused"
    except Exception as e:  # no _ctypes (not CPython), no prctl: the harness must hear it
        failed, why = True, str(e)
    if failed:
        report(status, "failed", "dumpable", why)
    return not failed


def join_cgroup(fd: int, status: int) -> bool:
    try:
        os.write(fd, b"0")  # "0": the writing process itself, in its own pid namespace
    except OSError as e:
        report(status, "failed", "cgroup", str(e))
        return False
    finally:
        os.close(fd)
    return True


def wake_on_sigchld() -> int:
    """A pipe that gets a byte whenever a child changes state (read end returned)."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end)
    # The wakeup byte is written only for signals with a Python handler.
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    return read_end


def become_server(argv: Sequence[str], status: int, limits: Sequence[Tuple[str, int]]) -> NoReturn:
    """In the forked child: set the limits, exec."""
    try:
        signal.set_wakeup_fd(-1)
        # Python ignores SIGPIPE and SIGXFSZ, and ignored stays ignored across
        # exec: a server must meet a closed pipe or its file-size limit as a
        # server started by a shell would.
        for signum in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        for name, value in limits:
            resource.setrlimit(getattr(resource, name), (value, value))
        os.execvp(argv[0], list(argv))
    except BaseException as e:  # anything at all: the harness must hear why
        report(status, "failed", "exec", str(e))
    os._exit(NOT_STARTED)


def exit_status(wait_status: int) -> int:
    """What a shell (and bubblewrap) would report: the code, or 128 + the signal."""
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else 255


def reap(server: int) -> Optional[int]:
    """Reap every child that has ended; the server's exit status if it was one."""
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid == 0:
            return None
        if pid == server:
            return exit_status(wait_status)


def supervise(server: int, lifeline: int, wake: int) -> int:
    poller = select.poll()
    poller.register(lifeline, select.POLLIN)  # EOF shows as POLLHUP, always reported
    poller.register(wake, select.POLLIN)
    while True:
        code = reap(server)
        if code is not None:
            return code
        for fd, _ in poller.poll():
            if fd == lifeline:
                return LIFELINE_BROKEN
            try:
                os.read(wake, 512)
            except BlockingIOError:
                pass


def release_stdio() -> None:
    """Hold no copy of the server's pipes: the init has nothing to say on them."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def parse(args: List[str]) -> Tuple[int, int, List[int], List[Tuple[str, int]], List[str]]:
    """``LIFELINE STATUS CGROUPS [RLIMIT_X=N ...] -- ARGV...``, as ``jail.invocation`` writes it."""
    end = args.index("--")
    limits = [(name, int(value)) for name, _, value in (a.partition("=") for a in args[3:end])]
    cgroups = [] if args[2] == "-" else [int(fd) for fd in args[2].split(",")]
    return int(args[0]), int(args[1]), cgroups, limits, args[end + 1 :]


def main(args: List[str]) -> int:
    lifeline, status, cgroups, limits, argv = parse(args)
    if not become_undumpable(status):
        return NOT_STARTED
    # A harness thread may have blocked signals before it spawned us; SIGCHLD must arrive.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for fd in (status, lifeline):
        os.set_inheritable(fd, False)  # the server gets neither
    for cgroup in cgroups:
        if not join_cgroup(cgroup, status):
            return NO_CGROUP
    report(status, "up")
    wake = wake_on_sigchld()  # before the fork: no exit can go unnoticed
    server = os.fork()
    if server == 0:
        become_server(argv, status, limits)
    os.close(status)
    release_stdio()
    return supervise(server, lifeline, wake)


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # no interpreter teardown: nothing of ours to flush
