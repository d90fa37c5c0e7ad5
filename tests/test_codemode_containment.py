"""Issue 37: three breaks of a program's containment, red-teamed against ``mcp-client serve``,
each mounted again here by a real jailed program, and what holds now.

1. The host's own config files were readable: ``~/.claude.json``, Claude Desktop's,
   Cursor's, VS Code's and Windsurf's MCP configs, tokens and all. Every MCP host's config
   and log places are hidden by default now (``jail.HOST_CONFIGS``, in ``DEFAULT_HIDDEN``);
   ``--hide PATH`` hides more, ``--show PATH`` shows one of them deliberately -- never a
   file the runner was given by name.
3. As root, the jail's root was the host's root: a program read a mode-0600 file of root's
   and ``/etc/shadow`` (in the user namespace bwrap makes for root, the jail's uid, whatever
   it is called inside, is root outside: the owner). A root runner's program is nobody now,
   outside as inside, with no capability in any set.
4. The shapes store was readable: a later run read a key that an earlier run's result had
   taught it (an email address). The store is hidden, as every file the runner was given
   by name is (the config, what jailed servers write, ``--keep-cap``'s package).

The places a program could otherwise reach are made under ``/var/tmp`` (the jail's ``/tmp``
is its own), open to every uid: what keeps the program out is the hiding, not a mode.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from typing import Any, Dict, List

from test_serve import Host, HostCase

from mcp_client.jail import HOST_CONFIGS, NOBODY

from serve_support import RUN_TIMEOUT
from support import server_argv

#: The notes server's argv, its directory to come: ``read_note`` answers a note's text,
#: which is JSON when the note is.
NOTES = server_argv("codemode_tools")
#: A key a result teaches the shapes store: somebody's address, not the program's to learn.
ADDRESS = "ada.lovelace@example.com"
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
#: What a path a program may not read reads as: hidden (empty) or out of its reach.
UNREAD = ("", [], "errno 2", "errno 13")


def visible_dir(test: Any, prefix: str) -> str:
    """A fresh directory every uid may search, outside the jail's private ``/tmp``."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else os.path.dirname(__file__)
    path = os.path.realpath(tempfile.mkdtemp(prefix=prefix, dir=base))
    test.addCleanup(shutil.rmtree, path, True)
    os.chmod(path, 0o755)
    return path


def plant(path: str, text: str) -> None:
    """``text`` in ``path`` (its directories made), readable by every uid."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    with open(path, "w") as out:
        out.write(text)
    os.chmod(path, 0o644)


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


class HostConfigs(ContainmentCase):
    """1: a home holding every host's config; the program reads none of them."""

    #: Each host's config (or a file in its directory), as the red team found them.
    CONFIGS = (
        ".claude.json",
        ".claude/.credentials.json",
        ".config/Claude/claude_desktop_config.json",
        "Library/Application Support/Claude/claude_desktop_config.json",
        "Library/Logs/Claude/mcp-server-github.log",
        ".cursor/mcp.json",
        ".config/Code/User/mcp.json",
        ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        "Library/Application Support/Code/User/settings.json",
        ".codeium/windsurf/mcp_config.json",
        ".continue/config.yaml",
        ".config/zed/settings.json",
        ".config/goose/config.yaml",
        ".lmstudio/mcp.json",
        ".gemini/settings.json",
        ".codex/config.toml",
        ".config/opencode/opencode.json",
        ".mcp-auth/mcp-remote-0.1/tokens.json",
    )

    def home(self) -> str:
        home = visible_dir(self, "containment-home-")
        for name in self.CONFIGS:
            plant(os.path.join(home, name), '{"env": {"TOKEN": "%s"}}' % TOKEN)
        plant(os.path.join(home, "notes.txt"), "mine")
        return home

    def test_no_hosts_config_is_read(self) -> None:
        home = self.home()
        paths = [os.path.join(home, name) for name in self.CONFIGS]
        host = self.serve({"scripted": self.scripted()}, home=home)
        found = self.read_all(host, paths + [os.path.join(home, "notes.txt")])
        self.assertEqual(found.pop(os.path.join(home, "notes.txt")), "mine", "the control")
        for path, text in found.items():
            self.assertIn(text, UNREAD, path)
        self.assertNotIn(TOKEN, json.dumps(found))
        every = {name.split("/")[0] for name in self.CONFIGS}
        self.assertTrue(
            all(any(entry[2:].startswith(top) for entry in HOST_CONFIGS) for top in every)
        )

    def test_hide_hides_more_and_show_shows_one_deliberately(self) -> None:
        home = self.home()
        zed = os.path.join(home, ".config/zed/settings.json")
        notes = os.path.join(home, "notes.txt")
        cursor = os.path.join(home, ".cursor/mcp.json")
        host = self.serve(
            {"scripted": self.scripted()},
            "--hide",
            notes,
            "--show",
            os.path.join(home, ".config/zed"),
            home=home,
        )
        found = self.read_all(host, [zed, notes, cursor])
        self.assertEqual(found[zed], '{"env": {"TOKEN": "%s"}}' % TOKEN, "shown, as asked")
        self.assertEqual(found[notes], "", "hidden, as asked")
        self.assertIn(found[cursor], UNREAD, "still hidden")

    def test_show_names_a_default_place_and_never_the_runners_own(self) -> None:
        home = self.home()
        config = os.path.join(home, ".cursor", "mcp.json")
        with open(config, "w") as out:
            json.dump({"mcpServers": {"scripted": self.scripted()}}, out)
        for show, said in (
            (os.path.join(home, "notes.txt"), "not a place hidden by default"),
            ("~/.cursor", "never sees"),
        ):
            argv = [sys.executable, "-m", "mcp_client", "serve", "--config", config]
            done = subprocess.run(
                argv + ["--show", show],
                env=dict(self.env, HOME=home),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
            )
            self.assertEqual(done.returncode, 2, done.stderr)
            self.assertIn(said, done.stderr)

    def scripted(self) -> Dict[str, Any]:
        argv = server_argv("good")
        return {"command": argv[0], "args": argv[1:]}


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


class ShapesStore(ContainmentCase):
    """4: what one run's result taught the store is not the next run's to read."""

    TEACH = (
        textwrap.dedent("""
    from cap.mcp import notes
    notes.write_note(name="contact", text='{"%s": "her number"}')
    print(notes.read_note(name="contact")["data"])
    """)
        % ADDRESS
    )

    def test_a_later_run_reads_nothing_of_the_store(self) -> None:
        shapes = os.path.join(visible_dir(self, "containment-shapes-"), "shapes")
        os.mkdir(shapes, 0o755)
        host = self.serve({"notes": self.notes()}, "--shapes", shapes)
        taught = host.run(self.TEACH)
        self.assertNotIn("isError", taught, taught)
        self.assertIn(ADDRESS, taught["structuredContent"]["stdout"])
        (kept,) = os.listdir(shapes)  # the control: the store did learn the key
        with open(os.path.join(shapes, kept)) as stream:
            self.assertIn(ADDRESS, stream.read())
        os.chmod(os.path.join(shapes, kept), 0o644)
        found = self.read_all(host, [shapes, os.path.join(shapes, kept)])
        self.assertEqual(found, {shapes: [], os.path.join(shapes, kept): "errno 2"})
