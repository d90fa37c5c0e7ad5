"""``mcp-client replay``: replay a wire capture offline, or serve it (``--serve``).

The command over :mod:`mcp_client.replay.run`, which does the work and gives its exit
statuses, the table's (:mod:`mcp_client.cli.exits`): 0 the client matched the recording,
1 it diverged, 2 usage or an unreadable log; and 70 an internal error, 130 SIGINT, 143
SIGTERM.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from ..errors import LogError
from ..replay.run import EXIT_USAGE, replay_main, serve_main
from . import arguments, exits

__all__ = ["main"]

NAME = "replay"
_SERVE = arguments.Flag(("--serve",), "act as a stdio MCP server answering from LOG", "switch")
EPILOG = exits.summary(
    "replay",
    {
        "ok": "the client matched the recording",
        "no": "it diverged",
        "usage": "usage, or the log cannot be read",
    },
)


def _arguments(argv: Sequence[str], prog: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Replay an mcp_client wire capture offline, or serve it as a stdio "
        "MCP server (--serve).",
        epilog=EPILOG,
        formatter_class=arguments.HelpFormatter,
    )
    parser.add_argument("log", metavar="LOG", help="a capture log (JSON lines)")
    arguments.add(parser, _SERVE)
    arguments.add(parser, arguments.TIMEOUT, 10.0, "deadline of each replayed call (default 10s)")
    return arguments.note_aliases(parser).parse_args(argv)


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m mcp_client replay") -> int:
    """The replay command; returns the exit status (argparse exits 2 on bad usage)."""
    options = _arguments(sys.argv[1:] if argv is None else argv, prog)
    return exits.run_command(lambda: _replay(options), NAME, _say)


def _replay(options: argparse.Namespace) -> int:
    try:
        if options.serve:
            return serve_main(options.log, sys.stdin.buffer, sys.stdout.buffer, sys.stderr)
        return replay_main(options.log, options.timeout, sys.stdout)
    except LogError as e:
        _say(str(e))
        return EXIT_USAGE


def _say(text: str) -> None:
    sys.stderr.write("%s: %s\n" % (NAME, text))
    sys.stderr.flush()
