"""``python -m mcp_client``: see :mod:`mcp_client.cli`."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
