#!/usr/bin/env python3
"""``mcp-client codemode`` from a checkout; the runner is ``mcp_client.codemode``.

    python tools/codemode.py --config FILE [options] [PROGRAM.py | -]

Kept so that old command lines work; see ``mcp-client codemode --help``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mcp_client.cli.codemode import main  # noqa: E402  (after the checkout is on the path)

if __name__ == "__main__":
    sys.exit(main(prog="tools/codemode.py"))
