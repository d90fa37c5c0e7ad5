"""``mcp-client codemode`` end to end: real servers from a config file, a program run
jailed (and not), its calls routed back, every server retired whatever it did.

Each test writes a config and a program into a temporary directory and runs the
command (``python -m mcp_client codemode``) as a child process whose working
directory is another temporary directory, as a user would after ``pip install``.
The servers are the real ones the test extra and ``tests/npm`` install:
``mcp-server-time`` (PyPI), and the memory and filesystem servers (npm). The
library's own tests (limits, policy, restarts, discovery) are in
``test_codemode_library.py``.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import unittest
from typing import IO, Any, Dict, List, Optional, Set, cast

import pytest

from mcp_client.errors import TransportFailed
from mcp_client.jail import spawn as jailer

import npm_servers
from procs import process_stats
from support import LONG, SHORT, jail_for_tests, jail_read_flags, server_argv, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
#: The command, as ``python -m``: the same as the ``mcp-client codemode`` script.
COMMAND = [sys.executable, "-m", "mcp_client", "codemode"]
#: Long enough for three servers' start-up and a program on a loaded machine.
RUN_TIMEOUT = LONG * 4

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
#: A server that says why on stderr and exits before the handshake.
BROKEN = {
    "command": sys.executable,
    "args": [
        "-c",
        "import sys; print('ERROR: no database configured\\x1b[2J', file=sys.stderr); sys.exit(3)",
    ],
}


def live_in_groups(groups: Set[int]) -> List[int]:
    """Pids of live (non-zombie) processes in any of ``groups``."""
    return [pid for pid, fields in process_stats() if int(fields[2]) in groups and fields[0] != "Z"]


def groups_of_children(parent: int) -> Set[int]:
    """The process groups of ``parent``'s children: each server's, and the program's."""
    return {int(fields[2]) for _, fields in process_stats() if int(fields[1]) == parent}


def command_of(pid: int) -> str:
    """The base name of ``pid``'s executable, from its command line ("" once gone)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as cmdline:
            return os.path.basename(cmdline.read().split(b"\0")[0].decode())
    except OSError:
        return ""


def kill_groups(groups: Set[int]) -> None:
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


class CodeModeCase(unittest.TestCase):
    def setUp(self) -> None:
        if sys.version_info < (3, 10):  # as in test_e2e_real_servers: the extra skips it there
            self.skipTest(
                "mcp-server-time needs Python >= 3.10; the test extra does not "
                "install it on %d.%d" % sys.version_info[:2]
            )
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="codemode-test-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.env = dict(os.environ)
        # The runner imports this checkout's mcp_client, whatever is installed.
        self.env["PYTHONPATH"] = os.pathsep.join(
            [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        )
        # Anywhere but a checkout: the command must not need one.
        self.cwd = os.path.realpath(tempfile.mkdtemp(prefix="codemode-cwd-"))
        self.addCleanup(shutil.rmtree, self.cwd, True)

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def config(self, servers: Dict[str, Any]) -> str:
        with open(self.path("servers.json"), "w") as out:
            json.dump({"mcpServers": servers}, out)
        return self.path("servers.json")

    def program(self, source: str, name: str = "program.py") -> str:
        with open(self.path(name), "w") as out:
            out.write(textwrap.dedent(source))
        return self.path(name)

    def argv(self, servers: Dict[str, Any], *args: str) -> List[str]:
        return [*COMMAND, "--config", self.config(servers), *args]

    def run_runner(
        self, servers: Dict[str, Any], *args: str, stdin: Optional[str] = None
    ) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(
            self.argv(servers, *args),
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.cwd,
            timeout=RUN_TIMEOUT,
        )

    def start_runner(self, servers: Dict[str, Any], *args: str) -> "subprocess.Popen[str]":
        runner = subprocess.Popen(
            self.argv(servers, *args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.cwd,
        )
        self.addCleanup(self.reap, runner)
        return runner

    def reap(self, runner: "subprocess.Popen[str]") -> None:
        if runner.poll() is None:
            runner.kill()
        runner.communicate()

    def memory(self) -> Dict[str, Any]:
        return {
            "command": npm_servers.argv(npm_servers.MEMORY)[0],
            "env": {"MEMORY_FILE_PATH": self.path("memory.jsonl")},
        }

    def filesystem(self) -> Dict[str, Any]:
        os.makedirs(self.path("files"), exist_ok=True)
        return {
            "command": npm_servers.argv(npm_servers.FILESYSTEM)[0],
            "args": [self.path("files")],
        }

    def ready(self, runner: "subprocess.Popen[str]") -> Set[int]:
        """Wait for the program's "ready" line; the process groups the runner made."""
        stdout = cast(IO[str], runner.stdout)
        line = stdout.readline()
        if line != "ready\n":
            self.fail(
                "the program did not get ready: %r; stderr: %s"
                % (line, runner.communicate(timeout=RUN_TIMEOUT)[1])
            )
        groups = groups_of_children(runner.pid)
        self.assertGreaterEqual(len(groups), 2, "a server's group and the program's")
        return groups

    def assertAllGone(self, groups: Set[int]) -> None:
        self.assertTrue(
            wait_until(lambda: not live_in_groups(groups)),
            "left running: %s" % live_in_groups(groups),
        )


WORK = """
    from cap.mcp import filesystem, memory, time

    converted = time.convert_time(source_timezone="Europe/London", time="12:30",
                                  target_timezone="Asia/Tokyo")
    print("tokyo", converted["target"]["datetime"][11:16])

    path = {path!r}
    filesystem.write_file(path=path, content="alpha\\nbeta\\n")
    filesystem.edit_file(path=path, edits=[{{"oldText": "beta", "newText": "gamma"}}])
    print("file", repr(filesystem.read_text_file(path=path)["content"]))

    memory.create_entities(entities=[{{"name": "Ada", "entityType": "person",
                                       "observations": ["wrote the first program"]}}])
    added = memory.add_observations(observations=[{{"entityName": "Ada",
                                                    "contents": ["liked engines"]}}])
    print("added", added["results"][0]["addedObservations"])
    graph = memory.open_nodes(names=["Ada"])
    print("observations", graph["entities"][0]["observations"])
"""


class RealServers(CodeModeCase):
    """A program against the time, filesystem and memory servers, right on the first run."""

    @pytest.mark.slow
    def test_a_program_converts_a_time_edits_a_file_and_remembers(self) -> None:
        servers = {"time": TIME, "memory": self.memory(), "filesystem": self.filesystem()}
        program = self.program(WORK.format(path=self.path("files/notes.txt")))
        done = self.run_runner(servers, program)
        self.assertEqual(done.returncode, 0, done.stderr)
        # 12:30 in London on a day of no DST of either zone's: 21:30 in Tokyo. The server
        # takes today's date, so in British summer time the answer is 20:30.
        self.assertRegex(done.stdout, r"tokyo (21|20):30\n")
        self.assertIn("file 'alpha\\ngamma\\n'\n", done.stdout)
        self.assertIn("added ['liked engines']\n", done.stdout)
        self.assertIn("observations ['wrote the first program', 'liked engines']\n", done.stdout)
        with open(self.path("files/notes.txt")) as written:
            self.assertEqual(written.read(), "alpha\ngamma\n")

    def test_a_failed_tool_is_caught_as_tool_failed(self) -> None:
        program = self.program("""
            from cap.mcp import ToolFailed, filesystem
            try:
                filesystem.read_text_file(path="/etc/hostname")
            except ToolFailed as e:
                print("caught", type(e).__module__, e)
        """)
        done = self.run_runner({"filesystem": self.filesystem()}, program)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stdout, r"^caught cap\.mcp .*outside allowed directories")

    @pytest.mark.slow
    def test_large_arguments_and_answers_cross_the_pipes_whole(self) -> None:
        program = self.program(
            """
            from cap.mcp import filesystem
            text = "".join("line %d\\n" % n for n in range(100000))  # 1.1 MB each way
            filesystem.write_file(path={path!r}, content=text)
            print(filesystem.read_text_file(path={path!r})["content"] == text, len(text))
        """.format(path=self.path("files/big.txt"))
        )
        done = self.run_runner({"filesystem": self.filesystem()}, program)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "True 1088890\n")

    @pytest.mark.slow
    def test_the_surface_names_every_server_by_its_key(self) -> None:
        done = self.run_runner({"time": TIME, "memory": self.memory()}, "--surface")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("cap.mcp.time.convert_time(", done.stdout)
        self.assertIn("cap.mcp.memory.create_entities(", done.stdout)
        self.assertEqual(done.stderr, "")


class Seam(CodeModeCase):
    """What the program's ``invoke`` meets when a call does not complete."""

    def scripted(self, behaviour: str) -> Dict[str, Any]:
        argv = server_argv(behaviour)
        return {"command": argv[0], "args": argv[1:]}

    def test_a_call_past_its_timeout_is_call_failed(self) -> None:
        program = self.program("""
            from cap.mcp import CallFailed, scripted
            try:
                scripted.echo(message="hello")
            except CallFailed as e:
                print("call failed:", e)
        """)
        done = self.run_runner(
            {"scripted": self.scripted("never_answer")}, "--timeout", str(SHORT), program
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(
            done.stdout,
            r"^call failed: scripted\.echo: tools/call got no answer "
            r"within 0\.3 ?s; server scripted was retired, and its next call starts it "
            r"again\n$",
        )

    def test_a_server_that_dies_mid_call_fails_that_call_and_the_next(self) -> None:
        program = self.program("""
            from cap.mcp import CallFailed, scripted
            for attempt in (1, 2):
                try:
                    scripted.echo(message="hello")
                except CallFailed as e:
                    print(attempt, "call failed")
        """)
        done = self.run_runner({"scripted": self.scripted("exit_mid_call")}, program)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "1 call failed\n2 call failed\n")

    @pytest.mark.slow
    def test_only_generated_functions_calls_are_served(self) -> None:
        program = self.program("""
            from cap.internal import mcp
            for server, tool, arguments in [("time", "no_such_tool", {}),
                                            ("elsewhere", "get_current_time", {}),
                                            ("time", "get_current_time", ["UTC"])]:
                try:
                    mcp.invoke(server, tool, arguments)
                except mcp.CallFailed as e:
                    print("refused:", str(e).split(":")[0])
            print(mcp.invoke("time", "get_current_time", {"timezone": "UTC"})["timezone"])
        """)
        done = self.run_runner({"time": TIME}, program)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "refused: not a call of a generated function\n" * 3 + "UTC\n")

    @pytest.mark.slow
    def test_a_call_over_the_line_cap_is_call_failed_and_the_next_call_works(self) -> None:
        # Issue 25 item 10: a 17 MiB argument was BrokenPipeError, then every call after.
        program = self.program("""
            from cap.internal import mcp
            for _ in range(2):
                try:
                    mcp.invoke("time", "get_current_time", {"timezone": "x" * (17 << 20)})
                except mcp.CallFailed as e:
                    print("refused:", str(e).split(";")[0].split(": ", 1)[1])
            print(mcp.invoke("time", "get_current_time", {"timezone": "UTC"})["timezone"])
        """)
        done = self.run_runner({"time": TIME}, program)
        self.assertEqual(done.returncode, 0, done.stderr)
        refused = "refused: the call is 17825869 bytes, over the 16777216 a call may take\n"
        self.assertEqual(done.stdout, refused * 2 + "UTC\n")

    @pytest.mark.slow
    def test_a_forged_line_over_the_cap_ends_the_serving_and_calls_fail_after(self) -> None:
        # Written past invoke, straight to the pipe: the runner's own bound, then every
        # call is CallFailed saying why, never BrokenPipeError.
        program = self.program("""
            import os
            from cap.internal import mcp
            out, _ = mcp._open()
            try:
                out.write(b"x" * (17 << 20) + b"\\n")
                out.flush()
            except BrokenPipeError:
                pass
            for _ in range(2):
                try:
                    mcp.invoke("time", "get_current_time", {"timezone": "UTC"})
                except mcp.CallFailed as e:
                    print("failed:", str(e).split(" (")[0].split(":")[0])
        """)
        done = self.run_runner({"time": TIME}, program)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stdout, r"^(failed: the runner (is gone|closed the pipe)\n){2}$")
        self.assertIn(
            "the program sent a call over 16777216 bytes; no more are served", done.stderr
        )

    def test_runtime_bound_is_the_wires(self) -> None:
        from mcp_client.codemode._program import RUNTIME
        from mcp_client.stdio import MAX_LINE_BYTES

        self.assertIn("MAX_CALL_BYTES = 16 * 1024 * 1024\n", RUNTIME)
        self.assertEqual(16 * 1024 * 1024, MAX_LINE_BYTES)


class Endings(CodeModeCase):
    """However the program ends, its status is the runner's and every server is retired."""

    WAITS = textwrap.dedent("""
        import sys
        from cap.mcp import time
        time.get_current_time(timezone="UTC")
        print("ready", flush=True)
        sys.stdin.readline()
    """)

    @pytest.mark.slow
    def test_a_program_that_raises_exits_non_zero_with_its_traceback(self) -> None:
        program = self.program(self.WAITS + "raise ValueError('the model was wrong')\n")
        runner = self.start_runner({"time": TIME, "memory": self.memory()}, program)
        groups = self.ready(runner)
        _, stderr = runner.communicate("go\n", timeout=RUN_TIMEOUT)
        self.assertEqual(runner.returncode, 1, stderr)
        self.assertIn("Traceback (most recent call last):", stderr)
        self.assertIn("ValueError: the model was wrong", stderr)
        self.assertAllGone(groups)

    @pytest.mark.slow
    def test_sys_exit_gives_the_runner_its_status(self) -> None:
        program = self.program(self.WAITS + "sys.exit(7)\n")
        runner = self.start_runner({"time": TIME}, program)
        groups = self.ready(runner)
        runner.communicate("go\n", timeout=RUN_TIMEOUT)
        self.assertEqual(runner.returncode, 7)
        self.assertAllGone(groups)

    @pytest.mark.slow
    def test_ctrl_c_retires_every_server_and_the_program(self) -> None:
        program = self.program(self.WAITS)
        runner = self.start_runner({"time": TIME, "memory": self.memory()}, program)
        groups = self.ready(runner)
        runner.send_signal(signal.SIGINT)
        _, stderr = runner.communicate(timeout=RUN_TIMEOUT)
        self.assertEqual(runner.returncode, 130, stderr)
        self.assertIn("interrupted", stderr)
        self.assertAllGone(groups)

    @pytest.mark.slow
    def test_sigterm_retires_every_server_and_the_program(self) -> None:
        runner = self.start_runner(
            {"time": TIME, "memory": self.memory()}, self.program(self.WAITS)
        )
        groups = self.ready(runner)
        runner.terminate()
        _, stderr = runner.communicate(timeout=RUN_TIMEOUT)
        self.assertEqual(runner.returncode, 128 + signal.SIGTERM, stderr)
        self.assertAllGone(groups)

    @pytest.mark.slow
    def test_a_jailed_program_dies_with_the_runner_even_by_sigkill(self) -> None:
        runner = self.start_runner({"time": TIME}, self.program(self.WAITS))
        groups = self.ready(runner)
        self.addCleanup(kill_groups, groups)  # the servers are not the jail's: see below
        jails = {
            pid
            for pid, fields in process_stats()
            if int(fields[1]) == runner.pid and command_of(pid).startswith("bwrap")
        }
        self.assertEqual(len(jails), 1, "the program's bwrap")
        # A SIGKILLed runner cannot remove its directory (root/lib is bound into the jail;
        # the scratch is a tmpfs of the jail's own, which goes with it).
        argv = open("/proc/%d/cmdline" % next(iter(jails)), "rb").read().split(b"\0")
        lib = next(arg.decode() for arg in argv if arg.endswith(b"/lib"))
        self.assertIn("/mcp-codemode-", lib)
        self.addCleanup(shutil.rmtree, os.path.dirname(lib), True)
        runner.kill()
        runner.communicate(timeout=RUN_TIMEOUT)
        # The jail's lifeline broke with the runner: the init, the program and bwrap end.
        self.assertTrue(
            wait_until(lambda: not live_in_groups(jails)),
            "left running: %s" % live_in_groups(jails),
        )

    @pytest.mark.slow
    def test_the_wall_clock_limit_kills_the_program(self) -> None:
        program = self.program(
            self.WAITS.replace("sys.stdin.readline()", "import time as clock; clock.sleep(3600)")
        )
        runner = self.start_runner({"time": TIME}, "--wall-clock", "1", program)
        groups = self.ready(runner)
        _, stderr = runner.communicate(timeout=RUN_TIMEOUT)
        self.assertEqual(runner.returncode, 124, stderr)
        self.assertIn("wall-clock limit (1 s)", stderr)
        self.assertAllGone(groups)


class FailedServer(CodeModeCase):
    @pytest.mark.slow
    def test_a_server_that_exits_at_start_is_named_and_the_rest_serve(self) -> None:
        program = self.program("""
            import cap.mcp
            from cap.mcp import time
            print(time.get_current_time(timezone="UTC")["timezone"])
            try:
                from cap.mcp import broken
            except ImportError:
                print("no module for broken")
        """)
        done = self.run_runner(
            {
                "broken": BROKEN,
                "time": TIME,
                "search": {"type": "http", "url": "https://example.com/mcp"},
            },
            program,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "UTC\nno module for broken\n")
        self.assertRegex(done.stderr, r"codemode: .*servers\.json: server \"search\" left out: ")
        self.assertRegex(
            done.stderr,
            r"codemode: server broken left out: .*\n"
            r"  \| ERROR: no database configured",
        )
        self.assertNotIn("\x1b", done.stderr, "a server's control characters reach no terminal")

    def test_no_server_at_all_is_an_error(self) -> None:
        done = self.run_runner({"broken": BROKEN}, self.program("print('never')\n"))
        self.assertEqual(done.returncode, 3)
        self.assertEqual(done.stdout, "")
        self.assertIn("codemode: no server started", done.stderr)


PROBES = """
    import os, socket, sys
    import cap
    from cap.mcp import time
    print("call", time.get_current_time(timezone="UTC")["timezone"])

    def probe(what, action):
        try:
            got = action()
        except OSError as e:
            got = None
        print(what, "allowed" if got else "refused")

    probe("tmp", lambda: open({secret!r}).read())
    probe("ssh", lambda: open(os.path.expanduser("~/.ssh/id_ed25519")).read())
    probe("etc", lambda: open("/etc/codemode-probe", "w"))
    probe("net", lambda: socket.create_connection(("127.0.0.1", {port}), 5))
    probe("sibling", lambda: open({sibling!r}).read())
    probe("cap", lambda: open(os.path.join(os.path.dirname(cap.__file__), "x.py"), "w"))
    probe("scratch", lambda: open("scratch.txt", "w").write("mine"))  # its working directory
"""


class ProgramJail(CodeModeCase):
    """The program is the model's code: jailed by default, its calls still served."""

    def setUp(self) -> None:
        super().setUp()
        elsewhere = tempfile.mkdtemp(prefix="codemode-harness-")  # under /tmp: the harness's
        self.addCleanup(shutil.rmtree, elsewhere, True)
        self.secret = os.path.join(elsewhere, "secret.txt")
        sibling = self.path("sibling.txt")  # beside the program
        for path in (self.secret, sibling):
            with open(path, "w") as out:
                out.write("the harness's only\n")
        # A home outside /tmp, so that only the jail's hidden paths can cover it.
        self.home = tempfile.mkdtemp(prefix="codemode-home-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.home, True)
        os.mkdir(os.path.join(self.home, ".ssh"))
        with open(os.path.join(self.home, ".ssh", "id_ed25519"), "w") as key:
            key.write("PRIVATE KEY\n")
        self.env["HOME"] = self.home
        self.listener = socket.socket()
        self.addCleanup(self.listener.close)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.probes = PROBES.format(
            secret=self.secret, port=self.listener.getsockname()[1], sibling=sibling
        )

    def outcomes(self, stdout: str) -> Dict[str, str]:
        return {what: how for what, how in (line.split(" ") for line in stdout.splitlines())}

    @pytest.mark.slow
    def test_the_program_calls_tools_and_reaches_nothing_else(self) -> None:
        done = self.run_runner({"time": TIME}, self.program(self.probes))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            self.outcomes(done.stdout),
            {
                "call": "UTC",
                "tmp": "refused",
                "ssh": "refused",
                "etc": "refused",
                "net": "refused",
                "sibling": "refused",
                "cap": "refused",
                "scratch": "allowed",
            },
        )
        self.assertFalse(os.path.exists("/etc/codemode-probe"))

    def test_unjailed_the_same_program_reaches_everything(self) -> None:
        """The probes can fail: without the jail each one gets through."""
        done = subprocess.run(
            self.argv({"time": TIME}, "--no-jail", self.program(self.probes)),
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.dir,
            timeout=RUN_TIMEOUT,
        )
        self.addCleanup(
            lambda: os.path.exists("/etc/codemode-probe") and os.unlink("/etc/codemode-probe")
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            self.outcomes(done.stdout),
            {
                "call": "UTC",
                "tmp": "allowed",
                "ssh": "allowed",
                "etc": "allowed",
                "net": "allowed",
                "sibling": "allowed",
                "cap": "allowed",
                "scratch": "allowed",
            },
        )

    @pytest.mark.slow
    def test_without_bubblewrap_it_refuses_unless_told_no_jail(self) -> None:
        self.env["PATH"] = self.path("empty-path")  # no bwrap on it; the servers are absolute
        program = self.program("print('ran')\n")
        refused = self.run_runner({"time": TIME}, program)
        self.assertEqual(refused.returncode, 2)
        self.assertEqual(refused.stdout, "")
        self.assertIn("bubblewrap", refused.stderr)
        self.assertIn("--no-jail", refused.stderr)
        unjailed = self.run_runner({"time": TIME}, "--no-jail", program)
        self.assertEqual((unjailed.returncode, unjailed.stdout), (0, "ran\n"), unjailed.stderr)


@pytest.mark.slow
class TypeChecking(CodeModeCase):
    """The README's advice holds: the package kept by ``--keep-cap`` passes ``mypy --strict``
    with the program, and a wrong argument or a misread result is caught before any call."""

    def test_mypy_checks_a_program_against_the_kept_package(self) -> None:
        kept = self.path("kept")
        done = self.run_runner({"time": TIME}, "--keep-cap", kept)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(os.path.isfile(os.path.join(kept, "cap", "mcp", "time.py")))
        good = self.program(
            """
            from cap.mcp import CallFailed, ToolFailed, time
            try:
                print(time.get_current_time(timezone="UTC")["datetime"].upper())
            except (ToolFailed, CallFailed) as e:
                print(e)
        """,
            "good.py",
        )
        bad = self.program(
            """
            from cap.mcp import time
            hour: int = time.get_current_time(timezone=0)["datetime"]
        """,
            "bad.py",
        )
        env = dict(self.env, MYPYPATH=kept)
        check = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", os.devnull]
        passed = subprocess.run(
            check + [good], capture_output=True, text=True, env=env, cwd=self.dir
        )
        self.assertEqual(passed.returncode, 0, passed.stdout)
        failed = subprocess.run(
            check + [bad], capture_output=True, text=True, env=env, cwd=self.dir
        )
        self.assertEqual(failed.returncode, 1, failed.stdout)
        self.assertIn(
            'Argument "timezone" to "get_current_time" has incompatible type "int"', failed.stdout
        )
        self.assertIn('expression has type "str", variable has type "int"', failed.stdout)

    def test_check_gives_mypys_own_words_and_the_programs_line(self) -> None:
        bad = self.program(
            """
            from cap.mcp import time

            print(time.get_current_time(timezon="UTC"))
        """,
            "bad.py",
        )
        done = self.run_runner({"time": TIME}, "--check", bad)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn(
            'line 4: Unexpected keyword argument "timezon" for "get_current_time"; '
            'did you mean "timezone"?',
            done.stdout,
        )
        good = self.program(
            "from cap.mcp import time\nprint(time.get_current_time(timezone='UTC'))\n"
        )
        done = self.run_runner({"time": TIME}, "--check", good)
        self.assertEqual((done.returncode, done.stdout), (0, "ok\n"), done.stderr)


@pytest.mark.slow
class Discovery(CodeModeCase):
    """``--search`` and ``--describe``: what a model reads before it writes its program."""

    def test_search_ranks_the_tool_whose_name_holds_the_words_first(self) -> None:
        done = self.run_runner({"time": TIME, "memory": self.memory()}, "--search", "convert time")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(done.stdout.startswith("cap.mcp.time.convert_time("), done.stdout)
        nothing = self.run_runner({"time": TIME}, "--search", "zebra")
        self.assertEqual(
            (nothing.returncode, nothing.stdout),
            (1, "no function matches 'zebra'; try other words, or an empty query for all\n"),
        )

    def test_describe_gives_the_doc_or_the_closest_names(self) -> None:
        done = self.run_runner({"time": TIME}, "--describe", "time.convert_time")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(done.stdout.startswith("cap.mcp.time.convert_time("))
        self.assertIn("target_timezone", done.stdout)
        unknown = self.run_runner({"time": TIME}, "--describe", "time.convert")
        self.assertEqual(unknown.returncode, 1)
        self.assertIn("no tool time.convert; the closest: time.convert_time", unknown.stdout)


class SharedFlags(CodeModeCase):
    """The policy and limit flags reach the runner (the library's tests cover each rule)."""

    def notes(self) -> Dict[str, Any]:
        argv = server_argv("codemode_tools", self.dir)
        return {"command": argv[0], "args": argv[1:]}

    def test_allow_deny_and_the_limits_are_the_runners(self) -> None:
        program = self.program("""
            import sys
            from cap.mcp import CallFailed, CallRefused, notes
            for call in (lambda: notes.write_note(name="a", text="x"), notes.pid, notes.pid):
                try:
                    call()
                    print("sent")
                except CallRefused as e:
                    print("refused:", e)
                except CallFailed as e:
                    print("failed:", e)
            sys.stdout.write("y" * 5000)
        """)
        done = self.run_runner(
            {"notes": self.notes()},
            "--allow", "read-only", "--deny-tool", "notes.die", "--allow-tool", "notes.write_note",
            "--max-calls", "2", "--max-output", "200", "--memory", str(256 << 20), program,
        )  # fmt: skip
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertEqual(lines[:2], ["sent", "sent"])
        self.assertRegex(lines[2], r"^failed: notes\.pid: refused: .*Limits\.max_calls")
        self.assertIn("bytes of stdout dropped: past Limits.max_output_bytes (200)]", done.stdout)
        self.assertIn("codemode: the program went past its 2 tool calls", done.stderr)

    def test_jail_servers_holds_a_lying_server_to_the_paths_it_is_given(self) -> None:
        outside = tempfile.mkdtemp(prefix="codemode-outside-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, outside, True)
        program = self.program(
            """
            from cap.mcp import notes
            notes.write_note(name="kept", text="mine")
            print(notes.lying_read(path={target!r})["text"])
            """.format(target=os.path.join(outside, "pwned"))
        )
        done = self.run_runner(
            {"notes": self.notes()},
            "--jail-servers",
            *jail_read_flags("--server-read"),  # the server's script, in a checkout under /tmp
            "--server-write",
            self.dir,
            program,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "could not write: Read-only file system\n")
        self.assertEqual(os.listdir(outside), [])
        with open(self.path("kept")) as kept:
            self.assertEqual(kept.read(), "mine")

    def test_an_unknown_server_or_a_bad_flag_is_a_usage_error(self) -> None:
        program = self.program("print('never')\n")
        unknown = self.run_runner({"time": TIME}, "--server", "nope", program)
        self.assertEqual((unknown.returncode, unknown.stdout), (2, ""))
        self.assertIn("codemode: no server nope in", unknown.stderr)
        self.assertIn("(it has: time)", unknown.stderr)
        bad = self.run_runner({"time": TIME}, "--deny-tool", "nodot", program)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("is not server.function", bad.stderr)


class ConsoleScript(CodeModeCase):
    """The ``mcp-client`` script that ``pip install`` writes runs the command, anywhere."""

    def test_the_script_prints_the_surface_from_a_directory_of_its_own(self) -> None:
        script = shutil.which("mcp-client") or os.path.join(
            os.path.dirname(sys.executable), "mcp-client"
        )
        if not os.path.exists(script):
            self.skipTest("no mcp-client script next to this interpreter (not pip-installed)")
        done = subprocess.run(
            [script, "codemode", "--config", self.config({"time": TIME}), "--surface"],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.cwd,
            timeout=RUN_TIMEOUT,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("cap.mcp.time.get_current_time(", done.stdout)


class SpawnCommand(unittest.TestCase):
    """``jailer.spawn_command``: any command in a jail, with its own stdio and extra pipes."""

    def test_the_command_has_its_pipes_and_its_status(self) -> None:
        read_end, write_end = os.pipe()
        self.addCleanup(os.close, read_end)
        script = "import os, sys; os.write(int(sys.argv[1]), b'piped'); print('out'); sys.exit(5)"
        try:
            child = jailer.spawn_command(
                jail_for_tests(),
                [sys.executable, "-c", script, str(write_end)],
                {"PATH": os.environ["PATH"]},
                pass_fds=(write_end,),
                stdout=subprocess.PIPE,
            )
        finally:
            os.close(write_end)
        out, _ = child.communicate(timeout=LONG)
        self.assertEqual((child.returncode, out, os.read(read_end, 100)), (5, b"out\n", b"piped"))

    def test_killing_its_group_ends_the_jail(self) -> None:
        child = jailer.spawn_command(
            jail_for_tests(),
            [sys.executable, "-c", "import time; time.sleep(60)"],
            {"PATH": os.environ["PATH"]},
        )
        os.killpg(child.pid, signal.SIGKILL)
        self.assertEqual(child.wait(timeout=LONG), -signal.SIGKILL)
        self.assertTrue(wait_until(lambda: not live_in_groups({child.pid})))

    def test_its_limits_hold_as_a_servers_do(self) -> None:
        try:  # as test_jail's fork bomb: root with a pids hierarchy, or a delegated subtree
            jailer.Cgroup.create(2).remove(LONG)
        except TransportFailed as e:
            self.skipTest("no pids cgroup can be made here, so max_processes is refused: %s" % e)
        script = "import os\ntry:\n    os.fork()\nexcept OSError as e:\n    print(e.errno)"
        child = jailer.spawn_command(
            jail_for_tests(max_processes=1),
            [sys.executable, "-c", script],
            {"PATH": os.environ["PATH"]},
            stdout=subprocess.PIPE,
        )
        out, _ = child.communicate(timeout=LONG)
        self.assertEqual((child.returncode, out), (0, b"%d\n" % errno.EAGAIN))

    def test_a_scratch_inside_the_jail_is_bounded_and_gone_with_it(self) -> None:
        # Issue 25 item 5 (the jail side): 64 MiB written to a 16 MiB scratch stop at
        # ENOSPC; no host directory backs it, and nothing of it is left afterwards.
        script = (
            "import os, errno\n"
            "print(os.getcwd())\n"
            "open('mark', 'w').write('x')\n"
            "try:\n"
            "    with open('big', 'wb') as out:\n"
            "        for _ in range(64):\n"
            "            out.write(b'x' * (1 << 20)); out.flush()\n"
            "except OSError as e:\n"
            "    print(errno.errorcode[e.errno], os.path.getsize('big') // (1 << 20))\n"
        )
        child = jailer.spawn_command(
            jail_for_tests(tmp_bytes=16 << 20, memory_bytes=256 << 20),
            [sys.executable, "-c", script],
            {"PATH": os.environ["PATH"]},
            stdout=subprocess.PIPE,
            inside_cwd="/tmp/scratch",
        )
        out, _ = child.communicate(timeout=LONG)
        lines = out.decode().splitlines()
        self.assertEqual(child.returncode, 0, out)
        self.assertEqual(lines[0], "/tmp/scratch")
        self.assertEqual(lines[1].split()[0], "ENOSPC")
        self.assertLessEqual(int(lines[1].split()[1]), 16)
        self.assertFalse(os.path.exists("/tmp/scratch/mark"), "a host directory backed it")

    def test_cpu_seconds_end_a_spinner(self) -> None:
        child = jailer.spawn_command(
            jail_for_tests(cpu_seconds=1),
            [sys.executable, "-c", "while True: pass"],
            {"PATH": os.environ["PATH"]},
        )
        # soft and hard limit are one: the hard limit's SIGKILL, as for a server
        self.assertEqual(child.wait(timeout=LONG * 4), 128 + signal.SIGKILL)

    def test_a_working_directory_made_inside_must_be_under_tmp(self) -> None:
        with self.assertRaisesRegex(TransportFailed, "must be under /tmp"):
            jailer.spawn_command(
                jail_for_tests(), [sys.executable, "-c", "pass"], {}, inside_cwd="/etc/x"
            )

    def test_a_missing_command_is_transport_failed(self) -> None:
        with self.assertRaisesRegex(TransportFailed, "cannot start /no/such/program in the jail"):
            jailer.spawn_command(
                jail_for_tests(), ["/no/such/program"], {"PATH": os.environ["PATH"]}
            )


if __name__ == "__main__":
    unittest.main()
