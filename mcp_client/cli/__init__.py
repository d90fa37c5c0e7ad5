"""``mcp-client`` (or ``python -m mcp_client``): the package's commands.

::

    mcp-client [options] [-- COMMAND ARGS...]          the main job (mcp_client.cli.main_job)
    mcp-client --config FILE [--server NAME]... [options]
    mcp-client codemode --config FILE [options] [PROGRAM.py | -]   (mcp_client.cli.codemode)
    mcp-client serve --config FILE [options]   (code mode as an MCP server: mcp_client.cli.serve)
    mcp-client replay [--timeout DURATION] [--serve] LOG          (mcp_client.cli.replay)

(``mcp-client`` is the console script ``pip install`` writes; ``python -m
mcp_client`` is the same command, for a checkout.)

The main job starts a stdio MCP server (the demo server that ships in the package when
no ``COMMAND`` is given), lists its tools, and prints the server, the tools and the
generated ``cap.mcp`` surface; :mod:`mcp_client.cli.main_job` is its manual.

One command line for all four: the same flag for the same idea, and the same
argument types -- a size is ``512M`` and a duration ``90s`` wherever one is asked
for (:mod:`mcp_client.cli.arguments`; the older spellings of a flag still work); one
table of exit statuses, one meaning per number (:mod:`mcp_client.cli.exits`: 0 ok,
1 the answer is no, 2 usage, 3 no server could start, 4-10 what failed in the main
job, 70 internal error, 124 the program's wall clock, 130 SIGINT, 141 stdout closed,
143 SIGTERM); and what the main job prints, as text or JSON, in one place
(:mod:`mcp_client.cli.render`). ``docs/cli.md`` has both tables.
"""

from __future__ import annotations

import io
import sys
import warnings
from typing import Any, Callable, Optional, Sequence

# The names the main job's module had here, re-exported for code that imports them.
from ..text import sanitize as sanitize
from ..transport import Spawn as Spawn
from . import exits
from .arguments import bytes_argument as bytes_argument
from .arguments import count_argument as count_argument
from .arguments import seconds_argument as seconds_argument
from .main_job import EXIT_CODES, Inspection, run
from .main_job import CaptureFailed as CaptureFailed
from .main_job import Failure as Failure
from .main_job import UnknownTool as UnknownTool
from .main_job import check_jailed_paths as check_jailed_paths
from .main_job import wire_name as wire_name
from .render import NAME as NAME
from .render import name as _name  # noqa: F401
from .render import terminal as _terminal  # noqa: F401
from .settings import CONSOLE_SCRIPT as CONSOLE_SCRIPT
from .settings import DEFAULT_NOISE as DEFAULT_NOISE
from .settings import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from .settings import PROG as PROG
from .settings import Settings, UsageError, parse_arguments, program

__all__ = ["main", "run", "Settings", "parse_arguments", "EXIT_CODES"]

# The main job's statuses by their names before the table (mcp_client.cli.exits) held them.
EXIT_OK = exits.OK
EXIT_INTERNAL = exits.INTERNAL
EXIT_USAGE = exits.USAGE
EXIT_SPAWN = exits.SPAWN
EXIT_HANDSHAKE = exits.HANDSHAKE
EXIT_VERSION = exits.VERSION
EXIT_LISTING = exits.LISTING
EXIT_GENERATION = exits.GENERATION
EXIT_CALL = exits.CALL
EXIT_SHUTDOWN = exits.SHUTDOWN
EXIT_CAPTURE = exits.CAPTURE
EXIT_INTERRUPTED = exits.INTERRUPTED
EXIT_OUTPUT_CLOSED = exits.OUTPUT_CLOSED
EXIT_TERMINATED = exits.TERMINATED

#: Names this module gave before they were renamed, each with its new one.
_RENAMED = {"Session": ("Inspection", Inspection)}


def __getattr__(attribute: str) -> Any:
    if attribute in _RENAMED:
        new, value = _RENAMED[attribute]
        warnings.warn(
            "mcp_client.cli.%s is now %s" % (attribute, new), DeprecationWarning, stacklevel=2
        )
        return value
    raise AttributeError("module %r has no attribute %r" % (__name__, attribute))


def _safe_streams() -> None:
    # A terminal or pipe that cannot encode some character must not crash the
    # report after the server was already shut down: escape it instead.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _subcommand(word: str) -> Optional[Callable[[Sequence[str], str], int]]:
    """The ``main`` of the subcommand ``word`` names, imported only now (the main job
    does not pay for the others), or ``None``."""
    if word == "replay":
        from . import replay

        return replay.main
    if word == "codemode":
        from . import codemode

        return codemode.main
    if word == "serve":  # code mode as an MCP server
        from . import serve

        return serve.main
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command-line entry point; returns the exit status."""
    _safe_streams()
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _subcommand(argv[0]) if argv else None  # no option is positional: unambiguous
    if command is not None:
        return command(argv[1:], program() + " " + argv[0])
    return exits.run_command(lambda: _main_job(argv), NAME, _say)


def _main_job(argv: Sequence[str]) -> int:
    try:
        settings = parse_arguments(argv)
    except UsageError as e:
        sys.stderr.write("%s: usage failed: %s (see %s --help)\n" % (NAME, e, program()))
        return exits.USAGE
    return run(settings, sys.stdout, sys.stderr)


def _say(text: str) -> None:
    sys.stderr.write("%s: %s\n" % (NAME, text))
    sys.stderr.flush()
