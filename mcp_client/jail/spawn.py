"""The impure half of the jail: look at the machine, make the pipes and the
cgroup, start bubblewrap, and watch it until it is gone.

:class:`~mcp_client.transport.ProcessTransport` calls :func:`popen` when it has
a :class:`~mcp_client.jail.Jail`; the invocation itself is :func:`mcp_client.jail.invocation`.
What is returned is an ordinary ``Popen`` of bwrap, with pipes on its stdin
and stdout that bwrap hands down to the server; the transport retires bwrap's
process group exactly as it retires an unjailed server's. bwrap keeps its copy
of the stdout pipe until it exits, and it exits only after the init, which
exits only after the whole pid namespace is gone: so the client's EOF always
comes after the jail's end, and the evidence is exact -- ``Exited(7)`` for a
server that exits with 7, never a SIGKILL that raced bwrap's own exit. (The
cost: a server that closes its stdout but keeps running is noticed when it
exits or at the call's deadline, not at once.)

``popen`` returns only once the server was exec'd inside the jail (like
``Popen`` itself, which reports a failed exec): bubblewrap's own failure, a
missing executable and a cgroup that cannot be joined are all
:class:`TransportFailed` here, never a handshake that times out.

Each jailed server gets one thread, ``mcp-jail-<pid>``, blocked on a pidfd of
bwrap. When bwrap has ended -- retired, or the server exited -- it closes the
lifeline (an init that somehow outlived bwrap takes the jail down then) and
removes the server's cgroups once the kernel has emptied them. The thread holds
no lock the client uses; it ends within moments of the server's end.
"""

from __future__ import annotations

import dataclasses
import errno
import itertools
import logging
import os
import platform
import pwd
import select
import shutil
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .._os import process
from .._os import threads as _threads
from .._os.files import open_for_writing
from ..errors import TransportFailed
from . import (
    DIR,
    FILE,
    MISSING,
    Channels,
    Host,
    Invocation,
    Jail,
    expand,
    paths_to_probe,
    paths_to_reach,
    pids_max,
    require_host,
    runs_as,
)
from . import (
    invocation as bwrap_invocation,
)

if TYPE_CHECKING:
    from .._os.process import Spawn

__all__ = [
    "popen",
    "spawn_command",
    "preflight",
    "look",
    "Cgroup",
    "jail_cgroups",
    "STARTUP_TIMEOUT",
]

log = logging.getLogger("mcp_client.jailer")  # its name before the move: users configure it

#: How long bubblewrap may take to build the jail and exec the server.
STARTUP_TIMEOUT = 30.0
#: How long a retired jail's cgroup may take to empty before it is left behind.
CGROUP_DRAIN = 10.0
_INIT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "init_script.py")
_init_source: Optional[str] = None


def popen(
    jail: Jail, spawn: "Spawn", env: Mapping[str, str], stderr: Any
) -> "subprocess.Popen[bytes]":
    """Start ``spawn`` in ``jail``.

    ``env`` is the server's environment, ``stderr`` its stderr target (as for
    ``Popen``). Raises :class:`TransportFailed` naming what is missing.
    """
    stdio = (subprocess.PIPE, subprocess.PIPE, stderr)
    return _jailed(jail, spawn, env, lambda invocation, fds: _popen(invocation, spawn, fds, stdio))


def spawn_command(
    jail: Jail,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Optional[str] = None,
    pass_fds: Sequence[int] = (),
    stdin: Any = None,
    stdout: Any = None,
    stderr: Any = None,
    inside_cwd: Optional[str] = None,
) -> "subprocess.Popen[bytes]":
    """Run any command in ``jail`` with stdio of its own and extra descriptors.

    What :func:`popen` does for a server, without assuming MCP pipes: ``stdin``,
    ``stdout`` and ``stderr`` are ``Popen``'s (``None`` inherits ours), and
    ``pass_fds`` reach the command under the same numbers (a code-mode harness's
    call pipes). The handle is bwrap's ``Popen``, in a session and process group
    of its own: ``os.killpg(handle.pid, SIGKILL)`` ends the whole jail, and so
    does the harness's death, even by SIGKILL (the lifeline). Its ``returncode``
    is the command's, ``128 + N`` for a signal. ``inside_cwd`` (instead of ``cwd``):
    a working directory under the jail's private ``/tmp`` (``Jail.tmp_bytes`` of
    tmpfs, charged to ``memory_bytes``, gone with the jail). The jail's limits --
    ``memory_bytes``, ``max_processes`` (a pids cgroup), ``tmp_bytes``,
    ``cpu_seconds`` -- hold for the command as for a server. Raises
    :class:`TransportFailed` as :func:`popen` does, naming what this machine lacks
    for a limit it cannot enforce.
    """
    from .._os.process import Spawn

    spawn = Spawn(argv[0], tuple(argv[1:]), cwd=cwd)
    stdio = (stdin, stdout, stderr)
    return _jailed(
        jail,
        spawn,
        env,
        lambda invocation, fds: _popen(invocation, spawn, fds + tuple(pass_fds), stdio),
        inside_cwd,
    )


def preflight(jail: Jail) -> None:
    """Raise now what a start of this interpreter in ``jail`` would raise for this machine
    and the jail's paths (no bubblewrap, a readable path missing, a writable one the
    jail's uid cannot write: :class:`TransportFailed`), before anything is started:
    a runner checks its options once, not at its first run."""
    from .._os.process import Spawn

    spawn = Spawn(sys.executable)
    env = dict(os.environ)
    bwrap_invocation(jail, spawn, env, look(jail, spawn, env), Channels(0, 0, 0))


def _jailed(
    jail: Jail,
    spawn: "Spawn",
    env: Mapping[str, str],
    start: Callable[[Invocation, Tuple[int, ...]], "subprocess.Popen[bytes]"],
    inside_cwd: Optional[str] = None,
) -> "subprocess.Popen[bytes]":
    """The one way into a jail: look, plan, ``start(plan, the jail's fds)``, await, watch.

    Whatever fails on the way, the pipes are closed and the cgroups removed.
    """
    host = look(jail, spawn, env)
    require_host(host)
    cgroups = jail_cgroups(jail)
    ends = _Ends()
    try:
        invocation = bwrap_invocation(jail, spawn, env, host, ends.open(cgroups), inside_cwd)
        ends.feed_seccomp(invocation.seccomp)
        child = start(invocation, tuple(ends.theirs()))
        ends.close_theirs()
    except BaseException:
        ends.close()
        _remove_all(cgroups, 0.0)
        raise
    try:
        _await_server(child, ends, invocation, spawn)
        _watch(child, ends, cgroups)
    except BaseException:
        _abandon(child)
        ends.close()
        _remove_all(cgroups, CGROUP_DRAIN)
        raise
    return child


def _popen(
    invocation: Invocation, spawn: "Spawn", fds: Tuple[int, ...], stdio: Tuple[Any, Any, Any]
) -> "subprocess.Popen[bytes]":
    try:
        return process.start(
            invocation.argv,
            stdin=stdio[0],
            stdout=stdio[1],
            stderr=stdio[2],
            env=invocation.env,
            cwd=spawn.cwd,
            pass_fds=fds,
            unbuffered=True,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        raise TransportFailed("cannot start %s in a jail: %s" % (" ".join(spawn.argv()), e)) from e


# ----------------------------------------------------------------------------- the facts


def look(jail: Jail, spawn: "Spawn", env: Mapping[str, str]) -> Host:
    """What :func:`mcp_client.jail.invocation` needs to know of this machine."""
    homes = _homes(env)
    host = Host(
        system=platform.system(),
        machine=platform.machine(),
        bwrap=shutil.which("bwrap"),
        python=os.path.realpath(sys.executable or "python3"),
        python_home=os.path.realpath(sys.base_prefix),
        init_source=_read_init(),
        homes=homes,
        paths={path: _probe(path) for path in paths_to_probe(jail, homes)},
        cwd=None if spawn.cwd is None else os.path.realpath(spawn.cwd),
        root=os.geteuid() == 0,
    )
    user = runs_as(jail, host.root)
    if user is None:
        return host
    reach = paths_to_reach(jail, spawn, host, _named(spawn))
    closed = (_first_closed(path, user) for path in reach)
    written = [path for path in jail.writable for path in expand(path, homes[:1])]
    return dataclasses.replace(
        host,
        closed=tuple(dict.fromkeys(path for path in closed if path is not None)),
        unwritable=tuple(
            real
            for real, kind in (host.paths.get(path, (path, MISSING)) for path in written)
            if kind != MISSING and not _may(real, user, 0o3 if kind == DIR else 0o2)
        ),
    )


def _named(spawn: "Spawn") -> List[str]:
    """The existing paths the server's argv names (``--root=/x`` too), real."""
    base = spawn.cwd or os.getcwd()
    named = []
    for arg in spawn.args:
        piece = arg.partition("=")[2] if arg.startswith("-") else arg
        path = os.path.join(base, piece)
        if piece and os.path.lexists(path):
            named.append(os.path.realpath(path))
    return named


def _first_closed(path: str, uid: int) -> Optional[str]:
    """The first directory on the way to ``path`` that ``uid`` (with the gid of the same
    number, no other group) may not search: real, or ``None``. ``path`` itself is not
    asked (a bind shows it with its own mode)."""
    for way in dict.fromkeys((path, os.path.realpath(path))):
        parts = way.split("/")
        for end in range(2, len(parts)):
            directory = os.path.realpath("/".join(parts[:end]))
            if not _may(directory, uid, 0o1):
                return directory
    return None


def _may(path: str, uid: int, bits: int) -> bool:
    """Whether ``uid`` (and the gid of that number) has ``bits`` (rwx: 4, 2, 1) on ``path``
    by its mode; a path that is not there takes no one's leave."""
    try:
        status = os.stat(path)
    except OSError:
        return True
    if status.st_uid == uid:
        granted = status.st_mode >> 6
    elif status.st_gid == uid:
        granted = status.st_mode >> 3
    else:
        granted = status.st_mode
    return granted & bits == bits


def _homes(env: Mapping[str, str]) -> Tuple[str, ...]:
    """The server's home first, then ours and the password database's (hidden too)."""
    found = [env.get("HOME"), os.environ.get("HOME")]
    try:
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:  # a uid with no entry: $HOME is all there is
        pass
    return tuple(dict.fromkeys(h for h in found if h and h.startswith("/")))


def _probe(path: str) -> Tuple[str, str]:
    real = os.path.realpath(path)  # a symlink is hidden where it leads
    if os.path.isdir(real):
        return real, DIR
    return real, FILE if os.path.lexists(real) else MISSING


def _read_init() -> str:
    global _init_source
    if _init_source is None:
        with open(_INIT_FILE, encoding="utf-8") as source:
            _init_source = source.read()
    return _init_source


# ----------------------------------------------------------------------------- descriptors


def _above_stdio(fd: int) -> int:
    """``fd`` moved to 3 or above: a harness without stdin would hand out 0, which
    bwrap's own stdin would then overwrite in the child."""
    if fd > 2:
        return fd
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return high


class _Ends:
    """The pipes of one start: one end of each is ours, the other goes to bwrap.

    All are close-on-exec in the harness; ``pass_fds`` hands bwrap its ends,
    and bwrap passes them to the init, which keeps none for the server.
    """

    def __init__(self) -> None:
        self.ours: Dict[str, int] = {}
        self._theirs: Dict[str, int] = {}

    def open(self, cgroups: Sequence["Cgroup"]) -> Channels:
        joins = ["cgroup%d" % n for n in range(len(cgroups))]
        for name, group in zip(joins, cgroups):
            self._theirs[name] = _above_stdio(group.open_procs())
        self._pipe("lifeline", ours_writes=True)  # never written: its EOF is the message
        self._pipe("status", ours_writes=False)
        self._pipe("seccomp", ours_writes=True)
        t = self._theirs
        return Channels(
            lifeline=t["lifeline"],
            status=t["status"],
            seccomp=t["seccomp"],
            cgroups=tuple(t[name] for name in joins),
        )

    def _pipe(self, name: str, ours_writes: bool) -> None:
        read_end, write_end = os.pipe()
        ours, theirs = (write_end, read_end) if ours_writes else (read_end, write_end)
        self.ours[name] = ours
        self._theirs[name] = _above_stdio(theirs)

    def theirs(self) -> Tuple[int, ...]:
        return tuple(self._theirs.values())

    def feed_seccomp(self, program: bytes) -> None:
        # A few hundred bytes: the pipe takes it whole, and bwrap reads to EOF.
        fd = self.ours.pop("seccomp")
        try:
            view = memoryview(program)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def close_theirs(self) -> None:
        """bwrap has its copies now."""
        for fd in self._theirs.values():
            os.close(fd)
        self._theirs.clear()

    def take(self, name: str) -> int:
        return self.ours.pop(name)

    def close(self) -> None:
        for fd in list(self.ours.values()) + list(self._theirs.values()):
            os.close(fd)
        self.ours.clear()
        self._theirs.clear()


# ----------------------------------------------------------------------------- coming up


def _await_server(
    child: "subprocess.Popen[bytes]", ends: _Ends, invocation: Invocation, spawn: "Spawn"
) -> None:
    """Read the init's reports to EOF: up, then nothing (exec'd) or why not."""
    fd = ends.take("status")
    try:
        reports = _read_reports(fd, time.monotonic() + STARTUP_TIMEOUT)
    finally:
        os.close(fd)
    failures = [line.split(" ", 2)[1:] for line in reports if line.startswith("failed ")]
    if failures and failures[0][0] == "exec":
        raise TransportFailed(
            "cannot start %s in the jail: %s (inside, /tmp is private and "
            "hidden paths are empty)" % (spawn.executable, failures[0][-1])
        )
    if failures and failures[0][0] == "user":
        raise TransportFailed("the jail's init could not give up root: %s" % failures[0][-1])
    if failures and failures[0][0] == "dumpable":
        raise TransportFailed(
            "the jail's init could not make itself non-dumpable, so the "
            "server could stop it: %s" % failures[0][-1]
        )
    if failures:
        raise TransportFailed("the jail's init could not join its cgroups: %s" % failures[0][-1])
    if "up" not in reports:
        raise TransportFailed(
            "bubblewrap could not build the jail: %s" % _diagnose(child, invocation, spawn)
        )


def _read_reports(fd: int, deadline: float) -> List[str]:
    data = process.read_to_eof(fd, deadline, _MAX_REPORTS)
    if data is None:
        raise TransportFailed("the jail did not start the server within %g s" % STARTUP_TIMEOUT)
    return data.decode("utf-8", "replace").splitlines()


#: Bytes kept of what the jail's init reports on its status pipe (a few short lines).
_MAX_REPORTS = 64 * 1024


def _diagnose(child: "subprocess.Popen[bytes]", invocation: Invocation, spawn: "Spawn") -> str:
    """bwrap's own words: its message went to the server's stderr, so build the
    same jail once more with stderr captured."""
    code = child.wait()
    try:
        probe = subprocess.run(
            list(invocation.probe),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=dict(invocation.env),
            cwd=spawn.cwd,
            timeout=STARTUP_TIMEOUT,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as e:
        return "bwrap exited with status %d; rerunning it failed too: %s" % (code, e)
    said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
    if probe.returncode == 0 or not said:
        return "bwrap exited with status %d before the jail was up (see the server's stderr)" % code
    hint = ""
    if "--unshare-user" not in invocation.argv:  # root's jail for Jail.run_as: none made
        hint = (
            " -- as root, a jail that runs as Jail.run_as is built with no user namespace, "
            "which needs CAP_SYS_ADMIN: give it that, or run as a user that is not root"
        )
    elif "namespace" in said[-1]:
        hint = (
            " -- user namespaces must be allowed: see `sysctl user.max_user_namespaces`, "
            "and on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns"
        )
    return said[-1] + hint


def _abandon(child: "subprocess.Popen[bytes]") -> None:
    """A start that failed after bwrap ran: kill its group, reap it, close its pipes."""
    process.end(child)


# ----------------------------------------------------------------------------- watching


def _watch(child: "subprocess.Popen[bytes]", ends: _Ends, cgroups: Sequence["Cgroup"]) -> None:
    try:
        pidfd = os.pidfd_open(child.pid)  # bwrap is unreaped: the pid is still its own
    except (AttributeError, OSError) as e:
        raise TransportFailed("a jail needs pidfd_open (Linux 5.3+, Python 3.9+): %s" % e) from e
    lifeline = ends.take("lifeline")
    thread = _threads.named(_keep_watch, "mcp-jail-%d" % child.pid, (pidfd, lifeline, cgroups))
    try:
        _threads.start(thread)
    except RuntimeError as e:
        os.close(pidfd)
        os.close(lifeline)
        raise TransportFailed("cannot start the jail's watcher thread: %s" % e) from e


def _keep_watch(pidfd: int, lifeline: int, cgroups: Sequence["Cgroup"]) -> None:
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll()  # readable once bwrap has exited, reaped or not
    finally:
        os.close(lifeline)
        os.close(pidfd)
        _remove_all(cgroups, CGROUP_DRAIN)


# ----------------------------------------------------------------------------- cgroups

_CGROUP_HINT = (
    "max_processes needs a pids cgroup this process may create groups in: a "
    "cgroup v1 pids hierarchy (as root), or a delegated cgroup v2 subtree with the "
    "pids controller (systemd: Delegate=yes); or leave max_processes unset"
)
_MEMORY_HINT = (
    "memory_bytes needs a memory cgroup this process may create groups in (an "
    "RLIMIT_AS alone bounds neither memfds, shared memory nor tmpfs): a cgroup v1 "
    "memory hierarchy (as root), or a delegated cgroup v2 subtree with the memory "
    "controller (systemd: Delegate=yes); or leave memory_bytes unset"
)
#: A controller's files start with its name: the hint for a file we could not write.
_HINTS = {"pids": _CGROUP_HINT, "memory": _MEMORY_HINT}
_PREFIX = "mcp_client-"
_serial = itertools.count(1)
_active: Dict[str, None] = {}  # our cgroups in use: the sweep leaves them alone

#: A cgroup file to write, its value, and whether a kernel without that file is
#: refused (``True``) or goes without it (``False``: a refinement, not the bound).
Setting = Tuple[str, str, bool]


def jail_cgroups(jail: Jail) -> List["Cgroup"]:
    """The cgroups ``jail`` needs, made and limited: none, one (v2: a directory
    holds both controllers) or two (v1: a hierarchy each). :class:`TransportFailed`
    when this machine gives none for a limit the jail asks."""
    wanted: Dict[str, List[Setting]] = {}
    limit = pids_max(jail)
    if limit is not None:
        wanted.setdefault(_pids_parent(), []).append(("pids.max", str(limit), True))
    if jail.memory_bytes is not None:
        version, parent = _parent("memory", _MEMORY_HINT)
        wanted.setdefault(parent, []).extend(_memory_settings(version, jail.memory_bytes))
    made: List[Cgroup] = []
    try:
        for parent, settings in wanted.items():
            made.append(Cgroup.make(parent, settings))
    except BaseException:
        _remove_all(made, 0.0)
        raise
    return made


def _memory_settings(version: str, limit: int) -> List[Setting]:
    """The whole jail's memory at ``limit``: every page it charges (heap, memfd, shm,
    tmpfs), and no way around it through swap."""
    if version == "v1":
        # memsw (memory + swap) exists when the kernel accounts swap: with swap and
        # without it, a tmpfs page pushed out to swap would stop counting.
        return [
            ("memory.limit_in_bytes", str(limit), True),
            ("memory.memsw.limit_in_bytes", str(limit), False),
        ]
    # v2: swap counted apart, so none; an OOM takes the whole jail, not one process.
    return [
        ("memory.max", str(limit), True),
        ("memory.swap.max", "0", False),
        ("memory.oom.group", "1", False),
    ]


def _remove_all(cgroups: Sequence["Cgroup"], patience: float) -> None:
    for group in cgroups:
        group.remove(patience)


class Cgroup:
    """One jail's cgroup in one hierarchy: ``<our cgroup>/mcp_client-<harness pid>-<n>``."""

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def create(cls, limit: int) -> "Cgroup":
        """A pids cgroup with ``pids.max`` at ``limit``."""
        return cls.make(_pids_parent(), [("pids.max", str(limit), True)])

    @classmethod
    def make(cls, parent: str, settings: Sequence[Setting]) -> "Cgroup":
        """A new group under ``parent``, each setting written in order."""
        _sweep(parent)
        path = os.path.join(parent, "%s%d-%d" % (_PREFIX, os.getpid(), next(_serial)))
        # Marked in use before it exists: another thread's sweep would otherwise find it
        # empty between the mkdir and the mark, and remove it under our feet.
        _active[path] = None
        try:
            os.mkdir(path, 0o755)
        except OSError as e:
            _active.pop(path, None)
            raise TransportFailed(
                "cannot create the cgroup %s: %s. %s"
                % (path, e.strerror or e, _HINTS[settings[0][0].split(".")[0]])
            ) from e
        group = cls(path)
        try:
            for name, value, required in settings:
                group._set(name, value, required)
        except BaseException:
            group.remove(0.0)
            raise
        return group

    def _set(self, name: str, value: str, required: bool) -> None:
        target = os.path.join(self.path, name)
        if not required and not os.path.exists(target):
            return
        try:  # cgroupfs holds no links, but every file written by name goes one way
            fd = open_for_writing(target, os.O_CREAT | os.O_TRUNC, "a cgroup limit")  # as "w"
            try:
                os.write(fd, value.encode("ascii"))
            finally:
                os.close(fd)
        except OSError as e:
            raise TransportFailed(
                "cannot set %s: %s. %s" % (target, e.strerror or e, _HINTS[name.split(".")[0]])
            ) from e

    def open_procs(self) -> int:
        """``cgroup.procs`` for the init to join with (it writes ``0``: itself)."""
        try:
            return open_for_writing(os.path.join(self.path, "cgroup.procs"), 0, "a cgroup.procs")
        except OSError as e:
            raise TransportFailed("cannot open %s/cgroup.procs: %s" % (self.path, e)) from e

    def remove(self, patience: float) -> None:
        """Remove the group once the kernel has emptied it (``EBUSY`` until then)."""
        deadline = time.monotonic() + patience
        pause = 0.0005
        while True:
            try:
                os.rmdir(self.path)
                break
            except FileNotFoundError:
                break
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() >= deadline:
                    log.warning("cgroup %s left behind: %s", self.path, e)
                    break
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        _active.pop(self.path, None)


def _pids_parent() -> str:
    """Where our own processes are in the pids hierarchy: v1 first, else v2."""
    return _parent("pids", _CGROUP_HINT)[1]


def _parent(controller: str, hint: str) -> Tuple[str, str]:
    """``("v1" | "v2", directory)``: our own cgroup where ``controller`` is, v1 first."""
    mounts = _cgroup_mounts()
    own = _own_cgroups()
    for key in (controller, ""):  # "": the unified (v2) hierarchy
        if key not in own or key not in mounts:
            continue
        root, point = mounts[key]
        path = own[key]
        if path == root or path.startswith(root.rstrip("/") + "/"):
            parent = os.path.join(point, path[len(root) :].lstrip("/"))
            if key or controller in _read(os.path.join(parent, "cgroup.controllers")).split():
                return ("v1" if key else "v2"), parent
    raise TransportFailed("no %s cgroup controller found for this process. %s" % (controller, hint))


def _cgroup_mounts() -> Dict[str, Tuple[str, str]]:
    """Each v1 controller's hierarchy (``"pids"``, ``"memory"``) and ``""``, the
    unified one -> (mount root, mount point)."""
    found: Dict[str, Tuple[str, str]] = {}
    for line in _read("/proc/self/mountinfo").splitlines():
        fields, _, tail = line.partition(" - ")
        parts, described = fields.split(), tail.split()
        if len(parts) < 5 or len(described) < 3:
            continue
        kind, options = described[0], described[2].split(",")
        where = (_unescape(parts[3]), _unescape(parts[4]))
        if kind == "cgroup2":
            found.setdefault("", where)
        elif kind == "cgroup":
            for controller in ("pids", "memory"):
                if controller in options:
                    found.setdefault(controller, where)
    return found


def _own_cgroups() -> Dict[str, str]:
    """Each v1 controller (``"pids"``, ``"memory"``, ...) and ``""`` (v2) -> our
    cgroup's path in that hierarchy."""
    own: Dict[str, str] = {}
    for line in _read("/proc/self/cgroup").splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    return own


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes.
    return field.encode("latin-1").decode("unicode_escape") if "\\" in field else field


def _read(path: str) -> str:
    try:
        with open(path) as stream:
            return stream.read()
    except OSError:
        return ""


def _sweep(parent: str) -> None:
    """Remove empty groups left behind by harnesses that died (or by us, once idle)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(_PREFIX):
            continue
        path = os.path.join(parent, name)
        owner = name[len(_PREFIX) :].split("-")[0]
        theirs = owner.isdigit() and int(owner) != os.getpid()
        if path in _active or (theirs and _alive(int(owner))):
            continue
        try:
            os.rmdir(path)
        except OSError:  # still in use, or not ours to remove
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
