"""``mcp-client serve --config FILE``: code mode as an MCP server, for any MCP host.

::

    mcp-client serve --config FILE [--server NAME]... [--max-runs N] [runner flags]

(``python -m mcp_client serve`` is the same command.) Every server of FILE starts
once, when ``serve`` starts -- one that fails is named on stderr with its stderr tail
and left out -- and all are shared by every run. Then ``serve`` is a stdio MCP server
(protocol 2025-06-18, on this package's own codecs: :mod:`mcp_client.codemode._mcp_server`)
with four tools (:mod:`mcp_client.codemode._serve_tools`):

``search_tools(query, limit)``
    the generated functions that match, ranked, each with its signature line and doc;
``describe_tool(name)``
    one function's whole doc (``"server.function"``); an unknown name gets the closest;
``check_program(code)``
    ``compile()``, and mypy against the ``cap`` package where mypy is installed (its cache
    warmed in the background at the start): what would fail, each message with its line;
``run_program(code, timeout_s)``
    the program in a jailed child Python of its own (unless ``--no-jail``), its calls
    served by the shared servers: exit status, stdout, stderr, every call, the error.

The ``instructions`` and the descriptions tell a model how to begin; a surface under
4 KiB is shown whole in ``run_program``'s description. Calls asked for together run
together, a thread each, at most ``--max-runs`` (8) at once; one past that is answered
"busy". A program that failed -- raised, exited non-zero, hit a limit, was killed -- is
a result with ``isError``; nothing a program does reaches the server.

The runner's flags are the ``codemode`` command's: the policy (``--allow``,
``--allow-tool``, ``--deny-tool``), the limits (``--wall-clock``, ``--call-timeout``,
``--max-calls``, ``--max-output``, ``--memory``), ``--no-jail``, ``--jail-servers``.

The end: EOF on stdin (the host closed it), SIGTERM or SIGINT retire every program and
every server. stdout carries protocol lines only: the descriptor is taken for the
protocol at start, and fd 1 then points at stderr, so that nothing else can write
there (fd 0 is ``/dev/null``: no child reads the host's lines). Logs go to stderr.

Exit status (:mod:`mcp_client.cli.exits`): 0 after EOF; 2 usage, a config that cannot
be used, an unknown ``--server``, or a jail that cannot be had; 3 no server started; 70
an internal error; 130 after SIGINT; 143 after SIGTERM. Past its flags, a ``serve`` that
cannot run programs (2 or 3) still serves until EOF: its ``instructions`` and every
tool's answer say why, so that a host's model and its user can read it; then it exits
with that status.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple

from .._version import __version__
from ..codemode import _mcp_server, _serve_tools
from ..errors import CodeModeError, ConfigError, NoServerStarted
from . import arguments, exits
from .arguments import Flag

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..codemode import CodeMode

__all__ = ["main", "EXIT_USAGE", "EXIT_NO_SERVER", "NAME"]

LOGGER = logging.getLogger("mcp_client.serve")  # its name before the move: users configure it

NAME = "mcp-client-codemode"
EXIT_USAGE, EXIT_NO_SERVER = exits.USAGE, exits.SPAWN
#: Seconds the end waits for the running calls' threads once their programs are killed.
END_GRACE = 10.0


def main(argv: Optional[Sequence[str]] = None, prog: str = "mcp-client serve") -> int:
    """The command's entry point (see the module docstring); returns the exit status."""
    arguments = _parser(prog).parse_args(sys.argv[1:] if argv is None else argv)
    return exits.run_command(lambda: _main(arguments), "mcp-client serve")


def _main(arguments: argparse.Namespace) -> int:
    _log_to_stderr()
    protocol_in, protocol_out = _take_stdio()
    _on_signals(exits.stop)  # SIGINT too: 130 or 143, the end bounded (_ignore_more)
    try:
        return _serve(arguments, protocol_in, protocol_out)
    finally:
        os.close(protocol_in)
        os.close(protocol_out)


def _serve(arguments: argparse.Namespace, protocol_in: int, protocol_out: int) -> int:
    try:
        mode = _open(arguments)
    except (TypeError, ValueError) as e:  # a flag's value that cannot be used
        LOGGER.error("%s", e)
        return EXIT_USAGE
    except (ConfigError, CodeModeError) as e:
        # No server started (3); a config that cannot be used, an unknown --server, or a
        # jail that cannot be had (never an unjailed run instead): the codemode
        # command's 2. Said on stderr, and to the host until it goes (it would show a
        # server that exits at start as a closed connection, and the reason nowhere).
        LOGGER.error("%s", e)
        status = EXIT_NO_SERVER if isinstance(e, NoServerStarted) else EXIT_USAGE
        brief = e.brief if isinstance(e, NoServerStarted) and e.brief else str(e)
        _unavailable(arguments, brief, protocol_in, protocol_out).serve()
        return status
    server = None
    try:
        mode.warm_check()  # the first check_program as fast as the later ones
        server = _server(mode, arguments, protocol_in, protocol_out)
        server.serve()
        return 0
    finally:
        _on_signals(_ignore_more)  # the end is bounded: a second signal must not cut it short
        mode.close()  # every program killed, every server retired
        if server is not None and not server.join(END_GRACE):
            LOGGER.warning("a call's thread did not end within %g s", END_GRACE)


def _server(
    mode: "CodeMode", arguments: argparse.Namespace, protocol_in: int, protocol_out: int
) -> _mcp_server.Server:
    terms = _serve_tools.Terms(mode.limits, mode.policy, jailed=not arguments.no_jail)
    identity = _mcp_server.Identity(
        NAME, __version__, "Code mode", _serve_tools.instructions(mode, terms)
    )
    LOGGER.info("serving %s", ", ".join(mode.servers))
    return _mcp_server.Server(
        identity,
        _serve_tools.tools(mode, terms),
        read_fd=protocol_in,
        write_fd=protocol_out,
        max_running=arguments.max_runs,
    )


def _unavailable(
    arguments: argparse.Namespace, reason: str, protocol_in: int, protocol_out: int
) -> _mcp_server.Server:
    """A server whose instructions and every tool say ``reason``."""
    from . import codemode as codemode_cli

    options = codemode_cli.runner_options(arguments)  # read once already: they hold
    terms = _serve_tools.Terms(options.limits, options.policy, not arguments.no_jail)
    identity = _mcp_server.Identity(
        NAME, __version__, "Code mode", _serve_tools.unavailable_instructions(reason)
    )
    return _mcp_server.Server(
        identity,
        _serve_tools.unavailable(reason, terms),
        read_fd=protocol_in,
        write_fd=protocol_out,
        max_running=arguments.max_runs,
    )


# ----------------------------------------------------------------------------- arguments


_MAX_RUNS = Flag(
    ("--max-runs",),
    "tool calls answered at once (default %d); one more is answered busy" % _mcp_server.MAX_RUNNING,
    type=arguments.positive_count,
    metavar="N",
)
EPILOG = "\n".join(
    (
        "tools: search_tools, describe_tool, check_program, run_program.",
        exits.summary(
            "serve", {"ok": "the host closed stdin", "usage": "usage, config or no jail"}
        ),
        "Logs go to stderr; stdout is the protocol's.",
    )
)


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Code mode as a stdio MCP server, for any MCP host.",
        epilog=EPILOG,
        formatter_class=arguments.HelpFormatter,
    )
    from . import codemode as codemode_cli  # the flags `codemode` and `serve` share

    codemode_cli.add_runner_arguments(parser)
    arguments.add(parser, _MAX_RUNS, _mcp_server.MAX_RUNNING)
    return arguments.note_aliases(parser)


def _open(arguments: argparse.Namespace) -> "CodeMode":
    """Every server started (a warning line each for the ones left out)."""
    from . import codemode as codemode_cli

    return codemode_cli.open_runner(codemode_cli.runner_options(arguments), _warn)


def _warn(text: str) -> None:
    LOGGER.warning("%s", text)


# ----------------------------------------------------------------------------- process


def _take_stdio() -> Tuple[int, int]:
    """The host's two pipes, kept for the protocol alone (inheritable by no child)."""
    protocol_in, protocol_out = os.dup(0), os.dup(1)
    quiet = os.open(os.devnull, os.O_RDONLY)
    os.dup2(quiet, 0)
    os.close(quiet)
    os.dup2(2, 1)  # a stray print goes to stderr, never into the protocol
    return protocol_in, protocol_out


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mcp-client serve: %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO if os.environ.get("MCP_CLIENT_SERVE_VERBOSE") else logging.WARNING)


def _on_signals(handler: Any) -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handler)


def _ignore_more(signum: int, frame: object) -> None:
    LOGGER.warning("signal %d: already stopping", signum)
