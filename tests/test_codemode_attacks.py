"""Red-team attacks on code mode beyond issue 25's: each one a real hostile program,
server, config or host, and each a regression test for what it broke (or a guard on
what held and matters).

- the check: mypy reads a config from every directory above the check's (``/tmp``
  among them) and from the user's, and a config's ``plugins`` run on the host;
  ``compile()`` of a 1 MiB program took ~600 MB and seconds of the runner's GIL;
- the policy: a denial spelt as the surface spells the server (its module's name,
  not the config's key) was ignored, and the destructive call sent;
- discovery: a search of a 12 MB query took minutes of CPU; a describe of a 10 MB
  name took seconds and echoed the name three times;
- restarts: a server that fails each start again was started again by every call of
  every run, with no pause, and ``close()`` waited on a start that hangs;
- ``serve``: a ``timeout_s`` of 10**400 and code with a lone surrogate were internal
  errors (a traceback in the log), not -32602.
"""

from __future__ import annotations

import os
import resource
import tempfile
import textwrap
import threading
import unittest
from types import SimpleNamespace
from typing import Any, List

import pytest

from mcp_client.codemode import CodeMode, Policy, _catalog, _fleet, _serve_tools
from mcp_client.codemode import _typecheck as _check

from codemode_support import RunnerCase, compile_message
from support import LONG, server

PLUGIN = """\
import os
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "PWNED"), "w") as out:
    out.write("the plugin ran on the host")
from mypy.plugin import Plugin
def plugin(version):
    return Plugin
"""


class AttackCase(RunnerCase):
    PREFIX = "codemode-attack-"
    JAIL_PROGRAM = False

    def starts(self) -> int:
        try:
            with open(self.path("starts.log")) as log:
                return len(log.read().split())
        except FileNotFoundError:
            return 0

    def plant_plugin(self, config: str) -> None:
        """A mypy config at ``config`` whose plugin writes ``PWNED`` beside it."""
        os.makedirs(os.path.dirname(config), exist_ok=True)
        with open(os.path.join(os.path.dirname(config), "plugin.py"), "w") as out:
            out.write(PLUGIN)
        with open(config, "w") as out:
            out.write("[mypy]\nplugins = %s\n" % os.path.join(os.path.dirname(config), "plugin.py"))


class TheCheck(AttackCase):
    """``check()`` runs nothing of anyone's on the host, and costs the runner nothing."""

    def setUp(self) -> None:
        super().setUp()
        if not _check.have_mypy():
            self.skipTest("mypy is the check extra")

    def test_a_mypy_config_above_the_check_directory_is_not_read(self) -> None:
        # /tmp is where the runner's directory lives, and anyone may write /tmp/mypy.ini;
        # here the temporary directory is the test's own (no other check on the machine
        # may meet this plugin).
        self.plant_plugin(self.path("mypy.ini"))
        saved = tempfile.tempdir
        tempfile.tempdir = self.dir
        self.addCleanup(setattr, tempfile, "tempdir", saved)
        code = self.open({"notes": self.notes()})
        self.assertTrue(code.cap_dir.startswith(self.dir + os.sep), code.cap_dir)
        checked = code.check("from cap.mcp import notes\nprint(notes.pid()['text'])\n")
        self.assertTrue(checked.mypy)
        self.assertTrue(checked.ok, checked.messages)
        self.assertFalse(os.path.exists(self.path("PWNED")), "mypy ran a planted plugin")

    def test_the_users_mypy_config_is_not_read(self) -> None:
        self.plant_plugin(self.path("xdg", "mypy", "config"))
        saved = os.environ.get("XDG_CONFIG_HOME")
        os.environ["XDG_CONFIG_HOME"] = self.path("xdg")
        self.addCleanup(_restore, "XDG_CONFIG_HOME", saved)
        code = self.open({"notes": self.notes()})
        checked = code.check("from cap.mcp import notes\nnotes.read_note(nme='a')\n")
        self.assertFalse(checked.ok)  # strict still: the user's config cannot loosen it
        self.assertFalse(os.path.exists(self.path("xdg", "mypy", "PWNED")))

    def test_an_inline_mypy_comment_cannot_load_a_plugin(self) -> None:
        self.plant_plugin(self.path("unused.ini"))
        code = self.open({"notes": self.notes()})
        program = "# mypy: plugins=%s\nx: int = 1\n" % self.path("plugin.py")
        code.check(program)
        self.assertFalse(os.path.exists(self.path("PWNED")))

    @pytest.mark.slow
    def test_compiling_a_huge_program_costs_the_runner_no_memory(self) -> None:
        # 1 MiB (serve's most) of one tuple: compile() takes ~600 MB building it.
        program = "x = (" + "a, " * (1024 * 1024 // 3 - 4) + ")\n"
        code = self.open({"notes": self.notes()})
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        checked = code.check(program)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB
        self.assertLess(grown, 100 * 1024, "compile() ran in the runner: %d KiB" % grown)
        self.assertIsNotNone(checked.messages)

    def test_compile_is_bounded_in_memory_and_says_so(self) -> None:
        saved = _check.COMPILE_MEMORY
        _check.COMPILE_MEMORY = 256 * 1024 * 1024
        self.addCleanup(setattr, _check, "COMPILE_MEMORY", saved)
        message = _check.compiled("x = (" + "a, " * 1_000_000 + ")\n", "program.py")
        self.assertEqual(message, "line 0: the program is too large to compile")

    def test_compile_messages_are_the_ones_compile_gives(self) -> None:
        self.assertEqual(_check.compiled("x = (\n", "program.py"), compile_message("x = (\n"))
        self.assertIsNone(_check.compiled("x = 1\n", "program.py"))
        self.assertIn("null bytes", str(_check.compiled("x = 1\0", "program.py")))
        self.assertIn("surrogates", str(_check.compiled('x = "\ud800"', "program.py")))
        self.assertIn("line 0:", str(_check.compiled("x = " + "-" * 100_000 + "1", "p.py")))


class ThePolicy(AttackCase):
    def test_a_denial_spelt_as_the_surface_spells_the_server_holds(self) -> None:
        code = self.open({"my-notes": self.notes()})
        [module] = {line.split(".")[2] for line in code.surface().splitlines()}
        self.assertNotEqual(module, "my-notes")  # my_notes_<digest>: not the key
        for denied in ("%s.delete_note" % module, "my-notes.delete_note"):
            with self.subTest(denied=denied):
                denying = self.open({"my-notes": self.notes()}, policy=Policy(deny_tools=(denied,)))
                with open(self.path("victim"), "w"):
                    pass
                result = denying.run(
                    "from cap.mcp import CallRefused, %s as notes\n"
                    "try:\n    notes.delete_note(name='victim')\n"
                    "except CallRefused as e:\n    print('refused', e)\n" % module
                )
                self.assertIn("refused my-notes.delete_note", result.stdout, result.stderr)
                self.assertTrue(os.path.exists(self.path("victim")))
                self.assertEqual([c.outcome for c in result.calls], ["refused"])

    def test_a_forged_invoke_of_a_denied_tool_by_its_wire_name_is_refused(self) -> None:
        code = self.open(
            {"notes": self.notes()},
            policy=Policy(allow="read-only", deny_tools=("notes.read_note",)),
        )
        result = code.run(
            textwrap.dedent(
                """
                from cap.internal import mcp
                for server, tool in [("notes", "read_note"), ("notes", "Read_note"),
                                     ("notes", "read_note\\u200b"), ("Notes", "read_note"),
                                     ("notes", "delete_note"), ("notes ", "pid")]:
                    try:
                        mcp.invoke(server, tool, {"name": "x"})
                    except mcp.CallFailed as e:
                        print(type(e).__name__)
                """
            )
        )
        self.assertEqual(result.stdout.split(), ["CallRefused"] + ["CallFailed"] * 3
                         + ["CallRefused", "CallFailed"], result.stderr)  # fmt: skip
        self.assertFalse(os.path.exists(self.path("calls.log")))  # nothing reached it

    def test_a_tool_listed_twice_leaves_its_server_out(self) -> None:
        # Two claims for one wire name (destructive, then read-only): the policy would
        # have to pick one; codegen refuses the listing, so there is nothing to pick.
        code = self.open(
            {"twice": server("codemode_hostile", "twice", self.dir), "notes": self.notes()},
            policy=Policy(allow="read-only"),
        )
        self.assertEqual(code.servers, ("notes",))
        self.assertIn("server twice left out: tools 'wipe' and 'wipe'", " ".join(code.left_out))


class Discovery(AttackCase):
    def test_a_huge_query_is_cut_before_it_is_scored(self) -> None:
        code = self.open({"notes": self.notes()})
        seen: List[int] = []
        real = _catalog.score

        def counting(entry: Any, query: Any) -> int:
            seen.append(len(query))
            return real(entry, query)

        _catalog.score = counting  # type: ignore[assignment]
        self.addCleanup(setattr, _catalog, "score", real)
        found = code.search("note " * 2_000_000 + " ".join("w%d" % i for i in range(100_000)))
        self.assertEqual(found.total, 6)
        self.assertTrue(seen)
        self.assertLessEqual(max(seen), _catalog.MAX_QUERY_WORDS)
        self.assertEqual(code.search("delete " * 1000).matches[0].function, "delete_note")

    def test_describing_a_huge_name_is_bounded(self) -> None:
        code = self.open({"notes": self.notes()})
        for name in ("notes." + "read_note" * 1_000_000, "x" * 10_000_000):
            answer = code.describe(name)
            self.assertLess(len(answer), 1000)
            self.assertTrue(answer.startswith("no tool "), answer[:100])
        self.assertIn("notes.read_note", code.describe("notes.read_nte"))

    def test_serves_search_text_does_not_echo_a_huge_query(self) -> None:
        code = self.open({"notes": self.notes()})
        terms = _serve_tools.Terms(code.limits, code.policy)
        [search] = [t for t in _serve_tools.tools(code, terms) if t.name == "search_tools"]
        answer = search.call({"query": "zzzz " * 1_000_000})
        self.assertLess(len(str(answer)), 2000)


class Restarts(AttackCase):
    def crash_loop(self, mode: str, **options: Any) -> CodeMode:
        return self.open(
            {"loop": server("codemode_hostile", "crash_loop", self.dir, mode)}, **options
        )

    def test_a_server_whose_starts_fail_is_not_started_again_by_every_call(self) -> None:
        saved = _fleet.RESTART_PAUSE, _fleet.MAX_RESTART_PAUSE
        _fleet.RESTART_PAUSE = _fleet.MAX_RESTART_PAUSE = 3600.0  # no timing in the count
        self.addCleanup(_restore_pause, saved)
        code = self.crash_loop("exit")
        self.assertEqual(code.run("from cap.mcp import loop\nloop.ok()\n").exit_status, 0)
        died = code.run("from cap.mcp import CallFailed, loop\ntry:\n    loop.die()\n"
                        "except CallFailed:\n    pass\n")  # fmt: skip
        self.assertEqual(died.exit_status, 0, died.stderr)
        program = (
            "from cap.mcp import CallFailed, loop\n"
            "for attempt in range(20):\n"
            "    try:\n        loop.ok()\n    except CallFailed as e:\n        pass\n"
        )
        for _ in range(5):
            code.run(program)
        # The first start, one start again that failed; then it waits (RESTART_PAUSE).
        self.assertEqual(self.starts(), 2)
        self.assertEqual(code.run(program).calls[0].outcome, "call_failed")

    def test_the_pause_grows_and_ends(self) -> None:
        self.assertEqual(_fleet.restart_pause(0), 0.0)
        pauses = [_fleet.restart_pause(failures) for failures in range(1, 12)]
        self.assertEqual(pauses, sorted(pauses))
        self.assertEqual(pauses[-1], _fleet.MAX_RESTART_PAUSE)

    def test_close_does_not_wait_for_a_start_that_hangs(self) -> None:
        code = self.crash_loop("hang")
        code.run("from cap.mcp import CallFailed, loop\nloop.ok()\ntry:\n    loop.die()\n"
                 "except CallFailed:\n    pass\n")  # fmt: skip
        running = threading.Thread(target=code.run, args=("from cap.mcp import loop\nloop.ok()\n",))
        running.start()
        self.assertTrue(_wait(lambda: self.starts() == 2))  # the start again, hanging
        closer = threading.Thread(target=code.close)
        closer.start()
        closer.join(LONG)  # the hanging handshake's own deadline is _fleet.START_TIMEOUT
        self.assertFalse(closer.is_alive(), "close() waited on a hanging start")
        running.join(LONG)
        self.assertFalse(running.is_alive())


class ServeArguments(AttackCase):
    def tool(self, name: str) -> Any:
        code = self.open({"notes": self.notes()})
        terms = _serve_tools.Terms(code.limits, code.policy)
        [found] = [t for t in _serve_tools.tools(code, terms) if t.name == name]
        if not found.context:
            return found
        context = SimpleNamespace(cancelled=threading.Event())  # never cancelled
        return SimpleNamespace(call=lambda arguments: found.call(arguments, context))

    def test_a_timeout_too_large_for_a_float_is_refused(self) -> None:
        run = self.tool("run_program")
        for timeout in (10**400, -(10**400), 10**20, 0, -1, True):
            answer = run.call({"code": "print(1)", "timeout_s": timeout})
            self.assertIsInstance(answer, _serve_tools.Refused, timeout)

    def test_code_that_is_not_utf8_is_refused_before_anything_runs(self) -> None:
        for name in ("run_program", "check_program"):
            answer = self.tool(name).call({"code": "print('\ud800')"})
            self.assertIsInstance(answer, _serve_tools.Refused, name)


def _restore_pause(saved: Any) -> None:
    _fleet.RESTART_PAUSE, _fleet.MAX_RESTART_PAUSE = saved


def _restore(key: str, value: Any) -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


def _wait(check: Any) -> bool:
    from support import wait_until

    return wait_until(check, LONG)


if __name__ == "__main__":  # pragma: no cover
    unittest.main()
