"""Code mode's runs, calls and checks, each ended however it ends: by the wall clock, a
signal, the caller's cancellation, a close -- and what a server says of itself.

Every test mounts its defect with real processes: the scripted servers of
``tests/servers/codemode_hostile.py`` (``slow``: one call at a time, ``sleep`` as long as
asked; ``leaky``: a secret on its stderr as it dies; ``confesses_later``: a next life
whose claims differ) and the notes server of ``codemode_tools.py``. A deadline the fix
must beat is one the test never expects to reach (``LONG``, against calls that would
take an hour): nothing here times how fast anything is.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import unittest
from typing import Any, Callable, List, TypeVar

from mcp_client.codemode import (
    CANCELLED,
    WALL_CLOCK,
    CodeMode,
    Limits,
    Policy,
    RunResult,
    _typecheck,
)
from mcp_client.errors import CodeModeError

from codemode_support import RunnerCase
from serve_support import REPO, descendants, live
from support import LONG, server, server_argv, wait_until

#: The secret ``codemode_hostile.py leaky`` writes to its stderr as it dies.
SECRET = "sk-codemode-test-0123456789"
#: A call's timeout no test waits for: an hour.
HOUR = 3600
T = TypeVar("T")


class Recorded(logging.Handler):
    """The messages of the records a logger passes on (WARNING and up)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class EndingsCase(RunnerCase):
    PREFIX = "codemode-endings-"
    JAIL_PROGRAM = False  # the attacks are on the runner, not on the jail

    def hostile(self, behaviour: str) -> Any:
        return server("codemode_hostile", behaviour, self.dir)

    def run_program(self, code: CodeMode, source: str, **options: Any) -> RunResult:
        return code.run(textwrap.dedent(source), **options)

    def logged_calls(self) -> List[str]:
        try:
            with open(self.path("calls.log")) as log:
                return log.read().split()
        except FileNotFoundError:
            return []


class WhatAServerSaysOfItself(EndingsCase):
    """A server's stderr tail is the operator's: it reaches neither the program (in a
    ``CallFailed``) nor the run's stderr (in the note of a start again)."""

    DIE = """
        from cap.mcp import CallFailed, leaky
        leaky.ok()  # served once: its death is no failure to start, and no pause follows
        try:
            leaky.die()
        except CallFailed as e:
            print("failed:", e)
    """

    def test_a_dead_servers_stderr_reaches_neither_the_program_nor_the_next_run(self) -> None:
        code = self.open({"leaky": self.hostile("leaky")})
        logged = Recorded()
        logger = logging.getLogger("mcp_client.codemode")
        logger.addHandler(logged)
        self.addCleanup(logger.removeHandler, logged)
        first = self.run_program(code, self.DIE)
        second = self.run_program(code, "from cap.mcp import leaky\nprint(leaky.ok()['text'])\n")
        self.assertIn("failed: leaky.die: ", first.stdout, first.stderr)
        self.assertEqual((second.stdout, second.restarted), ("ok\n", ("leaky",)), second.stderr)
        self.assertIn("server leaky was dead and was started again", second.stderr)
        for result in (first, second):
            self.assertNotIn(SECRET, result.stdout + result.stderr + str(result.error))
        self.assertIn(SECRET, "\n".join(logged.lines), "the operator's log keeps it")


class ANextLifesClaims(EndingsCase):
    """The policy judges a call by the claims of the life it is sent to: a server started
    again by this call lists anew before anything is decided."""

    def test_a_restart_that_now_says_destructive_is_refused_under_read_only(self) -> None:
        code = self.open(
            {"confess": self.hostile("confesses_later")}, policy=Policy(allow="read-only")
        )
        first = self.run_program(
            code,
            """
            from cap.mcp import CallFailed, confess
            print(confess.wipe()["text"])  # its first life says read-only
            try:
                confess.die()
            except CallFailed:
                print("died")
        """,
        )
        self.assertEqual(first.stdout, "wiped\ndied\n", first.stderr)
        second = self.run_program(
            code,
            """
            from cap.mcp import CallRefused, confess
            try:
                confess.wipe()
            except CallRefused as e:
                print("refused:", e)
        """,
        )
        self.assertEqual(second.restarted, ("confess",), second.stderr)
        self.assertIn("refused: confess.wipe", second.stdout, second.stderr)
        self.assertEqual([c.outcome for c in second.calls], ["refused"])
        self.assertEqual(self.logged_calls(), ["wipe"], "the second wipe was never sent")


def finished(test: unittest.TestCase, work: Callable[[], T]) -> T:
    """``work()``'s value, from a thread the test waits ``LONG`` for: a run that would
    wait for an hour's call fails the test instead of holding it."""
    done: List[T] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(LONG)
    test.assertFalse(thread.is_alive(), "still waiting, as for the call's hour")
    return done[0]


class ACallGivenUp(EndingsCase):
    """A call in flight when its run ends is given up at once, and its server retired:
    nothing waits for the call's timeout, and the next run does not wait behind it."""

    SLEEP = "from cap.mcp import slow\nslow.sleep(seconds=%d)\n" % HOUR
    OK = "from cap.mcp import slow\nprint(slow.ok()['text'])\n"

    def test_the_wall_clock_ends_a_run_waiting_in_a_call(self) -> None:
        code = self.open(
            {"slow": self.hostile("slow")}, limits=Limits(wall_clock=5, call_timeout=HOUR)
        )
        result = finished(self, lambda: self.run_program(code, self.SLEEP))
        self.assertEqual(self.logged_calls(), ["sleep"], "the call was in flight")
        self.assertEqual(result.exit_status, WALL_CLOCK, result.stderr)
        self.assertEqual([call.outcome for call in result.calls], ["abandoned"], "never ok")
        after = finished(self, lambda: self.run_program(code, self.OK))
        self.assertEqual((after.stdout, after.restarted), ("ok\n", ("slow",)), after.stderr)
        self.assertIn(
            "server slow was retired after a run ended with a call in flight", after.stderr
        )

    def test_a_call_past_its_timeout_costs_the_next_run_nothing(self) -> None:
        # The server answers one call at a time: the call given up held it for an hour.
        code = self.open({"slow": self.hostile("slow")}, limits=Limits(call_timeout=2))
        first = self.run_program(
            code,
            """
            from cap.mcp import CallFailed, slow
            try:
                slow.sleep(seconds=%d)
            except CallFailed as e:
                print("failed:", e)
        """
            % HOUR,
        )
        self.assertIn("failed: slow.sleep: ", first.stdout, first.stderr)
        after = self.run_program(code, self.OK)
        self.assertEqual((after.stdout, after.restarted), ("ok\n", ("slow",)), after.stderr)
        self.assertIn("server slow was retired, and its next call starts it again", first.stdout)


class TheCommandStoppedMidCall(EndingsCase):
    """``mcp-client codemode`` stopped by SIGTERM or SIGINT while its program waits in a
    call ends at once, 143 or 130, its servers with it: the call is given up."""

    def command(self) -> "subprocess.Popen[bytes]":
        argv = server_argv("codemode_hostile", "slow", self.dir)
        with open(self.path("servers.json"), "w") as out:
            json.dump({"mcpServers": {"slow": {"command": argv[0], "args": argv[1:]}}}, out)
        with open(self.path("program.py"), "w") as out:
            out.write("from cap.mcp import slow\nslow.sleep(seconds=%d)\n" % HOUR)
        env = dict(os.environ, PYTHONPATH=REPO)
        command = [
            sys.executable,
            "-m",
            "mcp_client",
            "codemode",
            "--no-jail",
            "--timeout",
            "%ds" % HOUR,
            "--config",
            self.path("servers.json"),
            self.path("program.py"),
        ]
        child = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.addCleanup(_reap, child)
        return child

    def test_sigterm_and_sigint_end_it_at_once(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=signum.name):
                os.makedirs(self.path(signum.name))
                self.dir = self.path(signum.name)
                child = self.command()
                self.assertTrue(wait_until(lambda: self.logged_calls() == ["sleep"]))
                made = descendants(child.pid)
                child.send_signal(signum)
                try:
                    status = child.wait(LONG)
                except subprocess.TimeoutExpired:
                    self.fail("still waiting for its call, as for an hour")
                self.assertEqual(status, 128 + signum, child.communicate()[1])
                gone = wait_until(lambda: not live(made))  # noqa: B023  (called here)
                self.assertTrue(gone, "left: %s" % live(made))


def _reap(child: "subprocess.Popen[bytes]") -> None:
    if child.poll() is None:
        child.kill()
    child.wait()
    if child.stderr is not None and not child.stderr.closed:
        child.stderr.close()


class ACancelledRun(EndingsCase):
    """``run(cancelled=event)``: the caller's cancellation kills the program at once."""

    LOOP = """
        import time as clock
        from cap.mcp import CallFailed, notes
        count = 0
        while True:  # a note every 0.2 s, past its cap (50 calls): an hour
            try:
                notes.write_note(name="n%d" % (count % 3), text="x")
            except CallFailed:
                clock.sleep(3600)
            count += 1
            clock.sleep(0.2)
    """

    def test_the_program_is_killed_and_the_run_says_it_was_cancelled(self) -> None:
        code = self.open({"notes": self.notes()})
        cancelled = threading.Event()
        results: List[RunResult] = []
        running = threading.Thread(
            target=lambda: results.append(self.run_program(code, self.LOOP, cancelled=cancelled)),
        )
        running.start()
        self.addCleanup(running.join, LONG)
        self.assertTrue(wait_until(lambda: len(self.logged_calls()) >= 2), "it is calling")
        cancelled.set()
        running.join(LONG)
        self.assertFalse(running.is_alive(), "the program was not killed")
        [result] = results
        self.assertEqual(result.error, CANCELLED, result.stderr)
        self.assertEqual(result.exit_status, 128 + signal.SIGKILL)


#: A stand-in for the check's compile() child that never ends (its command line is marked).
HELD_COMPILE = "import time; time.sleep(3600)  # held-compile"


class ChecksHeld(EndingsCase):
    """A check's children are the runner's: close ends them at once (and the check has
    no verdict), and at most ``MAX_CHECKS`` checks run at once."""

    def setUp(self) -> None:
        super().setUp()
        real = _typecheck._COMPILE
        _typecheck._COMPILE = HELD_COMPILE  # a compile() that would take an hour
        self.addCleanup(setattr, _typecheck, "_COMPILE", real)

    def held(self) -> List[int]:
        """Our children's children whose command line is the held compile(): the
        lifeline script that starts one names it too, and while the script forks its
        watchdog (the middle process, the watchdog before it leaves us for init) there
        are two or three such for a moment; those are not the compile()s."""
        return [
            pid
            for pid, line in ((pid, _command_line(pid)) for pid in descendants(os.getpid()))
            if HELD_COMPILE.encode() in line and b"lifeline_script" not in line
        ]

    def test_close_ends_a_check_under_way_at_once(self) -> None:
        code = self.open({"notes": self.notes()})
        results: List[Any] = []
        checking = threading.Thread(target=_checked, args=(code, "x = 1\n", results))
        checking.start()
        self.addCleanup(checking.join, LONG)
        self.assertTrue(wait_until(lambda: len(self.held()) == 1), "compile() runs")
        child = self.held()
        finished(self, code.close)  # it waited for compile()'s hour, its timeout's minute
        checking.join(LONG)
        [result] = results
        self.assertIsInstance(result, CodeModeError, "a check cut short has no verdict")
        self.assertTrue(wait_until(lambda: not live(set(child))), "compile() was not killed")
        self.assertFalse(os.path.exists(code.cap_dir))

    def test_checks_past_max_checks_are_refused_busy(self) -> None:
        code = self.open({"notes": self.notes()})
        results: List[Any] = []
        threads = [
            threading.Thread(target=_checked, args=(code, "x = 1\n", results))
            for _ in range(_typecheck.MAX_CHECKS)
        ]
        for thread in threads:
            thread.start()
            self.addCleanup(thread.join, LONG)
        self.assertTrue(wait_until(lambda: len(self.held()) == _typecheck.MAX_CHECKS))
        with self.assertRaisesRegex(CodeModeError, "busy: %d checks" % _typecheck.MAX_CHECKS):
            code.check("x = 1\n")
        self.assertEqual(len(self.held()), _typecheck.MAX_CHECKS, "no more children")
        code.close()


def _checked(code: CodeMode, program: str, results: List[Any]) -> None:
    """The check's result, or the CodeModeError it raised, appended to ``results``."""
    try:
        results.append(code.check(program))
    except CodeModeError as e:
        results.append(e)


def _command_line(pid: int) -> bytes:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as cmdline:
            return cmdline.read()
    except OSError:
        return b""


class ThreadsInAJailedProgram(EndingsCase):
    """The program's jail bounds the memory it uses (its cgroup), not the address space
    its threads reserve: each reserves a stack and a malloc arena, and 16 of them met a
    512 MiB ``RLIMIT_AS`` in a program using 14 MB ("can't start new thread")."""

    JAIL_PROGRAM = True

    def test_sixteen_threads_start_under_the_default_limits(self) -> None:
        code = self.open({"notes": self.notes()})
        result = self.run_program(
            code,
            """
            import threading, time
            from cap.mcp import notes
            threads = [threading.Thread(target=time.sleep, args=(0.2,)) for _ in range(16)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            print(len(threads), "threads", notes.pid()["text"].isdigit())
            """,
        )
        self.assertEqual((result.exit_status, result.stdout), (0, "16 threads True\n"),
                         result.stderr)  # fmt: skip


class KeepCapOverALink(EndingsCase):
    """``codemode --keep-cap DIR`` where ``DIR/cap`` is a link: one line, exit 2, and the
    link never followed (it ended in a ``FileExistsError`` traceback)."""

    def keep(self, directory: str) -> "subprocess.CompletedProcess[str]":
        argv = server_argv("codemode_tools", self.dir)
        with open(self.path("servers.json"), "w") as out:
            json.dump({"mcpServers": {"notes": {"command": argv[0], "args": argv[1:]}}}, out)
        command = [sys.executable, "-m", "mcp_client", "codemode", "--config",
                   self.path("servers.json"), "--keep-cap", directory]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=REPO)
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=LONG * 4)

    def test_a_link_at_dir_cap_is_one_line_and_not_followed(self) -> None:
        elsewhere = self.path("elsewhere")
        self.assertEqual(self.keep(elsewhere).returncode, 0)  # a real cap package there
        before = sorted(os.listdir(os.path.join(elsewhere, "cap")))
        os.makedirs(self.path("kept"))
        os.symlink(os.path.join(elsewhere, "cap"), self.path("kept", "cap"))
        done = self.keep(self.path("kept"))
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertIn("is a link; not followed, not replaced", done.stderr)
        self.assertTrue(os.path.islink(self.path("kept", "cap")))
        self.assertEqual(sorted(os.listdir(os.path.join(elsewhere, "cap"))), before)


class OneScratchOneRun(EndingsCase):
    """``scratch`` (``--scratch DIR``) is one working directory for every run: two
    programs in it at once would read and clobber each other's files. Runs with it are
    one at a time: a second is refused busy at once, and runs once the first has ended."""

    WAIT = """
        import os, time
        open("started", "w").close()
        while not os.path.exists("go"):
            time.sleep(0.02)
        print("done")
    """

    def test_a_second_run_in_the_shared_scratch_is_refused_busy(self) -> None:
        scratch = self.path("scratch")
        os.makedirs(scratch)
        code = self.open({"notes": self.notes()}, scratch=scratch)
        results: List[RunResult] = []
        first = threading.Thread(target=lambda: results.append(self.run_program(code, self.WAIT)))
        first.start()
        self.addCleanup(first.join, LONG)
        self.addCleanup(lambda: open(os.path.join(scratch, "go"), "a").close())  # if it fails
        self.assertTrue(wait_until(lambda: os.path.exists(os.path.join(scratch, "started"))))
        with self.assertRaisesRegex(CodeModeError, "busy: a program is running in the shared"):
            self.run_program(code, "print('second')\n")
        open(os.path.join(scratch, "go"), "w").close()
        first.join(LONG)
        self.assertEqual(results[0].stdout, "done\n", results[0].stderr)
        self.assertEqual(self.run_program(code, "print('second')\n").stdout, "second\n")
