"""The seam the client is written against: something that opens a connection.

A :class:`Connection` is a readable pipe for the client's selector, a locked,
deadline-bounded ``write``, a ``kill`` and a ``wait`` that yields retirement
evidence. Two transports provide one:

* :class:`ProcessTransport` -- production. ``subprocess.Popen`` with pipes on
  stdin/stdout, **no shell**, ``close_fds``, its own session and so its own
  process group (``npx``/``uvx`` launchers leave the real server as a grandchild:
  retirement signals the whole group), stderr never merged into stdout, and a
  minimal environment (:data:`SAFE_ENV_KEYS` of ours plus the explicit ``env``
  pairs), so the server does not inherit the harness's secrets.
* :class:`ChannelTransport` -- in-process. The "server" is a function run in a
  named thread over real pipes, so every client behaviour is provable through
  the same selector loop without a child process.

Every ``OSError`` the transport meets is translated here, in one place:
spawning failures become :class:`TransportFailed`, write failures
:class:`WriteFailed`, reaping failures :class:`RetirementUnconfirmed`.
"""

from __future__ import annotations

import abc
import logging
import os
import select
import stat
import subprocess
import threading
import time

from ._frozen import Frozen
from ._lazy import lazy_aliases
from ._os import process
from ._os.files import open_for_writing
from ._os.process import SAFE_ENV_KEYS, Spawn, child_environment
from ._os.threads import until
from .errors import (
    RetirementTimedOut,
    RetirementUnconfirmed,
    TransportFailed,
    WriteFailed,
    WriteStalled,
)
from .stdio import frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any, Callable, Optional, Union

    from .jail import Jail  # an annotation only: an unjailed client never imports the planner
    from .jsonvalue import JsonValue

__all__ = [
    "Spawn",
    "SAFE_ENV_KEYS",
    "child_environment",
    "Transport",
    "Connection",
    "ProcessTransport",
    "ChannelTransport",
    "ChannelPeer",
    "Retirement",
    "NoResource",
    "Exited",
    "ChannelClosed",
    "ATOMIC_WRITE_BYTES",
    "CAPTURE",
]

log = logging.getLogger(__name__)

#: ``ProcessTransport(spawn, stderr=CAPTURE)``: the server's stderr is kept and logged.
CAPTURE = "capture"

# Bigger pipes mean fewer wake-ups for a large message (Linux only; best effort).
_PIPE_SIZE = 1024 * 1024
_F_SETPIPE_SZ = 1031


# ----------------------------------------------------------------------------- evidence


# The evidence values are frozen (equal when of the same kind and code), not dataclasses.


class NoResource(Frozen):
    """Retirement evidence: the client never opened a transport, so nothing ran."""

    __slots__ = ()

    def __init__(self) -> None:
        pass


class Exited(Frozen):
    """Retirement evidence: the child was reaped; ``returncode`` is Popen's (-9: SIGKILL)."""

    __slots__ = ("returncode",)
    returncode: int

    def __init__(self, returncode: int) -> None:
        self._assign(returncode)


class ChannelClosed(Frozen):
    """Retirement evidence for a :class:`ChannelTransport`: its peer thread ended."""

    __slots__ = ()

    def __init__(self) -> None:
        pass


if TYPE_CHECKING:
    Retirement = Union[NoResource, Exited, ChannelClosed]


# ----------------------------------------------------------------------------- the seam


class Connection(abc.ABC):
    """One open channel to one server. ``read_fd`` is non-blocking and the client's alone."""

    read_fd: int
    #: The server's stderr, when the transport captures it (non-blocking, the reader's).
    stderr_fd: Optional[int] = None
    #: A file ``stderr_fd`` is copied into rather than kept as a tail (the reader's).
    stderr_sink: Optional[int] = None

    def __init__(self, write_fd: int) -> None:
        self._writer = _PipeWriter(write_fd)

    def write(self, data: bytes, deadline: float) -> None:
        """Write all of ``data`` by ``deadline`` (monotonic); thread-safe.

        Raises :class:`WriteStalled` (with how much was written) or :class:`WriteFailed`.
        """
        self._writer.write(data, deadline)

    @property
    def torn(self) -> bool:
        """Whether a frame was cut short (stalled or interrupted mid-way): the
        stream is poisoned for good, and every later write fails."""
        return self._writer.torn

    def close_input(self) -> None:
        """The server's EOF: its stdin is closed now, never under a writer (see
        :class:`_PipeWriter`); idempotent, never blocks."""
        self._writer.close()

    def dispose_input(self, deadline: float) -> None:
        """Release the stdin descriptor for good; the reader calls it once, last
        (by ``deadline`` it waits for a writer still holding it)."""
        self._writer.dispose(deadline)

    @abc.abstractmethod
    def kill(self) -> None:
        """Ask for the server's end at once; idempotent, never blocks. Not evidence."""

    @abc.abstractmethod
    def wait(self, deadline: Optional[float]) -> Retirement:
        """Block until the server's end is established; raise a ``RetirementError`` if not.

        Never blocks while holding anything :meth:`kill` needs: a kill from another
        thread always goes through at once (CPython's ``send_signal`` rule).
        """

    @abc.abstractmethod
    def close_output(self) -> None:
        """Close ``read_fd``; only the reader thread calls it, once, on its way out."""

    def close_stderr(self) -> None:  # noqa: B027 -- a hook: nothing to close by default
        """Close ``stderr_fd`` and ``stderr_sink``; the reader calls it, once, last."""

    @property
    def pid(self) -> Optional[int]:
        """The server's OS pid, when there is a process."""
        return None


class Transport(abc.ABC):
    """Something that can open one :class:`Connection`."""

    @abc.abstractmethod
    def open(self) -> Connection:
        """Start the server; raise :class:`TransportFailed` when it cannot be started."""

    @abc.abstractmethod
    def describe(self) -> str:
        """A short human description for messages and logs."""


# ----------------------------------------------------------------------------- writing

#: A pipe takes a write of at most this many bytes whole or not at all (POSIX
#: ``PIPE_BUF``): such a frame can stall, but never be cut short.
ATOMIC_WRITE_BYTES: int = getattr(select, "PIPE_BUF", 512)
#: ``poll`` takes milliseconds as a C int: a longer wait is made in turns.
_POLL_MAX_MS = 2**31 - 1


class _PipeWriter:
    """A locked, deadline-bounded writer on a non-blocking pipe end.

    ========  ==================  ================================================
    field     guarded by          meaning
    ========  ==================  ================================================
    _fd       _lock (writes),     the pipe end; after :meth:`close` it names
              _state (close)      ``/dev/null``, so a writer never meets a
                                  recycled number; ``-1`` after :meth:`dispose`
    _torn     _lock               a frame was cut short: the stream is poisoned
    _closed   _state              :meth:`close` ran (writes fail from then on)
    ========  ==================  ================================================

    Asynchronous exceptions (a signal handler raising in the main thread) can
    land after any call returns. ``_lock`` is therefore an ``RLock``, acquired
    *inside* the ``try`` whose ``finally`` releases it with a bare C call that
    raises ``RuntimeError`` when this thread does not hold it: acquired or not,
    interrupted anywhere, it is never left held. ``_torn`` is set *before* the
    first byte of a frame that can be cut short leaves, and cleared only once
    it is whole: an interrupted frame is always known to be torn.
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._lock = threading.RLock()  # one writer at a time: frames never interleave
        self._state = threading.Lock()  # close() against close()
        self._torn = False
        self._closed = False

    @property
    def torn(self) -> bool:
        return self._torn

    def write(self, data: bytes, deadline: float) -> None:
        lock = self._lock
        try:  # the acquire inside the try: interrupted after it, the finally releases
            if not lock.acquire(False) and not lock.acquire(True, until(deadline)):
                raise WriteStalled(0)
            if self._closed or self._torn:  # looked at in line: every request comes here
                self._check_open()
            self._torn = len(data) > ATOMIC_WRITE_BYTES  # before a byte can leave
            self._write_all(data, deadline)
            self._torn = False
        finally:
            # Release if held, spelled out here and in dispose() and the outbox,
            # never a helper: a call into a Python function is a point where a
            # signal handler's exception can land (3.11's RESUME checks for one),
            # before the release it was to make -- and the lock stays held for ever.
            try:
                lock.release()
            except RuntimeError:  # not held by us: the acquire failed or never ran
                pass

    def _check_open(self) -> None:
        if self._closed:
            raise WriteFailed("the server's input is closed")
        if self._torn:
            raise WriteFailed("an earlier frame was cut short: the stream is poisoned")

    def close(self) -> None:
        """EOF for the server. The pipe end is replaced by ``/dev/null`` in one
        ``dup2``: the server sees EOF at once, and a writer still holding the
        number writes harmlessly instead of into somebody's recycled descriptor."""
        with self._state:
            if self._closed:
                return
            self._closed = True
            _replace_with_null(self._fd)

    def dispose(self, deadline: float) -> None:
        """Release the descriptor for good, once no writer holds it (by ``deadline``;
        past it the number is left open and logged rather than closed under a writer)."""
        self.close()
        lock = self._lock
        try:  # as in write(): acquired inside, released in the finally
            if not lock.acquire(True, until(deadline)):
                log.warning("a writer still holds descriptor %d: left open", self._fd)
                return
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        finally:
            try:
                lock.release()
            except RuntimeError:
                pass

    def _write_all(self, data: bytes, deadline: float) -> None:
        written = 0
        while written < len(data):
            try:  # the whole of it at once, most of the time: no view needed
                written += os.write(self._fd, memoryview(data)[written:] if written else data)
            except BlockingIOError:
                self._await_room(deadline, written)
            except OSError as e:  # EPIPE: nobody reads the other end any more
                raise WriteFailed("write to the server failed: %s" % (e.strerror or e)) from e

    def _await_room(self, deadline: float, written: int) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            self._torn = written > 0
            raise WriteStalled(written)
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        # A hang-up wakes it too (the next write says EPIPE); a deadline past
        # what poll can take (float("inf") included) is waited for in turns.
        poller.poll(min(remaining * 1000.0, _POLL_MAX_MS))


def _replace_with_null(fd: int) -> None:
    try:
        null = os.open(os.devnull, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # out of descriptors: the pipe stays open until dispose()
        log.warning("cannot open %s; the server's stdin closes at retirement", os.devnull)
        return
    try:
        os.dup2(null, fd, inheritable=False)
    finally:
        os.close(null)


def _enlarge_pipe(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)
    except (ImportError, OSError):  # not Linux, or over /proc/sys/fs/pipe-max-size
        pass


# ----------------------------------------------------------------------------- processes

if TYPE_CHECKING:
    StderrTarget = Union[None, int, str, "os.PathLike[str]", IO[bytes], IO[str]]
else:  # made on first use: typing is not imported with the client
    __getattr__ = lazy_aliases(
        globals(),
        Retirement=lambda t: t.Union[NoResource, Exited, ChannelClosed],
        StderrTarget=lambda t: t.Union[None, int, str, "os.PathLike[str]", t.IO[bytes], t.IO[str]],
    )

#: At most this much of what a server left in a pipe is read when a start fails.
_LEFT_ON_FAILURE = 1024 * 1024


class ProcessTransport(Transport):
    """Starts ``spawn`` as a child process in a process group of its own.

    ``stderr``: ``None`` (inherit ours, the default), ``subprocess.DEVNULL``, a
    file object, a path (opened for appending; never through a symbolic link:
    :class:`~mcp_client.errors.SymlinkRefused`), or :data:`CAPTURE` (the string
    ``"capture"``; a file of that name is ``pathlib.Path("capture")``): a pipe
    that the client's reader drains through its selector, keeping the last
    lines (its last 8 KiB) for the errors a death raises and logging
    each one on ``mcp_client.server``. Never stdout.

    ``jail``: run the server inside bubblewrap, as :class:`~mcp_client.jail.Jail`
    says (see :mod:`mcp_client.jail.spawn`); a jail that cannot be had is
    :class:`TransportFailed`, never an unjailed start. A jailed server never
    holds a file of ours: where its stderr would be a regular file (a path, a
    file object or descriptor on one, or our own stderr when inherited), it
    gets a pipe, and the reader copies what comes out into the file. Holding
    the file, it could read the harness's log back through ``/proc/self/fd/2``
    and ``ftruncate`` it.

    ``lifeline=True`` (unjailed; a jail has its own): the server is started through
    :mod:`mcp_client._os.lifeline_script`, whose watchdog in the server's process group
    SIGKILLs the group when the harness dies, even by SIGKILL. The child is still
    the server itself (the script execs it), so the evidence is unchanged.
    """

    def __init__(
        self,
        spawn: Spawn,
        stderr: StderrTarget = None,
        jail: Optional[Jail] = None,
        lifeline: bool = False,
    ) -> None:
        self.spawn = spawn
        self._stderr = stderr
        self.jail = jail
        self.lifeline = lifeline
        self._lifeline_fd: Optional[int] = None

    def describe(self) -> str:
        return " ".join(self.spawn.argv())

    def open(self) -> Connection:
        route = self._route_stderr()
        try:
            popen = self._popen(route.child)
        except BaseException:
            route.abandon()
            raise
        route.started()
        held, self._lifeline_fd = self._lifeline_fd, None
        return ProcessConnection(popen, route.read_fd, route.sink, held)

    def _route_stderr(self) -> "_StderrRoute":
        target = self._stderr
        if isinstance(target, str) and target == CAPTURE:
            return _StderrRoute.pipe(None)
        if isinstance(target, (str, os.PathLike)):
            fd = _open_stderr_file(target)
            if self.jail is not None and _regular_file(fd) is not None:
                return _StderrRoute.pipe(fd)
            return _StderrRoute(fd, owned=fd)  # a FIFO or a device: a copy could block
        if self.jail is not None:
            held = _regular_file(target)
            if held is not None:  # a copy of our descriptor: the caller's stays theirs
                return _StderrRoute.pipe(_dup_cloexec(held))
        return _StderrRoute(target)

    def _popen(self, stderr: Any) -> "subprocess.Popen[bytes]":
        if self.jail is not None:  # bwrap's Popen; bwrap hands its pipes down to the server
            from .jail import spawn as jailer  # on first use: an unjailed client never imports it

            return jailer.popen(self.jail, self.spawn, child_environment(self.spawn), stderr)
        if self.lifeline:
            from ._os import lifeline as _supervised  # on first use, like the jail

            child, self._lifeline_fd = _supervised.popen(
                self.spawn.argv(), child_environment(self.spawn), self.spawn.cwd, stderr
            )
            return child
        try:
            return process.start(
                self.spawn.argv(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=child_environment(self.spawn),
                cwd=self.spawn.cwd,
                unbuffered=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            raise TransportFailed("cannot start %s: %s" % (self.describe(), e)) from e


def _open_stderr_file(target: "Union[str, os.PathLike[str]]") -> int:
    try:
        return open_for_writing(target, os.O_CREAT | os.O_APPEND, "the stderr file")
    except OSError as e:
        raise TransportFailed("cannot open the stderr file: %s" % e) from e


def _regular_file(target: StderrTarget) -> Optional[int]:
    """The descriptor ``target`` would hand the child, when it is a regular file's."""
    if target is None:
        fd = 2  # inherited: ours
    elif isinstance(target, int):
        fd = target  # DEVNULL and PIPE are negative: no descriptor
    else:
        try:
            fd = target.fileno()  # type: ignore[union-attr]
        except (AttributeError, OSError, ValueError):
            return None
    try:
        return fd if fd >= 0 and stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:  # closed
        return None


def _dup_cloexec(fd: int) -> int:
    import fcntl

    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 0)
    except OSError as e:
        raise TransportFailed("cannot take a copy of the stderr file: %s" % e) from e


class _StderrRoute:
    """Where one start sends the server's stderr: ``child`` is what ``Popen``
    gets; ``read_fd`` the pipe's end the reader drains (ours); ``sink`` the
    file the reader copies that pipe into (ours), when the server may not
    hold the file itself. ``owned`` is a descriptor the child gets a copy of,
    closed once it has."""

    def __init__(
        self,
        child: Any,
        owned: Optional[int] = None,
        read_fd: Optional[int] = None,
        sink: Optional[int] = None,
    ) -> None:
        self.child = child
        self.owned = owned
        self.read_fd = read_fd
        self.sink = sink

    @classmethod
    def pipe(cls, sink: Optional[int]) -> "_StderrRoute":
        try:
            read_fd, write_fd = os.pipe()  # both close-on-exec; Popen dup2s its end onto 2
        except OSError as e:
            if sink is not None:
                os.close(sink)
            raise TransportFailed("cannot make the stderr pipe: %s" % e) from e
        os.set_blocking(read_fd, False)
        return cls(write_fd, owned=write_fd, read_fd=read_fd, sink=sink)

    def started(self) -> None:
        """The child holds its copy now."""
        if self.owned is not None:
            os.close(self.owned)
            self.owned = None

    def abandon(self) -> None:
        """The start failed: what the pipe holds (bwrap's own words, say) still
        reaches the file; then nothing of ours stays open."""
        self.started()
        if self.read_fd is not None and self.sink is not None:
            _copy_left(self.read_fd, self.sink)
        for fd in (self.read_fd, self.sink):
            if fd is not None:
                os.close(fd)


def _copy_left(read_fd: int, sink: int) -> None:
    taken = 0
    while taken < _LEFT_ON_FAILURE:
        try:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                return
            write_all(sink, chunk)
        except OSError:  # EAGAIN: a writer that outlived the start; or the file failed
            return
        taken += len(chunk)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to a blocking descriptor (a regular file)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class ProcessConnection(Connection):
    """A running child: its stdin, its stdout, and custody of its process group.

    ``stderr_fd`` is the server's stderr pipe when it is captured, or copied
    into ``stderr_sink`` (a jailed server's stderr file). Both are set here and
    then the reader's alone: it reads one, writes the other, and closes both
    (:meth:`close_stderr`) once, after the server's end.
    """

    def __init__(
        self,
        popen: "subprocess.Popen[bytes]",
        stderr_fd: Optional[int] = None,
        stderr_sink: Optional[int] = None,
        lifeline: Optional[int] = None,
    ) -> None:
        assert popen.stdin is not None and popen.stdout is not None
        self._popen = popen
        #: The write end of the server's lifeline (``ProcessTransport(lifeline=True)``):
        #: closed once the server is reaped, or at the latest with its stderr.
        self._lifeline = lifeline
        self._signal_lock = threading.Lock()
        self.read_fd = popen.stdout.fileno()
        os.set_blocking(self.read_fd, False)
        _enlarge_pipe(self.read_fd)
        _enlarge_pipe(popen.stdin.fileno())
        # The writer owns the stdin descriptor from here on; the file object must
        # not close it a second time (a recycled number could belong to anyone).
        super().__init__(os.dup(popen.stdin.fileno()))
        popen.stdin.close()
        if stderr_fd is None and popen.stderr is not None:  # stderr=subprocess.PIPE
            stderr_fd = os.dup(popen.stderr.fileno())
            popen.stderr.close()
        if stderr_fd is not None:  # the reader drains it too
            os.set_blocking(stderr_fd, False)
        self.stderr_fd = stderr_fd
        self.stderr_sink = stderr_sink

    @property
    def pid(self) -> Optional[int]:
        return self._popen.pid

    def kill(self) -> None:
        with self._signal_lock:
            # Only while the child is unreaped is its pid -- and so its group id --
            # still ours (a zombie keeps it); after wait() it may name a stranger.
            if self._unreaped():
                process.kill_group(self._popen.pid)
        # Then release our end of its stdin. Not before: an EOF first would race the
        # signal (a server that exits on EOF between the two would make the evidence
        # Exited(0) or Exited(-9) by chance), and the signal is what ends it anyway.
        self.close_input()

    def wait(self, deadline: Optional[float]) -> Retirement:
        """Wait for the child's exit *without* reaping it, holding nothing; then,
        under the signal lock, SIGKILL what is left of its group and reap it.

        So ``kill`` never waits behind a reaper, and never signals a reaped
        (recycled) pid; and a server that exits by itself (``retire_grace``)
        takes its group with it -- a grandchild of its is no orphan of ours --
        while the evidence stays the server's own exit code: until it is reaped,
        the exited leader is a zombie whose pid, and so group id, is still ours.
        """
        pid = self._popen.pid
        try:
            self._await_exit(deadline)
            with self._signal_lock:
                if self._unreaped():
                    process.kill_group(pid)  # the lifeline's watchdog too, before its EOF
                returncode = self._popen.wait()
        except OSError as e:
            raise RetirementUnconfirmed("reaping pid %d failed: %s" % (pid, e)) from e
        self._release_lifeline()
        return Exited(returncode)

    def _release_lifeline(self) -> None:
        fd, self._lifeline = self._lifeline, None
        if fd is not None:
            os.close(fd)

    def _unreaped(self) -> bool:
        """Whether the child's pid is still ours to signal (:func:`process.unreaped`)."""
        return process.unreaped(self._popen)

    def _await_exit(self, deadline: Optional[float]) -> None:
        if self._popen.returncode is not None:
            return
        if not hasattr(os, "waitid"):  # macOS: look in short turns instead
            return self._poll_exit(deadline)
        if deadline is None:
            os.waitid(os.P_PID, self._popen.pid, os.WEXITED | os.WNOWAIT)
            return None
        pause = 0.0005
        while os.waitid(os.P_PID, self._popen.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
            pause = self._pause(deadline, pause)
        return None

    def _poll_exit(self, deadline: Optional[float]) -> None:
        pause = 0.0005
        while True:
            with self._signal_lock:
                if self._popen.poll() is not None:
                    return
            pause = self._pause(deadline, pause)

    def _pause(self, deadline: Optional[float], pause: float) -> float:
        remaining = _POLL_MAX_MS if deadline is None else deadline - time.monotonic()
        if remaining <= 0:
            raise RetirementTimedOut("pid %d not reaped in time" % self._popen.pid)
        time.sleep(min(pause, remaining))
        return min(pause * 2, 0.05)

    def close_output(self) -> None:
        assert self._popen.stdout is not None
        self._popen.stdout.close()

    def close_stderr(self) -> None:
        for fd in (self.stderr_fd, self.stderr_sink):
            if fd is not None:
                os.close(fd)
        self.stderr_fd = self.stderr_sink = None
        self._release_lifeline()  # unreaped (a retirement that failed): the watchdog ends it


# ----------------------------------------------------------------------------- channels


class ChannelPeer:
    """The server's side of a :class:`ChannelTransport`: blocking, line at a time."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._pending = b""

    def read_line(self) -> Optional[bytes]:
        """The next line from the client, terminator stripped; ``None`` at EOF."""
        while b"\n" not in self._pending:
            chunk = os.read(self._read_fd, 65536)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def write(self, data: bytes) -> None:
        """Write raw bytes to the client (framing is the caller's business)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self._write_fd, view) :]

    def send(self, message: JsonValue) -> None:
        """Write one framed message."""
        self.write(frame(message))

    def close_input(self) -> None:
        """Stop reading for good: the client's next write fails (EPIPE)."""
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1

    def close_output(self) -> None:
        """Close the client's input (the client sees EOF)."""
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1

    def close(self) -> None:
        """Close both ends: the client sees EOF, and its next write fails."""
        self.close_output()
        self.close_input()


if TYPE_CHECKING:
    Serve = Callable[[ChannelPeer], None]


class ChannelTransport(Transport):
    """An in-process server: ``serve(peer)`` runs in a thread over two real pipes.

    The peer's thread ending *is* the server's exit: ``wait`` joins it and the
    evidence is :class:`ChannelClosed`. ``kill`` closes the server's input, which a
    well-behaved ``serve`` reads as EOF; one that ignores it is a server that does
    not die, and ``wait`` says so by timing out.
    """

    def __init__(self, serve: Serve, name: str = "channel") -> None:
        self._serve = serve
        self._name = name

    def describe(self) -> str:
        return "in-process channel %r" % self._name

    def open(self) -> Connection:
        to_server_r, to_server_w = os.pipe()
        to_client_r, to_client_w = os.pipe()
        peer = ChannelPeer(to_server_r, to_client_w)
        thread = threading.Thread(
            target=_run_peer, args=(self._serve, peer), name="mcp-peer-" + self._name, daemon=True
        )
        thread.start()
        return ChannelConnection(to_client_r, to_server_w, thread)


def _run_peer(serve: Serve, peer: ChannelPeer) -> None:
    try:
        serve(peer)
    except BrokenPipeError:  # the client hung up on us: the channel's ordinary end
        pass
    finally:
        peer.close()


class ChannelConnection(Connection):
    """The client's side of a :class:`ChannelTransport`."""

    def __init__(self, read_fd: int, write_fd: int, thread: threading.Thread) -> None:
        super().__init__(write_fd)
        self.read_fd = read_fd
        os.set_blocking(read_fd, False)
        self._thread = thread

    def kill(self) -> None:
        self.close_input()

    def wait(self, deadline: Optional[float]) -> Retirement:
        self._thread.join(None if deadline is None else until(deadline))
        if self._thread.is_alive():
            raise RetirementTimedOut("the channel's peer thread has not ended")
        return ChannelClosed()

    def close_output(self) -> None:
        os.close(self.read_fd)
