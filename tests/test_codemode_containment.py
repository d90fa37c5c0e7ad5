"""Issue 37: breaks of a program's containment, red-teamed against ``mcp-client serve``,
each mounted again here by a real jailed program, and what holds now.

3. As root, the jail's root was the host's root: a program read a mode-0600 file of root's
   and ``/etc/shadow`` (in the user namespace bwrap makes for root, the jail's uid, whatever
   it is called inside, is root outside: the owner). A root runner's program is nobody now,
   outside as inside, with no capability in any set.

The places a program could otherwise reach are made under ``/var/tmp`` (the jail's ``/tmp``
is its own).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

from test_serve import Host, HostCase

from mcp_client.jail import NOBODY

from serve_support import RUN_TIMEOUT
from support import server_argv

#: The notes server's argv, its directory to come: ``read_note`` answers a note's text,
#: which is JSON when the note is.
NOTES = server_argv("codemode_tools")
TOKEN = "sk-ant-secret-token"

#: A program that reads every path it is given: each one's text, its listing, or why not.
READ_ALL = """
import json, os, sys
found = {}
for path in %r:
    try:
        if os.path.isdir(path):
            found[path] = sorted(os.listdir(path))
        else:
            with open(path) as stream:
                found[path] = stream.read()
    except OSError as e:
        found[path] = "errno %%d" %% e.errno
print(json.dumps(found))
"""


def visible_dir(test: Any, prefix: str) -> str:
    """A fresh directory every uid may search, outside the jail's private ``/tmp``."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else os.path.dirname(__file__)
    path = os.path.realpath(tempfile.mkdtemp(prefix=prefix, dir=base))
    test.addCleanup(shutil.rmtree, path, True)
    os.chmod(path, 0o755)
    return path


class ContainmentCase(HostCase):
    def notes(self) -> Dict[str, Any]:
        return {"command": NOTES[0], "args": NOTES[1:] + [self.path("files")]}

    def serve(self, servers: Dict[str, Any], *flags: str, home: str = "") -> Host:
        if home:
            self.env["HOME"] = home
        return self.host(servers, *flags)

    def read_all(self, host: Host, paths: List[str]) -> Dict[str, Any]:
        result = host.run(READ_ALL % (paths,))
        self.assertNotIn("isError", result, result)
        found: Dict[str, Any] = json.loads(result["structuredContent"]["stdout"])
        return found


class NeverRoot(ContainmentCase):
    """3: a root runner's program reads no file of root's and holds no capability."""

    STATUS = """
    import json, os
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    caps = {k: int(v, 16) for k, v in status.items() if k.startswith("Cap")}
    open("made", "w").write("x")
    print(json.dumps({"ids": [os.getresuid(), os.getresgid(), os.getgroups()], "caps": caps,
                      "uid_map": open("/proc/self/uid_map").read().split()}))
    """

    def setUp(self) -> None:
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("a root runner is what this is about (not root: the jail is ours)")

    def test_a_mode_0600_file_of_roots_and_etc_shadow_are_out_of_reach(self) -> None:
        where = visible_dir(self, "containment-root-")
        secret = os.path.join(where, "root-only")
        with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as out:
            out.write(TOKEN)
        host = self.serve({"notes": self.notes()})
        found = self.read_all(host, [secret, "/etc/shadow"])
        self.assertEqual(found, {secret: "errno 13", "/etc/shadow": "errno 13"})

    def test_nobody_outside_and_in_with_no_capability(self) -> None:
        scratch = visible_dir(self, "containment-scratch-")
        os.chown(scratch, NOBODY, NOBODY)
        host = self.serve({"notes": self.notes()}, "--scratch", scratch)
        result = host.run(self.STATUS)
        self.assertNotIn("isError", result, result)
        report = json.loads(result["structuredContent"]["stdout"])
        self.assertEqual(report["ids"], [[NOBODY] * 3, [NOBODY] * 3, []])
        self.assertEqual(set(report["caps"].values()), {0}, report["caps"])
        self.assertEqual(report["uid_map"][:2], ["0", "0"], "the host's own uids: no mapping")
        made = os.stat(os.path.join(scratch, "made"))
        self.assertEqual((made.st_uid, made.st_gid), (NOBODY, NOBODY), "nobody's on the host")

    def test_a_scratch_nobody_cannot_write_is_refused_at_once(self) -> None:
        scratch = visible_dir(self, "containment-scratch-")
        config = self.config({"notes": self.notes()})
        argv = [sys.executable, "-m", "mcp_client", "codemode", "--config", config, "-"]
        done = subprocess.run(
            argv + ["--scratch", scratch],
            input="print('ran')\n",
            env=self.env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertNotIn("ran", done.stdout)
        self.assertIn("uid 65534", done.stderr)
        self.assertIn("chown 65534:65534 %s" % scratch, done.stderr)
