"""ProcessTransport against real children: environment, cwd, stderr, groups, failures."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import unittest

from mcp_client import Exited, ProcessTransport, Spawn, start
from mcp_client.errors import SymlinkRefused, TransportFailed
from mcp_client.transport import SAFE_ENV_KEYS, child_environment

from servers import alive
from support import OPTIONS, text_of, wait_until

# A minimal well-behaved server whose one tool reports facts about its own process.
_INTROSPECTIVE = r"""
import json, os, sys
def send(msg): sys.stdout.write(json.dumps(msg) + "\n"); sys.stdout.flush()
for raw in sys.stdin:
    m = json.loads(raw)
    if "id" not in m: continue
    if m["method"] == "initialize":
        sys.stderr.write("banner on stderr\n"); sys.stderr.flush()
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
             "serverInfo": {"name": "introspective", "version": "1"}}
    else:
        facts = {"env": dict(os.environ), "cwd": os.getcwd(), "pgid": os.getpgid(0),
                 "pid": os.getpid()}
        r = {"content": [{"type": "text", "text": json.dumps(facts)}]}
    send({"jsonrpc": "2.0", "id": m["id"], "result": r})
"""

# Forks a grandchild that outlives nothing: it must die with its group.
_FORKING = _INTROSPECTIVE.replace(
    'facts = {',
    'child = os.fork()\n        if child == 0:\n            os.execv("/bin/sleep", '
    '["sleep", "300"])\n        facts = {"grandchild": child, ',
)


def _facts(spawn: Spawn, transport: ProcessTransport = None):  # type: ignore[assignment]
    with start(transport or spawn, OPTIONS) as client:
        return json.loads(text_of(client.call_tool("facts", {}))), client


class SpawnArguments(unittest.TestCase):
    """A string where the argv tuple belongs is refused, not split into characters."""

    def test_a_string_for_args_is_a_type_error(self) -> None:
        for args in ("/srv/data", b"/srv/data"):
            with self.subTest(args=args), self.assertRaises(TypeError) as caught:
                Spawn("server", args)  # type: ignore[arg-type]
            self.assertIn("Spawn.args", str(caught.exception))

    def test_a_non_string_argument_or_executable_is_a_type_error(self) -> None:
        with self.assertRaises(TypeError):
            Spawn("server", ("--port", 8080))  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            Spawn(["server"])  # type: ignore[arg-type]

    def test_a_list_is_taken_and_kept_as_a_tuple(self) -> None:
        spawn = Spawn("server", ["-v", "/srv/data"])  # type: ignore[arg-type]
        self.assertEqual(spawn.args, ("-v", "/srv/data"))
        self.assertEqual(spawn.argv(), ("server", "-v", "/srv/data"))
        hash(spawn)  # still hashable: frozen, args a tuple


class Environment(unittest.TestCase):
    def test_child_gets_only_safe_variables_and_explicit_pairs(self) -> None:
        os.environ["MCP_CLIENT_TEST_SECRET"] = "hunter2"
        try:
            facts, _ = _facts(Spawn(sys.executable, ("-c", _INTROSPECTIVE), env={"EXTRA": "1"}))
        finally:
            del os.environ["MCP_CLIENT_TEST_SECRET"]
        env = facts["env"]
        self.assertNotIn("MCP_CLIENT_TEST_SECRET", env)
        self.assertEqual(env["EXTRA"], "1")
        allowed = set(SAFE_ENV_KEYS) | {"EXTRA", "LC_CTYPE", "PWD"}  # Python may set LC_CTYPE
        self.assertLessEqual(set(env), allowed, "unexpected variables leaked")

    def test_child_environment_is_built_from_the_allow_list(self) -> None:
        env = child_environment(Spawn("x", env={"PATH": "/override"}))
        self.assertEqual(env["PATH"], "/override", "explicit pairs win")
        self.assertLessEqual(set(env), set(SAFE_ENV_KEYS))

    def test_cwd_is_honoured(self) -> None:
        with tempfile.TemporaryDirectory() as where:
            facts, _ = _facts(Spawn(sys.executable, ("-c", _INTROSPECTIVE), cwd=where))
            self.assertEqual(os.path.realpath(facts["cwd"]), os.path.realpath(where))

    def test_stderr_can_go_to_a_file_and_never_into_stdout(self) -> None:
        with tempfile.TemporaryDirectory() as where:
            path = os.path.join(where, "server.log")
            spawn = Spawn(sys.executable, ("-c", _INTROSPECTIVE))
            _facts(spawn, ProcessTransport(spawn, stderr=path))
            with open(path) as log:
                self.assertIn("banner on stderr", log.read())


class ProcessGroups(unittest.TestCase):
    def test_server_leads_its_own_group(self) -> None:
        facts, client = _facts(Spawn(sys.executable, ("-c", _INTROSPECTIVE)))
        self.assertEqual(facts["pgid"], facts["pid"])
        self.assertNotEqual(facts["pgid"], os.getpgid(0))

    def test_grandchild_is_gone_after_shutdown(self) -> None:
        spawn = Spawn(sys.executable, ("-c", _FORKING))
        client = start(spawn, OPTIONS)
        grandchild = json.loads(text_of(client.call_tool("facts", {})))["grandchild"]
        self.assertTrue(alive(grandchild))
        self.assertEqual(client.shutdown(), Exited(-9))
        self.assertTrue(
            wait_until(lambda: not alive(grandchild)),
            "the grandchild survived its group's retirement",
        )


class Failures(unittest.TestCase):
    def test_missing_executable(self) -> None:
        with self.assertRaises(TransportFailed) as caught:
            start(Spawn("/nonexistent/mcp-server"), OPTIONS)
        self.assertIsInstance(caught.exception.__cause__, FileNotFoundError)

    def test_bad_cwd(self) -> None:
        with self.assertRaises(TransportFailed):
            start(Spawn(sys.executable, ("-c", "pass"), cwd="/nonexistent/dir"), OPTIONS)

    def test_a_link_planted_at_the_stderr_path_is_refused(self) -> None:
        # Issue 17 item 4: a server that can write the log's directory replaces the
        # log with a link; the next session must not write through it.
        spawn = Spawn(sys.executable, ("-c", _INTROSPECTIVE))
        with tempfile.TemporaryDirectory() as where:
            target, missing = os.path.join(where, "crontab"), os.path.join(where, "absent")
            with open(target, "w") as planted:
                planted.write("untouched\n")
            for points_to in (target, missing):  # a dangling link must not create its target
                link = os.path.join(where, "server.log")
                os.symlink(points_to, link)
                with self.assertRaises(SymlinkRefused) as caught:
                    start(ProcessTransport(spawn, stderr=link), OPTIONS)
                self.assertEqual(caught.exception.path, link)
                self.assertIn(repr(link), str(caught.exception))
                os.unlink(link)
            with open(target) as planted:
                self.assertEqual(planted.read(), "untouched\n")
            self.assertFalse(os.path.lexists(missing))

    def test_unwritable_stderr_path(self) -> None:
        spawn = Spawn(sys.executable, ("-c", "pass"))
        with self.assertRaises(TransportFailed):
            start(ProcessTransport(spawn, stderr="/nonexistent/dir/log"), OPTIONS)


if __name__ == "__main__":
    unittest.main()
