"""What the ``mcp-client serve`` tests share: a config of real servers in a temporary
directory, the command that serves it, and the processes it made (to prove that none
is left behind).

The servers are the real ones the test extra and ``tests/npm`` install, as in
``tests/test_codemode.py``: ``mcp-server-time`` (PyPI, Python 3.10+), and the memory and
filesystem servers (npm); and the suite's own scripted server, where any will do (so
that those tests run on every Python the package supports).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import unittest
from typing import Any, Dict, List, Set

import npm_servers
from procs import process_stats
from support import LONG, server_argv, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
#: Long enough for three servers' start-up and a program on a loaded machine.
RUN_TIMEOUT = LONG * 8

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
#: The test suite's own good server (``tests/servers/scripted.py``): one tool, ``echo``.
SCRIPTED = {"command": server_argv("good")[0], "args": server_argv("good")[1:]}

#: A program against the three real servers, and what it prints.
WORK = """\
from cap.mcp import filesystem, memory, time
print("zone", time.get_current_time(timezone="UTC")["timezone"])
filesystem.write_file(path={path!r}, content="alpha\\n")
print("file", repr(filesystem.read_text_file(path={path!r})["content"]))
memory.create_entities(entities=[{{"name": "Ada", "entityType": "person",
                                   "observations": ["wrote the first program"]}}])
print("observations", memory.open_nodes(names=["Ada"])["entities"][0]["observations"])
"""
WORK_STDOUT = "zone UTC\nfile 'alpha\\n'\nobservations ['wrote the first program']\n"
WORK_CALLS = [
    ("time", "get_current_time", "ok"),
    ("filesystem", "write_file", "ok"),
    ("filesystem", "read_text_file", "ok"),
    ("memory", "create_entities", "ok"),
    ("memory", "open_nodes", "ok"),
]
#: A program mypy refuses (a keyword the function does not take), and mypy's words for it.
WRONG = 'from cap.mcp import time\nprint(time.get_current_time(zone="UTC"))\n'
WRONG_MESSAGE = 'line 2: Unexpected keyword argument "zone" for "get_current_time"'


class ServeCase(unittest.TestCase):
    """A temporary directory with a config of real servers; ``self.env`` runs this checkout."""

    def setUp(self) -> None:
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="serve-test-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        os.makedirs(self.path("files"))
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        )

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def require_time(self) -> None:
        if sys.version_info < (3, 10):  # as in test_codemode: the extra skips the time server
            self.skipTest(
                "mcp-server-time (and the SDK hosts) need Python >= 3.10; the test extra "
                "does not install them on %d.%d" % sys.version_info[:2]
            )

    def servers(self) -> Dict[str, Any]:
        """The time, memory and filesystem servers."""
        self.require_time()
        return dict(self.npm_servers(), time=TIME)

    def npm_servers(self) -> Dict[str, Any]:
        """The memory and filesystem servers (npm: any Python)."""
        return {
            "memory": {
                "command": npm_servers.argv(npm_servers.MEMORY)[0],
                "env": {"MEMORY_FILE_PATH": self.path("memory.jsonl")},
            },
            "filesystem": {
                "command": npm_servers.argv(npm_servers.FILESYSTEM)[0],
                "args": [self.path("files")],
            },
        }

    def config(self, servers: Dict[str, Any]) -> str:
        with open(self.path("servers.json"), "w") as out:
            json.dump({"mcpServers": servers}, out)
        return self.path("servers.json")

    def serve_args(self, servers: Dict[str, Any], *flags: str) -> List[str]:
        """``serve``'s arguments after the interpreter: ``-m mcp_client serve ...``."""
        return ["-m", "mcp_client", "serve", "--config", self.config(servers), *flags]

    def work(self) -> str:
        return WORK.format(path=self.path("files/notes.txt"))

    def assertAllGone(self, pids: Set[int]) -> None:
        self.assertTrue(wait_until(lambda: not live(pids)), "left running: %s" % live(pids))


def live(pids: Set[int]) -> List[int]:
    """Those of ``pids`` still running (not zombies)."""
    return [pid for pid, fields in process_stats() if pid in pids and fields[0] != "Z"]


def descendants(root: int) -> Set[int]:
    """``root`` and every process below it, now."""
    children: Dict[int, List[int]] = {}
    for pid, fields in process_stats():
        children.setdefault(int(fields[1]), []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, []))
    return found


def serve_processes(config: str) -> Set[int]:
    """Every ``serve`` process started with ``config``, and everything below them."""
    found: Set[int] = set()
    for pid, _ in process_stats():
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as cmdline:
                argv = cmdline.read().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and os.fsencode(config) in argv:
            found |= descendants(pid)
    return found
