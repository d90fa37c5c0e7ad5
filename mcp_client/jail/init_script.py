"""The jail's first process: pid 1 of the pid namespace bubblewrap makes.

Not imported by the package: :mod:`mcp_client.jail.spawn` reads this file's text
and runs it inside the jail as::

    python -I -S -B -c SOURCE LIFELINE STATUS CGROUPS [USER=UID:GID] [RLIMIT_X=N ...] -- ARGV...

so it must stay a self-contained script (standard library only, nothing from
``mcp_client``). ``LIFELINE`` and ``STATUS`` are descriptor numbers, ``CGROUPS``
a comma-separated list of them (``-`` for none), ``USER`` who to become (a root
harness's jail), see :func:`mcp_client.jail.invocation`.
It imports nothing beyond ``os``, ``resource``, ``select``, ``_signal``, ``sys``
and ``_ctypes`` (the C module alone: ~0.5 ms, where ``ctypes`` costs ~4):
``json``, ``typing`` or even ``signal`` (each pulling in ``re``, ``enum``,
``functools``...) would each add 6-9 ms to its start-up, which every jailed
handshake waits for.

What it does, in order, before any server code runs:

0. joins the jail's cgroups (pids when ``max_processes`` asked for one, memory
   for ``memory_bytes``) by writing ``0`` -- itself -- to each ``cgroup.procs``
   descriptor the harness opened: from here on every process of the jail is
   counted, and there is no moment at which the server could fork outside the
   limits;
1. with ``USER`` (it was started as the host's root, holding only
   ``CAP_SETUID``, ``CAP_SETGID`` and ``CAP_SETPCAP``): empties its capability
   bounding set and its ambient set, drops every supplementary group, becomes
   ``GID`` and ``UID`` (real, effective and saved), and checks that no
   capability is left in any set; anything else is reported and nothing is run.
   Every process of the jail has that uid from here on: never root;
2. makes itself non-dumpable (``PR_SET_DUMPABLE`` 0): the server has its uid
   and, without this, the kernel's leave to ``ptrace`` it or to open
   ``/proc/1/mem`` for writing -- to stop it or to rewrite it, so that it
   never sees its lifeline break (the seccomp filter refuses ``ptrace`` too).
   The server's exec makes the server dumpable again, as any exec does;
3. reports ``up`` on the status pipe, so the harness can tell a jail that never
   came up (bubblewrap's own failure) from a server that did not;
4. forks the server: the child sets the rlimits (on itself only: this init
   stays unlimited, so a tight ``memory_bytes`` cannot stop the jail from
   working), restores the signal dispositions Python changed, and execs; an
   exec failure is reported on the status pipe (which is close-on-exec, so its
   EOF *is* the success report);
5. supervises: reaps every orphan the namespace hands it, and exits when either
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
#: prctl(2)'s options: the "dumpable" attribute, the bounding set, the ambient set.
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
#: More capability numbers than any kernel has (40 in 6.x): each dropped, the unknown refused.
CAPABILITY_NUMBERS = 64
#: capset(2)'s header: _LINUX_CAPABILITY_VERSION_3 and pid 0 (us), as two native ints;
#: its data, two (effective, permitted, inheritable) triples of 32 bits: all empty.
CAPSET_HEADER = (0x20080522).to_bytes(4, sys.byteorder) + bytes(4)
NO_CAPABILITIES = bytes(24)


def report(fd: int, *words: str) -> None:
    """One line on the status pipe (``up``, or ``failed WHAT WHY``); read at EOF."""
    data = " ".join(words).replace("\n", " ").encode("utf-8", "replace") + b"\n"
    while data:
        data = data[os.write(fd, data) :]


def libc(name: str, *args: object) -> int:
    """A C library call through the C half of ctypes (no Python modules behind it);
    a ``bytes`` argument is passed as a pointer to its bytes."""
    import _ctypes

    program = _ctypes.dlopen(None)  # type: ignore[arg-type]  # dlopen(NULL): us, and libc
    return int(_ctypes.call_function(_ctypes.dlsym(program, name), args))


def prctl(*args: int) -> int:
    return libc("prctl", *(args + (0,) * (5 - len(args))))


def become_undumpable(status: int) -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)``: the init's memory and ptrace are no longer the uid's."""
    try:
        failed = prctl(PR_SET_DUMPABLE, 0) != 0
        why = "prctl(PR_SET_DUMPABLE) refused"
    except Exception as e:  # no _ctypes (not CPython), no prctl: the harness must hear it
        failed, why = True, str(e)
    if failed:
        report(status, "failed", "dumpable", why)
    return not failed


def capabilities() -> List[Tuple[str, int]]:
    """Every ``Cap*`` set of ours, as ``/proc/self/status`` shows it."""
    with open("/proc/self/status") as stream:
        lines = stream.read().splitlines()
    found = [line.split(":", 1) for line in lines if line.startswith("Cap")]
    return [(name, int(value.strip(), 16)) for name, value in found]


def become(user: Tuple[int, int], status: int) -> bool:
    """From root with three capabilities to ``user``'s uid and gid with none, or a report."""
    uid, gid = user
    try:
        # The bounding set first (CAP_SETPCAP), so that no exec can give one back; then
        # the ambient set, the groups (CAP_SETGID), the gid and the uid (CAP_SETUID):
        # a uid that is no longer 0 in any of real, effective and saved clears the rest.
        for number in range(CAPABILITY_NUMBERS):
            prctl(PR_CAPBSET_DROP, number)
        if prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL) != 0:
            raise OSError("prctl(PR_CAP_AMBIENT_CLEAR_ALL) refused")
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        # The inheritable set is all that survives that (bubblewrap fills it to raise the
        # ambient one); lowering it is anyone's right.
        if libc("capset", CAPSET_HEADER, NO_CAPABILITIES) != 0:
            raise OSError("capset refused")
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
            raise OSError("still %r %r" % (os.getresuid(), os.getresgid()))
        if os.getgroups():
            raise OSError("groups left: %r" % (os.getgroups(),))
        kept = [name for name, value in capabilities() if value]
        if kept:
            raise OSError("capabilities left in " + ", ".join(kept))
    except Exception as e:  # the harness must hear it: nothing runs as root
        report(status, "failed", "user", "cannot become uid %d: %s" % (uid, e))
        return False
    return True


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


class Arguments:
    """What ``jail.invocation`` wrote: ``LIFELINE STATUS CGROUPS [USER=UID:GID]
    [RLIMIT_X=N ...] -- ARGV...``."""

    def __init__(self, args: List[str]) -> None:
        end = args.index("--")
        self.lifeline, self.status = int(args[0]), int(args[1])
        self.cgroups = [] if args[2] == "-" else [int(fd) for fd in args[2].split(",")]
        self.user: Optional[Tuple[int, int]] = None
        self.limits: List[Tuple[str, int]] = []
        for name, _, value in (a.partition("=") for a in args[3:end]):
            if name == "USER":
                uid, _, gid = value.partition(":")
                self.user = (int(uid), int(gid))
            else:
                self.limits.append((name, int(value)))
        self.argv = args[end + 1 :]


def main(args: List[str]) -> int:
    parsed = Arguments(args)
    lifeline, status, limits, argv = parsed.lifeline, parsed.status, parsed.limits, parsed.argv
    for fd in (status, lifeline):
        os.set_inheritable(fd, False)  # the server gets neither
    for cgroup in parsed.cgroups:  # as whoever started us: root's descriptors, root's rights
        if not join_cgroup(cgroup, status):
            return NO_CGROUP
    if parsed.user is not None and not become(parsed.user, status):
        return NOT_STARTED
    if not become_undumpable(status):  # after a change of uid, which resets it
        return NOT_STARTED
    # A harness thread may have blocked signals before it spawned us; SIGCHLD must arrive.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
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
