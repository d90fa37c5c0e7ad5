"""``mcp_client.codemode`` as a library: every limit and policy rule against a hostile
program, discovery, the check, restarts, overlapping runs, and the errors a model reads.

The servers are real child processes: ``tests/servers/codemode_tools.py`` (a notes
server whose tools carry the annotations a policy reads, and which logs every call it
receives, so a refused call is seen not to arrive), ``mcp-server-time`` (PyPI) and the
npm filesystem server. Each program is the model's code, written to do harm: it loops
calls past the cap, floods its output, allocates past its memory, runs forever, calls
what the policy refuses.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest
from typing import Any, Dict, List

import pytest

from mcp_client.codemode import CodeMode, Limits, Policy, RunResult
from mcp_client.config import ConfiguredServer
from mcp_client.errors import CodeModeError, NoServerStarted
from mcp_client.transport import Spawn

import npm_servers
from codemode_support import RunnerCase, compile_message
from support import JAIL_READABLE, SHORT, server

TIME = Spawn(sys.executable, ("-m", "mcp_server_time", "--local-timezone", "UTC"))
BROKEN = Spawn(
    sys.executable, ("-c", "import sys; print('ERROR: no database configured', file=sys.stderr)")
)


class LibraryCase(RunnerCase):
    PREFIX = "codemode-lib-"

    def received(self) -> List[str]:
        """The tools the notes server was called with, in order."""
        try:
            with open(os.path.join(self.dir, "calls.log")) as log:
                return log.read().split()
        except FileNotFoundError:
            return []

    def run_program(self, code: CodeMode, source: str, **options: Any) -> RunResult:
        return code.run(textwrap.dedent(source), **options)

    def outcomes(self, result: RunResult) -> List[str]:
        return ["%s:%s" % (call.tool, call.outcome) for call in result.calls]

    def need_time_server(self) -> None:
        if sys.version_info < (3, 10):
            self.skipTest("mcp-server-time needs Python >= 3.10 (the test extra skips it)")


class RunLimits(LibraryCase):
    """Every limit of ``Limits``, enforced against a program that goes past it."""

    def test_the_call_past_max_calls_is_refused_and_never_sent(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(max_calls=3))
        result = self.run_program(
            code,
            """
            from cap.mcp import CallFailed, notes
            for attempt in range(10):
                try:
                    notes.pid()
                except CallFailed as e:
                    print(type(e).__name__, e)
            """,
        )
        self.assertEqual(result.exit_status, 0, result.stderr)
        self.assertEqual(self.received(), ["pid"] * 3)
        self.assertEqual(self.outcomes(result), ["pid:ok"] * 3 + ["pid:call_failed"] * 7)
        self.assertEqual(result.stdout.count("CallFailed notes.pid: refused: "), 7)
        self.assertIn("Limits.max_calls", result.stdout)
        self.assertEqual(
            result.error, "the program went past its 3 tool calls (Limits.max_calls): 7 refused"
        )

    def test_a_program_looping_past_the_cap_gets_a_bounded_record(self) -> None:
        code = self.open(
            {"notes": self.notes()},
            limits=Limits(max_calls=2),
            policy=Policy(deny_tools=("notes.pid",)),
        )
        result = self.run_program(
            code,
            """
            from cap.mcp import CallFailed, CallRefused, notes
            kinds = set()
            for attempt in range(2000):
                try:
                    notes.pid()
                except CallFailed as e:
                    kinds.add(type(e).__name__)
            print(sorted(kinds))
            """,
        )
        self.assertEqual(result.stdout, "['CallFailed', 'CallRefused']\n", result.stderr)
        self.assertEqual(self.received(), [])  # refused calls count, and are never sent
        self.assertEqual(len(result.calls), 2 + 16)
        self.assertEqual(
            self.outcomes(result)[:3], ["pid:refused", "pid:refused", "pid:call_failed"]
        )
        self.assertIn("1998 refused", result.error or "")

    def test_a_flood_of_output_is_cut_with_the_bytes_dropped(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(max_output_bytes=1000))
        result = self.run_program(
            code,
            """
            import sys
            for _ in range(50):
                sys.stdout.write("x" * 100000)
            sys.stderr.write("e" * 3000)
            """,
        )
        self.assertEqual(result.exit_status, 0, result.stderr)
        self.assertTrue(result.truncated)
        self.assertTrue(result.stdout.startswith("x" * 1000 + "\n[codemode: 4999000 bytes"))
        self.assertIn(
            "[codemode: 4999000 bytes of stdout dropped: past Limits.max_output_bytes (1000)]",
            result.stdout,
        )
        self.assertIn("[codemode: 2000 bytes of stderr dropped", result.stderr)

    def test_output_within_the_limit_is_whole_and_not_marked(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(max_output_bytes=1000))
        result = self.run_program(code, "print('y' * 999, end='')\n")
        self.assertEqual((result.stdout, result.truncated), ("y" * 999, False))

    def test_memory_past_the_jails_limit_ends_the_program_not_the_runner(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(memory_bytes=64 << 20))
        result = self.run_program(
            code,
            """
            hoard = []
            for _ in range(64):
                hoard.append(bytearray(8 << 20))  # 512 MiB in all, touched
            print("allocated")
            """,
        )
        self.assertNotIn("allocated", result.stdout)
        self.assertNotEqual(result.exit_status, 0)
        self.assertTrue(
            result.exit_status == 137 or "MemoryError" in result.stderr,
            (result.exit_status, result.stderr),
        )
        again = self.run_program(code, "print(len(bytearray(16 << 20)))\n")
        self.assertEqual((again.exit_status, again.stdout), (0, "16777216\n"), again.stderr)

    @pytest.mark.slow
    def test_the_wall_clock_kills_a_program_that_never_ends(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(wall_clock=1))
        result = self.run_program(code, "while True:\n    pass\n")
        self.assertEqual(result.exit_status, 124)
        self.assertEqual(
            result.error, "the program ran past its wall-clock limit (1 s) and was killed"
        )
        self.assertIn("codemode: the program ran past its wall-clock limit", result.stderr)

    def test_a_runs_timeout_is_its_wall_clock_within_the_limit(self) -> None:
        code = self.open({"notes": self.notes()})
        result = self.run_program(code, "import time\ntime.sleep(3600)\n", timeout=0.5)
        self.assertEqual(result.exit_status, 124)
        self.assertIn("(0.5 s)", result.error or "")

    def test_each_call_has_its_timeout(self) -> None:
        code = self.open({"slow": server("never_answer")}, limits=Limits(call_timeout=SHORT))
        result = self.run_program(
            code,
            """
            from cap.mcp import CallFailed, slow
            try:
                slow.echo(message="hello")
            except CallFailed as e:
                print(e)
            """,
        )
        self.assertRegex(
            result.stdout,
            r"^slow\.echo: tools/call got no answer within 0\.3 ?s; server slow was retired, "
            r"and its next call starts it again\n$",
        )
        self.assertEqual(self.outcomes(result), ["echo:call_failed"])

    def test_limits_are_checked(self) -> None:
        for bad in (
            {"wall_clock": 0},
            {"call_timeout": float("nan")},
            {"max_calls": -1},
            {"memory_bytes": 1000},
            {"max_output_bytes": True},
        ):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                Limits(**bad)


POLICY_PROGRAM = """
    from cap.mcp import CallFailed, CallRefused, ToolFailed, notes
    for name, call in [("read", lambda: notes.read_note(name="a")),
                       ("write", lambda: notes.write_note(name="a", text="hello")),
                       ("delete", lambda: notes.delete_note(name="a"))]:
        try:
            print(name, "ok", call()["text"])
        except CallRefused as e:
            print(name, "refused", isinstance(e, CallFailed), e)
        except ToolFailed as e:
            print(name, "tool_failed", e)
"""


class CallPolicy(LibraryCase):
    """``Policy`` from the annotations, MCP's defaults, and the names allowed or denied."""

    def test_read_only_sends_only_what_claims_read_only(self) -> None:
        code = self.open({"notes": self.notes()}, policy=Policy(allow="read-only"))
        result = self.run_program(code, POLICY_PROGRAM)
        self.assertEqual(result.exit_status, 0, result.stderr)
        self.assertEqual(
            self.outcomes(result),
            ["read_note:tool_failed", "write_note:refused", "delete_note:refused"],
        )
        self.assertEqual(self.received(), ["read_note"])  # the refused ones never arrived
        self.assertIn(
            "write refused True notes.write_note is refused by the policy allow=read-only: "
            "the server does not say readOnlyHint: true\n",
            result.stdout,
        )
        self.assertFalse(os.path.exists(os.path.join(self.dir, "a")))

    def test_non_destructive_takes_a_tool_that_says_nothing_as_destructive(self) -> None:
        code = self.open({"notes": self.notes()}, policy=Policy(allow="non-destructive"))
        result = self.run_program(code, POLICY_PROGRAM)
        self.assertEqual(
            self.outcomes(result), ["read_note:tool_failed", "write_note:ok", "delete_note:refused"]
        )
        self.assertEqual(self.received(), ["read_note", "write_note"])
        self.assertIn("allow=non-destructive: the server says neither", result.stdout)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "a")))  # not deleted

    def test_all_sends_everything(self) -> None:
        code = self.open({"notes": self.notes()})
        result = self.run_program(code, POLICY_PROGRAM)
        self.assertEqual(
            self.outcomes(result), ["read_note:tool_failed", "write_note:ok", "delete_note:ok"]
        )

    def test_a_denied_name_wins_over_allow_all_and_allow_tools(self) -> None:
        policy = Policy(allow="all", allow_tools=("notes.pid",), deny_tools=("notes.pid",))
        code = self.open({"notes": self.notes()}, policy=policy)
        result = self.run_program(
            code,
            """
            from cap.mcp import CallRefused, notes
            try:
                notes.pid()
            except CallRefused as e:
                print(e)
            """,
        )
        self.assertEqual(result.stdout, "notes.pid is refused by the policy: it is in deny_tools\n")
        self.assertEqual(self.received(), [])

    def test_an_allowed_name_goes_through_read_only(self) -> None:
        policy = Policy(allow="read-only", allow_tools=("notes.write_note",))
        code = self.open({"notes": self.notes()}, policy=policy)
        result = self.run_program(code, POLICY_PROGRAM)
        self.assertEqual(
            self.outcomes(result),
            ["read_note:tool_failed", "write_note:ok", "delete_note:refused"],
        )

    def test_a_lying_server_is_held_by_its_jail_not_by_the_policy(self) -> None:
        """``lying_read`` claims read-only and writes: the policy sends it (a claim is all
        it has); unjailed the write lands, jailed the server cannot write there."""
        outside = tempfile.mkdtemp(prefix="codemode-outside-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, outside, True)
        target = os.path.join(outside, "pwned")
        program = "from cap.mcp import notes\nprint(notes.lying_read(path=%r)['text'])\n" % target
        policy = Policy(allow="read-only")
        with self.open({"notes": self.notes()}, policy=policy) as code:
            self.assertEqual(self.run_program(code, program).stdout, "wrote it\n")
        self.assertTrue(os.path.exists(target))
        os.unlink(target)
        jailed = self.open(
            {"notes": self.notes()},
            policy=policy,
            jail_servers=True,
            server_readable=JAIL_READABLE,  # the server's script, in a checkout under /tmp
            server_writable=(self.dir,),
        )
        result = self.run_program(jailed, program)
        self.assertEqual(result.stdout, "could not write: Read-only file system\n", result.stderr)
        self.assertFalse(os.path.exists(target))
        self.assertEqual(self.received(), ["lying_read", "lying_read"])

    def test_policies_are_checked(self) -> None:
        with self.assertRaises(ValueError):
            Policy(allow="some")
        with self.assertRaises(ValueError):
            Policy(deny_tools=("pid",))
        with self.assertRaises(TypeError):
            Policy(allow_tools="notes.pid")  # type: ignore[arg-type]


class Restarts(LibraryCase):
    """Servers stay up across runs; a dead one is started again by the next run calling it."""

    PIDS = """
        from cap.mcp import CallFailed, notes
        print(notes.pid()["text"])
        try:
            notes.die()
        except CallFailed as e:
            print("died")
        try:
            notes.pid()
        except CallFailed as e:
            print("still dead")
    """

    def test_a_dead_server_is_started_again_by_the_next_run(self) -> None:
        code = self.open({"notes": self.notes()})
        first = self.run_program(code, self.PIDS)
        self.assertEqual(first.stdout.splitlines()[1:], ["died", "still dead"], first.stderr)
        self.assertEqual(first.restarted, ())
        second = self.run_program(code, "from cap.mcp import notes\nprint(notes.pid()['text'])\n")
        self.assertEqual(second.exit_status, 0, second.stderr)
        self.assertNotEqual(second.stdout.split()[0], first.stdout.split()[0])
        self.assertEqual(second.restarted, ("notes",))
        self.assertIn("codemode: server notes was dead and was started again", second.stderr)
        self.assertNotIn("dying as asked", second.stderr)  # its stderr is the operator's log's
        third = self.run_program(code, "from cap.mcp import notes\nprint(notes.pid()['text'])\n")
        self.assertEqual((third.stdout, third.restarted), (second.stdout, ()))

    def test_servers_stay_up_across_runs(self) -> None:
        code = self.open({"notes": self.notes()})
        source = "from cap.mcp import notes\nprint(notes.pid()['text'])\n"
        pids = {self.run_program(code, source).stdout for _ in range(3)}
        self.assertEqual(len(pids), 1)


class OverlappingRuns(LibraryCase):
    def test_runs_from_threads_each_get_their_own_calls_and_output(self) -> None:
        code = self.open({"notes": self.notes()})
        results: Dict[int, RunResult] = {}

        def one(number: int) -> None:
            source = (
                "from cap.mcp import notes\n"
                "for _ in range(5):\n"
                "    notes.write_note(name='n%d', text='%d')\n"
                "print(notes.read_note(name='n%d')['text'])\n" % (number, number, number)
            )
            results[number] = code.run(source)

        threads = [threading.Thread(target=one, args=(number,)) for number in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for number in range(4):
            result = results[number]
            self.assertEqual((result.exit_status, result.stdout), (0, "%d\n" % number))
            self.assertEqual(self.outcomes(result), ["write_note:ok"] * 5 + ["read_note:ok"])
        self.assertEqual(len(self.received()), 24)


class ModelErrors(LibraryCase):
    """What the model reads when its program fails: its own frames, and the real names."""

    def test_a_traceback_is_cut_to_the_programs_own_frames(self) -> None:
        code = self.open({"notes": self.notes()})
        result = self.run_program(
            code,
            """
            from cap.mcp import notes

            def read():
                return notes.read_note(name="absent")

            read()
            """,
        )
        self.assertEqual(result.exit_status, 1)
        self.assertIn("Traceback (most recent call last):", result.stderr)
        self.assertIn('program.py", line 7, in <module>', result.stderr)
        self.assertIn('program.py", line 5, in read', result.stderr)
        self.assertIn("\ncap.mcp.ToolFailed: no note: No such file", result.stderr)
        self.assertNotIn("cap/internal", result.stderr)
        self.assertNotIn("cap/mcp", result.stderr)
        self.assertIn("(2 frames of the cap package left out)", result.stderr)

    def hint(self, code: CodeMode, source: str) -> str:
        result = self.run_program(code, source)
        self.assertEqual(result.exit_status, 1, result.stderr)
        hints = [line for line in result.stderr.splitlines() if line.startswith("hint: ")]
        self.assertEqual(len(hints), 1, result.stderr)
        return hints[0][len("hint: ") :]

    def test_a_missing_cap_name_is_answered_with_the_closest_real_ones(self) -> None:
        code = self.open({"notes": self.notes()})
        self.assertEqual(
            self.hint(code, "from cap.mcp import notes\nnotes.read(name='x')\n"),
            "`cap.mcp.notes` has no `read`; did you mean `read_note`, `lying_read`?",
        )
        self.assertEqual(
            self.hint(code, "from cap.mcp.notes import writ_note\n"),
            "`cap.mcp.notes` has no `writ_note`; did you mean `write_note`, `read_note`, "
            "`delete_note`?",
        )
        # The program is shown only the servers' modules it imports by name: a typo shows
        # none, and the program is not told the others' names; the run's stderr is.
        result = self.run_program(code, "from cap.mcp import notez\n")
        self.assertIn(
            "hint: `cap.mcp` has no `notez`; a program is shown only the servers' modules it "
            "imports by name (`import cap.mcp.notez`); shown: none\n",
            result.stderr,
        )
        self.assertTrue(
            result.stderr.endswith(
                "codemode: the program imports cap.mcp.notez, which is no server's module; "
                "did you mean `notes`?\n"
            ),
            result.stderr,
        )
        self.assertEqual(
            self.hint(code, "import cap.mcp.notes\ncap.mcp.notez\n"),
            "`cap.mcp` has no `notez`; did you mean `notes`?",
        )
        self.assertEqual(
            self.hint(code, "from cap.mcp import notes as n\nnotes.pid()\n"),
            "`notes` is not defined; `from cap.mcp import notes` gives that server's module",
        )
        result = self.run_program(code, "notes.pid()\n")  # no server named: none hinted
        self.assertIn("NameError: name 'notes' is not defined", result.stderr)
        self.assertNotIn("hint: ", result.stderr)

    def test_a_wrong_name_lists_the_functions_then_the_types(self) -> None:
        code = self.open({"notes": self.notes()})
        hint = self.hint(code, "from cap.mcp import notes\nnotes.zzz()\n")
        self.assertRegex(
            hint,
            r"\A`cap\.mcp\.notes` has no `zzz`; its functions: delete_note, [a-z_, ]+; "
            r"its types: (none|[A-Z])",
        )
        self.assertNotIn("TextContent", hint)  # the block types every module has

    def test_a_call_that_does_not_fit_shows_the_signature(self) -> None:
        code = self.open({"notes": self.notes()})
        self.assertEqual(
            self.hint(code, "from cap.mcp import notes\nnotes.read_note(nme='a')\n"),
            "the signature: cap.mcp.notes.read_note(name: str) -> ToolOutput; did you mean `name`?",
        )
        self.assertEqual(
            self.hint(code, "from cap.mcp import notes\nnotes.write_note(name='a')\n"),
            "the signature: cap.mcp.notes.write_note(name: str, text: str) -> ToolOutput",
        )
        result = self.run_program(code, "def f(a):\n    pass\nf(b=1)\n")  # not a cap function
        self.assertNotIn("hint: ", result.stderr)

    def test_a_syntax_error_names_program_py(self) -> None:
        code = self.open({"notes": self.notes()})
        result = self.run_program(code, "x = (\n")
        self.assertEqual(result.exit_status, 1)
        line = compile_error_line("x = (\n")  # 1 from 3.10 ("never closed"), 2 before (EOF)
        head = '  File "program.py", line %d\n' % line
        self.assertTrue(result.stderr.startswith(head), result.stderr)
        self.assertNotIn(self.dir, result.stderr)
        self.assertNotIn("/tmp", result.stderr)

    def test_the_filesystem_servers_read_names_its_read_tools(self) -> None:
        os.mkdir(os.path.join(self.dir, "files"))
        files = Spawn(
            npm_servers.argv(npm_servers.FILESYSTEM)[0], (os.path.join(self.dir, "files"),)
        )
        code = self.open({"files": files})
        hint = self.hint(code, "import cap.mcp.files\ncap.mcp.files.read(path='x')\n")
        self.assertTrue(
            hint.startswith(
                "`cap.mcp.files` has no `read`; did you mean `read_file`, `read_text_file`"
            ),
            hint,
        )

    def test_an_error_with_nothing_to_hint_has_no_hint(self) -> None:
        code = self.open({"notes": self.notes()})
        result = self.run_program(code, "raise ValueError('the model was wrong')\n")
        self.assertEqual(result.exit_status, 1)
        self.assertTrue(result.stderr.endswith("ValueError: the model was wrong\n"), result.stderr)


class Discovery(LibraryCase):
    def test_search_ranks_by_the_words_in_names_server_and_description(self) -> None:
        code = self.open({"notes": self.notes()})
        found = code.search("read note")
        self.assertEqual(found.matches[0].function, "read_note")
        self.assertEqual(found.matches[0].server, "notes")
        self.assertTrue(found.matches[0].line.startswith("cap.mcp.notes.read_note("))
        self.assertIn("Notes: read note.", found.matches[0].doc)
        self.assertEqual(found.total, 6)  # every description says "Notes"
        self.assertFalse(found.truncated)
        one = code.search("note", limit=1)
        self.assertEqual((len(one.matches), one.total, one.truncated), (1, 6, True))
        self.assertEqual(code.search("zebra").total, 0)
        self.assertEqual(len(code.search("").matches), 6)

    def test_describe_gives_the_whole_doc_or_the_closest_names(self) -> None:
        code = self.open({"notes": self.notes()})
        text = code.describe("notes.write_note")
        self.assertTrue(text.startswith("cap.mcp.notes.write_note(name: str, text: str)"))
        self.assertIn("Notes: write note.", text)
        self.assertEqual(
            code.describe("notes.writ_note"),
            "no tool notes.writ_note; the closest: notes.write_note, notes.read_note, "
            "notes.delete_note",
        )
        self.assertIn("notes.read_note", code.describe("read"))

    def test_check_compiles_and_gives_mypys_words(self) -> None:
        code = self.open({"notes": self.notes()})
        self.assertEqual(
            code.check("x = (\n"),
            code.check("x = (\n"),  # deterministic
        )
        broken = code.check("print('a')\nx = (\n")
        self.assertFalse(broken.ok)
        self.assertEqual(broken.messages, (compile_message("print('a')\nx = (\n"),))
        wrong = code.check("from cap.mcp import notes\nnotes.read_note(nme='a')\n")
        self.assertFalse(wrong.ok)
        self.assertTrue(wrong.mypy)
        self.assertIn(
            'line 2: Unexpected keyword argument "nme" for "read_note"; did you mean "name"?  '
            "[call-arg]",
            wrong.messages,
        )
        right = code.check("from cap.mcp import notes\nprint(notes.read_note(name='a')['text'])\n")
        self.assertEqual((right.ok, right.messages), (True, ()))


class Lifecycle(LibraryCase):
    def test_close_removes_the_package_and_refuses_runs(self) -> None:
        code = self.open({"notes": self.notes()})
        self.assertTrue(os.path.isfile(os.path.join(code.cap_dir, "cap", "mcp", "notes.py")))
        code.close()
        code.close()  # idempotent
        self.assertFalse(os.path.exists(code.cap_dir))
        with self.assertRaises(CodeModeError):
            code.run("print(1)\n")

    def test_a_failed_server_is_left_out_with_its_stderr_tail(self) -> None:
        code = self.open({"broken": BROKEN, "notes": self.notes()})
        self.assertEqual(code.servers, ("notes",))
        self.assertEqual(len(code.left_out), 1)
        self.assertRegex(code.left_out[0], r"^server broken left out: .*\n  \| ERROR: no database")
        self.assertNotIn("broken", code.surface())

    def test_no_server_started_is_an_error_naming_each(self) -> None:
        with self.assertRaisesRegex(NoServerStarted, r"(?s)no server started.*no database"):
            CodeMode.open([ConfiguredServer("broken", BROKEN)])

    def test_a_program_still_running_is_killed_by_close(self) -> None:
        code = self.open({"notes": self.notes()})
        started = threading.Event()
        results: List[RunResult] = []

        def run() -> None:
            results.append(
                code.run(
                    "print('up', flush=True)\nimport time\ntime.sleep(3600)\n",
                    tee=lambda stream, data: started.set(),
                )
            )

        thread = threading.Thread(target=run)
        thread.start()
        self.assertTrue(started.wait(30))
        code.close()
        thread.join(30)
        self.assertFalse(thread.is_alive())
        self.assertEqual(results[0].exit_status, 128 + 9)


class Time(LibraryCase):
    def test_the_real_time_server_through_the_library(self) -> None:
        self.need_time_server()
        code = self.open({"time": TIME}, policy=Policy(allow="read-only"))
        result = self.run_program(
            code,
            """
            from cap.mcp import time
            print(time.get_current_time(timezone="UTC")["timezone"])
            """,
        )
        self.assertEqual((result.exit_status, result.stdout), (0, "UTC\n"), result.stderr)
        self.assertEqual(self.outcomes(result), ["get_current_time:ok"])


if __name__ == "__main__":
    unittest.main()


def compile_error_line(source: str) -> int:
    """The line this interpreter names for ``source``'s syntax error when it runs it as a
    file, as the runtime does (3.9 names the line after an unclosed bracket, at the end
    of the file; its ``compile()`` of the text names the first)."""
    with tempfile.TemporaryDirectory() as where:
        path = os.path.join(where, "program.py")
        with open(path, "w") as out:
            out.write(source)
        done = subprocess.run([sys.executable, path], capture_output=True, text=True)
    found = re.search(r'File "[^"]*program\.py", line (\d+)', done.stderr)
    assert found is not None, done.stderr
    return int(found.group(1))
