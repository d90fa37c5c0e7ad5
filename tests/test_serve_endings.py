"""``mcp-client serve`` as a child process, ended or cut short however a host does it:
a cancelled ``run_program``, EOF, SIGTERM or SIGKILL during a check, a start where no
server can start, a SIGKILL that leaves the runner's directory behind.

The host is ``tests/test_serve.py``'s (each line of ``serve``'s stdout read as
JSON-RPC); the servers are the suite's own (``tests/servers``).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Set

from test_serve import HostCase

from serve_support import RUN_TIMEOUT, descendants, live
from support import server_argv, wait_until

#: A program that writes a note every 0.2 s (for longer than any test waits: its 50th
#: call, the cap, comes after 10 s; then it sleeps).
LOOP = """\
import time as clock
from cap.mcp import CallFailed, notes
count = 0
while True:
    try:
        notes.write_note(name="n%d" % (count % 3), text="x")
    except CallFailed:
        clock.sleep(3600)
    count += 1
    clock.sleep(0.2)
"""


def command_line(pid: int) -> List[bytes]:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as cmdline:
            return cmdline.read().split(b"\0")
    except OSError:
        return []


def running(pids: Set[int], marker: bytes) -> List[int]:
    """Those of ``pids`` whose command line has an argument ending with ``marker``."""
    return [pid for pid in pids if any(arg.endswith(marker) for arg in command_line(pid))]


class EndingsCase(HostCase):
    def notes(self) -> Dict[str, Any]:
        argv = server_argv("codemode_tools", self.dir)
        return {"notes": {"command": argv[0], "args": argv[1:]}}

    def calls(self) -> List[str]:
        try:
            with open(self.path("calls.log")) as log:
                return log.read().split()
        except FileNotFoundError:
            return []

    def notify(self, host: Any, method: str, params: Dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        host.stdin.write(json.dumps(message).encode() + b"\n")
        host.stdin.flush()


class TheHostCancels(EndingsCase):
    """The host's ``notifications/cancelled`` for a ``run_program`` kills its program
    (the TypeScript SDK sends one at its own 60 s request timeout): its side effects
    stop there, and no answer is sent."""

    def test_a_cancelled_run_program_is_killed(self) -> None:
        host = self.host(self.notes(), "--no-jail")
        ident = host.send("tools/call", {"name": "run_program", "arguments": {"code": LOOP}})
        self.assertTrue(wait_until(lambda: len(self.calls()) >= 2, RUN_TIMEOUT), "it calls")
        # (Before, the program went on: 2 deletes at the cancellation, 6 after.)
        programs = running(descendants(host.process.pid), b"/program.py")
        self.assertEqual(len(programs), 1, "the program runs")
        self.notify(host, "notifications/cancelled", {"requestId": ident, "reason": "timeout"})
        killed = wait_until(lambda: not live(set(programs)))
        self.assertTrue(killed, "the program went on after the cancellation")
        self.assertFine(host)  # the next answer is this run's: the cancelled one was not sent
        self.assertNotIn("Traceback", self.serve_stderr())


if __name__ == "__main__":
    import unittest

    unittest.main()
