#!/usr/bin/env python3
"""Replay a wire capture offline, or serve it as a stdio MCP server: the checkout's entry.

    python tools/replay.py [--timeout SECONDS] LOG
    python tools/replay.py --serve LOG

The same command as ``python -m mcp_client replay`` (which needs no checkout);
the whole of it, with its exit statuses, is :mod:`mcp_client.cli.replay` (the command)
over :mod:`mcp_client.replay.run` (the work).
"""

from __future__ import annotations

import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.isdir(os.path.join(_REPO, "mcp_client")) and _REPO not in sys.path:
    sys.path.insert(0, _REPO)  # run from a checkout: this tool belongs to this package

from mcp_client.cli.replay import main  # noqa: E402
from mcp_client.replay.run import drive, load  # noqa: E402,F401  (drive, load: as before)

if __name__ == "__main__":
    sys.exit(main(prog="tools/replay.py"))
