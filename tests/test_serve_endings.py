"""``mcp-client serve`` as a child process, ended or cut short however a host does it:
a cancelled ``run_program``, EOF, SIGTERM or SIGKILL during a check, a start where no
server can start, a SIGKILL that leaves the runner's directory behind.

The host is ``tests/test_serve.py``'s (each line of ``serve``'s stdout read as
JSON-RPC); the servers are the suite's own (``tests/servers``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Set, Tuple

from test_serve import Host, HostCase

from mcp_client.codemode import CodeMode
from mcp_client.config import ConfiguredServer

from serve_support import RUN_TIMEOUT, descendants, live
from support import LONG, server, server_argv, wait_until

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


#: ``serve`` whose check's compile() child never ends (its command line is marked): the
#: real command, its compile() made an hour long.
HELD_COMPILE = "import time; time.sleep(3600)  # held-compile"
SERVE_HELD = (
    "import sys; from mcp_client.codemode import _typecheck; "
    "_typecheck._COMPILE = %r; from mcp_client.cli import serve; "
    "sys.exit(serve.main())" % HELD_COMPILE
)


class ACheckUnderWay(EndingsCase):
    """However ``serve`` ends during a ``check_program``, the check's children end with
    it: EOF and SIGTERM end it at once (the check answered as not checked, never an
    internal error), and its SIGKILL takes them too (their lifeline)."""

    def checking(self) -> Tuple[Host, List[int]]:
        self.stderr = open(self.path("serve.err"), "w+b")
        self.addCleanup(self.stderr.close)
        argv = [sys.executable, "-c", SERVE_HELD, *self.serve_args(self.notes())[3:]]
        host = Host(argv, self.env, self.stderr)
        self.addCleanup(self.reap, host)
        host.start()
        self.ident = host.send("tools/call", {"name": "check_program",
                                              "arguments": {"code": "x = 1\n"}})  # fmt: skip
        held = lambda: running(descendants(host.process.pid), HELD_COMPILE.encode())  # noqa: E731
        self.assertTrue(wait_until(lambda: len(held()) == 1, RUN_TIMEOUT), "compile() runs")
        return host, held()

    def test_eof_ends_serve_and_the_check_is_answered_not_checked(self) -> None:
        host, held = self.checking()
        host.stdin.close()
        answer = host.receive(LONG)
        self.assertEqual(answer["id"], self.ident)
        result = answer.get("result", {})
        self.assertTrue(result.get("isError"), answer)  # not -32603, an internal error
        self.assertIn("not checked: ", result["content"][0]["text"])
        try:
            status = host.process.wait(LONG)
        except subprocess.TimeoutExpired:
            self.fail("serve waited for the check's compile()")
        self.assertEqual(status, 0, self.serve_stderr())
        self.assertNotIn("Traceback", self.serve_stderr())
        self.assertTrue(wait_until(lambda: not live(set(held))), "compile() left running")

    def test_sigterm_ends_serve_and_the_checks_children(self) -> None:
        host, held = self.checking()
        host.process.send_signal(signal.SIGTERM)
        try:
            status = host.process.wait(LONG)
        except subprocess.TimeoutExpired:
            self.fail("serve waited for the check's compile()")
        self.assertEqual(status, 128 + signal.SIGTERM, self.serve_stderr())
        self.assertTrue(wait_until(lambda: not live(set(held))), "compile() left running")

    def test_sigkill_of_serve_takes_the_checks_children(self) -> None:
        host, held = self.checking()
        host.process.kill()
        host.process.wait()
        self.assertTrue(wait_until(lambda: not live(set(held))), "compile() outlived serve")


class ARootLeftBehind(EndingsCase):
    """A ``serve`` killed by SIGKILL cannot remove its ``mcp-codemode-*`` directory (the
    README's own example left one on every run): the next start, of ``serve`` or of any
    runner, sweeps those whose owner is gone, and never one whose owner lives."""

    def test_the_next_start_sweeps_what_a_killed_serve_left(self) -> None:
        tmp = self.path("tmp")
        os.makedirs(tmp)
        self.env["TMPDIR"] = tmp  # unjailed, the runner's root goes there
        host = self.host(self.notes(), "--no-jail")
        [left] = [name for name in os.listdir(tmp) if name.startswith("mcp-codemode-")]
        host.process.kill()
        host.process.wait()
        self.assertTrue(os.path.isdir(os.path.join(tmp, left)), "SIGKILL left it")
        saved = tempfile.tempdir
        tempfile.tempdir = tmp
        self.addCleanup(setattr, tempfile, "tempdir", saved)
        notes = [ConfiguredServer("notes", server("codemode_tools", self.dir))]
        with CodeMode.open(notes, jail_program=False) as first:
            self.assertFalse(os.path.exists(os.path.join(tmp, left)), "not swept")
            ours = os.path.dirname(first.cap_dir)
            with CodeMode.open(notes, jail_program=False):
                self.assertTrue(os.path.isdir(ours), "a live runner's root was swept")
        self.assertEqual(os.listdir(tmp), [])


class NothingToServe(EndingsCase):
    """A host that starts ``serve`` when no server can start used to see only "Connection
    closed" (``serve`` exited 3, the reason on its stderr): now ``initialize`` is answered
    and its instructions, and every tool's answer, say why; EOF then ends it, 3."""

    def test_the_host_reads_why_no_server_started(self) -> None:
        broken = {"command": self.path("no-such-server")}
        host = self.host({"broken": broken})
        listed = host.request("tools/list", {})["result"]["tools"]
        names = [tool["name"] for tool in listed]
        self.assertEqual(names, ["search_tools", "describe_tool", "check_program",
                                 "run_program"])  # fmt: skip
        result = host.run("print(1)")
        self.assertTrue(result["isError"])
        text = result["content"][0]["text"]
        self.assertIn("code mode is not available: no server started", text)
        self.assertIn("server broken left out: cannot start", text)
        host.stdin.close()
        self.assertEqual(host.process.wait(LONG), 3, self.serve_stderr())
        self.assertIn("no server started", self.serve_stderr())

    def test_the_instructions_say_why_without_the_servers_stderr(self) -> None:
        dies = "import sys; sys.exit('ERROR: token sk-secret rejected')"
        said = {"command": sys.executable, "args": ["-c", dies]}
        self.stderr = open(self.path("serve.err"), "w+b")
        self.addCleanup(self.stderr.close)
        host = Host([sys.executable, *self.serve_args({"said": said})], self.env, self.stderr)
        self.addCleanup(self.reap, host)
        version = {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}  # fmt: skip
        instructions = host.request("initialize", version)["result"]["instructions"]
        self.assertIn("Code mode is not available: no server started", instructions)
        self.assertIn("server said left out:", instructions)
        self.assertNotIn("sk-secret", instructions, "a server's stderr is the operator's")
        host.stdin.close()
        self.assertEqual(host.process.wait(LONG), 3)
        self.assertIn("sk-secret", self.serve_stderr(), "the operator reads it")


class OutputForAPerson(EndingsCase):
    """A host shows ``run_program``'s answer to a person: the program's controls (ANSI
    escapes, a carriage return, a bidi override) arrive spelt, never raw -- in the text
    and in ``structuredContent`` -- as ``codemode`` gives a terminal; ``\\n`` and ``\\t``
    stay."""

    def test_the_programs_controls_reach_the_host_escaped(self) -> None:
        host = self.host(self.notes(), "--no-jail")
        result = host.run(r"print('\x1b[2J\x1b[31mred\rback\u202eRLO\tend')")
        shown = "\\x1b[2J\\x1b[31mred\\x0dback\\u202eRLO\tend\n"
        self.assertEqual(result["structuredContent"]["stdout"], shown)
        self.assertIn(shown.rstrip("\n"), result["content"][0]["text"])
        self.assertNotIn("\x1b", json.dumps(result, ensure_ascii=False))
