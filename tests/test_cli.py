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
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest
from typing import Dict, List, Optional
from unittest import mock

from mcp_client import Client, cli, demo_server
from mcp_client.errors import RetirementTimedOut
from mcp_client.transport import Retirement

from servers import alive
from support import server_argv, wait_until

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

    def cli(self, *args: str, env: Optional[Dict[str, str]] = None
            ) -> "subprocess.CompletedProcess[str]":
        return subprocess.run([sys.executable, "-m", "mcp_client", *args], capture_output=True,
                              text=True, timeout=60, env=env or environment(), cwd=self.dir)

    def wrapped(self, behaviour: str, *args: str) -> List[str]:
        """A scripted server started through the pid wrapper; see :meth:`assert_server_gone`."""
        self.pidfile = os.path.join(self.dir, "server.pid")
        return ["--", sys.executable, "-c", PID_WRAPPER, self.pidfile,
                *server_argv(behaviour, *args)[1:]]

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
        listed = [line.split()[0] for line in lines[lines.index("5 tools") + 1:][:5]]
        self.assertEqual(listed, DEMO_TOOLS)
        self.assertIn("  add           Add: Add two integers.", lines)
        surface = [line for line in lines if line.startswith("  cap.mcp.mcp_client_demo_")]
        self.assertEqual(len(surface), 5)
        self.assertIn('add(a: int, b: int) -> AddResult{"sum": int}  # [server says: title "Add"; '
                      'read-only, idempotent] Add two integers.', surface[0])

    def test_source_prints_a_module_that_parses(self) -> None:
        done = self.cli("--source")
        self.assertEqual(done.returncode, 0, done.stderr)
        head, _, source = done.stdout.partition("\nsource of cap.mcp.mcp_client_demo_")
        self.assertIn("surface of", head)
        module = ast.parse(source.split("\n", 1)[1])
        functions = [node.name for node in module.body if isinstance(node, ast.FunctionDef)]
        self.assertEqual(len(functions), 5)
        self.assertIn('return _typing.cast(ToolOutput, internal.invoke(\n'
                      '        "mcp-client-demo", "reverse-text", arguments))', source)

    def test_call_prints_the_result(self) -> None:
        done = self.cli("--call", "add", '{"a": 2, "b": 3}')
        self.assertEqual(done.returncode, 0, done.stderr)
        tail = done.stdout.split("\ncall add: ", 1)[1].splitlines()
        self.assertEqual(tail, ["isError=false", "  text: 5", '  structuredContent: {"sum": 5}'])

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
        self.assertTrue(report["module"].startswith("cap.mcp.mcp_client_demo_"))
        self.assertEqual(len(report["surface"].splitlines()), 5)
        self.assertIn("def join_words(", report["source"])
        self.assertEqual(report["call"], {
            "name": "join_words", "arguments": {"words": ["a", "b"]}, "isError": False,
            "content": [{"type": "text", "text": "a b"}], "structuredContent": {"count": 2}})
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
        self.assertIn("ServerError: server error -32602", line)

    def test_call_answered_with_invalid_utf8(self) -> None:
        # --strict: by default the CLI skips a line that is not UTF-8 as noise (see test_noise)
        done = self.cli("--strict", "--call", "echo", "{}", *self.wrapped("invalid_utf8"))
        self.assertIn("ClientBroken: server sent an invalid line", self.assert_failed(done, "call"))
        self.assert_server_gone()

    def test_call_timeout(self) -> None:
        done = self.cli("--timeout", "0.3", "--call", "echo", "{}",
                        "--", *server_argv("never_answer"))
        self.assertIn("CallTimedOut: tools/call got no answer", self.assert_failed(done, "call"))

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

    def test_usage(self) -> None:
        capture = os.path.join(self.dir, "absent", "wire.jsonl")
        cases = {
            ("--call", "add", "{not json"): "the arguments are not JSON",
            ("--call", "add", "[1, 2]"): "the arguments must be a JSON object",
            ("--env", "NO_EQUALS_SIGN"): "--env needs KEY=VALUE",
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
        self.assertEqual(err, "mcp_client: shutdown failed: RetirementTimedOut: pretend the "
                              "server was not reaped in time\n")

    def test_after_a_failure_it_still_wins_and_names_it(self) -> None:
        code, err = self.run_with_failing_shutdown("--call", "no_such_tool", "{}")
        self.assertEqual(code, cli.EXIT_CODES["shutdown"])
        self.assertRegex(err, r"\Amcp_client: shutdown failed: RetirementTimedOut: pretend .* "
                              r"\(after: call failed: server error -32602: .*\)\n\Z")


class Options(CliCase):
    def test_env_and_cwd_reach_the_server_and_nothing_else_does(self) -> None:
        check = ("import os, sys; "
                 "assert os.environ['GREETING'] == 'hello=world', os.environ; "
                 "assert 'MCP_CLI_TEST_SECRET' not in os.environ; "
                 "assert os.path.samefile(os.getcwd(), sys.argv[1]); "
                 "os.execv(sys.executable, [sys.executable] + sys.argv[2:])")
        cwd = os.path.join(self.dir, "server-home")
        os.mkdir(cwd)
        done = self.cli("--env", "GREETING=hello=world", "--cwd", cwd, "--", sys.executable,
                        "-c", check, cwd, *server_argv("good")[1:],
                        env=environment(MCP_CLI_TEST_SECRET="do not leak"))
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
        self.assertTrue(lines[1].startswith("mcp_client: server stderr, last "), lines)
        self.assertNotIn("LookupError", lines[0])  # the first line stays one line
        self.assertEqual(lines[-1], "  | LookupError: no such profile: 'prod'")
        quiet = self.cli("--quiet-server", *dying)
        self.assertEqual(quiet.returncode, cli.EXIT_CODES["handshake"], quiet.stderr)
        self.assertEqual(len(quiet.stderr.splitlines()), 1, quiet.stderr)

    def test_a_hostile_name_cannot_drive_the_terminal(self) -> None:
        self.assertEqual(cli._name("evil\x1b[2J\u202e"), "evil\\x1b[2J\\u202e")
        self.assertEqual(cli._terminal("line one\nred \x1b[31mtext"), "line one\nred \\x1b[31mtext")
        self.assertEqual(cli._name("reverse-text"), "reverse-text")


class Capture(CliCase):
    def test_a_capture_replays(self) -> None:
        log = os.path.join(self.dir, "wire.jsonl")
        done = self.cli("--capture", log, "--call", "add", '{"a": 2, "b": 3}')
        self.assertEqual(done.returncode, 0, done.stderr)
        replayed = subprocess.run([sys.executable, REPLAY, log], capture_output=True, text=True,
                                  timeout=60, env=environment())
        self.assertEqual(replayed.returncode, 0, replayed.stdout + replayed.stderr)
        self.assertEqual(replayed.stdout.splitlines()[:3], [
            "initialize ok 2025-06-18 (mcp-client-demo 1.0.0)",
            "tools/list ok 5 tools",
            "tools/call add ok isError=false",
        ])

    def test_the_cli_pointed_at_a_served_capture_prints_the_same(self) -> None:
        log = os.path.join(self.dir, "wire.jsonl")
        live = self.cli("--capture", log, "--call", "add", '{"a": 2, "b": 3}')
        self.assertEqual(live.returncode, 0, live.stderr)
        served = self.cli("--call", "add", '{"a": 2, "b": 3}', "--", sys.executable, REPLAY,
                          "--serve", log)
        self.assertEqual(served.returncode, 0, served.stderr)

        def without_command(text: str) -> List[str]:
            return [line for line in text.splitlines() if not line.startswith("command ")]

        self.assertEqual(without_command(served.stdout), without_command(live.stdout))

    def test_a_failed_session_is_captured_to_its_death(self) -> None:
        log = os.path.join(self.dir, "wire.jsonl")
        done = self.cli("--strict", "--capture", log, "--call", "echo", "{}",
                        "--", *server_argv("invalid_utf8"))
        self.assert_failed(done, "call")
        replayed = subprocess.run([sys.executable, REPLAY, log], capture_output=True, text=True,
                                  timeout=60, env=environment())
        self.assertEqual(replayed.returncode, 0, replayed.stdout)
        self.assertIn("tools/call echo failed ClientBroken: server sent an invalid line",
                      replayed.stdout)


class Interrupts(CliCase):
    def interrupt(self, signum: int) -> None:
        args = ["--timeout", "30", "--call", "echo", "{}", *self.wrapped("never_answer")]
        process = subprocess.Popen([sys.executable, "-m", "mcp_client", *args],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=environment(), cwd=self.dir)
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
        self.assertEqual(process.returncode, 130, stderr)
        self.assertEqual(stderr, "mcp_client: interrupted; the server was shut down\n")
        self.assert_server_gone()

    def test_closed_stdout(self) -> None:
        process = subprocess.Popen([sys.executable, "-m", "mcp_client", *self.wrapped("good")],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=environment(), cwd=self.dir)
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
