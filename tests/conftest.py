"""The shared leak check: after every test, nothing the client made is left behind.

Every child process a test spawned through the transport is reaped (no zombie)
and its process group is empty; every thread the client named ``mcp-...`` has
ended; and the process holds no file descriptor it did not hold before.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Callable, Iterator, List, Set

import pytest

from mcp_client import transport

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # tests import `support`, `servers`, and the fake `cap` package
    sys.path.insert(0, HERE)

from procs import PROC, client_threads, open_fds, process_stats  # noqa: E402
from support import LONG  # noqa: E402

_PROC = PROC


def _open_fds() -> Set[int]:
    return open_fds()


def _client_threads() -> List[threading.Thread]:
    return client_threads()


def _group_members(pgid: int) -> List[int]:
    """Pids of live (non-zombie) processes whose process group is ``pgid``."""
    return [pid for pid, fields in process_stats() if int(fields[2]) == pgid and fields[0] != "Z"]


def _reaped(pid: int) -> bool:
    # WNOWAIT: look without reaping, so a leak is seen rather than hidden.
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # not our child any more: it was reaped
        return True
    return False


def _reap_leftover(pid: int) -> None:
    # After a failed check, so one leak does not cascade into the next tests.
    try:
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass


def _wait_until(check: Callable[[], bool], timeout: float = LONG) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def no_leaks(monkeypatch: pytest.MonkeyPatch) -> Iterator[List[int]]:
    spawned: List[int] = []
    original = transport.ProcessConnection.__init__

    def spy(self: transport.ProcessConnection, popen: "object") -> None:
        original(self, popen)  # type: ignore[arg-type]
        spawned.append(popen.pid)  # type: ignore[attr-defined]

    monkeypatch.setattr(transport.ProcessConnection, "__init__", spy)
    fds_before = _open_fds()
    yield spawned
    monkeypatch.undo()
    assert _wait_until(lambda: not _client_threads()), (
        "client threads left running: %s" % [t.name for t in _client_threads()])
    for pid in spawned:
        if not _reaped(pid):
            _reap_leftover(pid)
            pytest.fail("child %d was not reaped (a zombie or still running)" % pid)
        if _PROC:
            assert _wait_until(lambda: not _group_members(pid)), (
                "process group %d still has members %s" % (pid, _group_members(pid)))
    if _PROC:
        assert _wait_until(lambda: _open_fds() <= fds_before), (
            "file descriptors left open: %s" % sorted(_open_fds() - fds_before))
