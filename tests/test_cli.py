"""``python -m mcp_client``, run as a user runs it: a subprocess, its output and exit status.

Every failure path has its own exit status and prints exactly one line on
stderr, without a traceback. Where it matters, the server is started through a
small wrapper that first forks a sleeper into the server's process group -- a
descendant that ignores EOF, as an ``npx``-launched server does, so only the
command's shutdown can end it -- and writes both pids, so the test can check
that nothing of the server outlived the command.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
from typing import Dict, List, Optional
from unittest import mock

import pytest

from mcp_client import Client, cli
from mcp_client.cli import demo_server
from mcp_client.errors import RetirementTimedOut
from mcp_client.transport import Retirement

import hostile
from servers import alive
from support import LONG, SHORT, jail_read_flags, server_argv, wait_until

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPLAY = os.path.join(REPO, "tools", "replay.py")
DEMO_TOOLS = [tool.name for tool in demo_server.TOOLS]

# Forks a sleeper (stdio on /dev/null, so a leaked one cannot hold the test's pipes),
# writes "<own pid> <sleeper pid>" to argv[1], then becomes the program in argv[2:].
PID_WRAPPER = """
import os, sys, time
sleeper = os.fork()
if sleeper == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    time.sleep(300)
    os._exit(0)
with open(sys.argv[1] + ".tmp", "w") as pids:
    pids.write("%d %d" % (os.getpid(), sleeper))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
os.execv(sys.executable, [sys.executable] + sys.argv[2:])
"""


def environment(**extra: str) -> Dict[str, str]:
    env = dict(os.environ, PYTHONPATH=REPO)
    env.update(extra)
    return env


class CliCase(unittest.TestCase):
    def setUp(self) -> None:
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.dir = directory.name

    def cli(
        self, *args: str, env: Optional[Dict[str, str]] = None
    ) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(
            [sys.executable, "-m", "mcp_client", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env or environment(),
            cwd=self.dir,
        )

    def wrapped(self, behaviour: str, *args: str) -> List[str]:
        """A scripted server started through the pid wrapper; see :meth:`assert_server_gone`."""
        self.pidfile = os.path.join(self.dir, "server.pid")
        return [
            "--",
            sys.executable,
            "-c",
            PID_WRAPPER,
            self.pidfile,
            *server_argv(behaviour, *args)[1:],
        ]

    def assert_server_gone(self) -> None:
        with open(self.pidfile) as stream:
            pids = [int(pid) for pid in stream.read().split()]
        self.assertEqual(len(pids), 2)
        wait_until(lambda: not any(alive(pid) for pid in pids))  # SIGKILL is not instant
        self.assertEqual([pid for pid in pids if alive(pid)], [], "outlived the command")

    def assert_failed(self, done: "subprocess.CompletedProcess[str]", what: str) -> str:
        """Exit status of ``what``, one stderr line naming it, no traceback; the line."""
        self.assertEqual(done.returncode, cli.EXIT_CODES[what], done.stderr)
        lines = done.stderr.splitlines()
        self.assertEqual(len(lines), 1, done.stderr)
        self.assertTrue(lines[0].startswith("mcp_client: %s failed: " % what), lines[0])
        self.assertNotIn("Traceback", done.stderr)
        return lines[0]


class DemoServer(CliCase):
    def test_the_report(self) -> None:
        done = self.cli()
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, "")
        lines = done.stdout.splitlines()
        self.assertEqual(lines[0], "server    mcp-client-demo 1.0.0")
        self.assertEqual(lines[1], "protocol  2025-06-18")
        self.assertIn("demo_server.py", lines[2])
        self.assertIn("5 tools", lines)
        listed = [line.split()[0] for line in lines[lines.index("5 tools") + 1 :][:5]]
        self.assertEqual(listed, DEMO_TOOLS)
        self.assertIn("  add           Add: Add two integers.", lines)
        surface = [line for line in lines if line.startswith("  cap.mcp.mcp_client_demo.")]
        self.assertEqual(len(surface), 5)
        self.assertIn(
            'add(a: int, b: int) -> AddResult{"sum": int}  # [server says: title "Add"; '
            'read-only, idempotent] Add two integers.',
            surface[0],
        )

    def test_source_prints_a_module_that_parses(self) -> None:
        done = self.cli("--source")
        self.assertEqual(done.returncode, 0, done.stderr)
        head, _, source = done.stdout.partition("\nsource of cap.mcp.mcp_client_demo")
        self.assertIn("surface of", head)
        module = ast.parse(source.split("\n", 1)[1])
        functions = [node.name for node in module.body if isinstance(node, ast.FunctionDef)]
        self.assertEqual(len(functions), 5)
        self.assertIn(
            'return _typing.cast(ToolOutput, internal.invoke(\n'
            '        "mcp-client-demo", "reverse-text", arguments))',
            source,
        )

    def test_call_prints_the_outcome_alone(self) -> None:
        done = self.cli("--call", "add", '{"a": 2, "b": 3}')
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            done.stdout.splitlines(),
            ["call add: isError=false", "  text: 5", '  structuredContent: {"sum": 5}'],
        )

    def test_a_tool_error_is_a_result(self) -> None:
        done = self.cli("--call", "divide", '{"a": 1, "b": 0}')
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("call divide: isError=true\n  text: cannot divide 1 by zero\n", done.stdout)

    def test_json(self) -> None:
        done = self.cli("--json", "--source", "--call", "join_words", '{"words": ["a", "b"]}')
        self.assertEqual(done.returncode, 0, done.stderr)
        report = json.loads(done.stdout)
        self.assertIs(report["ok"], True)
        self.assertEqual(report["server"]["name"], "mcp-client-demo")
        self.assertEqual(report["server"]["version"], "1.0.0")
        self.assertEqual(report["server"]["protocolVersion"], "2025-06-18")
        self.assertEqual([tool["name"] for tool in report["tools"]], DEMO_TOOLS)
        self.assertEqual(report["tools"][0]["inputSchema"]["required"], ["a", "b"])
        self.assertEqual(report["module"], "cap.mcp.mcp_client_demo")  # "-" is "_" (issue 24)
        self.assertEqual(len(report["surface"].splitlines()), 5)
        self.assertIn("def join_words(", report["source"])
        self.assertEqual(
            report["call"],
            {
                "name": "join_words",
                "arguments": {"words": ["a", "b"]},
                "isError": False,
                "content": [{"type": "text", "text": "a b"}],
                "structuredContent": {"count": 2},
            },
        )
        self.assertEqual(report["retirement"]["evidence"], "Exited")
        self.assertNotIn("error", report)

    def test_server_name_names_the_module(self) -> None:
        done = self.cli("--json", "--server-name", "demo")
        report = json.loads(done.stdout)
        self.assertEqual(report["module"], "cap.mcp.demo")
        self.assertTrue(report["surface"].startswith("cap.mcp.demo."))


class ExitCodes(CliCase):
    def test_spawn(self) -> None:
        done = self.cli("--", os.path.join(self.dir, "no-such-server"))
        line = self.assert_failed(done, "spawn")
        self.assertIn("TransportFailed: cannot start", line)
        self.assertEqual(done.stdout, "")

    def test_spawn_in_a_missing_directory(self) -> None:
        self.assert_failed(self.cli("--cwd", os.path.join(self.dir, "absent")), "spawn")

    def test_handshake(self) -> None:
        done = self.cli(*self.wrapped("handshake_error"))
        line = self.assert_failed(done, "handshake")
        self.assertIn("server error -32603: initialization refused", line)
        self.assert_server_gone()

    def test_a_server_that_exits_at_once_fails_the_handshake(self) -> None:
        self.assert_failed(self.cli("--", *server_argv("exit_immediately")), "handshake")

    def test_version(self) -> None:
        done = self.cli("--", *server_argv("wrong_version"))
        self.assertIn("'1999-01-01'", self.assert_failed(done, "version"))

    def test_listing(self) -> None:
        done = self.cli(*self.wrapped("lying_tools"))
        self.assertIn("tools[1].inputSchema is missing", self.assert_failed(done, "listing"))
        self.assertTrue(done.stdout.startswith("server    scripted 1.0\n"), "progress so far")
        self.assert_server_gone()

    def test_generation(self) -> None:
        done = self.cli(*self.wrapped("good", "--tools", "300"))
        line = self.assert_failed(done, "generation")
        self.assertIn("TooManyTools: 300 tools listed; at most 256 are generated", line)
        self.assertIn("\n300 tools\n", done.stdout)
        self.assert_server_gone()

    def test_call_of_an_unknown_tool(self) -> None:
        done = self.cli("--call", "no_such_tool", "{}")
        line = self.assert_failed(done, "call")
        self.assertIn("UnknownTool: no tool no_such_tool, so nothing was sent", line)

    def test_call_answered_with_invalid_utf8(self) -> None:
        # --strict: by default the CLI skips a line that is not UTF-8 as noise (see test_noise)
        done = self.cli("--strict", "--call", "echo", "{}", *self.wrapped("invalid_utf8"))
        self.assertIn("ClientBroken: server sent an invalid line", self.assert_failed(done, "call"))
        self.assert_server_gone()

    def test_call_timeout(self) -> None:
        # --timeout bounds the handshake and the listing too, and the server's own
        # start (an interpreter and its imports) runs inside the handshake's: on a
        # loaded machine SHORT can run out there, which says nothing of the call.
        # Such a run is tried again with four times the budget (up to LONG); any
        # other outcome is judged as it comes.
        budget = SHORT
        while True:
            argv = server_argv("never_answer")
            done = self.cli("--timeout", repr(budget), "--call", "echo", "{}", "--", *argv)
            early = done.returncode in (cli.EXIT_CODES["handshake"], cli.EXIT_CODES["listing"])
            if budget >= LONG or not (early and "got no answer within" in done.stderr):
                break
            budget *= 4
        self.assertIn(
            "CallTimedOut: tools/call got no answer within %.3gs" % budget,
            self.assert_failed(done, "call"),
        )

    def test_json_reports_a_failure_too(self) -> None:
        done = self.cli("--json", "--", *server_argv("handshake_error"))
        self.assert_failed(done, "handshake")
        report = json.loads(done.stdout)
        self.assertIs(report["ok"], False)
        self.assertEqual(report["error"]["what"], "handshake")
        self.assertEqual(report["error"]["exit"], 4)
        self.assertEqual(report["error"]["type"], "HandshakeFailed")
        self.assertEqual(report["retirement"]["evidence"], "Exited")
        self.assertNotIn("tools", report)

    @pytest.mark.slow
    def test_usage(self) -> None:
        capture = os.path.join(self.dir, "absent", "wire.jsonl")
        cases = {
            ("--call", "add", "{not json"): "the arguments are not JSON",
            ("--call", "add", "[1, 2]"): "the arguments must be a JSON object",
            ("--env", "=value"): "--env needs KEY=VALUE or KEY",
            ("--env", "MCP_CLI_TEST_UNSET"): "--env MCP_CLI_TEST_UNSET: MCP_CLI_TEST_UNSET is "
            "not set here",
            ("--timeout", "-1"): "must be a positive number of seconds",
            ("--no-such-option",): "unrecognized arguments",
            ("--",): "no COMMAND after --",
            ("stray",): "unrecognized arguments: stray",
            ("--capture", capture): "--capture: cannot open",
        }
        for args, message in cases.items():
            with self.subTest(args=args):
                done = self.cli(*args)
                self.assertIn(message, self.assert_failed(done, "usage"))
                self.assertEqual(done.stdout, "")

    def test_a_link_at_the_capture_path_is_refused(self) -> None:
        target = os.path.join(self.dir, "crontab")
        with open(target, "w") as planted:
            planted.write("untouched\n")
        link = os.path.join(self.dir, "wire.jsonl")
        os.symlink(target, link)
        done = self.cli("--capture", link)
        self.assertIn(
            "--capture: refusing to write the capture log to %r: it is a symbolic link" % link,
            self.assert_failed(done, "usage"),
        )
        with open(target) as planted:
            self.assertEqual(planted.read(), "untouched\n")


class UnconfirmedShutdown(unittest.TestCase):
    """Exit status 9, in-process (``cli.run``): a shutdown that cannot be confirmed."""

    def run_with_failing_shutdown(self, *args: str) -> "tuple[int, str]":
        real = Client.shutdown

        def unconfirmed(client: Client, timeout: Optional[float] = None) -> Retirement:
            real(client, timeout)  # the server is really gone: only the verdict is faked
            raise RetirementTimedOut("pretend the server was not reaped in time")

        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(Client, "shutdown", unconfirmed):
            code = cli.run(cli.parse_arguments(list(args)), out, err)
        return code, err.getvalue()

    def test_after_success(self) -> None:
        code, err = self.run_with_failing_shutdown()
        self.assertEqual(code, cli.EXIT_CODES["shutdown"])
        self.assertEqual(
            err,
            "mcp_client: shutdown failed: RetirementTimedOut: pretend the "
            "server was not reaped in time\n",
        )

    def test_after_a_failure_it_still_wins_and_names_it(self) -> None:
        code, err = self.run_with_failing_shutdown("--call", "no_such_tool", "{}")
        self.assertEqual(code, cli.EXIT_CODES["shutdown"])
        self.assertRegex(
            err,
            r"\Amcp_client: shutdown failed: RetirementTimedOut: pretend .* "
            r"\(after: call failed: no tool no_such_tool, .*\)\n\Z",
        )


class Options(CliCase):
    def test_env_and_cwd_reach_the_server_and_nothing_else_does(self) -> None:
        check = (
            "import os, sys; "
            "assert os.environ['GREETING'] == 'hello=world', os.environ; "
            "assert 'MCP_CLI_TEST_SECRET' not in os.environ; "
            "assert os.path.samefile(os.getcwd(), sys.argv[1]); "
            "os.execv(sys.executable, [sys.executable] + sys.argv[2:])"
        )
        cwd = os.path.join(self.dir, "server-home")
        os.mkdir(cwd)
        done = self.cli(
            "--env",
            "GREETING=hello=world",
            "--cwd",
            cwd,
            "--",
            sys.executable,
            "-c",
            check,
            cwd,
            *server_argv("good")[1:],
            env=environment(MCP_CLI_TEST_SECRET="do not leak"),
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("server    scripted 1.0\n", done.stdout)

    def test_server_stderr_is_captured_not_mixed_in(self) -> None:
        chatty = self.cli("--", *server_argv("stderr_noise", "4096"))
        self.assertEqual(chatty.returncode, 0, chatty.stderr)
        self.assertEqual(chatty.stderr, "")  # kept for a failure; a success prints none of it
        quiet = self.cli("--quiet-server", "--", *server_argv("stderr_noise", "4096"))
        self.assertEqual(quiet.returncode, 0, quiet.stderr)
        self.assertEqual(quiet.stderr, "")

    def test_the_tail_is_printed_under_a_failure_unless_quiet(self) -> None:
        dying = ["--", *server_argv("diagnostics", "traceback_before_init")]
        loud = self.cli(*dying)
        self.assertEqual(loud.returncode, cli.EXIT_CODES["handshake"], loud.stderr)
        lines = loud.stderr.splitlines()
        self.assertTrue(lines[0].startswith("mcp_client: handshake failed: HandshakeFailed"))
        # How many earlier lines read as an error depends on how long this
        # Python's traceback is (3.13 prints more of it); the first is its head.
        self.assertRegex(
            lines[1], r"^mcp_client: server stderr, \d+ earlier lines? that reads? as an error:$"
        )
        self.assertEqual(lines[2], "  | Traceback (most recent call last):")
        # (on 3.13 a frame line of traceback_before_init reads as one too: its name)
        last = [
            i for i, line in enumerate(lines) if line.startswith("mcp_client: server stderr, last ")
        ]
        self.assertEqual(len(last), 1, lines)
        self.assertGreaterEqual(last[0], 3, lines)
        self.assertNotIn("LookupError", lines[0])  # the first line stays one line
        self.assertEqual(lines[-1], "  | LookupError: no such profile: 'prod'")
        quiet = self.cli("--quiet-server", *dying)
        self.assertEqual(quiet.returncode, cli.EXIT_CODES["handshake"], quiet.stderr)
        self.assertEqual(len(quiet.stderr.splitlines()), 1, quiet.stderr)

    def test_a_hostile_server_prints_no_control_character(self) -> None:
        # Issue 17 item 8: its name, version, description, stderr, results, errors.
        command = ["--", *server_argv("hostile_text")]
        for call in ("echo", "other"):
            with self.subTest(call=call):
                done = self.cli("--surface", "--call", call, "{}", *command)
                self.assertEqual(
                    done.returncode, 0 if call == "echo" else cli.EXIT_CODES["call"], done.stderr
                )
                self.assertIn("name", done.stdout)
                # "other" is no tool of the server's: refused before anything is sent,
                # naming the server's tools (their names sanitized too).
                self.assertIn(
                    "result" if call == "echo" else "no tool other", done.stdout + done.stderr
                )
                self.assertEqual(
                    hostile.unsafe_characters(done.stdout + done.stderr, lines=True), []
                )

    def test_a_hostile_name_cannot_drive_the_terminal(self) -> None:
        self.assertEqual(cli._name("evil\x1b[2J\u202e"), "evil\\x1b[2J\\u202e")
        self.assertEqual(cli._terminal("line one\nred \x1b[31mtext"), "line one\nred \\x1b[31mtext")
        self.assertEqual(cli._name("reverse-text"), "reverse-text")


class Capture(CliCase):
    def test_a_capture_replays(self) -> None:
        log = os.path.join(self.dir, "wire.jsonl")
        done = self.cli("--capture", log, "--call", "add", '{"a": 2, "b": 3}')
        self.assertEqual(done.returncode, 0, done.stderr)
        replayed = subprocess.run(
            [sys.executable, REPLAY, log],
            capture_output=True,
            text=True,
            timeout=60,
            env=environment(),
        )
        self.assertEqual(replayed.returncode, 0, replayed.stdout + replayed.stderr)
        self.assertEqual(
            replayed.stdout.splitlines()[:3],
            [
                "initialize ok 2025-06-18 (mcp-client-demo 1.0.0)",
                "tools/list ok 5 tools",
                "tools/call add ok isError=false",
            ],
        )

    def test_the_cli_pointed_at_a_served_capture_prints_the_same(self) -> None:
        log = os.path.join(self.dir, "wire.jsonl")
        live = self.cli("--capture", log, "--call", "add", '{"a": 2, "b": 3}')
        self.assertEqual(live.returncode, 0, live.stderr)
        served = self.cli(
            "--call", "add", '{"a": 2, "b": 3}', "--", sys.executable, REPLAY, "--serve", log
        )
        self.assertEqual(served.returncode, 0, served.stderr)

        def without_command(text: str) -> List[str]:
            return [line for line in text.splitlines() if not line.startswith("command ")]

        self.assertEqual(without_command(served.stdout), without_command(live.stdout))

    def test_a_failed_session_is_captured_to_its_death(self) -> None:
        log = os.path.join(self.dir, "wire.jsonl")
        done = self.cli(
            "--strict", "--capture", log, "--call", "echo", "{}", "--", *server_argv("invalid_utf8")
        )
        self.assert_failed(done, "call")
        replayed = subprocess.run(
            [sys.executable, REPLAY, log],
            capture_output=True,
            text=True,
            timeout=60,
            env=environment(),
        )
        self.assertEqual(replayed.returncode, 0, replayed.stdout)
        self.assertIn(
            "tools/call echo failed ClientBroken: server sent an invalid line", replayed.stdout
        )


class FullDisk(CliCase):
    """Issue 17 item 10: a capture on a disk that is full, or fills, against a
    real tmpfs this test mounts (it needs root; without a mount it fails, loudly)."""

    def mount(self, size: str = "64k", inodes: Optional[int] = None, free: int = 0) -> str:
        """A fresh tmpfs of ``size``, filled until ``free`` bytes are left."""
        where = os.path.join(self.dir, "disk")
        os.mkdir(where)
        options = "size=%s" % size + ("" if inodes is None else ",nr_inodes=%d" % inodes)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", where], capture_output=True, text=True
        )
        if done.returncode != 0:
            self.fail("these tests need a tmpfs they can mount (root): %s" % done.stderr.strip())
        self.addCleanup(subprocess.run, ["umount", "-l", where], check=True)
        if inodes is None:
            self.fill(where, free)
        return where

    def fill(self, where: str, free: int) -> None:
        with open(os.path.join(where, "filler"), "wb") as filler:
            try:
                while os.statvfs(where).f_bavail * os.statvfs(where).f_frsize > free:
                    filler.write(b"\0" * 4096)
                    filler.flush()
            except OSError:  # already full
                pass
        room = os.statvfs(where)
        self.assertEqual(room.f_bavail * room.f_frsize, free)

    def test_a_full_disk_is_one_line_and_the_capture_exit_status(self) -> None:
        log = os.path.join(self.mount(), "wire.jsonl")
        line = self.assert_failed(self.cli("--capture", log), "capture")
        self.assertIn("No space left on device", line)
        self.assertIn("is incomplete", line)

    def test_no_room_for_the_file_itself_is_the_capture_exit_status_too(self) -> None:
        log = os.path.join(self.mount(inodes=1), "wire.jsonl")
        line = self.assert_failed(self.cli("--capture", log), "capture")
        self.assertIn("cannot create %s: No space left on device" % log, line)

    def test_a_disk_that_fills_during_the_session_says_the_capture_is_incomplete(self) -> None:
        log = os.path.join(self.mount(free=4096), "wire.jsonl")
        done = self.cli(
            "--capture",
            log,
            "--call",
            "echo",
            json.dumps({"message": "x" * 20000}),
            "--",
            *server_argv("good"),
        )
        self.assertIn("x" * 100, done.stdout)  # the session itself succeeded
        line = self.assert_failed(done, "capture")
        self.assertRegex(
            line,
            r"the log .* is incomplete: \d+ entries not recorded: OSError: "
            r"\[Errno 28\] No space left on device",
        )
        self.assertGreater(os.path.getsize(log), 0, "nothing was written before it filled")

    def test_dev_full_opens_and_every_write_fails(self) -> None:
        done = self.cli("--json", "--capture", "/dev/full")
        self.assertEqual(done.returncode, cli.EXIT_CODES["capture"], done.stderr)
        report = json.loads(done.stdout)
        self.assertEqual(report["error"]["what"], "capture")
        self.assertEqual(report["capture"]["complete"], False)
        self.assertIn("No space left on device", report["capture"]["incomplete"])
        self.assertEqual(len(report["tools"]), len(DEMO_TOOLS))  # the rest of the run was whole

    def test_after_a_failure_of_its_own_that_status_stays_and_a_line_warns(self) -> None:
        done = self.cli("--capture", "/dev/full", "--call", "no_such_tool", "{}")
        self.assertEqual(done.returncode, cli.EXIT_CODES["call"], done.stderr)
        lines = done.stderr.splitlines()
        self.assertEqual(len(lines), 2, done.stderr)
        self.assertTrue(lines[0].startswith("mcp_client: call failed: "), lines[0])
        self.assertRegex(
            lines[1],
            r"^mcp_client: warning: the capture log /dev/full is "
            r"incomplete: \d+ entries not recorded: OSError",
        )

    def test_a_complete_capture_says_so_in_json(self) -> None:
        log = os.path.join(self.dir, "wire.jsonl")
        done = self.cli("--json", "--capture", log)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            json.loads(done.stdout)["capture"], {"file": log, "complete": True, "incomplete": None}
        )


class Interrupts(CliCase):
    def interrupt(self, signum: int) -> None:
        args = [
            "--timeout",
            "30",
            "--call",
            "echo",
            "{}",
            "--surface",
            *self.wrapped("never_answer"),
        ]
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_client", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
            cwd=self.dir,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:  # the report is printed as it happens
                if line.startswith("surface of "):
                    break
            process.send_signal(signum)
            stdout, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        self.assertEqual(process.returncode, 128 + signum, stderr)
        self.assertEqual(stderr, "mcp_client: interrupted; the server was shut down\n")
        self.assert_server_gone()

    def test_closed_stdout(self) -> None:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_client", *self.wrapped("good")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment(),
            cwd=self.dir,
        )
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # before the first line: that write must fail
        try:
            stderr = process.stderr.read()
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            process.stderr.close()
        self.assertEqual(process.returncode, cli.EXIT_CODES["output"])
        self.assertEqual(stderr, b"")
        self.assert_server_gone()

    def test_ctrl_c(self) -> None:
        self.interrupt(signal.SIGINT)

    def test_sigterm(self) -> None:
        self.interrupt(signal.SIGTERM)


if __name__ == "__main__":
    unittest.main()


# A server that starts only once its partner has started too: each writes its own
# file, then waits for the other's. Started one after another, the first would wait
# for ever (up to its patience); started at once, both serve.
RENDEZVOUS = """
import os, sys, time
mine, theirs, patience = sys.argv[1], sys.argv[2], float(sys.argv[3])
open(mine, "w").close()
deadline = time.monotonic() + patience
while not os.path.exists(theirs):
    if time.monotonic() > deadline:
        sys.exit("ERROR: my partner never started")
    time.sleep(0.01)
os.execv(sys.executable, [sys.executable] + sys.argv[4:])
"""


class ConfigFile(CliCase):
    """``--config FILE [--server NAME]`` against the demo server and mcp-server-time."""

    def write_config(self, entries: Dict[str, object], key: str = "mcpServers") -> str:
        path = os.path.join(self.dir, "servers.json")
        with open(path, "w") as stream:
            json.dump({key: entries}, stream)
        return path

    def demo(self, **extra: object) -> Dict[str, object]:
        return dict(
            {
                "command": sys.executable,
                "args": ["-m", "mcp_client.demo_server"],
                "env": {"PYTHONPATH": "${PYTHONPATH}"},
            },
            **extra,
        )

    def time_server(self) -> Dict[str, object]:
        return {
            "type": "stdio",
            "command": sys.executable,
            "args": ["-m", "mcp_server_time", "--local-timezone", "${MCP_TEST_TZ:-UTC}"],
        }

    def setUp(self) -> None:
        super().setUp()
        if sys.version_info >= (3, 10) and importlib.util.find_spec("mcp_server_time") is None:
            raise AssertionError("mcp-server-time is not installed; the test extra installs it")

    @pytest.mark.slow
    @unittest.skipIf(sys.version_info < (3, 10), "mcp-server-time needs Python >= 3.10")
    def test_every_server_of_the_file_one_after_another(self) -> None:
        path = self.write_config(
            {
                "demo": self.demo(),
                "time": self.time_server(),
                "web": {"type": "http", "url": "https://example.invalid/mcp"},
            }
        )
        done = self.cli("--config", path)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            done.stderr,
            'mcp_client: warning: %s: server "web" left out: "type" is '
            'http, and only stdio servers are started\n' % path,
        )
        demo, time_report = done.stdout.split("\n\nconfig    time\n")
        self.assertTrue(demo.startswith("config    demo\nserver    mcp-client-demo 1.0.0\n"))
        self.assertIn("surface of cap.mcp.demo\n", demo)
        self.assertTrue(time_report.startswith("server    mcp-time "), time_report)
        self.assertIn("--local-timezone UTC", time_report)  # the default of ${MCP_TEST_TZ:-UTC}
        self.assertIn("  cap.mcp.time.convert_time(", time_report)

    @unittest.skipIf(sys.version_info < (3, 10), "mcp-server-time needs Python >= 3.10")
    def test_one_server_with_a_call_by_its_python_name(self) -> None:
        path = self.write_config({"demo": self.demo(), "time": self.time_server()}, "servers")
        done = self.cli(
            "--config",
            path,
            "--server",
            "time",
            "--call",
            "cap.mcp.time.convert_time",
            '{"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}',
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(done.stdout.startswith("call convert_time: isError=false\n"), done.stdout)
        self.assertIn('"datetime": "', done.stdout)
        self.assertIn("T21:00:00+09:00", done.stdout)
        self.assertNotIn("demo", done.stdout)

    def test_the_servers_start_at_once(self) -> None:
        a, b = os.path.join(self.dir, "a"), os.path.join(self.dir, "b")

        def entry(mine: str, theirs: str) -> Dict[str, object]:
            return self.demo(
                args=["-c", RENDEZVOUS, mine, theirs, str(LONG), "-m", "mcp_client.demo_server"]
            )

        path = self.write_config({"first": entry(a, b), "second": entry(b, a)})
        done = self.cli("--config", path, "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        report = json.loads(done.stdout)
        self.assertIs(report["ok"], True)
        self.assertEqual([s["name"] for s in report["servers"]], ["first", "second"])
        self.assertEqual(
            [s["module"] for s in report["servers"]], ["cap.mcp.first", "cap.mcp.second"]
        )

    def test_a_server_that_fails_is_named_and_the_others_still_serve(self) -> None:
        dying = (
            "import sys\nfor i in range(20):\n    print('ERROR: Database connection "
            "configuration is required.' if i == 4 else 'starting step %d' % i, "
            "file=sys.stderr)\nsys.exit(1)"
        )
        path = self.write_config(
            {"dies": {"command": sys.executable, "args": ["-c", dying]}, "demo": self.demo()}
        )
        done = self.cli("--config", path)
        self.assertEqual(done.returncode, cli.EXIT_CODES["handshake"], done.stderr)
        self.assertTrue(done.stdout.startswith("config    demo\n"), done.stdout)
        lines = done.stderr.splitlines()
        self.assertTrue(lines[0].startswith("mcp_client: dies: handshake failed: "), lines)
        self.assertEqual(
            lines[1:3],
            [
                "mcp_client: dies: server stderr, 1 earlier line that reads as an error:",
                "  | ERROR: Database connection configuration is required.",
            ],
        )
        self.assertEqual(lines[3], "mcp_client: dies: server stderr, last 10 lines:")
        self.assertEqual(lines[-1], "  | starting step 19")
        self.assertNotIn("Traceback", done.stderr)

    def test_an_unknown_server_is_a_usage_error_listing_the_names(self) -> None:
        path = self.write_config({"demo": self.demo(), "other": self.demo()})
        done = self.cli("--config", path, "--server", "nope")
        line = self.assert_failed(done, "usage")
        self.assertIn("--server nope: no such server in %s; its servers: demo, other" % path, line)

    def test_config_faults_are_one_usage_line(self) -> None:
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as stream:
            stream.write('{"mcpServers": {"demo": {"command": "x",}}}')
        unset = self.write_config({"demo": self.demo(env={"K": "${MCP_TEST_UNSET_VARIABLE}"})})
        cases = {
            (os.path.join(self.dir, "absent.json"),): "cannot read it",
            (bad,): "not JSON",
            (unset,): "${MCP_TEST_UNSET_VARIABLE} is not set",
            (unset, "--", "cmd"): "no COMMAND after -- with it",
            (unset, "--cwd", "/"): "--cwd cannot go with --config",
        }
        for args, message in cases.items():
            with self.subTest(args=args):
                done = self.cli("--config", *args)
                self.assertIn(message, self.assert_failed(done, "usage"))
                self.assertEqual(done.stdout, "")

    def test_ctrl_c_retires_every_server_started(self) -> None:
        pidfiles = [os.path.join(self.dir, name + ".pid") for name in ("a", "b")]
        path = self.write_config(
            {
                name: {
                    "command": sys.executable,
                    "args": ["-c", PID_WRAPPER, pidfile, *server_argv("handshake_silent")[1:]],
                }
                for name, pidfile in zip(("a", "b"), pidfiles)
            }
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_client", "--config", path],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
            cwd=self.dir,
        )
        try:
            wait_until(lambda: all(os.path.exists(pidfile) for pidfile in pidfiles))
            process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        self.assertEqual(process.returncode, 130, stderr)
        self.assertEqual(stderr, "mcp_client: a: interrupted; the server was shut down\n")
        for self.pidfile in pidfiles:  # both: the one being shown and the one waiting its turn
            self.assert_server_gone()

    def test_capture_records_the_one_server_picked(self) -> None:
        path = self.write_config({"demo": self.demo(), "other": self.demo()})
        wire = os.path.join(self.dir, "wire.jsonl")
        done = self.cli(
            "--config",
            path,
            "--server",
            "demo",
            "--capture",
            wire,
            "--call",
            "add",
            '{"a": 1, "b": 2}',
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        replayed = subprocess.run(
            [sys.executable, REPLAY, wire],
            capture_output=True,
            text=True,
            timeout=60,
            env=environment(),
        )
        self.assertEqual(replayed.returncode, 0, replayed.stdout + replayed.stderr)
        self.assertIn("tools/call add ok isError=false", replayed.stdout)

    def test_a_call_needs_one_server(self) -> None:
        path = self.write_config({"demo": self.demo(), "other": self.demo()})
        done = self.cli("--config", path, "--call", "add", "{}")
        self.assertIn(
            "--call is for one server: name it with --server", self.assert_failed(done, "usage")
        )


class Stumbles(CliCase):
    """What a new user stumbled on (issue 20), each as it was tried by hand."""

    def test_call_takes_the_surface_name_in_every_spelling(self) -> None:
        for name in (
            "reverse_text",
            "mcp_client_demo.reverse_text",
            "cap.mcp.mcp_client_demo.reverse_text",
            "reverse-text",
        ):
            with self.subTest(name=name):
                done = self.cli("--call", name, '{"text": "abc"}')
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertEqual(done.stdout, "call reverse-text: isError=false\n  text: cba\n")

    def test_an_unknown_name_is_refused_before_anything_is_sent(self) -> None:
        wire = os.path.join(self.dir, "wire.jsonl")
        done = self.cli("--capture", wire, "--call", "reverse_txt", "{}")
        line = self.assert_failed(done, "call")
        self.assertIn(
            "no tool reverse_txt, so nothing was sent; the server's tools: add, "
            "divide, join_words, reverse-text (reverse_text), count_by",
            line,
        )
        with open(wire) as log:
            self.assertNotIn("tools/call", log.read())

    def test_surface_adds_the_report_back(self) -> None:
        done = self.cli("--call", "add", '{"a": 1, "b": 2}', "--surface")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(done.stdout.startswith("server    mcp-client-demo"), done.stdout)
        self.assertIn("\nsurface of cap.mcp.", done.stdout)
        self.assertTrue(
            done.stdout.endswith(
                '\n\ncall add: isError=false\n  text: 3\n  structuredContent: {"sum": 3}\n'
            ),
            done.stdout,
        )
        self.assertIn(
            "--surface goes with --call", self.assert_failed(self.cli("--surface"), "usage")
        )

    def test_a_forgotten_double_dash_says_where_the_command_goes(self) -> None:
        done = self.cli(sys.executable, "-m", "mcp_server_time")
        line = self.assert_failed(done, "usage")
        self.assertIn(
            "put the server's command after --: python -m mcp_client [options] -- %s "
            "-m mcp_server_time" % sys.executable,
            line,
        )

    def test_env_key_alone_passes_our_value_and_nothing_else(self) -> None:
        check = (
            "import os, sys; "
            "assert os.environ['MCP_TEST_API_KEY'] == 'sekrit', os.environ; "
            "assert 'MCP_CLI_TEST_SECRET' not in os.environ; "
            "os.execv(sys.executable, [sys.executable] + sys.argv[1:])"
        )
        done = self.cli(
            "--env",
            "MCP_TEST_API_KEY",
            "--",
            sys.executable,
            "-c",
            check,
            *server_argv("good")[1:],
            env=environment(MCP_TEST_API_KEY="sekrit", MCP_CLI_TEST_SECRET="no"),
        )
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_jail_names_the_allow_read_a_script_under_tmp_needs(self) -> None:
        if shutil.which("bwrap") is None:
            raise AssertionError(
                "bubblewrap is not installed (the README's test command installs it)"
            )
        with tempfile.TemporaryDirectory(dir="/tmp") as checkout:
            script = os.path.join(checkout, "server.py")
            shutil.copy(demo_server.__file__, script)
            done = self.cli("--jail", *jail_read_flags(), "--", sys.executable, script)
            line = self.assert_failed(done, "spawn")
            self.assertIn(
                "the server's argument %s names %s, which the jail would not show"
                % (script, os.path.realpath(script)),
                line,
            )
            self.assertIn("--server-read %s shows it" % os.path.realpath(checkout), line)
            shown = self.cli(
                "--jail",
                *jail_read_flags(),
                "--allow-read",
                checkout,
                "--call",
                "add",
                '{"a": 1, "b": 2}',
                "--",
                sys.executable,
                script,
            )
            self.assertEqual(shown.returncode, 0, shown.stderr)
            self.assertIn("text: 3", shown.stdout)

    def test_the_jail_check_reads_option_values_and_ignores_bare_flags(self) -> None:
        from mcp_client.errors import TransportFailed
        from mcp_client.jail import Jail

        with tempfile.TemporaryDirectory(dir="/tmp") as hidden:
            with self.assertRaises(TransportFailed) as caught:
                cli.check_jailed_paths(
                    Jail(), cli.Spawn(sys.executable, ("-u", "--root=" + hidden))
                )
            self.assertIn("--root=%s" % hidden, str(caught.exception))
            # a flag with no value does not name the working directory, even one under /tmp
            cli.check_jailed_paths(Jail(), cli.Spawn(sys.executable, ("-u", "-m", "x"), cwd="/"))
