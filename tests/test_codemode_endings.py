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

import logging
import os
import textwrap
import threading
from typing import Any, List

from mcp_client.codemode import CodeMode, Limits, Policy, RunResult

from codemode_support import RunnerCase
from support import LONG, server, wait_until

#: The secret ``codemode_hostile.py leaky`` writes to its stderr as it dies.
SECRET = "sk-codemode-test-0123456789"
#: A call's timeout no test waits for: an hour.
HOUR = 3600.0


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
        code = self.open({"confess": self.hostile("confesses_later")},
                         policy=Policy(allow="read-only"))  # fmt: skip
        first = self.run_program(code, """
            from cap.mcp import CallFailed, confess
            print(confess.wipe()["text"])  # its first life says read-only
            try:
                confess.die()
            except CallFailed:
                print("died")
        """)  # fmt: skip
        self.assertEqual(first.stdout, "wiped\ndied\n", first.stderr)
        second = self.run_program(code, """
            from cap.mcp import CallRefused, confess
            try:
                confess.wipe()
            except CallRefused as e:
                print("refused:", e)
        """)  # fmt: skip
        self.assertEqual(second.restarted, ("confess",), second.stderr)
        self.assertIn("refused: confess.wipe", second.stdout, second.stderr)
        self.assertEqual([c.outcome for c in second.calls], ["refused"])
        self.assertEqual(self.logged_calls(), ["wipe"], "the second wipe was never sent")
