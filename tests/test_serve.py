"""``mcp-client serve`` as a child process, on raw pipes: hostile programs end as results
and the next run works; runs asked for together run together; every way to end --
the host closing stdin, SIGTERM, SIGINT -- retires every program and every server.

The hosts that judge it are ``tests/test_serve_hosts.py``'s; here a small host of our
own reads each line of ``serve``'s stdout as JSON-RPC (anything else fails the test).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
from typing import IO, Any, Dict, List, Optional, Set, Tuple, cast

import pytest

from serve_support import RUN_TIMEOUT, SCRIPTED, ServeCase, descendants
from support import LONG, wait_until


class Host:
    """``serve`` started on pipes; one request at a time, or several in flight."""

    def __init__(self, argv: List[str], env: Dict[str, str], stderr: IO[bytes]) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
        )
        self.pending = b""
        self.next_id = 0

    @property
    def stdin(self) -> IO[bytes]:
        return cast(IO[bytes], self.process.stdin)

    def send(self, method: str, params: Dict[str, Any]) -> int:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.stdin.write(json.dumps(message).encode() + b"\n")
        self.stdin.flush()
        return self.next_id

    def receive(self, timeout: float = RUN_TIMEOUT) -> Dict[str, Any]:
        stdout = cast(IO[bytes], self.process.stdout).fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([stdout], [], [], timeout)
            chunk = os.read(stdout, 1 << 20) if ready else b""
            if not chunk:
                raise AssertionError("serve said nothing more (exit %s)" % self.process.poll())
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        message: Dict[str, Any] = json.loads(line)  # stdout carries protocol lines only
        return message

    def request(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        ident = self.send(method, params)
        answer = self.receive()
        assert answer.get("id") == ident, answer
        return answer

    def start(self) -> None:
        version = {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}  # fmt: skip
        assert "result" in self.request("initialize", version)
        self.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        self.stdin.flush()

    def run(self, code: str, **more: Any) -> Dict[str, Any]:
        """``run_program``'s result (``isError`` and all)."""
        arguments = dict(code=textwrap.dedent(code), **more)
        result: Dict[str, Any] = self.request(
            "tools/call", {"name": "run_program", "arguments": arguments}
        )["result"]
        return result


class HostCase(ServeCase):
    def host(self, servers: Optional[Dict[str, Any]] = None, *flags: str) -> Host:
        self.stderr = open(self.path("serve.err"), "w+b")
        self.addCleanup(self.stderr.close)
        argv = [sys.executable, *self.serve_args(servers or {"scripted": SCRIPTED}, *flags)]
        host = Host(argv, self.env, self.stderr)
        self.addCleanup(self.reap, host)
        host.start()
        return host

    def reap(self, host: Host) -> None:
        if host.process.poll() is None:
            host.process.kill()
        host.process.wait()
        for stream in (host.process.stdin, host.process.stdout):
            if stream is not None and not stream.closed:
                stream.close()

    def serve_stderr(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def assertFine(self, host: Host) -> None:
        """The next run works."""
        result = host.run("print('fine')")
        self.assertNotIn("isError", result, result)
        self.assertEqual(result["structuredContent"]["stdout"], "fine\n")

    def made(self, host: Host) -> Set[int]:
        """``serve``, everything it started, and their process groups' members."""
        return descendants(host.process.pid)


class HostilePrograms(HostCase):
    """Nothing a program does breaks the server: each ends as a result that says what."""

    def test_a_crash_is_an_error_result_with_its_traceback(self) -> None:
        host = self.host()
        result = host.run("raise ValueError('the model was wrong')")
        self.assertTrue(result["isError"])
        value = result["structuredContent"]
        self.assertEqual(value["exit_status"], 1)
        self.assertIn("ValueError: the model was wrong", value["stderr"])
        self.assertIn("exit status 1", result["content"][0]["text"])
        self.assertFine(host)

    @pytest.mark.slow
    def test_a_hang_ends_at_its_timeout(self) -> None:
        host = self.host()
        result = host.run("import time\ntime.sleep(3600)", timeout_s=1)
        self.assertTrue(result["isError"])
        value = result["structuredContent"]
        self.assertEqual(value["exit_status"], 124)
        self.assertIn("wall-clock", value["error"])
        self.assertFine(host)

    def test_a_flood_of_output_is_cut_with_a_marker(self) -> None:
        host = self.host(None, "--max-output", "4096")
        result = host.run("""
            import sys
            for _ in range(2000):
                sys.stdout.write("x" * 10000)
            print("never cut short")
        """)
        value = result["structuredContent"]
        self.assertEqual(value["exit_status"], 0, value)
        self.assertTrue(value["truncated"])
        self.assertLess(len(value["stdout"]), 8192)
        self.assertRegex(value["stdout"], r"\d+ bytes")  # the marker gives the bytes dropped
        self.assertFine(host)

    def test_a_flood_of_calls_stops_at_the_limit(self) -> None:
        host = self.host(None, "--max-calls", "5")
        result = host.run("""
            from cap.mcp import scripted
            for _ in range(1000):
                scripted.echo(message="again")
        """)
        self.assertTrue(result["isError"])
        value = result["structuredContent"]
        self.assertEqual(value["exit_status"], 1)
        outcomes = [call["outcome"] for call in value["calls"]]
        self.assertEqual(outcomes[:5], ["ok"] * 5)
        self.assertNotIn("ok", outcomes[5:])
        self.assertIn("CallFailed", value["stderr"])
        self.assertIn("5", value["stderr"])
        self.assertFine(host)

    @pytest.mark.slow
    def test_a_fork_bomb_ends_and_takes_its_processes_with_it(self) -> None:
        host = self.host()
        # Bounded (2**7 processes), so that a machine shared with others survives it
        # even without a pids limit; the jail's end must take every one of them along.
        # A fork the pids limit refuses is let pass: which process meets the limit first
        # is the scheduler's choice, and the program's own status must not depend on it.
        result = host.run("""
            import os, time
            for _ in range(7):
                try:
                    os.fork()
                except OSError:
                    pass
            time.sleep(3600)
        """, timeout_s=3)  # fmt: skip
        self.assertTrue(result["isError"])
        self.assertEqual(result["structuredContent"]["exit_status"], 124)
        self.assertFine(host)
        self.assertEqual(len(self.made(host)), 2, "serve and its one server, nothing else")


class Together(HostCase):
    """Runs asked for at the same time run at the same time, each in its own child."""

    WAITER = """
        import time as clock
        from cap.mcp import filesystem
        filesystem.write_file(path={mine!r}, content="here")
        for _ in range(400):
            if "{theirs}" in str(filesystem.list_directory(path={where!r})):
                break
            clock.sleep(0.05)
        else:
            raise SystemExit("never met")
        print("met")
    """

    def test_two_runs_that_wait_for_each_other_both_finish(self) -> None:
        host = self.host(self.npm_servers(), "--max-calls", "1000")
        where = self.path("files")
        for mine, theirs in (("a", "b"), ("b", "a")):
            code = self.WAITER.format(mine=os.path.join(where, mine), theirs=theirs, where=where)
            arguments = {"code": textwrap.dedent(code)}
            host.send("tools/call", {"name": "run_program", "arguments": arguments})
        answers = [host.receive(), host.receive()]
        self.assertEqual(sorted(answer["id"] for answer in answers), [2, 3])
        for answer in answers:
            self.assertEqual(answer["result"]["structuredContent"]["stdout"], "met\n", answer)


class Endings(HostCase):
    """However the host ends it, every program and every server is retired."""

    STARTED = """
        import time as clock
        from cap.mcp import filesystem
        filesystem.write_file(path={path!r}, content="started")
        clock.sleep(3600)
    """

    def running(self) -> Tuple[Host, Set[int]]:
        """``serve`` with a program running; everything it made by then."""
        host = self.host(dict(self.npm_servers(), scripted=SCRIPTED))
        marker = self.path("files/started")
        code = textwrap.dedent(self.STARTED.format(path=marker))
        host.send("tools/call", {"name": "run_program", "arguments": {"code": code}})
        self.assertTrue(wait_until(lambda: os.path.exists(marker), RUN_TIMEOUT))
        made = self.made(host)
        self.assertGreaterEqual(len(made), 6, "serve, three servers, the program's jail")
        return host, made

    def test_the_host_closing_stdin_ends_everything(self) -> None:
        host, made = self.running()
        host.stdin.close()
        self.assertEqual(host.process.wait(LONG * 2), 0, self.serve_stderr())
        self.assertAllGone(made)

    @pytest.mark.slow
    def test_sigterm_ends_everything(self) -> None:
        host, made = self.running()
        host.process.send_signal(signal.SIGTERM)
        self.assertEqual(host.process.wait(LONG * 2), 128 + signal.SIGTERM, self.serve_stderr())
        self.assertAllGone(made)

    def test_sigint_ends_everything(self) -> None:
        host, made = self.running()
        host.process.send_signal(signal.SIGINT)
        self.assertEqual(host.process.wait(LONG * 2), 128 + signal.SIGINT, self.serve_stderr())
        self.assertAllGone(made)


class Start(HostCase):
    def test_a_small_surface_is_shown_whole_in_run_programs_description(self) -> None:
        host = self.host()  # the scripted server alone: one function, well under 4 KiB
        tools = {t["name"]: t for t in host.request("tools/list", {})["result"]["tools"]}
        self.assertEqual(list(tools), ["search_tools", "describe_tool", "check_program",
                                       "run_program"])  # fmt: skip
        description = tools["run_program"]["description"]
        self.assertIn("\nscripted.echo(*, message: str | None = None) -> ", description)
        self.assertEqual(tools["run_program"]["annotations"]["readOnlyHint"], False)
        self.assertEqual(tools["search_tools"]["annotations"]["readOnlyHint"], True)

    def test_stdout_is_the_protocols_alone_and_stdin_no_childs(self) -> None:
        host = self.host()
        fds = "/proc/%d/fd/" % host.process.pid
        self.assertEqual(os.readlink(fds + "1"), os.readlink(fds + "2"), "fd 1 is stderr")
        self.assertEqual(os.readlink(fds + "0"), os.devnull)
        self.assertFine(host)

    def test_sigterm_while_the_servers_start_leaves_nothing_behind(self) -> None:
        slow = {"command": sys.executable, "args": ["-c", "import time; time.sleep(3600)"]}
        self.stderr = open(self.path("serve.err"), "w+b")
        self.addCleanup(self.stderr.close)
        argv = [sys.executable, *self.serve_args({"slow": slow})]
        host = Host(argv, self.env, self.stderr)
        self.addCleanup(self.reap, host)
        self.assertTrue(wait_until(lambda: len(self.made(host)) >= 2), "the server started")
        made = self.made(host)
        host.process.send_signal(signal.SIGTERM)
        self.assertEqual(host.process.wait(LONG * 2), 128 + signal.SIGTERM, self.serve_stderr())
        self.assertAllGone(made)

    def test_no_server_started_is_exit_3_and_nothing_on_stdout(self) -> None:
        broken = {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
        done = subprocess.run(
            [sys.executable, *self.serve_args({"broken": broken})],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=self.env,
            timeout=RUN_TIMEOUT,
        )
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertEqual(done.stdout, b"")
        self.assertIn(b"no server started", done.stderr)

    def test_an_unknown_name_is_described_with_the_closest_real_ones(self) -> None:
        host = self.host()
        arguments = {"name": "scripted.echoes"}
        result = host.request("tools/call", {"name": "describe_tool", "arguments": arguments})
        answer = result["result"]
        self.assertTrue(answer["isError"])
        self.assertFalse(answer["structuredContent"]["found"])
        self.assertIn("the closest: scripted.echo", answer["structuredContent"]["doc"])

    def test_usage_faults_are_exit_2_and_nothing_on_stdout(self) -> None:
        with open(self.path("bad.json"), "w") as bad:
            bad.write("{not json")
        for argv in (
            ["--config", self.path("bad.json")],
            [*self.serve_args({"scripted": SCRIPTED})[3:], "--server", "nope"],
            [*self.serve_args({"scripted": SCRIPTED})[3:], "--max-runs", "0"],
            [],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "mcp_client", "serve", *argv],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=self.env,
                timeout=RUN_TIMEOUT,
            )
            self.assertEqual((done.returncode, done.stdout), (2, b""), (argv, done.stderr))

    def test_help_names_the_tools_and_the_exit_statuses(self) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "mcp_client", "serve", "--help"],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=RUN_TIMEOUT,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("run_program", done.stdout)
        self.assertIn("143 SIGTERM", done.stdout)

    def test_hostile_lines_from_the_host_are_answered_and_serving_goes_on(self) -> None:
        host = self.host()
        host.stdin.write(b"not json\n[1]\n\xff\n")
        host.stdin.flush()
        codes = [host.receive()["error"]["code"] for _ in range(3)]
        self.assertEqual(codes, [-32700, -32600, -32700])
        self.assertEqual(host.request("ping", {})["result"], {})
        self.assertFine(host)
