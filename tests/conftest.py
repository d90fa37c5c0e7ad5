"""The shared leak check: after every test, nothing the client made is left behind.

Every child process a test spawned through the transport is reaped (no zombie)
and its process group is empty; every thread the client named ``mcp-...`` has
ended; and the process holds no file descriptor it did not hold before.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from typing import Iterator, List

import pytest
from hypothesis import HealthCheck, settings

from mcp_client import transport

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # tests import `support`, `servers`, and the fake `cap` package
    sys.path.insert(0, HERE)

from procs import PROC, client_threads, open_fds, process_stats  # noqa: E402
from support import wait_until  # noqa: E402

# A suite started in the background by a shell without job control (`pytest &` in a
# script) inherits SIGINT ignored, and so does every child it starts; a Python child
# then never turns Ctrl-C into KeyboardInterrupt (it installs its handler only over
# the default), and the tests that interrupt a command would wait out its call
# instead. The commands the tests start get what a terminal gives them.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Hypothesis profiles, by HYPOTHESIS_PROFILE. "ci", the default (the README's test command
# loads it): hypothesis's own CI profile, spelled out for every version the `test` extra
# allows -- the same examples on every run, no example database, no per-example deadline
# (a loaded machine is slow) -- and each property's own count of examples
# (strategies.examples). "dev": a tenth of those counts, for a quick run while working.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", settings.get_profile("ci"), max_examples=10)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


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


@pytest.fixture(autouse=True)
def own_cache() -> Iterator[str]:
    """Each test its own cache directory (``XDG_CACHE_HOME``): code mode learns result
    shapes into the per-user store by default, and no test may teach another one, nor
    write into the home of whoever runs the tests."""
    root = tempfile.mkdtemp(prefix="mcp-test-cache-")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = root
    try:
        yield root
    finally:
        if old is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = old
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_leaks(monkeypatch: pytest.MonkeyPatch) -> Iterator[List[int]]:
    spawned: List[int] = []
    original = transport.ProcessConnection.__init__

    def spy(self: transport.ProcessConnection, popen: "object", *rest: "object") -> None:
        original(self, popen, *rest)  # type: ignore[arg-type]
        spawned.append(popen.pid)  # type: ignore[attr-defined]

    monkeypatch.setattr(transport.ProcessConnection, "__init__", spy)
    fds_before = open_fds()
    yield spawned
    monkeypatch.undo()
    assert wait_until(lambda: not client_threads()), "client threads left running: %s" % [
        t.name for t in client_threads()
    ]
    for pid in spawned:
        if not _reaped(pid):
            _reap_leftover(pid)
            pytest.fail("child %d was not reaped (a zombie or still running)" % pid)
        if PROC:
            # The lambda runs inside this iteration, so the late binding is harmless.
            assert wait_until(lambda: not _group_members(pid)), (  # noqa: B023
                "process group %d still has members %s" % (pid, _group_members(pid))
            )
    if PROC:
        assert wait_until(lambda: open_fds() <= fds_before), (
            "file descriptors left open: %s" % sorted(open_fds() - fds_before)
        )
