"""Containment: a :class:`Jail`, and the pure invocation of bubblewrap that puts a server in one.

``ProcessTransport(spawn, jail=Jail(...))`` runs the server inside bubblewrap
(``bwrap``). :func:`invocation` turns a jail, a spawn and the facts of this machine
(:class:`Host`, gathered by :mod:`mcp_client.jail.spawn`) into bwrap's argv, its
environment and a seccomp program. It does no I/O, so every rule below is
unit-tested without bwrap.

The jail, from outside in:

* **Namespaces**: new user, pid, mount, ipc and uts namespaces, and a new
  network namespace unless ``network=True`` (its own loopback only: no TCP/UDP
  anywhere, 127.0.0.1 included). Every capability is dropped, even for root.
* **Filesystem**: the host's ``/`` read-only; a new ``/proc``; a minimal
  read-only ``/dev`` with a private ``/dev/shm``; a private, empty ``/tmp``
  (both tmpfs capped at ``memory_bytes`` when it is set, so a tmpfs is no way
  around it; ``tmp_bytes`` sizes ``/tmp`` apart, a code-mode program's
  scratch); each ``readable`` path bound read-only over that (for a server
  whose code lives under ``/tmp``: a CI checkout, a virtualenv made there);
  each ``writable`` path bound read-write; each ``hidden`` path
  covered -- a directory by an empty read-only one, a file by ``/dev/null``
  (it reads empty; writes to it vanish).
  Later entries win: a hidden path inside a writable one stays hidden.
  ``/proc/sys`` is read-only: where the jail's uid 0 is the host's root (a
  harness running as root), its files would otherwise take writes to the
  host's own sysctls (``kernel.core_pattern``: code run as root outside).
* **Seccomp**: no new user namespaces (``clone``/``unshare`` with
  ``CLONE_NEWUSER``; ``clone3``, whose flags a filter cannot read, answers
  ``ENOSYS`` and C libraries fall back to ``clone``), no ``io_uring`` (it
  would do socket work behind the filter's back). Socket families are an allow
  list (:data:`SOCKET_FAMILIES`): ``AF_INET`` and ``AF_INET6``, which the
  network namespace confines to the jail's own loopback; ``AF_UNIX`` only with
  ``network=True`` (EPERM otherwise), because a network namespace does not
  cover Unix sockets bound in the filesystem (``/run/docker.sock``, a D-Bus
  bus), which would otherwise be a way past the pipes; ``socketpair`` only
  ``AF_UNIX`` (a connected pair reaches nothing but itself: asyncio and
  libuv's child stdio need it). Every other family is ``EAFNOSUPPORT``, as
  from a kernel built without it: no namespace covers vsock (the hypervisor's
  port space, the host's on a VM), packet, alg, bluetooth, tipc, can or xdp.
  Netlink is refused too: ``npx`` and glibc's ``getaddrinfo`` ask for it and
  go on without it, and nothing else the tests start asks. i386's
  ``socketcall`` hides its family in memory, so it is EPERM always (C
  libraries call ``socket`` directly since Linux 4.3). No keyrings
  (``keyctl``, ``add_key``, ``request_key``: the harness's session keyring is
  inherited, and its keys readable), no ``ptrace``,
  ``process_vm_readv``/``writev`` or ``pidfd_getfd`` (a server could stop or
  rewrite the init, and outlive the harness), and no ``TIOCSTI``/``TIOCLINUX``
  ioctls (a server handed a terminal could make it its own and type into the
  operator's shell), as Docker's and Flatpak's filters do.
* **Init**: the jail's first process is :mod:`mcp_client.jail.init_script` (pid 1, run
  by the harness's own interpreter). It makes itself non-dumpable (no process
  of the jail may open its ``/proc/1/mem``), joins the cgroups, sets the
  rlimits on the server only, execs it, reaps orphans, and exits with the
  server's status -- or when its lifeline pipe breaks, because the harness
  closed it or died (even by SIGKILL). The pid namespace dies with it.

Limits: ``cpu_seconds`` (``RLIMIT_CPU``), ``max_open_files``
(``RLIMIT_NOFILE``) and ``file_size_bytes`` (``RLIMIT_FSIZE``) hold for each
process of the server; core dumps are always off. ``max_processes`` is a
cgroup ``pids`` limit over the whole jail: every process and thread of the
server and its descendants, the jail's own init not counted (``RLIMIT_NPROC``
is per user, and not enforced for root). ``memory_bytes`` is a memory cgroup's
limit over the whole jail, the init included: heap, memfds, SysV and POSIX
shared memory and the tmpfs pages are all charged to it (an ``RLIMIT_AS``
alone bounds none of the last four); it is also each process's
``RLIMIT_AS``, unless ``address_space_limit=False`` (code mode's programs: a
thread reserves its stack and a malloc arena, and sixteen of them meet 512 MiB of
address space while using a few MB). The IPC namespace's ``shmmax``/``shmall``/``shmmni`` stay the
kernel's defaults: whoever could set them inside (the jail's uid 0, when it is
the harness's) could set them back, and ``/proc/sys`` is read-only anyway --
the cgroup is what bounds a segment's pages, and the segments die with the
namespace.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..errors import TransportFailed
from .seccomp import SOCKET_FAMILIES, seccomp_filter

if TYPE_CHECKING:
    from .._os.process import Spawn

__all__ = [
    "Jail",
    "DEFAULT_HIDDEN",
    "Host",
    "Channels",
    "Invocation",
    "Plan",
    "invocation",
    "plan",
    "paths_to_probe",
    "pids_max",
    "require_host",
    "seccomp_filter",
    "SOCKET_FAMILIES",
    "unseen",
    "INSTALL_HINT",
    "DIR",
    "FILE",
    "MISSING",
]

#: Credential places under ``$HOME`` a jailed server sees as empty by default.
#: ``~`` is every home the harness knows of: ``$HOME``, the password database's,
#: and the server's own ``HOME`` when ``Spawn.env`` moves it.
DEFAULT_HIDDEN: Tuple[str, ...] = (
    # keys and key agents' material
    "~/.ssh",
    "~/.gnupg",
    "~/.password-store",
    "~/.local/share/keyrings",
    # cloud and cluster command lines
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.oci",
    "~/.kube",
    "~/.docker",
    "~/.config/doctl",
    "~/.terraform.d",
    "~/.vault-token",
    # package registries
    "~/.pypirc",
    "~/.npmrc",
    "~/.yarnrc.yml",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.nuget",
    # version control and HTTP tokens
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.config/hub",
    # databases
    "~/.pgpass",
    "~/.my.cnf",
    # shell histories (commands carry tokens) and browser profiles (cookies are sessions)
    "~/.bash_history",
    "~/.zsh_history",
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/chromium",
)

#: How to get bubblewrap, for the messages that say it is missing.
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; "
    "Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)"
)

#: Jail field -> the rlimit the init sets on the server (and so its descendants).
_RLIMITS: Tuple[Tuple[str, str], ...] = (
    ("memory_bytes", "RLIMIT_AS"),
    ("cpu_seconds", "RLIMIT_CPU"),
    ("max_open_files", "RLIMIT_NOFILE"),
    ("file_size_bytes", "RLIMIT_FSIZE"),
)
_LIMIT_FIELDS = tuple(name for name, _ in _RLIMITS) + ("max_processes", "tmp_bytes")
#: Processes of the jail's own that the pids cgroup holds besides the server's: the init.
_INIT_TASKS = 1
#: Kinds of path a :class:`Host` reports.
DIR, FILE, MISSING = "dir", "file", "missing"
_HOSTNAME = "jail"


@dataclass(frozen=True)
class Jail:
    """What a jailed server may reach; every default is the safe one.

    ``readable``, ``writable`` and ``hidden`` take absolute paths or ``~/...`` (a
    home); ``readable`` matters only where the jail would otherwise cover a path
    (its private ``/tmp``, a hidden one): everything else is readable already. Limits
    are positive integers or ``None`` for no limit. See the module docstring.
    """

    network: bool = False
    readable: Tuple[str, ...] = ()
    writable: Tuple[str, ...] = ()
    hidden: Tuple[str, ...] = DEFAULT_HIDDEN
    memory_bytes: Optional[int] = None
    #: The size of the private ``/tmp`` (a code-mode program's scratch): ``None`` is
    #: ``memory_bytes``. Its pages are charged to the memory cgroup either way.
    tmp_bytes: Optional[int] = None
    cpu_seconds: Optional[int] = None
    max_processes: Optional[int] = None
    max_open_files: Optional[int] = None
    file_size_bytes: Optional[int] = None
    #: Whether ``memory_bytes`` is also each process's ``RLIMIT_AS`` (a ``MemoryError``
    #: rather than the cgroup's kill). ``RLIMIT_AS`` counts address space reserved, not
    #: used -- every thread's stack and malloc arena -- so a threaded program meets it
    #: far below ``memory_bytes`` of use; the memory cgroup bounds what is used either way.
    address_space_limit: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.network, bool):
            raise TypeError("Jail.network must be a bool, not %r" % (self.network,))
        if not isinstance(self.address_space_limit, bool):
            raise TypeError(
                "Jail.address_space_limit must be a bool, not %r" % (self.address_space_limit,)
            )
        for name in ("readable", "writable", "hidden"):  # frozen: the tuples are made once, here
            object.__setattr__(self, name, _paths(name, getattr(self, name)))
        for name in _LIMIT_FIELDS:
            _check_limit(name, getattr(self, name))


def _paths(name: str, value: Iterable[str]) -> Tuple[str, ...]:
    if isinstance(value, (str, bytes)):
        raise TypeError("Jail.%s takes a sequence of paths, not one string" % name)
    return tuple(_path(name, path) for path in value)


def _path(name: str, path: str) -> str:
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError("Jail.%s: %r is not a path" % (name, path))
    if path == "~" or path.startswith("~/"):
        rest = posixpath.normpath(path[2:] or ".")
        return "~" if rest == "." else "~/" + rest
    if not path.startswith("/"):
        raise ValueError("Jail.%s: %r must be absolute or start with ~/" % (name, path))
    return posixpath.normpath(path)


def _check_limit(name: str, value: Optional[int]) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError("Jail.%s must be a positive int or None, not %r" % (name, value))


def pids_max(jail: Jail) -> Optional[int]:
    """The ``pids.max`` of the jail's cgroup: ``max_processes`` plus the init."""
    return None if jail.max_processes is None else jail.max_processes + _INIT_TASKS


# ----------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class Host:
    """What :func:`invocation` must know of this machine; :mod:`mcp_client.jail.spawn` looks.

    ``homes``: the server's home first, then the harness's. ``paths``: for each
    path :func:`paths_to_probe` named, its real path and kind (``"dir"``,
    ``"file"`` or ``"missing"``). ``cwd``: the server's working directory, real.
    """

    system: str
    machine: str
    bwrap: Optional[str]
    python: str
    python_home: str
    init_source: str
    homes: Tuple[str, ...]
    paths: Mapping[str, Tuple[str, str]] = field(default_factory=dict, hash=False)
    cwd: Optional[str] = None


@dataclass(frozen=True)
class Channels:
    """The descriptors (numbers in the harness, kept by bwrap) the init is given."""

    lifeline: int
    status: int
    seccomp: int
    #: ``cgroup.procs`` of each cgroup the init joins (pids, memory: one, two or none).
    cgroups: Tuple[int, ...] = ()


@dataclass(frozen=True)
class Invocation:
    """What to run. ``probe`` is the same jail without descriptors, running
    ``python -c pass``: rerun with stderr captured to learn why a jail did not come up."""

    argv: Tuple[str, ...]
    env: Mapping[str, str] = field(hash=False)
    seccomp: bytes
    probe: Tuple[str, ...]


def expand(path: str, homes: Sequence[str]) -> Tuple[str, ...]:
    """``~/x`` under each home; an absolute path as it is."""
    if path == "~":
        return tuple(homes)
    if path.startswith("~/"):
        return tuple(posixpath.join(home, path[2:]) for home in homes)
    return (path,)


def paths_to_probe(jail: Jail, homes: Sequence[str]) -> Tuple[str, ...]:
    """Every path whose real path and kind :func:`invocation` will ask :class:`Host` for."""
    found: List[str] = []
    for path in jail.readable + jail.writable:
        found += expand(path, homes[:1])
    for path in jail.hidden:
        found += expand(path, homes)
    return tuple(dict.fromkeys(found))


# ----------------------------------------------------------------------------- the invocation


def invocation(
    jail: Jail,
    spawn: "Spawn",
    env: Mapping[str, str],
    host: Host,
    channels: Channels,
    inside_cwd: Optional[str] = None,
) -> Invocation:
    """bwrap's argv and environment for ``spawn`` in ``jail``, and its seccomp program.

    ``env`` is the server's environment as the transport made it. ``inside_cwd``: a
    working directory under the jail's private ``/tmp``, made there (``spawn.cwd`` is
    then ``None``): a code-mode program's scratch, which no host directory backs.
    Raises :class:`TransportFailed` naming what is missing when no jail can be had.
    """
    bwrap = require_host(host)
    program = seccomp_filter(host.machine, allow_unix=jail.network)
    mounts = _mounts(jail, host)
    _require_visible(mounts, spawn, host)
    tmp_size = jail.memory_bytes if jail.tmp_bytes is None else jail.tmp_bytes
    jail_args = _namespaces(jail) + _mount_args(mounts, jail.memory_bytes, tmp_size)
    if host.cwd is not None:
        jail_args += ["--chdir", host.cwd]
    elif inside_cwd is not None:
        jail_args += _inside(inside_cwd)
    init = [host.python, "-I", "-S", "-B", "-c"]
    argv = (
        [bwrap, "--seccomp", str(channels.seccomp)]
        + jail_args
        + ["--"]
        + init
        + [host.init_source]
        + _init_args(jail, channels)
        + ["--"]
        + list(spawn.argv())
    )
    probe = [bwrap] + jail_args + ["--"] + init + ["pass"]
    return Invocation(tuple(argv), _environment(env, spawn), program, tuple(probe))


#: The old names of :func:`invocation` and :class:`Invocation` (the package spends
#: "plan" on ``schema.plan`` alone now), kept for those who use them.
plan = invocation
Plan = Invocation


def require_host(host: Host) -> str:
    """bwrap's path; :class:`TransportFailed` naming what is missing when this machine has none."""
    if host.system != "Linux":
        raise TransportFailed(
            "a jail needs Linux (bubblewrap and its namespaces); this is %s" % host.system
        )
    if host.bwrap is None:
        raise TransportFailed(
            "a jail needs bubblewrap, and `bwrap` is not on PATH: " + INSTALL_HINT
        )
    return host.bwrap


def _namespaces(jail: Jail) -> List[str]:
    args = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not jail.network:
        args.append("--unshare-net")
    # No --die-with-parent: its PR_SET_PDEATHSIG fires when the *thread* that
    # spawned bwrap ends, and a harness may start a client from a short-lived
    # thread. The init's lifeline pipe is the process-wide signal instead. No
    # --new-session either: the init must stay in its process group, the one
    # retirement signals. A session of its own does not keep the server from a
    # terminal: handed one (stderr on the operator's tty) that no session
    # controls, it can setsid + TIOCSCTTY and make it its own -- the seccomp
    # filter refuses TIOCSTI and TIOCLINUX, the ioctls that would then type
    # into that terminal.
    return args + ["--hostname", _HOSTNAME, "--cap-drop", "ALL", "--as-pid-1"]


# A mount: (what, target). "host" and "bind" show the host's tree there, read-only
# and read-write; "remount-ro" changes no content; the rest cover it.
Mount = Tuple[str, str]
_SHOWS_HOST = ("host", "bind")


def _mounts(jail: Jail, host: Host) -> List[Mount]:
    mounts: List[Mount] = [
        ("host", "/"),
        ("dev", "/dev"),
        ("tmpfs", "/dev/shm"),
        ("remount-ro", "/dev"),
        ("proc", "/proc"),
        ("sysctl", "/proc/sys"),
        ("tmpfs", "/tmp"),
    ]
    for path in jail.readable:
        mounts += [("host", real) for real in _present(path, host, "readable")]
    for path in jail.writable:
        mounts += [("bind", real) for real in _present(path, host, "writable")]
    for path in jail.hidden:  # after the others: hiding wins
        for probed in expand(path, host.homes):
            real, kind = host.paths.get(probed, (probed, MISSING))
            if kind == MISSING or not _visible(real, mounts):
                continue  # nothing there to hide (a path under /tmp is hidden already)
            mounts += (
                [("empty-dir", real), ("remount-ro", real)]
                if kind == DIR
                else [("empty-file", real)]
            )
    return mounts


def _present(path: str, host: Host, how: str) -> List[str]:
    found = [host.paths.get(p, (p, MISSING)) for p in expand(path, host.homes[:1])]
    present = [real for real, kind in found if kind != MISSING]
    if not present:
        raise TransportFailed("the jail cannot bind %s %s: it does not exist" % (path, how))
    return present


def _within(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


def _visible(path: str, mounts: Sequence[Mount]) -> bool:
    """Whether ``path`` shows the host's file inside the jail (the last mount over it decides)."""
    for what, target in reversed(mounts):
        if what != "remount-ro" and _within(path, target):
            return what in _SHOWS_HOST
    return False


def _require_visible(mounts: Sequence[Mount], spawn: "Spawn", host: Host) -> None:
    needed = [
        ("the interpreter that runs the jail's init", host.python),
        ("the standard library of that interpreter", host.python_home),
    ]
    if host.cwd is not None:
        needed.append(("the server's working directory", host.cwd))
    if spawn.executable.startswith("/"):
        needed.append(("the server's executable", spawn.executable))
    for what, path in needed:
        if not _visible(path, mounts):
            raise TransportFailed(
                "%s, %s, would not be visible in the jail (/tmp is private and hidden paths "
                "are empty; name it in Jail.readable, or --allow-read, to show it read-only)"
                % (what, path)
            )


def unseen(jail: Jail, host: Host, paths: Sequence[str]) -> Tuple[str, ...]:
    """The real ``paths`` (as the harness sees them) that the jail would not show
    the server: under its private ``/tmp``, or hidden. For a pre-check of every
    path a server's argv names (a script under ``/tmp``): the invocation itself sees
    only the executable, and the server would fail inside, far from its cause."""
    mounts = _mounts(jail, host)
    return tuple(path for path in paths if not _visible(path, mounts))


def _inside(cwd: str) -> List[str]:
    path = posixpath.normpath(cwd)
    if not _within(path, "/tmp"):
        raise TransportFailed(
            "a working directory made inside the jail must be under /tmp: %s" % cwd
        )
    return (["--dir", path] if path != "/tmp" else []) + ["--chdir", path]


def _mount_args(mounts: Sequence[Mount], size: Optional[int], tmp_size: Optional[int]) -> List[str]:
    sized = [] if size is None else ["--size", str(size)]
    tmp_sized = [] if tmp_size is None else ["--size", str(tmp_size)]
    args: List[str] = []
    for what, target in mounts:
        if what == "host":
            args += ["--ro-bind", target, target]
        elif what == "bind":
            args += ["--bind", target, target]
        elif what == "dev":
            args += ["--dev", target]
        elif what == "proc":
            args += ["--proc", target]
        elif what == "sysctl":
            # The host's /proc/sys, read-only: each file still answers for the
            # namespaces of whoever reads it (the jail's hostname, its loopback).
            # bwrap covers only the parts of /proc it finds writable, and the
            # sys directory is not, though the files in it are.
            args += ["--ro-bind", target, target]
        elif what == "tmpfs":
            args += (tmp_sized if target == "/tmp" else sized) + ["--tmpfs", target]
        elif what == "empty-dir":
            args += ["--tmpfs", target]
        elif what == "empty-file":
            # /dev/null itself: it reads empty, and what is written to it vanishes. A
            # read-only bind would be a nodev mount, and opening it EACCES -- which
            # makes e.g. npm refuse to run when ~/.npmrc exists, instead of reading none.
            args += ["--dev-bind", "/dev/null", target]
        else:
            args += ["--remount-ro", target]
    return args


def _init_args(jail: Jail, channels: Channels) -> List[str]:
    """``LIFELINE STATUS CGROUPS RLIMIT_X=N...`` for :mod:`mcp_client.jail.init_script`."""
    args = [
        str(channels.lifeline),
        str(channels.status),
        ",".join(map(str, channels.cgroups)) or "-",
    ]
    args.append("RLIMIT_CORE=0")  # a core file is a write nobody allowed
    for name, rlimit in _RLIMITS:
        value = getattr(jail, name)
        if rlimit == "RLIMIT_AS" and not jail.address_space_limit:
            continue  # the memory cgroup alone: threads reserve more than they use
        if value is not None:
            args.append("%s=%d" % (rlimit, value))
    return args


def _environment(env: Mapping[str, str], spawn: "Spawn") -> Dict[str, str]:
    # The harness's TMPDIR names a place the jail shows read-only (or not at all):
    # the server's temporary files go to its private /tmp, unless it was told otherwise.
    jailed = dict(env)
    if "TMPDIR" not in (spawn.env or {}):
        jailed["TMPDIR"] = "/tmp"
    return jailed
