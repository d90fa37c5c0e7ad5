"""``mcp-client replay``: replay a wire capture offline, or serve it (``--serve``).

The command over :mod:`mcp_client.replay.run` (which does the work and gives the exit
statuses: 0 the client matched the recording, 1 it diverged, 2 usage or an unreadable
log).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from ..errors import LogError
from ..replay.run import EXIT_USAGE, replay_main, serve_main
from .arguments import seconds_argument

__all__ = ["main"]


def _arguments(argv: Sequence[str], prog: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Replay an mcp_client wire capture offline, or serve it as a stdio "
        "MCP server (--serve).",
        epilog="Exit status: 0 the client matched the recording; 1 it diverged; "
        "2 usage, or the log cannot be read.",
    )
    parser.add_argument("log", metavar="LOG", help="a capture log (JSON lines)")
    parser.add_argument(
        "--serve", action="store_true", help="act as a stdio MCP server answering from LOG"
    )
    parser.add_argument(
        "--timeout",
        type=seconds_argument,
        default=10.0,
        metavar="SECONDS",
        help="deadline of each replayed call (default 10)",
    )
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m mcp_client replay") -> int:
    """The replay command; returns the exit status (argparse exits 2 on bad usage)."""
    options = _arguments(sys.argv[1:] if argv is None else argv, prog)
    try:
        if options.serve:
            return serve_main(options.log, sys.stdin.buffer, sys.stdout.buffer, sys.stderr)
        return replay_main(options.log, options.timeout, sys.stdout)
    except LogError as e:
        sys.stderr.write("replay: %s\n" % e)
        return EXIT_USAGE
