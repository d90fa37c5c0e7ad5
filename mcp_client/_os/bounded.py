"""Short-lived helper children that their owner can end at once: :class:`Brood`.

Code mode runs helpers beside the programs -- ``compile()`` of a program, mypy, the
parse of a large program's imports -- each a child Python that takes its input on
stdin and gives its answer on stdout. Three things hold for every one of them:

* **It dies with its owner, however the owner dies.** It starts through the
  lifeline (:mod:`mcp_client._os.lifeline`), whose watchdog, in the child's group,
  SIGKILLs the group when the owner's end of the lifeline closes -- the owner's
  exit, even by SIGKILL.
* **Its owner can end it at once** (:meth:`Brood.end_all`, a runner's close): every
  child of the brood is adopted as it starts, and one that starts after the end is
  killed before it reads a byte. Its group is signalled only while its leader is
  unreaped, under the same lock that reaps it: never a recycled id.
* **Every wait is bounded**: the exchange on its pipes and its exit by the
  caller's ``timeout``, after which its group is killed. Its address space is
  capped (``RLIMIT_AS``) before it has read a byte.

The exchange runs on the caller's thread: no thread of ours is started.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import threading
import time
from typing import Dict, Mapping, Optional, Set, Tuple

from . import lifeline, process

__all__ = ["Brood"]

_CHUNK = 65536
#: Bytes of a child's stdout kept (the rest is read and dropped): an answer, not a flood.
MAX_OUTPUT = 1024 * 1024


class Brood:
    """The helper children of one owner: each run by :meth:`run`, all ended by
    :meth:`end_all` (after which none starts)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the set, the end, and every signal and reap
        self._children: Set["subprocess.Popen[bytes]"] = set()
        self._ended = False

    @property
    def ended(self) -> bool:
        """Whether :meth:`end_all` was called."""
        return self._ended

    def run(
        self,
        argv: Tuple[str, ...],
        data: bytes,
        *,
        memory: int,
        timeout: float,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        merge_stderr: bool = False,
    ) -> Optional[Tuple[int, bytes]]:
        """Run ``argv`` with ``data`` on its stdin: ``(exit status, stdout)``, or ``None``
        past ``timeout`` seconds (its group then killed). Stderr is dropped, or with
        ``merge_stderr`` read with stdout; past :data:`MAX_OUTPUT` bytes the rest is
        dropped. A child the end killed exits -9. Raises ``TransportFailed`` when it
        cannot start."""
        deadline = time.monotonic() + timeout
        stderr = subprocess.STDOUT if merge_stderr else subprocess.DEVNULL
        environment: Dict[str, str] = dict(os.environ if env is None else env)
        child, line = lifeline.popen(tuple(argv), environment, cwd, stderr)
        try:
            process.cap(child.pid, address_space=memory)
            with self._lock:
                self._children.add(child)
                if self._ended:  # the end came first: it is not to run
                    process.kill_group(child.pid)
            out = _exchange(child, data, deadline)
            if out is None or not process.wait_unreaped(child, _left(deadline)):
                return None
        finally:
            self._reap(child)
            os.close(line)  # after the reap: the watchdog died with the group
        return child.returncode, out

    def end_all(self) -> None:
        """Kill every child running now, and every one that starts after this."""
        with self._lock:
            self._ended = True
            for child in self._children:
                if process.unreaped(child):
                    process.kill_group(child.pid)

    def _reap(self, child: "subprocess.Popen[bytes]") -> None:
        """Kill what is left of the group (the watchdog, anything the child left),
        reap the child, close its pipes."""
        with self._lock:
            self._children.discard(child)
            if process.unreaped(child):
                process.kill_group(child.pid)
            child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()


def _exchange(child: "subprocess.Popen[bytes]", data: bytes, deadline: float) -> Optional[bytes]:
    """Write ``data`` to the child's stdin (then close it) while reading its stdout to
    EOF; ``None`` past ``deadline``."""
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin.fileno(), child.stdout.fileno()
    os.set_blocking(stdin, False)
    view, out = memoryview(data), bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        if view:
            selector.register(stdin, selectors.EVENT_WRITE)
        else:
            child.stdin.close()
        while selector.get_map():
            remaining = _left(deadline)
            if remaining <= 0:
                return None
            for key, _ in selector.select(remaining):
                if key.fd == stdout:
                    chunk = os.read(stdout, _CHUNK)
                    out += chunk[: max(MAX_OUTPUT - len(out), 0)]
                    if not chunk:
                        selector.unregister(stdout)
                    continue
                try:
                    view = view[os.write(stdin, view[:_CHUNK]) :]
                except BlockingIOError:
                    continue
                except OSError:  # it stopped reading (it exited, or was killed)
                    view = view[:0]
                if not view:
                    selector.unregister(stdin)
                    child.stdin.close()
    return bytes(out)


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)
