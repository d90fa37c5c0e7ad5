"""Containment: a :class:`Jail`, and the pure invocation of bubblewrap that puts a server in one.

``ProcessTransport(spawn, jail=Jail(...))`` runs the server inside bubblewrap
(``bwrap``). :func:`invocation` turns a jail, a spawn and the facts of this machine
(:class:`Host`, gathered by :mod:`mcp_client.jail.spawn`) into bwrap's argv, its
environment and a seccomp program. It does no I/O, so every rule below is
unit-tested without bwrap.

The jail, from outside in:

* **Identity**: a harness that is not root runs the jail as itself, in a new
  user namespace (its uid is unprivileged already). A root harness runs it as
  ``Jail.run_as`` when that is set (:data:`NOBODY`, 65534, in code mode's
  program jail, always): a host uid and gid that own nothing. In a user
  namespace of a root harness's, bubblewrap would map the jail's uid -- whatever
  ``--uid`` says -- to the host's root, the owner of every root-owned file
  (``/etc/shadow``, mode-0600 files: no capability is needed to read what one
  owns). So that jail has none: bubblewrap builds it as root, and its init,
  before anything else runs, empties its capability sets (bounding and ambient
  too), drops its groups, and becomes that gid and uid. A directory that uid
  cannot search on the way to what the jail must show (``/root``, where the
  interpreter may live) is covered by an empty read-only one, the paths under it
  bound back; the jail's own ``/tmp`` and ``/dev/shm`` are mode 1777; a
  writable path that uid cannot write is refused. With ``run_as=None`` (the
  default: a server installed, or working, under ``/root`` needs root's uid) a
  root harness's jail is root's, uid 0 inside and out. Every capability is
  dropped, whoever runs the jail.
* **Namespaces**: new pid, mount, ipc and uts namespaces, a new user namespace
  (but for a root harness's jail with ``run_as``: above), and a new network
  namespace unless ``network=True`` (its own loopback only: no TCP/UDP
  anywhere, 127.0.0.1 included).
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
  root harness with ``run_as=None``), its files would otherwise take writes to
  the host's own sysctls (``kernel.core_pattern``: code run as root outside).
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
    "HOST_CONFIGS",
    "NOBODY",
    "default_entry",
    "Host",
    "Channels",
    "Invocation",
    "Plan",
    "invocation",
    "plan",
    "paths_to_probe",
    "paths_to_reach",
    "pids_max",
    "runs_as",
    "require_host",
    "seccomp_filter",
    "SOCKET_FAMILIES",
    "unseen",
    "INSTALL_HINT",
    "DIR",
    "FILE",
    "MISSING",
]

#: Where MCP hosts keep their configs (their servers' commands, environments and
#: tokens), their credentials and their logs (a server's stderr, a call's arguments),
#: on Linux and macOS: hidden in every jail by default (:data:`DEFAULT_HIDDEN`). A
#: directory is hidden whole where it is the host's own. Not here: a project's
#: ``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json`` (wherever a project is:
#: name it, ``--hide``); Amazon Q's ``~/.aws/amazonq`` (under ``~/.aws``, hidden).
HOST_CONFIGS: Tuple[str, ...] = (
    # Claude Desktop: the config, extensions and logs (macOS; Linux builds use ~/.config)
    "~/.config/Claude",
    "~/Library/Application Support/Claude",
    "~/Library/Logs/Claude",
    # Claude Code: user and local scopes (~/.claude.json and its backup), settings,
    # OAuth credentials, transcripts; managed settings and managed-mcp.json
    "~/.claude.json",
    "~/.claude.json.backup",
    "~/.claude",
    "~/.config/claude",
    "/etc/claude-code",
    "/Library/Application Support/ClaudeCode",
    # Cursor: mcp.json, the app's storage and logs, its remote server
    "~/.cursor",
    "~/.config/Cursor",
    "~/Library/Application Support/Cursor",
    "~/.cursor-server",
    # VS Code and its forks: User/mcp.json, settings.json, globalStorage (Cline's
    # cline_mcp_settings.json, Roo Code's mcp_settings.json), logs; the remote server
    "~/.config/Code",
    "~/.config/Code - Insiders",
    "~/.config/VSCodium",
    "~/Library/Application Support/Code",
    "~/Library/Application Support/Code - Insiders",
    "~/Library/Application Support/VSCodium",
    "~/.vscode-server",
    "~/.vscode-server-insiders",
    # GitHub Copilot: the CLI's mcp-config.json, the editors' tokens
    "~/.copilot",
    "~/.config/github-copilot",
    # Windsurf (Codeium): ~/.codeium/windsurf/mcp_config.json, tokens, the app, its server
    "~/.codeium",
    "~/.config/Windsurf",
    "~/Library/Application Support/Windsurf",
    "~/.windsurf-server",
    # Cline's CLI, Continue (config.yaml, mcpServers/), Kiro, Amp
    "~/.cline",
    "~/.continue",
    "~/.kiro",
    "~/.config/amp",
    # Zed: settings.json's context_servers; its data and logs
    "~/.config/zed",
    "~/.local/share/zed",
    "~/Library/Application Support/Zed",
    "~/Library/Logs/Zed",
    # Goose: config.yaml, secrets.yaml; sessions and logs
    "~/.config/goose",
    "~/.local/share/goose",
    "~/.local/state/goose",
    # LM Studio: mcp.json (and the copy it keeps in its cache)
    "~/.lmstudio",
    "~/.cache/lm-studio",
    # Gemini CLI and Qwen Code: settings.json, OAuth credentials
    "~/.gemini",
    "~/.qwen",
    # Codex: config.toml's mcp_servers, auth.json
    "~/.codex",
    # opencode: opencode.json's mcp, auth.json and mcp-auth.json
    "~/.config/opencode",
    "~/.local/share/opencode",
    # mcp-remote: the OAuth tokens of every remote server it reaches
    "~/.mcp-auth",
)

#: Credential places under ``$HOME`` a jailed server sees as empty by default, and
#: :data:`HOST_CONFIGS`. ``~`` is every home the harness knows of: ``$HOME``, the
#: password database's, and the server's own ``HOME`` when ``Spawn.env`` moves it.
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
) + HOST_CONFIGS

#: The host uid -- and gid, the same number -- for ``Jail.run_as`` (what a root harness's
#: program jails run as): the kernel's overflow uid, "nobody", which owns no file of the host's.
NOBODY = 65534

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
    #: The host uid and gid (one number) the jail's processes run as when the harness
    #: is root (:data:`NOBODY`, say); a harness that is not runs them as itself. ``None``
    #: keeps a root harness's jail root: uid 0 inside and out, every capability
    #: dropped, yet the owner of every root-owned file (``/etc/shadow``, mode-0600
    #: files) -- what a server installed under ``/root``, or working on root's files,
    #: needs to run at all. A code-mode program's jail is always :data:`NOBODY`'s.
    run_as: Optional[int] = None
    #: Whether ``memory_bytes`` is also each process's ``RLIMIT_AS`` (a ``MemoryError``
    #: rather than the cgroup's kill). ``RLIMIT_AS`` counts address space reserved, not
    #: used -- every thread's stack and malloc arena -- so a threaded program meets it
    #: far below ``memory_bytes`` of use; the memory cgroup bounds what is used either way.
    address_space_limit: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.network, bool):
            raise TypeError("Jail.network must be a bool, not %r" % (self.network,))
        if self.run_as is not None and (
            isinstance(self.run_as, bool)
            or not isinstance(self.run_as, int)
            or not 0 < self.run_as < 0xFFFFFFFF
        ):
            raise ValueError(
                "Jail.run_as must be a uid other than root's (1 to 4294967294) or None, "
                "not %r" % (self.run_as,)
            )
        if not isinstance(self.address_space_limit, bool):
            raise TypeError(
                "Jail.address_space_limit must be a bool, not %r" % (self.address_space_limit,)
            )
        for name in ("readable", "writable", "hidden"):  # frozen: the tuples are made once, here
            object.__setattr__(self, name, _paths(name, getattr(self, name)))
        for name in _LIMIT_FIELDS:
            _check_limit(name, getattr(self, name))


def default_entry(path: str, homes: Sequence[str]) -> Optional[str]:
    """The entry of :data:`DEFAULT_HIDDEN` that ``path`` names -- spelt as the entry is
    (``~/.cursor``), or absolute under one of ``homes`` (``/home/me/.cursor``) -- or
    ``None``: what a runner may show deliberately (``--show``), in every home."""
    path = posixpath.normpath(path) if path.startswith("/") else path
    if path.startswith("~"):
        spelt = _path("hidden", path)
        return spelt if spelt in DEFAULT_HIDDEN else None
    for entry in DEFAULT_HIDDEN:
        if path in expand(entry, homes):
            return entry
    return None


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
    ``root``: whether the harness runs as root. ``closed`` and ``unwritable``, for a
    root harness only (see :func:`paths_to_reach`): the directories the jail's uid
    cannot search, each the first on the way to a path the jail must show; the real
    writable paths that uid cannot write.
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
    root: bool = False
    closed: Tuple[str, ...] = ()
    unwritable: Tuple[str, ...] = ()


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


def runs_as(jail: Jail, root: bool) -> Optional[int]:
    """The host uid the jail's processes take when it is not the harness's own:
    ``jail.run_as`` for a root harness (``None`` there keeps root), else ``None``."""
    return jail.run_as if root else None


def paths_to_reach(
    jail: Jail, spawn: "Spawn", host: Host, named: Sequence[str] = ()
) -> Tuple[str, ...]:
    """The real paths a jail that runs as :func:`runs_as` must be able to reach, for
    :class:`Host`'s ``closed`` and ``unwritable``: the interpreter of the init and its
    standard library, the working directory, the executable (when absolute), each
    readable and writable path (as ``host.paths`` knows them), and ``named`` (what the
    server's argv names)."""
    found = [host.python, host.python_home]
    if host.cwd is not None:
        found.append(host.cwd)
    if spawn.executable.startswith("/"):
        found.append(spawn.executable)
    for path in jail.readable + jail.writable:
        for probed in expand(path, host.homes[:1]):
            real, kind = host.paths.get(probed, (probed, MISSING))
            if kind != MISSING:
                found.append(real)
    found += named
    return tuple(dict.fromkeys(found))


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
    user = runs_as(jail, host.root)
    mounts = _mounts(jail, host, spawn.executable)
    _require_visible(mounts, spawn, host)
    _require_writable(jail, host)
    tmp_size = jail.memory_bytes if jail.tmp_bytes is None else jail.tmp_bytes
    jail_args = _namespaces(jail, user) + _mount_args(
        mounts, jail.memory_bytes, tmp_size, shared=user is not None
    )
    if host.cwd is not None:
        jail_args += ["--chdir", host.cwd]
    elif inside_cwd is not None:
        jail_args += _inside(inside_cwd, shared=user is not None)
    init = [host.python, "-I", "-S", "-B", "-c"]
    argv = (
        [bwrap, "--seccomp", str(channels.seccomp)]
        + jail_args
        + ["--"]
        + init
        + [host.init_source]
        + _init_args(jail, channels, user)
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


#: What a root harness's jail keeps for its init alone, which spends them at once on
#: becoming ``Jail.run_as``: its groups, gid and uid (SETGID, SETUID), and the
#: bounding set emptied (SETPCAP). Nothing else runs before they are gone.
_INIT_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")


def _namespaces(jail: Jail, user: Optional[int] = None) -> List[str]:
    # A root harness's jail has no user namespace of its own: in one, bubblewrap
    # maps the jail's uid -- whatever --uid says -- to the host's root, which owns
    # /etc/shadow and every mode-0600 file of root's (no capability needed to read
    # what one owns). Built as root, its init becomes `user` instead.
    args = [] if user is not None else ["--unshare-user"]
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
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
    args += ["--hostname", _HOSTNAME, "--cap-drop", "ALL"]
    if user is not None:
        for capability in _INIT_CAPABILITIES:
            args += ["--cap-add", capability]
    return args + ["--as-pid-1"]


# A mount: (what, target). "host" and "bind" show the host's tree there, read-only
# and read-write; "remount-ro" and "dir" (a directory made in a tmpfs, for a bind
# under it) change no content; the rest cover it ("cover": a directory the jail's
# uid cannot search, made an empty one the paths under it are bound into).
Mount = Tuple[str, str]
_SHOWS_HOST = ("host", "bind")
_NO_CONTENT = ("remount-ro", "dir")
#: The mounts that make a new, empty tree: what is bound under one needs its directories.
_FRESH = ("tmpfs", "cover", "empty-dir")


def _mounts(jail: Jail, host: Host, executable: Optional[str] = None) -> List[Mount]:
    user = runs_as(jail, host.root)
    mounts: List[Mount] = [
        ("host", "/"),
        ("dev", "/dev"),
        ("tmpfs", "/dev/shm"),
        ("remount-ro", "/dev"),
        ("proc", "/proc"),
        ("sysctl", "/proc/sys"),
        ("tmpfs", "/tmp"),
    ]
    covers: List[str] = []
    if user is not None:
        for closed in sorted(set(host.closed)):  # a parent first: its children are then unseen
            if _visible(closed, mounts):  # not under /tmp or another cover, made anew anyway
                mounts.append(("cover", closed))
                covers.append(closed)
    for path in jail.readable:
        mounts += [("host", real) for real in _present(path, host, "readable")]
    for path in jail.writable:
        mounts += [("bind", real) for real in _present(path, host, "writable")]
    # What the jail runs, bound back into a cover: the init's interpreter and its
    # library, the working directory, the executable (a readable path does the rest).
    for needed in (host.python_home, host.python, host.cwd, executable):
        if needed and needed.startswith("/") and not _visible(needed, mounts):
            if any(_within(needed, cover) for cover in covers):
                mounts.append(("host", needed))
    mounts += [("remount-ro", cover) for cover in covers]
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
    return mounts if user is None else _with_dirs(mounts)


def _with_dirs(mounts: Sequence[Mount]) -> List[Mount]:
    """``mounts`` with a ``dir`` (mode 0755) before each bind into a new tmpfs, for each
    directory between the two: bubblewrap makes a bind's missing parents mode 0700 and
    its own, root's, which a jail that is not root could not pass."""
    made: List[Mount] = []
    done = set()
    for what, target in mounts:
        if what in _SHOWS_HOST:
            over = _innermost(target, made)
            if over is not None and over[0] in _FRESH:
                for directory in _between(over[1], target):
                    if directory not in done:
                        done.add(directory)
                        made.append(("dir", directory))
        made.append((what, target))
    return made


def _innermost(path: str, mounts: Sequence[Mount]) -> Optional[Mount]:
    """The last mount of ``mounts`` over a parent of ``path``, that mount made its content."""
    for what, target in reversed(mounts):
        if what not in _NO_CONTENT and target != path and _within(path, target):
            return what, target
    return None


def _between(top: str, path: str) -> List[str]:
    """The directories strictly between ``top`` and ``path``, outermost first."""
    parts = path[len(top.rstrip("/")) :].strip("/").split("/")[:-1]
    return [posixpath.join(top, *parts[: n + 1]) for n in range(len(parts))]


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
        if what not in _NO_CONTENT and _within(path, target):
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


def _require_writable(jail: Jail, host: Host) -> None:
    user = runs_as(jail, host.root)
    if user is not None and host.unwritable:
        path = host.unwritable[0]
        raise TransportFailed(
            "the jail runs as uid %d (the harness is root; a jail is never root), which "
            "cannot write %s, a path it is to write: make it that uid's (chown %d:%d %s), "
            "or leave it out" % (user, path, user, user, path)
        )


def unseen(jail: Jail, host: Host, paths: Sequence[str]) -> Tuple[str, ...]:
    """The real ``paths`` (as the harness sees them) that the jail would not show
    the server: under its private ``/tmp``, or hidden. For a pre-check of every
    path a server's argv names (a script under ``/tmp``): the invocation itself sees
    only the executable, and the server would fail inside, far from its cause."""
    mounts = _mounts(jail, host)
    return tuple(path for path in paths if not _visible(path, mounts))


def _inside(cwd: str, shared: bool = False) -> List[str]:
    """``--chdir`` to ``cwd`` under the jail's ``/tmp``, made there (mode 0777 when the
    jail's uid is not the one that builds it: ``shared``)."""
    path = posixpath.normpath(cwd)
    if not _within(path, "/tmp"):
        raise TransportFailed(
            "a working directory made inside the jail must be under /tmp: %s" % cwd
        )
    made = (["--perms", "0777"] if shared else []) + ["--dir", path]
    return (made if path != "/tmp" else []) + ["--chdir", path]


def _mount_args(
    mounts: Sequence[Mount],
    size: Optional[int],
    tmp_size: Optional[int],
    shared: bool = False,
) -> List[str]:
    """bwrap's options for ``mounts``. ``shared``: the jail is built by root for another
    uid (a root harness's), so its ``/tmp`` and ``/dev/shm`` are mode 1777."""
    sized = [] if size is None else ["--size", str(size)]
    tmp_sized = [] if tmp_size is None else ["--size", str(tmp_size)]
    open_to_all = ["--perms", "1777"] if shared else []
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
            args += (tmp_sized if target == "/tmp" else sized) + open_to_all + ["--tmpfs", target]
        elif what in ("empty-dir", "cover"):  # read-only once what goes under it is bound
            args += ["--tmpfs", target]
        elif what == "dir":
            args += ["--dir", target]  # 0755, bwrap's own default for a --dir
        elif what == "empty-file":
            # /dev/null itself: it reads empty, and what is written to it vanishes. A
            # read-only bind would be a nodev mount, and opening it EACCES -- which
            # makes e.g. npm refuse to run when ~/.npmrc exists, instead of reading none.
            args += ["--dev-bind", "/dev/null", target]
        else:
            args += ["--remount-ro", target]
    return args


def _init_args(jail: Jail, channels: Channels, user: Optional[int] = None) -> List[str]:
    """``LIFELINE STATUS CGROUPS [USER=UID:GID] RLIMIT_X=N...`` for
    :mod:`mcp_client.jail.init_script` (``USER``: who it becomes, when it starts as root)."""
    args = [
        str(channels.lifeline),
        str(channels.status),
        ",".join(map(str, channels.cgroups)) or "-",
    ]
    if user is not None:
        args.append("USER=%d:%d" % (user, user))
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
