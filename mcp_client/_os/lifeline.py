"""The harness's side of an unjailed server's lifeline (:mod:`mcp_client._os.lifeline_script`).

:func:`popen` starts the server as ``ProcessTransport`` does (its own session and
process group, pipes on stdin and stdout), through the lifeline script, and returns
the ``Popen`` -- whose pid is the server's own, the script having exec'd it -- and
the lifeline's write end. Whoever holds that descriptor keeps the server's group
alive; when it is closed, or the harness dies however it dies, the watchdog
SIGKILLs the group. :class:`~mcp_client.transport.ProcessConnection` closes it once
the server is reaped (retirement kills the group, watchdog included, before that).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from typing import Any, Mapping, Optional, Tuple

from ..errors import TransportFailed
from . import process

__all__ = ["popen", "STARTUP_TIMEOUT"]

#: Seconds the script may take to start the watchdog and exec the server.
STARTUP_TIMEOUT = 30.0
_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lifeline_script.py")


def popen(
    argv: Tuple[str, ...], env: Mapping[str, str], cwd: Optional[str], stderr: Any
) -> Tuple["subprocess.Popen[bytes]", int]:
    """The server started with a lifeline; ``(its Popen, the lifeline's write end)``.

    Raises :class:`TransportFailed` as an unjailed start does (``cannot start ...``),
    for a missing executable too: the script reports a failed exec before this returns.
    """
    life_read, life_write = _pipe()
    status_read, status_write = _pipe()
    script = [_python(), "-I", "-S", "-B", _SCRIPT]  # by its path: `ps` shows what it is
    wrapped = script + [str(life_read), str(status_write), "--"] + list(argv)
    try:
        child = process.start(
            wrapped,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=cwd,
            pass_fds=(life_read, status_write),
            unbuffered=True,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        for fd in (life_read, life_write, status_read, status_write):
            os.close(fd)
        raise TransportFailed("cannot start %s: %s" % (" ".join(argv), e)) from e
    os.close(life_read)
    os.close(status_write)
    _await_exec(child, status_read, life_write, argv)
    return child, life_write


def _await_exec(
    child: "subprocess.Popen[bytes]", status: int, lifeline: int, argv: Tuple[str, ...]
) -> None:
    """EOF on the status pipe: exec'd. Words: why not (the child is then reaped)."""
    try:
        read = process.read_to_eof(status, time.monotonic() + STARTUP_TIMEOUT, 4096)
        said = None if read is None else read.decode("utf-8", "replace")
    finally:
        os.close(status)
    if said is None or said:
        os.close(lifeline)  # the watchdog, if any, kills what there is of the group
        child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()
        why = "not exec'd within %g s" % STARTUP_TIMEOUT if said is None else said
        raise TransportFailed("cannot start %s: %s" % (" ".join(argv), why))


def _pipe() -> Tuple[int, int]:
    """A close-on-exec pipe whose ends are 3 or above (a harness without stdin would
    hand out 0, which the child's own stdin would then overwrite)."""
    ends = []
    for fd in os.pipe():
        if fd <= 2:
            high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
            os.close(fd)
            fd = high
        ends.append(fd)
    return ends[0], ends[1]


def _python() -> str:
    return os.path.realpath(sys.executable or "python3")
