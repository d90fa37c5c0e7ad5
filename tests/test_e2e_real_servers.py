"""End to end against MCP servers nobody here wrote: ``mcp-server-time`` and ``mcp-server-git``.

Both come from PyPI with the ``test`` extra (``pip install -e '.[test]'``). For
each: start it, list its tools, generate the ``cap.mcp`` module, load that
module with the test ``cap`` package (``tests/fakecap``) wired to the live
client -- every generated function ends in ``internal.invoke``, routed here to
``client.call_tool`` -- call tools through the generated functions, check the
real results, and shut down with ``Exited`` evidence. The command line is run
against both servers too. For ``mcp-server-time``, whose tools declare output
schemas, the seam is also wired the way the generated header's contract says
(``cap.internal.mcp.contract``: ``structuredContent`` comes back), and the
values must be of the result types the module declares.

The servers need Python 3.10 or later; on older interpreters the extra does
not install them and these tests are skipped with that reason. Anywhere else a
missing server is a failure, not a skip: the extra installs them.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from types import ModuleType
from typing import Any, Dict, List, Tuple

from mcp_client import Client, Exited, Spawn, codegen, start
from mcp_client.errors import ResultMismatch
from mcp_client.protocol import CallToolResult

from support import OPTIONS, text_of

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FAKECAP = os.path.join(HERE, "fakecap")
if FAKECAP not in sys.path:  # the fake `cap` package generated modules import
    sys.path.insert(0, FAKECAP)

from cap.internal import mcp as seam  # noqa: E402
from cap.mcp import load_generated  # noqa: E402
from codegen_checks import assert_conforms  # noqa: E402

TOO_OLD = sys.version_info < (3, 10)
TOO_OLD_REASON = (
    "mcp-server-time and mcp-server-git need Python >= 3.10; the test extra "
    "does not install them on %d.%d" % sys.version_info[:2]
)

# A commit identity for git, in the server's environment (the client passes the
# server only a minimal environment plus what it is given), isolated from any
# user or system git configuration.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "E2E Tester",
    "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
    "GIT_COMMITTER_NAME": "E2E Tester",
    "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def require(module: str, distribution: str) -> None:
    """Fail (never skip) when a server the test extra installs is missing."""
    if importlib.util.find_spec(module) is None:
        raise AssertionError(
            "%s is not installed; `pip install -e '.[test]'` installs it" % distribution
        )


class RealServerCase(unittest.TestCase):
    def load(self, client: Client, server: str) -> Tuple[ModuleType, List[Any]]:
        """List, generate, and load the module with its seam wired to ``client``.

        Wired raw: every call answers its whole ``CallToolResult``, so these tests
        see the wire (``isError``, text and ``structuredContent`` side by side);
        ``test_typed_results_through_the_seam_contract`` wires it as the contract says.
        """
        tools = client.list_tools()
        generated = codegen.generate(server, tools)
        module = load_generated(generated.module_name, generated.source)
        recording = seam.recording(
            lambda name, tool, arguments: self._call(client, server, name, tool, arguments)
        )
        calls = recording.__enter__()
        self.addCleanup(recording.__exit__, None, None, None)
        return module, calls

    def _call(
        self, client: Client, server: str, name: str, tool: str, arguments: Dict[str, Any]
    ) -> CallToolResult:
        self.assertEqual(name, server)
        return client.call_tool(tool, arguments)

    def cli(self, *args: str) -> Dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "mcp_client", "--json", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, PYTHONPATH=REPO),
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        report: Dict[str, Any] = json.loads(done.stdout)
        return report


@unittest.skipIf(TOO_OLD, TOO_OLD_REASON)
class TimeServer(RealServerCase):
    SPAWN = Spawn(sys.executable, ("-m", "mcp_server_time", "--local-timezone", "UTC"))

    def setUp(self) -> None:
        require("mcp_server_time", "mcp-server-time")

    def test_generated_functions_call_the_live_server(self) -> None:
        client = start(self.SPAWN, OPTIONS)
        try:
            self.assertEqual(client.initialize_result.server_info.name, "mcp-time")
            module, calls = self.load(client, "mcp-time")
            self.check_conversion(
                module.convert_time(
                    source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo"
                ),
                9 * 60,
            )
            self.check_conversion(
                module.convert_time(
                    source_timezone="Asia/Kolkata", time="08:15", target_timezone="UTC"
                ),
                -(5 * 60 + 30),
            )
            now = module.get_current_time(timezone="UTC")
            self.assertFalse(now.is_error, now)
            stamp = datetime.datetime.fromisoformat(now.structured_content["datetime"])
            self.assertEqual(stamp.utcoffset(), datetime.timedelta(0))
            refused = module.convert_time(
                source_timezone="Nowhere/Atlantis", time="12:00", target_timezone="UTC"
            )
            self.assertTrue(refused.is_error)
            self.assertIn("Nowhere/Atlantis", text_of(refused))
            self.assertEqual(
                [call.tool for call in calls],
                ["convert_time", "convert_time", "get_current_time", "convert_time"],
            )
            self.assertEqual(
                calls[0].arguments,
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            )
        finally:
            evidence = client.shutdown()
        self.assertIsInstance(evidence, Exited)

    def test_typed_results_through_the_seam_contract(self) -> None:
        # The seam answers as the generated header says (structuredContent for a
        # tool with an outputSchema), and what comes back is the declared type.
        client = start(self.SPAWN, OPTIONS)
        try:
            tools = client.list_tools()
            info = client.initialize_result
            generated = codegen.generate("mcp-time", tools, info=info)
            module = load_generated(generated.module_name, generated.source)
            with seam.recording(seam.contract(client.call_tool, generated.tools)) as calls:
                now = module.get_current_time(timezone="UTC")
                converted = module.convert_time(
                    source_timezone="UTC", time="23:30", target_timezone="Asia/Tokyo"
                )
                with self.assertRaises(seam.ToolFailed) as failed:
                    module.convert_time(
                        source_timezone="Nowhere/Atlantis", time="12:00", target_timezone="UTC"
                    )
            # The same answer with a broken promise ({"datetime": 5}, the issue's): the
            # check of the declared shape refuses it, naming where.
            raw = client.call_tool(
                "convert_time",
                {"source_timezone": "UTC", "time": "23:30", "target_timezone": "Asia/Tokyo"},
            )
        finally:
            evidence = client.shutdown()
        self.assertIsInstance(evidence, Exited)
        self.assertEqual(generated.module_name, "cap.mcp.mcp_time")  # "-" is "_", no digest
        self.assertTrue((module.__doc__ or "").startswith("The tools of MCP server mcp-time"))
        tool = {t.wire_name: t for t in generated.tools}["convert_time"]
        self.assertEqual(codegen.deliver(tool, raw), raw.structured_content)
        broken = dict(raw.structured_content)  # type: ignore[arg-type]
        broken["target"] = dict(broken["target"], datetime=5)
        with self.assertRaises(ResultMismatch) as mismatch:
            codegen.deliver(tool, CallToolResult(raw.content, False, broken))
        self.assertEqual(
            (mismatch.exception.path, mismatch.exception.expected, mismatch.exception.got),
            ('$["target"]["datetime"]', "string", "integer 5"),
        )
        self.assertEqual(len(calls), 3)
        self.assertTrue(failed.exception.result.is_error)
        for function, value in ((module.get_current_time, now), (module.convert_time, converted)):
            declared = function.__annotations__["return"]
            self.assertEqual(
                declared.__name__, function.__name__.title().replace("_", "") + "Result"
            )
            self.assertEqual(set(value), set(declared.__annotations__), "the declared keys")
            assert_conforms(self, value, declared)
        self.assertEqual(
            set(converted["target"]), set(module.ConvertTimeResultTarget.__annotations__)
        )
        self.assertTrue(converted["target"]["datetime"].endswith("T08:30:00+09:00"))
        stamp = datetime.datetime.fromisoformat(now["datetime"])
        self.assertEqual(stamp.utcoffset(), datetime.timedelta(0))

    def check_conversion(self, result: CallToolResult, minutes: int) -> None:
        """Same instant on both sides; the wall clocks ``minutes`` apart, as the text says."""
        self.assertFalse(result.is_error, result)
        data = result.structured_content
        self.assertEqual(json.loads(text_of(result)), data, "text and structuredContent agree")
        source = datetime.datetime.fromisoformat(data["source"]["datetime"])
        target = datetime.datetime.fromisoformat(data["target"]["datetime"])
        self.assertEqual(source, target, "one instant")
        shift = target.utcoffset() - source.utcoffset()  # type: ignore[operator]
        self.assertEqual(shift, datetime.timedelta(minutes=minutes))
        wall = target.replace(tzinfo=None) - source.replace(tzinfo=None)
        self.assertEqual(wall, shift)
        self.assertEqual(data["time_difference"], "%+.1fh" % (minutes / 60))

    def test_the_command_line(self) -> None:
        report = self.cli(
            "--call",
            "convert_time",
            '{"source_timezone": "UTC", "time": "23:30", "target_timezone": "Asia/Tokyo"}',
            "--",
            *self.SPAWN.argv(),
        )
        self.assertEqual(report["server"]["name"], "mcp-time")
        self.assertEqual(
            sorted(tool["name"] for tool in report["tools"]), ["convert_time", "get_current_time"]
        )
        self.assertIn(
            ".convert_time(source_timezone: str, time: str, target_timezone: str)",
            report["surface"],
        )
        target = report["call"]["structuredContent"]["target"]["datetime"]
        self.assertTrue(target.endswith("T08:30:00+09:00"), target)
        self.assertEqual(report["retirement"]["evidence"], "Exited")


@unittest.skipIf(TOO_OLD, TOO_OLD_REASON)
class GitServer(RealServerCase):
    def setUp(self) -> None:
        require("mcp_server_git", "mcp-server-git")
        if shutil.which("git") is None:
            raise AssertionError("git is not on PATH; mcp-server-git and this test need it")
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.repo = os.path.realpath(directory.name)
        self.git("init", "-q")
        self.write("notes.txt", "first line\n")
        self.git("add", "notes.txt")
        self.git("commit", "-q", "-m", "Initial commit from the e2e test")
        self.write("notes.txt", "first line\nsecond line, not yet committed\n")

    def git(self, *args: str) -> str:
        env = dict(os.environ, **GIT_ENV)
        done = subprocess.run(
            ["git", *args], cwd=self.repo, env=env, capture_output=True, text=True, timeout=60
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def write(self, name: str, text: str) -> None:
        with open(os.path.join(self.repo, name), "w") as stream:
            stream.write(text)

    def spawn(self) -> Spawn:
        return Spawn(
            sys.executable, ("-m", "mcp_server_git", "--repository", self.repo), env=GIT_ENV
        )

    def test_generated_functions_call_the_live_server(self) -> None:
        client = start(self.spawn(), OPTIONS)
        try:
            self.assertEqual(client.initialize_result.server_info.name, "mcp-git")
            module, calls = self.load(client, "mcp-git")
            status = text_of(module.git_status(repo_path=self.repo))
            self.assertRegex(status, r"modified:\s+notes\.txt")
            log = text_of(module.git_log(repo_path=self.repo, max_count=5))
            self.assertIn("Initial commit from the e2e test", log)
            diff = text_of(module.git_diff_unstaged(repo_path=self.repo))
            self.assertIn("+second line, not yet committed", diff)
            module.git_add(repo_path=self.repo, files=["notes.txt"])
            module.git_commit(repo_path=self.repo, message="Second commit, made through MCP")
            self.assertIn(
                "Second commit, made through MCP",
                text_of(module.git_log(repo_path=self.repo, max_count=1)),
            )
            self.assertNotIn("notes.txt", text_of(module.git_status(repo_path=self.repo)))
            self.assertEqual(calls[1].arguments, {"repo_path": self.repo, "max_count": 5})
            self.assertEqual(
                [call.tool for call in calls][:3], ["git_status", "git_log", "git_diff_unstaged"]
            )
        finally:
            evidence = client.shutdown()
        self.assertIsInstance(evidence, Exited)
        self.assertEqual(
            self.git("log", "-1", "--format=%an|%s"),
            "E2E Tester|Second commit, made through MCP\n",
            "the identity came from the Spawn environment",
        )

    def test_the_command_line(self) -> None:
        env_args: List[str] = []
        for key, value in GIT_ENV.items():
            env_args += ["--env", "%s=%s" % (key, value)]
        report = self.cli(
            *env_args,
            "--call",
            "git_status",
            json.dumps({"repo_path": self.repo}),
            "--",
            *self.spawn().argv(),
        )
        self.assertEqual(report["server"]["name"], "mcp-git")
        self.assertIn("git_log", [tool["name"] for tool in report["tools"]])
        self.assertRegex(report["call"]["content"][0]["text"], r"modified:\s+notes\.txt")
        self.assertEqual(report["retirement"]["evidence"], "Exited")


if __name__ == "__main__":
    unittest.main()
