"""Issue 25: the code-mode runner against a hostile program, listing and config.

Each test is one of the red-team pass's breaks, reproduced with a real program,
server or config, and what holds now: the config hidden (1), the program's stdio
pipes of the runner's (2), its jail's limits by default (4), cleanup whatever it
left (5), what a listing may cost (6), keys that would shadow ``cap.mcp``'s names
(8), and unjailed servers that die with a SIGKILLed runner (9). The seccomp
allow list (3) is in ``test_jail.py``; the pipe's failures (7, 10) in
``test_codemode.py``'s ``Seam``; ``_cleanup`` alone in ``test_cleanup.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from typing import Any, List
from unittest import mock

import pytest
from test_codemode import TIME, CodeModeCase

from mcp_client import codegen
from mcp_client import text as text_module
from mcp_client.codemode import TAKEN_NAMES, CodeMode, Limits, RunResult, _fleet
from mcp_client.errors import JailUnavailable, TransportFailed
from mcp_client.jail import NOBODY
from mcp_client.jail import spawn as jailer

from codemode_support import RunnerCase
from support import server

NOTES_READ = "from cap.mcp import notes\nnotes.write_note(name='a', text='b')\nprint('wrote')\n"


class LibraryCase(RunnerCase):
    PREFIX = "codemode-harden-"

    def run_program(self, code: CodeMode, source: str, **options: Any) -> RunResult:
        return code.run(textwrap.dedent(source), **options)


# ----------------------------------------------------------------------------- 1, 2


class WhatTheProgramSees(CodeModeCase):
    def test_the_config_under_home_reads_empty(self) -> None:
        # Issue 25 item 1: the program read the config the runner was given, keys and all.
        home = os.path.realpath(os.path.expanduser("~"))
        if home == "/" or home.startswith("/tmp"):
            self.skipTest("a home outside /tmp is needed (the jail's /tmp is private)")
        where = tempfile.mkdtemp(prefix=".codemode-config-", dir=home)
        self.addCleanup(shutil.rmtree, where, True)
        config = os.path.join(where, "servers.json")
        with open(config, "w") as out:
            json.dump({"mcpServers": {"time": dict(TIME, env={"API_KEY": "sk-s3cret"})}}, out)
        program = self.program(
            "import os\ntry:\n    print(repr(open(%r).read()), os.path.exists(%r))\n"
            "except OSError as e:\n    print('unreachable', e.errno)\n" % (config, config)
        )
        done = self.run_command(
            COMMAND_WITH(config, program),
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        if os.geteuid() == 0:  # the program is nobody: root's home is no place it reaches
            self.assertIn(done.stdout, ("'' True\n", "unreachable 2\n", "unreachable 13\n"))
        else:
            self.assertEqual(done.stdout, "'' True\n", "the file is there, and reads empty")

    @pytest.mark.slow
    def test_stdio_of_files_is_pipes_and_nothing_leads_back(self) -> None:
        # Issue 25 items 2, 3: `< input.json >>run.log 2>>err.log`; the program reopens
        # /proc/self/fd/0, 1, 2 and truncates what it gets.
        paths = {name: self.path(name) for name in ("input.json", "run.log", "err.log")}
        for name, text in (("input.json", '{"in": 1}'), ("run.log", "earlier run\n")):
            with open(paths[name], "w") as out:
                out.write(text)
        with open(paths["err.log"], "w") as out:
            out.write("a failed server's tail, earlier\n")
        program = self.program("""
            import json, os, stat, sys
            kinds, truncated = [], []
            for fd in (0, 1, 2):
                mode = os.fstat(fd).st_mode
                kinds.append("fifo" if stat.S_ISFIFO(mode) else "other")
                try:
                    os.truncate("/proc/self/fd/%d" % fd, 0)
                    truncated.append(fd)
                except OSError:
                    pass
            print(json.dumps({"kinds": kinds, "truncated": truncated, "in": sys.stdin.read()}))
        """)
        with open(paths["input.json"], "rb") as stdin, open(paths["run.log"], "ab") as stdout:
            with open(paths["err.log"], "ab") as stderr:
                done = self.run_command(
                    COMMAND_WITH(self.config({"time": TIME}), program),
                    env=self.env,
                    cwd=self.cwd,
                    stdin=stdin,
                    stdout=stdout,
                    stderr=stderr,
                )
        self.assertEqual(done.returncode, 0)
        with open(paths["input.json"]) as stream:
            self.assertEqual(stream.read(), '{"in": 1}')
        with open(paths["run.log"]) as stream:
            log = stream.read().splitlines()
        self.assertEqual(log[0], "earlier run")
        report = json.loads(log[1])
        self.assertEqual(report, {"kinds": ["fifo"] * 3, "truncated": [], "in": '{"in": 1}'})
        with open(paths["err.log"]) as stream:
            self.assertTrue(stream.read().startswith("a failed server's tail, earlier\n"))

    @pytest.mark.slow
    def test_scratch_dir_is_the_only_host_directory_and_no_limits_is_a_flag(self) -> None:
        # By default the program writes a tmpfs of its jail's; --scratch DIR binds DIR.
        program = self.program("import os\nopen('made', 'w').write('x')\nprint(os.getcwd())\n")
        scratch = os.path.join(self.dir, "scratch")
        os.mkdir(scratch)
        if os.geteuid() == 0:  # a root runner's program is nobody: its scratch must be its
            os.chown(scratch, NOBODY, NOBODY)
        config = self.config({"time": TIME})
        for flags, cwd in (([], "/tmp/scratch"), (["--scratch", scratch], scratch)):
            argv = COMMAND_WITH(config, program)[:-1] + flags + ["--no-limits", program]
            done = self.run_command(
                argv, env=self.env, cwd=self.cwd, capture_output=True, text=True
            )
            self.assertEqual((done.returncode, done.stdout), (0, cwd + "\n"), done.stderr)
        self.assertEqual(os.listdir(scratch), ["made"])

    @pytest.mark.slow
    def test_scratch_is_checked_with_the_interpreter_shown_when_a_venv_under_tmp_runs(self) -> None:
        # The --scratch check built a jail that did not show a runner's interpreter under
        # /tmp (a venv there, as CI may make), and refused every scratch: the check's jail
        # must be the program's, as to the interpreter too.
        if not shutil.which("bwrap"):
            self.skipTest("the program's jail needs bwrap")
        venv = tempfile.mkdtemp(prefix="codemode-venv-", dir="/tmp")
        self.addCleanup(shutil.rmtree, venv, True)
        os.chmod(venv, 0o755)  # a root runner's program is nobody, who must reach it
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
        scratch = os.path.join(self.dir, "scratch")
        os.mkdir(scratch)
        if os.geteuid() == 0:
            os.chown(scratch, NOBODY, NOBODY)
        program = self.program("import os\nprint(os.getcwd())\n")
        argv = [os.path.join(venv, "bin", "python")] + COMMAND_WITH(
            self.config({"time": TIME}), program
        )[1:-1]
        done = self.run_command(
            argv + ["--scratch", scratch, program],
            env=self.env, cwd=self.cwd, capture_output=True, text=True,
        )  # fmt: skip
        self.assertEqual((done.returncode, done.stdout), (0, scratch + "\n"), done.stderr)

    def run_command(self, argv: List[str], **options: Any) -> Any:
        return subprocess.run(argv, timeout=240, check=False, **options)


def COMMAND_WITH(config: str, program: str) -> List[str]:  # noqa: N802 -- a constant's shape
    return [sys.executable, "-m", "mcp_client", "codemode", "--config", config, program]


# ----------------------------------------------------------------------------- 4


class JailLimitsByDefault(LibraryCase):
    """Each of the issue's four, against the default jail: bounded, and said."""

    def test_a_fork_bomb_stops_at_max_tasks(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(max_tasks=16))
        result = self.run_program(
            code,
            """
            import os, time
            started = 0
            try:
                while True:
                    if os.fork() == 0:
                        time.sleep(60)
                        os._exit(0)
                    started += 1
            except OSError as e:
                print("stopped", started, e.strerror)
            """,
        )
        self.assertEqual(result.exit_status, 0, result.stderr)
        words = result.stdout.split()
        self.assertEqual(
            (words[0], " ".join(words[2:])), ("stopped", "Resource temporarily unavailable")
        )
        self.assertLess(int(words[1]), 16)

    def test_4_gib_to_scratch_stops_at_scratch_bytes_and_no_host_disk(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(scratch_bytes=32 << 20))
        result = self.run_program(
            code,
            """
            import errno, os
            print(os.getcwd())
            try:
                with open("big", "wb") as out:
                    for _ in range(4096):  # 4 GiB, a MiB at a time
                        out.write(b"x" * (1 << 20))
            except OSError as e:
                print(errno.errorcode[e.errno], os.path.getsize("big") >> 20)
            """,
        )
        self.assertEqual(result.exit_status, 0, result.stderr)
        cwd, outcome = result.stdout.splitlines()
        self.assertEqual(cwd, "/tmp/scratch")
        self.assertEqual(outcome.split()[0], "ENOSPC")
        self.assertLessEqual(int(outcome.split()[1]), 32)
        self.assertFalse(os.path.exists("/tmp/scratch/big"), "no host directory backs it")

    def test_3_gb_resident_is_stopped_and_said(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(memory_bytes=256 << 20))
        result = self.run_program(
            code,
            """
            held = []
            for _ in range(300):  # 3 GB, touched
                held.append(bytearray(10**7))
            print("held it all")
            """,
        )
        self.assertNotEqual(result.exit_status, 0)
        self.assertNotIn("held it all", result.stdout)
        said = result.stderr + (result.error or "")
        self.assertTrue("MemoryError" in said or "Limits.memory_bytes" in said, said)

    @pytest.mark.slow
    def test_a_cpu_spinner_is_killed_at_cpu_seconds_not_the_wall_clock(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(cpu_seconds=1, wall_clock=120))
        result = self.run_program(code, "while True:\n    pass\n")
        self.assertEqual(result.exit_status, 128 + signal.SIGKILL, result.stderr)
        self.assertIn("Limits.cpu_seconds", result.error or "")

    def test_a_machine_without_a_pids_cgroup_is_refused_naming_it(self) -> None:
        code = self.open({"notes": self.notes()})
        missing = TransportFailed("no pids cgroup controller found for this process")
        with mock.patch.object(jailer, "_pids_parent", side_effect=missing):
            with self.assertRaisesRegex(JailUnavailable, "pids cgroup"):
                code.run(NOTES_READ)

    def test_no_limits_is_the_explicit_way_out(self) -> None:
        code = self.open({"notes": self.notes()}, limits=Limits(enforced=False))
        missing = TransportFailed("no pids cgroup controller found for this process")
        with mock.patch.object(jailer, "_pids_parent", side_effect=missing):
            result = code.run("import os\nprint(os.getcwd())\n")
        self.assertEqual((result.exit_status, result.stdout), (0, "/tmp/scratch\n"), result.stderr)


# ----------------------------------------------------------------------------- 5


@pytest.mark.slow
class CleanupWhateverIsLeft(LibraryCase):
    def test_1500_nested_directories_and_locked_modes_leave_nothing_and_status_0(self) -> None:
        # Issue 25 item 8 of the table: RecursionError, exit 1, /tmp/codemode-* forever.
        code = self.open({"notes": self.notes()}, jail_program=False)
        result = self.run_program(
            code,
            """
            import os
            top = os.open(".", os.O_RDONLY)
            for _ in range(1500):
                os.mkdir("d", dir_fd=top)
                inner = os.open("d", os.O_RDONLY, dir_fd=top)
                os.close(top)
                top = inner
            for n in range(2000):
                os.close(os.open(str(n), os.O_CREAT | os.O_WRONLY, 0, dir_fd=top))
            os.chmod(".", 0o500)
            print("left it")
            """,
        )
        self.assertEqual((result.exit_status, result.stdout), (0, "left it\n"), result.stderr)
        self.assertNotIn("cleanup", result.stderr)
        root = os.path.dirname(code.cap_dir)
        self.assertEqual(sorted(os.listdir(root)), ["lib", "owner.lock"],
                         "the run's directory is gone")  # fmt: skip


# ----------------------------------------------------------------------------- 6


class WhatAListingMayCost(LibraryCase):
    def test_the_hostile_listing_is_generated_reading_a_window_and_the_rest_start(self) -> None:
        seen = [0]
        real = text_module._clean_char
        lock = threading.Lock()

        def counted(match: Any) -> str:
            with lock:
                seen[0] += 1
            return real(match)

        codegen._sanitized_note.cache_clear()
        with mock.patch.object(text_module, "_clean_char", counted):
            code = self.open({"costly": server("costly_listing"), "notes": self.notes()})
        self.assertEqual(code.servers, ("costly", "notes"))
        # 765 sites of a 200k-character text: 153 million characters, once; now a window
        bound = 20 * text_module.scan_window(codegen.MAX_DOC_DESCRIPTION_CHARS)
        self.assertLess(seen[0], bound)
        result = code.run(NOTES_READ)
        self.assertEqual(result.stdout, "wrote\n", result.stderr)

    def test_a_generation_past_its_deadline_is_left_out_and_the_others_start(self) -> None:
        real = codegen.generate
        finished = threading.Event()

        def slow_for_one(name: str, tools: Any, *args: Any, **kwargs: Any) -> Any:
            if name == "slow":
                finished.wait(5.0)  # as a generation that runs on: released below
            return real(name, tools, *args, **kwargs)

        with mock.patch.object(_fleet, "GENERATE_TIMEOUT", 0.3):
            with mock.patch.object(codegen, "generate", slow_for_one):
                code = self.open({"slow": self.notes(), "notes": self.notes()})
                opened_before_it_ended = not finished.is_set()
                finished.set()
        self.assertTrue(opened_before_it_ended, "the start waited for the generation")
        self.assertEqual(code.servers, ("notes",))
        self.assertEqual(len(code.left_out), 1)
        self.assertIn(
            "server slow left out: its module was not generated within 0.3 s", code.left_out[0]
        )


# ----------------------------------------------------------------------------- 8


class KeysThatWouldShadowCapMcp(LibraryCase):
    def test_tool_failed_and_call_failed_keys_are_refused_with_one_line_each(self) -> None:
        code = self.open(
            {"ToolFailed": self.notes(), "CallFailed": self.notes(), "notes": self.notes()}
        )
        self.assertEqual(code.servers, ("notes",))
        self.assertEqual(
            [line.split(":")[0] for line in code.left_out],
            ["server ToolFailed left out", "server CallFailed left out"],
        )
        self.assertTrue(all("rename it in the config" in line for line in code.left_out))
        result = self.run_program(
            code,
            """
            from cap.mcp import CallFailed, ToolFailed, notes
            try:
                raise ToolFailed("x")
            except ToolFailed:
                print("caught, a class")
            print(issubclass(CallFailed, Exception))
            """,
        )
        self.assertEqual(result.stdout, "caught, a class\nTrue\n", result.stderr)

    def test_every_name_cap_mcp_binds_is_taken(self) -> None:
        from mcp_client.codemode._program import CAP_MCP

        exported = json.loads(CAP_MCP.split("__all__ = ", 1)[1].strip())
        self.assertLessEqual(set(exported), TAKEN_NAMES)
        self.assertIn("ResultMismatch", TAKEN_NAMES)
        self.assertIn("internal", TAKEN_NAMES)


# ----------------------------------------------------------------------------- 9


class UnjailedServersDieWithTheRunner(CodeModeCase):
    def test_a_sigkilled_runner_leaves_no_server_that_ignores_eof(self) -> None:
        # It exits at its stdin's EOF, but its grandchild sleeps on in its group holding
        # the pipes, as a server left behind by an npx/uvx launcher does.
        forks = {"command": sys.executable, "args": list(server("fork_grandchild").argv()[1:])}
        program = self.program("""
            import sys
            from cap.mcp import time
            time.get_current_time(timezone="UTC")
            print("ready", flush=True)
            sys.stdin.readline()
        """)
        runner = self.start_runner({"time": TIME, "forks": forks}, "--no-jail", program)
        groups = self.ready(runner)
        self.assertGreaterEqual(len(groups), 3, "two servers' groups and the program's")
        runner.kill()  # no finally, no atexit: only the kernel closes the lifelines
        runner.communicate(timeout=60)
        self.assertAllGone(groups)
