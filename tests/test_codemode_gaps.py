"""The last gaps of issue 25, each a regression test with a real hostile program,
server or config:

- the command streamed the program's raw bytes (ANSI escapes, C0/C1 controls) to
  the operator's terminal: now every control but ``\\n`` and ``\\t`` is spelt out, on a
  terminal (a pty here) and on a pipe; ``--raw-output`` is honoured on a pipe only;
- a run starting as ``close()`` ran could leave its ``/tmp/mcp-codemode-*``
  directory behind: run and close are ordered now;
- a server's second life could list a tool twice, which its first listing may not;
- the "left out" line of a server whose failure is hostile text is sanitized.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import textwrap
import threading
from typing import Any, Dict, List, Tuple

from mcp_client._os.bounded import Brood
from mcp_client.codemode import CLOSED, CodeMode, Policy, _fleet, _program
from mcp_client.codemode import _typecheck as _check
from mcp_client.errors import CodeModeError

from codemode_support import RunnerCase
from support import LONG, server, server_argv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = [sys.executable, "-m", "mcp_client", "codemode"]
#: A program whose output is hostile to a terminal: CSI, OSC, BEL, CR, a C1 CSI (as
#: UTF-8 and as a lone byte), a bidi override, and a UTF-8 character cut between writes.
HOSTILE_PROGRAM = r"""
import sys
print("one\x1b[2J\x1b]0;title\x07\rtwo\u202e\tend")
sys.stdout.flush()
sys.stdout.buffer.write(b"\xc2\x9b31m\x9b|\xe2\x82")
sys.stdout.buffer.flush()
sys.stdout.buffer.write(b"\xac\n")
sys.stdout.buffer.flush()
sys.stderr.write("err\x1bc\n")
"""
ESCAPED_OUT = "one\\x1b[2J\\x1b]0;title\\x07\\x0dtwo\\u202e\tend\n\\x9b31m\\x9b|\u20ac\n"
ESCAPED_ERR = "err\\x1bc\n"


class GapCase(RunnerCase):
    PREFIX = "codemode-gaps-"
    JAIL_PROGRAM = False


class TheCommandsOutput(GapCase):
    def argv(self, *flags: str) -> List[str]:
        argv = server_argv("codemode_tools", self.dir)
        with open(self.path("servers.json"), "w") as out:
            json.dump({"mcpServers": {"notes": {"command": argv[0], "args": argv[1:]}}}, out)
        with open(self.path("program.py"), "w") as out:
            out.write(textwrap.dedent(HOSTILE_PROGRAM))
        return [*COMMAND, "--config", self.path("servers.json"), "--no-jail", *flags,
                self.path("program.py")]  # fmt: skip

    def env(self) -> Dict[str, str]:
        return dict(os.environ, PYTHONPATH=REPO)

    def test_a_terminal_gets_the_programs_controls_escaped(self) -> None:
        for flags in ((), ("--raw-output",)):  # a terminal is never given them raw
            with self.subTest(flags=flags):
                out, err, status = self.on_a_terminal(self.argv(*flags))
                self.assertEqual(status, 0, err)
                self.assertEqual(out, ESCAPED_OUT.replace("\n", "\r\n").encode())
                self.assertNotIn(b"\x1b", out)
                # stderr is a pipe here: escaped, or raw when asked (per destination)
                self.assertIn(b"err\x1bc\n" if flags else ESCAPED_ERR.encode(), err)

    def test_a_pipe_gets_them_escaped_unless_raw_output_is_asked(self) -> None:
        done = subprocess.run(self.argv(), capture_output=True, env=self.env(), timeout=LONG * 4)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, ESCAPED_OUT.encode())
        self.assertIn(ESCAPED_ERR.encode(), done.stderr)
        raw = subprocess.run(
            self.argv("--raw-output"), capture_output=True, env=self.env(), timeout=LONG * 4
        )
        self.assertEqual(raw.returncode, 0, raw.stderr)
        self.assertEqual(
            raw.stdout,
            "one\x1b[2J\x1b]0;title\x07\rtwo\u202e\tend\n".encode()
            + b"\xc2\x9b31m\x9b|\xe2\x82\xac\n",
        )
        self.assertIn(b"err\x1bc\n", raw.stderr)

    def on_a_terminal(self, argv: List[str]) -> Tuple[bytes, bytes, int]:
        """Run ``argv`` with a pty as its stdout; what it wrote there, its stderr, status."""
        master, slave = pty.openpty()
        try:
            child = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
                env=self.env(),
            )  # fmt: skip
        finally:
            os.close(slave)
        try:
            out = _read_all(master)
            _, err = child.communicate(timeout=LONG * 4)
        finally:
            os.close(master)
        return out, err, child.returncode


def _read_all(fd: int) -> bytes:
    """Everything written to a pty's slave, until every holder of it has closed it."""
    data = bytearray()
    while True:
        ready, _, _ = select.select([fd], [], [], LONG * 4)
        if not ready:
            raise AssertionError("the pty stayed silent and open: %r" % bytes(data))
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the last holder of the slave closed it
            return bytes(data)
        if not chunk:
            return bytes(data)
        data += chunk


class RunAndClose(GapCase):
    """close() and run() are ordered: no run leaves a directory behind a close."""

    def held_at(self, where: str) -> Tuple[CodeMode, "threading.Event"]:
        """A runner whose first run stops at ``where`` ("_run_dir": before its directory
        is made; "launch": before its program starts) until close() has begun."""
        code = self.open({"notes": server("codemode_tools", self.dir)})
        reached = threading.Event()
        target: Any = code if where == "_run_dir" else _program
        real = getattr(target, where)

        def held(*args: Any, **kwargs: Any) -> Any:
            reached.set()
            self.assertTrue(code._closing.wait(LONG), "close() never began")
            return real(*args, **kwargs)

        setattr(target, where, held)
        if target is _program:
            self.addCleanup(setattr, _program, where, real)
        return code, reached

    def test_a_run_starting_as_close_runs_is_killed_and_cleaned(self) -> None:
        for where in ("_run_dir", "launch"):
            with self.subTest(where=where):
                code, reached = self.held_at(where)
                results: List[Any] = []
                running = threading.Thread(target=_outcome, args=(code, "print('ran')\n", results))
                running.start()
                self.assertTrue(reached.wait(LONG))
                code.close()  # returns once the held run has ended and cleaned up
                running.join(LONG)
                self.assertFalse(running.is_alive())
                self.assertFalse(os.path.exists(code._root), "the run left its directory")
                [result] = results
                self.assertNotEqual(result, "ran\n")
                if not isinstance(result, CodeModeError):
                    self.assertEqual(result.error, CLOSED)

    def test_a_run_under_way_is_killed_by_close(self) -> None:
        code = self.open({"notes": server("codemode_tools", self.dir)})
        ready = threading.Event()
        results: List[Any] = []
        program = "import time\nprint('ready', flush=True)\ntime.sleep(3600)\n"
        running = threading.Thread(
            target=lambda: results.append(code.run(program, tee=lambda s, d: ready.set()))
        )
        running.start()
        self.assertTrue(ready.wait(LONG))
        code.close()
        running.join(LONG)
        self.assertFalse(running.is_alive())
        [result] = results
        self.assertEqual((result.exit_status, result.error), (137, CLOSED))
        self.assertFalse(os.path.exists(code._root))

    def test_a_tee_that_closes_the_runner_ends_its_own_run(self) -> None:
        # close() on the run's serving thread must not wait for that run: the run waits
        # on the thread. The run ends killed; the last run to end removes the root.
        code = self.open({"notes": server("codemode_tools", self.dir)})
        program = "import time\nprint('ready', flush=True)\ntime.sleep(3600)\n"
        result = code.run(program, tee=lambda stream, data: code.close())
        self.assertEqual((result.exit_status, result.error), (137, CLOSED))
        self.assertFalse(os.path.exists(code._root))
        with self.assertRaisesRegex(CodeModeError, "closed"):
            code.run("print('ran')\n")

    def test_a_run_after_close_raises(self) -> None:
        code = self.open({"notes": server("codemode_tools", self.dir)})
        code.close()
        with self.assertRaisesRegex(CodeModeError, "closed"):
            code.run("print('ran')\n")

    def test_a_check_under_way_is_ended_by_close_and_leaves_nothing(self) -> None:
        # mypy writes its cache under the runner's root: a check still running as close()
        # removed the root used to make the cache again, a directory left forever.
        self.assertTrue(_check.have_mypy(), "the test extra brings mypy")
        code = self.open({"notes": server("codemode_tools", self.dir)})
        starting = threading.Event()
        test = self

        class Held(Brood):
            def run(self, argv: Any, data: bytes, **options: Any) -> Any:
                if "mypy" in argv:  # mypy starts as close() begins: close() must see it
                    starting.set()
                    test.assertTrue(code._closing.wait(LONG), "close() never began")
                return super().run(argv, data, **options)

        code._brood = Held()
        results: List[Any] = []
        checking = threading.Thread(target=_checked, args=(code, "x: int = 1\n", results))
        checking.start()
        self.assertTrue(starting.wait(LONG))
        code.close()  # kills the check's mypy, and returns once the check has ended
        checking.join(LONG)
        self.assertFalse(checking.is_alive())
        [result] = results
        self.assertIsInstance(result, CodeModeError, "a check cut short has no verdict")
        self.assertFalse(os.path.exists(code._root), "the check left the root behind")
        with self.assertRaisesRegex(CodeModeError, "closed"):
            code.check("x: int = 1\n")


def _checked(code: CodeMode, program: str, results: List[Any]) -> None:
    """The check's result, or the CodeModeError it raised, appended to ``results``."""
    try:
        results.append(code.check(program))
    except CodeModeError as e:
        results.append(e)


def _outcome(code: CodeMode, program: str, results: List[Any]) -> None:
    """The run's result, or the CodeModeError it raised, appended to ``results``."""
    try:
        results.append(code.run(program))
    except CodeModeError as e:
        results.append(e)


class ASecondLife(GapCase):
    def test_a_restart_whose_listing_names_a_tool_twice_is_refused(self) -> None:
        # Its first life lists wipe once, destructive; its second lists wipe twice, the
        # second claiming readOnlyHint. Kept, the later claim let read-only send wipe.
        saved = _fleet.RESTART_PAUSE
        _fleet.RESTART_PAUSE = 0.0  # it died unserved: no pause before its second life
        self.addCleanup(setattr, _fleet, "RESTART_PAUSE", saved)
        code = self.open(
            {"liar": server("codemode_hostile", "lies_later", self.dir)},
            policy=Policy(allow="read-only"),
        )
        first = code.run(CALL_WIPE + "try:\n    liar.die()\nexcept CallFailed:\n    pass\n")
        self.assertEqual(first.exit_status, 0, first.stderr)
        self.assertEqual([c.outcome for c in first.calls], ["refused", "call_failed"])
        second = code.run("from cap.mcp import CallFailed, liar\ntry:\n    liar.ok()\n"
                          "except CallFailed as e:\n    print(e)\n" + CALL_WIPE)  # fmt: skip
        self.assertEqual(second.exit_status, 0, second.stderr)
        self.assertEqual(second.restarted, ("liar",))
        self.assertIn("but failed: tools 'wipe' and 'wipe' both become", second.stderr)
        self.assertEqual([c.outcome for c in second.calls], ["call_failed", "refused"])
        self.assertFalse(os.path.exists(self.path("calls.log")), "wipe reached the server")


CALL_WIPE = (
    "from cap.mcp import CallFailed, liar\n"
    "try:\n    liar.wipe()\nexcept CallFailed as e:\n    print(type(e).__name__, e)\n"
)


class LeftOutLines(GapCase):
    def test_a_left_out_servers_hostile_failure_is_one_short_plain_line(self) -> None:
        # initialize fails with terminal escapes, a bidi override, a forged "codemode:"
        # line and 100 KB of text: the server's own words, shown to the operator.
        code = self.open(
            {
                "loud": server("codemode_hostile", "loud_failure", self.dir),
                "notes": server("codemode_tools", self.dir),
            }
        )
        self.assertEqual(code.servers, ("notes",))
        [line] = code.left_out
        self.assertTrue(line.startswith("server loud left out: initialize failed"), line[:200])
        self.assertIn("FORGED", line)  # the text is shown, made inert
        self.assertLess(len(line), 2000)
        self.assertTrue(all(char.isprintable() for char in line), repr(line[:300]))
        self.assertNotIn("\n", line)
        self.assertNotIn("\x1b", line)
        self.assertNotIn("\u202e", line)
