"""The ``mcp-client`` console script: the same command as ``python -m mcp_client``.

``setup.cfg`` declares it; its target is ``cli.main``, run here as the script
that ``pip install`` writes runs it (``sys.exit(main())`` with ``argv[0]`` its
name). When this very checkout is the one installed, the installed script is
run too.
"""

from __future__ import annotations

import configparser
import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
import unittest
from typing import Optional

from mcp_client import cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What pip's generated script does, under the script's own name.
AS_INSTALLED = "import sys; from %s import %s as main; sys.argv[0] = 'mcp-client'; sys.exit(main())"


def declared() -> str:
    """The ``mcp-client`` entry of setup.cfg's ``console_scripts``."""
    parser = configparser.ConfigParser()
    parser.read(os.path.join(REPO, "setup.cfg"))
    entries = parser["options.entry_points"]["console_scripts"].strip().splitlines()
    found = dict(line.split("=", 1) for line in entries)
    return {name.strip(): value.strip() for name, value in found.items()}["mcp-client"]


def installed_here() -> Optional[str]:
    """The installed ``mcp-client`` script when the installed distribution is this checkout.

    The installed one is the distribution with a ``direct_url.json`` (pip writes
    it; a checkout's own ``*.egg-info`` on ``sys.path`` has none).
    """
    for distribution in importlib.metadata.distributions(name="mcp_client"):
        origin = json.loads(distribution.read_text("direct_url.json") or "{}").get("url", "")
        if origin.startswith("file://"):
            if os.path.realpath(origin[len("file://") :]) != os.path.realpath(REPO):
                return None
            return os.path.join(os.path.dirname(sys.executable), "mcp-client")
    return None


class ConsoleScript(unittest.TestCase):
    def run_target(self, *args: str) -> "subprocess.CompletedProcess[str]":
        module, function = declared().split(":")
        return subprocess.run(
            [sys.executable, "-c", AS_INSTALLED % (module, function), *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=REPO),
        )

    def test_the_entry_point_is_the_clis_main(self) -> None:
        module, function = declared().split(":")
        self.assertIs(getattr(importlib.import_module(module), function), cli.main)

    def test_the_target_runs_the_same_command_under_its_own_name(self) -> None:
        done = self.run_target("--call", "add", '{"a": 2, "b": 2}')
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            done.stdout, 'call add: isError=false\n  text: 4\n  structuredContent: {"sum": 4}\n'
        )
        usage = self.run_target("stray")
        self.assertEqual(usage.returncode, cli.EXIT_CODES["usage"])
        self.assertIn(
            "put the server's command after --: mcp-client [options] -- stray "
            "(see mcp-client --help)",
            usage.stderr,
        )

    def test_the_installed_script_when_this_checkout_is_installed(self) -> None:
        script = installed_here()
        if script is None:  # another checkout is installed: its own run of this test checks it
            self.assertNotEqual(
                os.environ.get("MCP_CLIENT_REQUIRE_SCRIPT"),
                "1",
                "this checkout is not the installed one: pip install -e .",
            )
            return
        self.assertTrue(os.access(script, os.X_OK), "%s missing: pip install -e ." % script)
        done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(done.stdout.startswith("mcp_client "), done.stdout)


if __name__ == "__main__":
    unittest.main()
