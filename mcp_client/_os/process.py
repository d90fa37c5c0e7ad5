"""Every child the package starts, its group killed, its exit awaited and reaped: one place.

A child of ours always starts in a session (and so a process group) of its own
(:func:`start`), so that killing the group ends whatever it started too (``npx`` and
``uvx`` leave grandchildren; a program may fork). Its group is signalled only while its
leader is unreaped (:func:`unreaped`): until the leader is reaped the kernel keeps its
pid, and so the group's id, from being given to anyone else -- so a kill never hits a
recycled id (``Popen.send_signal`` polls first for the same reason; a poll reaps, so
where ``waitid`` can, this looks without reaping).

The callers: the transport (a server, plain or through its lifeline), the jail (bwrap),
code mode (a program unjailed), :mod:`.bounded` (code mode's helpers: ``compile()``,
mypy, a parse, each through its lifeline).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time

from .._frozen import Frozen

TYPE_CHECKING = False
if TYPE_CHECKING:  # the import path loads no typing (tests/test_lazy_imports.py)
    from typing import IO, Any, Dict, Mapping, Optional, Sequence, Tuple, Union

    #: What ``Popen`` takes for a stream: a constant (``PIPE``, ``DEVNULL``), a
    #: descriptor, a file, or ``None`` (inherited).
    Stream = Union[None, int, IO[Any]]

__all__ = [
    "Spawn",
    "SAFE_ENV_KEYS",
    "child_environment",
    "start",
    "cap",
    "unreaped",
    "exited",
    "wait_unreaped",
    "kill_group",
    "end",
    "read_to_eof",
]


#: The only variables a server inherits from our environment (when we have them).
SAFE_ENV_KEYS: Tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TMPDIR",
    "TZ",
)


class Spawn(Frozen):
    """How to start a server: an executable and its argv, never a shell string.

    A frozen value (compared and hashed by its fields, ``env`` compared but not
    hashed); not a dataclass, though :func:`dataclasses.replace` works on it.
    """

    __slots__ = ("executable", "args", "env", "cwd")
    _unhashed = ("env",)
    executable: str
    args: Tuple[str, ...]
    env: Optional[Mapping[str, str]]
    cwd: Optional[str]

    def __init__(
        self,
        executable: str,
        args: Tuple[str, ...] = (),
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
    ) -> None:
        # A string where the argv tuple belongs is every character an argument:
        # Spawn("server", "/srv/data") would hand a filesystem server "/" as a root.
        if not isinstance(executable, str):
            raise TypeError("Spawn.executable must be a str, not %s" % type(executable).__name__)
        if isinstance(args, (str, bytes)):
            raise TypeError(
                "Spawn.args must be a tuple of str, not the %s %r: each "
                "argument is one element" % (type(args).__name__, args)
            )
        wrong = [a for a in args if not isinstance(a, str)]
        if wrong:
            raise TypeError("Spawn.args must hold str only, not %r" % (wrong[0],))
        self._assign(executable, tuple(args), env, cwd)  # a list is taken, kept as a tuple

    def argv(self) -> Tuple[str, ...]:
        """The whole command line: the executable, then its arguments."""
        return (self.executable,) + self.args


def child_environment(spawn: Spawn) -> Dict[str, str]:
    """The server's environment: our :data:`SAFE_ENV_KEYS` plus ``spawn.env``."""
    env = {key: os.environ[key] for key in SAFE_ENV_KEYS if key in os.environ}
    env.update(spawn.env or {})
    return env


def start(
    argv: Sequence[str],
    *,
    stdin: Stream = None,
    stdout: Stream = None,
    stderr: Stream = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    pass_fds: Sequence[int] = (),
    unbuffered: bool = False,
) -> "subprocess.Popen[bytes]":
    """``argv`` started in a session of its own, with no descriptor of ours but
    ``pass_fds`` and its three streams. Raises what ``Popen`` raises (``OSError``,
    ``ValueError``, ``SubprocessError``): each caller says what failed to start."""
    return subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=None if env is None else dict(env),
        cwd=cwd,
        close_fds=True,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
        bufsize=0 if unbuffered else -1,
    )


def cap(
    pid: int, *, address_space: Optional[int] = None, cpu_seconds: Optional[int] = None
) -> None:
    """``RLIMIT_AS`` and ``RLIMIT_CPU`` of a running ``pid``, where the platform has them
    (a child gone already, or a platform without ``prlimit``, is left as it is)."""
    try:
        import resource

        for which, value in (
            (resource.RLIMIT_AS, address_space),
            (resource.RLIMIT_CPU, cpu_seconds),
        ):
            if value is not None:
                resource.prlimit(pid, which, (value, value))
    except (ImportError, AttributeError, OSError, ValueError):
        pass


def unreaped(child: "subprocess.Popen[bytes]") -> bool:
    """Whether ``child``'s pid is still ours to signal: running, or a zombie nobody
    reaped (on macOS, without ``waitid``, a poll: it reaps an exited child)."""
    if child.returncode is not None:
        return False
    if not hasattr(os, "waitid"):
        return child.poll() is None
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
    except ChildProcessError:  # reaped behind Popen's back: the number is anyone's
        return False
    return True


def exited(pid: int) -> bool:
    """Whether our child ``pid`` has exited (reaped or not), looking without reaping."""
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None


def wait_unreaped(child: "subprocess.Popen[bytes]", timeout: float) -> bool:
    """Wait up to ``timeout`` s for ``child`` to exit, leaving it unreaped (its group id
    stays ours to signal); whether it exited. A pidfd where there is one, else turns."""
    deadline = time.monotonic() + timeout
    try:
        pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        pidfd = -1
    try:
        while True:
            remaining = deadline - time.monotonic()
            if exited(child.pid):
                return True
            if remaining <= 0:
                return False
            if pidfd >= 0:
                select.select([pidfd], [], [], min(remaining, 3600.0))
            else:
                time.sleep(min(remaining, 0.01))
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def kill_group(pid: int) -> None:
    """SIGKILL the group led by ``pid`` (call it while the leader is unreaped)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # the group is empty but for the unreaped leader
        pass
    except PermissionError:  # a setuid member; still kill what we own for sure
        os.kill(pid, signal.SIGKILL)


def end(child: "subprocess.Popen[bytes]") -> None:
    """Kill ``child``'s group while the child is unreaped (never a recycled id), reap it,
    and close the ends of its pipes that ``Popen`` holds (what is left in them is
    dropped: a reader would wait on anything that escaped the group holding a copy)."""
    if child.returncode is None:
        kill_group(child.pid)
    child.wait()
    for stream in (child.stdin, child.stdout, child.stderr):
        if stream is not None:
            stream.close()


def read_to_eof(fd: int, deadline: float, limit: int) -> Optional[bytes]:
    """What a starting child says on a status pipe, until its EOF (at most ``limit``
    bytes kept; the rest read and dropped), or ``None`` past ``deadline``."""
    data = b""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        if poller.poll(remaining * 1000.0):
            chunk = os.read(fd, 65536)
            if not chunk:
                return data
            data += chunk[: max(limit - len(data), 0)]
