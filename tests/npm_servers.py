"""Where the real MCP servers from the npm registry live: ``tests/npm``.

The README's test command installs them (``npm ci --prefix tests/npm``) from the
pinned ``package.json`` and ``package-lock.json`` there. A test that needs one calls
``argv``; where they are not installed, or Node.js is not on ``PATH``, that test is
skipped, and the reason names the install command.
"""

from __future__ import annotations

import os
import shutil
import unittest
from typing import List

NPM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "npm")
BIN = os.path.join(NPM, "node_modules", ".bin")
INSTALL = "npm ci --prefix tests/npm --no-audit --no-fund"

#: The servers the package.json pins, by the name of their executable.
EVERYTHING = "mcp-server-everything"
FILESYSTEM = "mcp-server-filesystem"
MEMORY = "mcp-server-memory"
SEQUENTIAL_THINKING = "mcp-server-sequential-thinking"


def argv(executable: str, *args: str) -> List[str]:
    """The command that starts ``executable`` from ``tests/npm``, with ``args``;
    ``unittest.SkipTest`` when it cannot start here."""
    require()
    path = os.path.join(BIN, executable)
    if not os.path.exists(path):
        raise unittest.SkipTest(
            "%s is not installed in tests/npm (install it: %s)" % (executable, INSTALL)
        )
    return [path, *args]


def require() -> None:
    """Skip the test (``unittest.SkipTest``) unless Node.js and ``tests/npm`` are here."""
    if shutil.which("node") is None:
        raise unittest.SkipTest(
            "Node.js is not on PATH: the npm servers need it (Node.js 18+, then %s)" % INSTALL
        )
    if not os.path.isdir(BIN):
        raise unittest.SkipTest("the npm servers are not installed (install them: %s)" % INSTALL)
