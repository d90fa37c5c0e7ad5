"""The main job's command line: its flags (:mod:`mcp_client.cli.arguments`' vocabulary
and its own), read into :class:`Settings` by :func:`parse_arguments`."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, replace
from typing import Dict, List, Mapping, NoReturn, Optional, Sequence, Tuple

from .. import config
from .._version import __version__
from ..config import ConfiguredServer
from ..errors import ConfigError
from ..jail import DEFAULT_HIDDEN, Jail
from ..jsonvalue import CorruptionReport, JsonValue, parse
from ..transport import Spawn
from . import arguments, demo_server, exits
from .arguments import (
    CONFIG,
    HIDE,
    JAIL_LIMITS,
    JAIL_SERVERS,
    SERVER,
    SERVER_JAIL,
    TIMEOUT,
    Flag,
)
from .render import name

__all__ = [
    "CONSOLE_SCRIPT",
    "DEFAULT_NOISE",
    "DEFAULT_TIMEOUT",
    "PROG",
    "Settings",
    "UsageError",
    "parse_arguments",
    "program",
]

PROG = "python -m mcp_client"
#: The console script's name (``setup.cfg``): the same command, installed.
CONSOLE_SCRIPT = "mcp-client"
DEFAULT_TIMEOUT = 30.0
#: Stdout lines that are not JSON skipped without ``--strict`` (``Options.tolerated_noise_lines``):
#: a user trying a server wants its tools, and is told about the noise.
DEFAULT_NOISE = 100


@dataclass(frozen=True)
class Settings:
    """The parsed command line."""

    spawn: Spawn
    timeout: float = DEFAULT_TIMEOUT
    server_name: Optional[str] = None
    quiet_server: bool = False
    source: bool = False
    call: Optional[Tuple[str, Dict[str, JsonValue]]] = None
    json_output: bool = False
    capture: Optional[str] = None
    jail: Optional[Jail] = None
    tolerated_noise: int = DEFAULT_NOISE
    surface: bool = True
    #: ``--config``: the servers to inspect, one after another (``spawn`` is then unused).
    servers: Tuple[ConfiguredServer, ...] = ()
    #: The config's warning lines, one per entry left out.
    skipped: Tuple[str, ...] = ()
    #: The config key of the one server these settings are for (in the output).
    label: Optional[str] = None


class UsageError(Exception):
    """A command line that cannot be run; exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


# ----------------------------------------------------------------------------- the flags

ENV = Flag(
    ("--env",),
    "set a variable in the server's (minimal) environment; KEY alone passes this shell's "
    "value of KEY; nothing else is passed; repeatable",
    "repeated",
    str,
    "KEY=VALUE",
)
CWD = Flag(("--cwd",), "the server's working directory", metavar="DIR")
SERVER_NAME = Flag(
    ("--server-name",),
    "name for the generated module (default: the server's own name)",
    metavar="NAME",
)
#: The main job's own flags, after the servers' and before the jail's.
_OWN = (
    SERVER_NAME,
    Flag(
        ("--quiet-server",),
        "discard the server's stderr (default: captured, and its last lines printed under "
        "a failure)",
        "switch",
    ),
    Flag(("--source",), "also print the generated module", "switch"),
)
_OUTPUT = (
    Flag(
        ("--surface",),
        "with --call, print the usual report (server, tools, surface) before the outcome",
        "switch",
    ),
    Flag(("--json",), "print one JSON object instead of text", "switch"),
    Flag(("--capture",), "record the wire log in FILE", metavar="FILE"),
    Flag(
        ("--strict",),
        "fail on any stdout line that is not JSON (default: skip up to %d, with a warning)"
        % DEFAULT_NOISE,
        "switch",
    ),
)
#: The jail's flags but the switch: each needs ``--jail-servers``.
_JAILED = SERVER_JAIL + (HIDE,) + JAIL_LIMITS
_JAIL_HELP = {
    arguments.MEMORY: "memory limit of the whole jail, and address space per process (512M, 2G)",
    arguments.CPU_SECONDS: "CPU time limit per process (30, 2m, ...)",
}

_USAGE = (
    "%(prog)s [options] [-- COMMAND ARGS...]\n"
    "       %(prog)s --config FILE [--server NAME]... [options]\n"
    "       %(prog)s replay [--timeout DURATION] [--serve] LOG\n"
    "       %(prog)s codemode --config FILE [options] [PROGRAM.py | -]\n"
    "       %(prog)s serve --config FILE [options]"
)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=program(),
        usage=_USAGE,
        formatter_class=arguments.HelpFormatter,
        description="Start an MCP server over stdio (the bundled demo server when no COMMAND "
        "is given), handshake, list its tools, and print the server, the tools and "
        "the generated cap.mcp surface.",
        epilog=exits.summary("mcp-client", {"spawn": "spawn"}),
    )
    arguments.add(parser, CONFIG, help=CONFIG.help + ", one after another")
    arguments.add_all(parser, (SERVER, ENV, CWD))
    arguments.add(
        parser,
        TIMEOUT,
        DEFAULT_TIMEOUT,
        "deadline of the handshake and of each request (default %gs)" % DEFAULT_TIMEOUT,
    )
    arguments.add_all(parser, _OWN)
    parser.add_argument(
        "--call",
        nargs=2,
        metavar=("NAME", "JSON"),
        help="call tool NAME (its wire name or the surface's Python name) with the JSON "
        "object JSON as its arguments, and print the outcome alone",
    )
    arguments.add_all(parser, _OUTPUT)
    jail = parser.add_argument_group("jail (bubblewrap; Linux)")
    arguments.add(jail, JAIL_SERVERS)
    for flag in _JAILED:
        arguments.add(jail, flag, help=_JAIL_HELP.get(flag))
    parser.add_argument("--version", action="version", version="mcp_client " + __version__)
    return arguments.note_aliases(parser)


def program() -> str:
    """How this command was run, for its messages: ``mcp-client`` (the console
    script) or ``python -m mcp_client``."""
    return CONSOLE_SCRIPT if os.path.basename(sys.argv[0]) == CONSOLE_SCRIPT else PROG


# ----------------------------------------------------------------------------- the settings


def parse_arguments(argv: Sequence[str], environ: Optional[Mapping[str, str]] = None) -> Settings:
    """The settings for ``argv`` (without the program name); :class:`UsageError` if none.

    ``environ`` (default ``os.environ``) gives ``--env KEY``'s value and the
    config file's ``${VAR}``s.
    """
    environ = os.environ if environ is None else environ
    options, command = _split(list(argv))
    parsed = _parse(options)
    if command is None:
        command = [sys.executable, demo_server.__file__]  # by path: needs no sys.path
    elif parsed.config is not None:
        raise UsageError("--config gives the servers: no COMMAND after -- with it")
    env = _environment(parsed.env, environ) or None
    settings = Settings(
        spawn=Spawn(command[0], tuple(command[1:]), env, parsed.cwd),
        timeout=parsed.timeout,
        server_name=parsed.server_name,
        quiet_server=parsed.quiet_server,
        source=parsed.source,
        call=None if parsed.call is None else _call(parsed.call),
        json_output=parsed.json,
        capture=parsed.capture,
        jail=_jail(parsed),
        tolerated_noise=0 if parsed.strict else DEFAULT_NOISE,
        surface=parsed.call is None or parsed.surface,
    )
    if parsed.surface and parsed.call is None:
        raise UsageError("--surface goes with --call (without it the surface is printed anyway)")
    return _configured(settings, parsed, environ)


def _parse(options: List[str]) -> argparse.Namespace:
    parsed, extra = _parser().parse_known_args(options)
    if extra and not extra[0].startswith("-"):  # the commonest slip: the server's command, bare
        raise UsageError(
            "unrecognized arguments: %s; put the server's command after --: "
            "%s [options] -- %s" % (" ".join(extra), program(), " ".join(extra))
        )
    if extra:
        raise UsageError("unrecognized arguments: %s" % " ".join(extra))
    return parsed


def _configured(
    settings: Settings, parsed: argparse.Namespace, environ: Mapping[str, str]
) -> Settings:
    """``settings`` with the servers of ``--config`` (and ``--server``), if given."""
    if parsed.config is None:
        if parsed.server:
            raise UsageError("--server needs --config")
        return settings
    given = [flag for flag in (ENV, CWD, SERVER_NAME) if getattr(parsed, flag.dest)]
    if given:  # each entry of the file says these for itself (its key names its module)
        raise UsageError(
            "%s cannot go with --config: the file's entries give them" % given[0].canonical
        )
    try:
        loaded = config.load(parsed.config, environ)
    except ConfigError as e:
        raise UsageError("--config: %s" % e) from None
    servers = _selected(loaded, parsed.server, parsed.config)
    for flag, value in (("--call", settings.call), ("--capture", settings.capture)):
        if value is not None and len(servers) > 1:
            raise UsageError(
                "%s is for one server: name it with --server (the file has %s)"
                % (flag, ", ".join(name(each) for each in loaded.names()))
            )
    return replace(settings, servers=servers, skipped=loaded.skipped)


def _selected(
    loaded: config.LoadedConfig, names: Sequence[str], path: str
) -> Tuple[ConfiguredServer, ...]:
    """The servers ``--server`` picks, in file order: all without it, else the ones it
    names; a usage error naming one that is not there."""
    if not names:
        return loaded.servers
    missing = [each for each in names if each not in loaded.names()]
    if missing:
        raise UsageError(
            "--server %s: no such server in %s; its servers: %s"
            % (name(missing[0]), name(path), ", ".join(name(each) for each in loaded.names()))
        )
    return tuple(server for server in loaded.servers if server.name in names)


def _jail(parsed: argparse.Namespace) -> Optional[Jail]:
    given = [flag for flag in _JAILED if _given(getattr(parsed, flag.dest))]
    if not parsed.jail_servers:
        if given:  # a limit asked for and silently not applied is the one thing never to do
            raise UsageError("%s needs %s" % (given[0].spelled(), JAIL_SERVERS.spelled()))
        return None
    try:
        return Jail(
            network=parsed.server_network,
            readable=_absolute(parsed.server_read),
            writable=_absolute(parsed.server_write),
            hidden=DEFAULT_HIDDEN + _absolute(parsed.hide),
            memory_bytes=parsed.memory,
            cpu_seconds=parsed.cpu_seconds,
            max_processes=parsed.max_tasks,
        )
    except ValueError as e:
        raise UsageError(str(e)) from None


def _given(value: object) -> bool:
    """A flag's value is there: not the default of a switch, a list or a value (0 is one)."""
    return value is not None and value is not False and value != []


def _absolute(paths: Sequence[str]) -> Tuple[str, ...]:
    return tuple(os.path.abspath(path) for path in paths)


def _split(argv: List[str]) -> Tuple[List[str], Optional[List[str]]]:
    if "--" not in argv:
        return argv, None
    cut = argv.index("--")
    if cut + 1 == len(argv):
        raise UsageError("no COMMAND after --")
    return argv[:cut], argv[cut + 1 :]


def _environment(pairs: Sequence[str], environ: Mapping[str, str]) -> Dict[str, str]:
    env: Dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not key or "\0" in pair:
            raise UsageError("--env needs KEY=VALUE or KEY, not %r" % pair)
        if not equals:  # KEY alone: our own value (an API key), and only the ones named
            if key not in environ:
                raise UsageError(
                    "--env %s: %s is not set here, so there is no value to pass" % (key, key)
                )
            value = environ[key]
        env[key] = value
    return env


def _call(pair: Sequence[str]) -> Tuple[str, Dict[str, JsonValue]]:
    tool, text = pair
    try:
        arguments_ = parse(text)
    except CorruptionReport as e:
        raise UsageError("--call %s: the arguments are not JSON: %s" % (tool, e.reason)) from None
    if not isinstance(arguments_, dict):
        raise UsageError("--call %s: the arguments must be a JSON object" % tool)
    return tool, arguments_
