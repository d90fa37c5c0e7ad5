"""Where the real MCP servers from the npm registry live: ``tests/npm``.

The README's test command installs them (``npm ci --prefix tests/npm``) from the
pinned ``package.json`` and ``package-lock.json`` there. A test that needs one calls
``argv``; a missing server is a failure naming the install command, never a skip.
"""

from __future__ import annotations

import os
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
    """The command that starts ``executable`` from ``tests/npm``, with ``args``."""
    path = os.path.join(BIN, executable)
    if not os.path.exists(path):
        raise AssertionError(
            "%s is not installed; the README's test command installs it (%s)"
            % (executable, INSTALL)
        )
    return [path, *args]
