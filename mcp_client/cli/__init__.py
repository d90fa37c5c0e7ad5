"""``mcp-client`` (or ``python -m mcp_client``): the main job, from a terminal, in one command.

::

    mcp-client [options] [-- COMMAND ARGS...]
    mcp-client --config FILE [--server NAME] [options]
    mcp-client replay [--timeout SECONDS] [--serve] LOG
    mcp-client codemode --config FILE [options] [PROGRAM.py | -]   (mcp_client.cli.codemode)
    mcp-client serve --config FILE [options]   (code mode as an MCP server: mcp_client.cli.serve)

(``mcp-client`` is the console script ``pip install`` writes; ``python -m
mcp_client`` is the same command, for a checkout.)

Starts a stdio MCP server -- ``COMMAND ARGS...`` after ``--``, or with no
command the demo server that ships in the package -- handshakes, lists its
tools, generates the ``cap.mcp.<server>`` module for them, and prints the
server's name, version and protocol version, one line per tool (wire name,
then title and description, cut to fit) and the generated surface. Then it
shuts the server down; every way out, including a failure and Ctrl-C, goes
through that shutdown, so no server is ever left running.

``--config FILE`` takes the servers from a config file instead (Claude
Desktop's, Cursor's and Claude Code's ``{"mcpServers": ...}`` or VS Code's
``{"servers": ...}``; see :mod:`mcp_client.config`), and ``--server NAME`` one
of them. Every server is prepared (published for the shutdown) before any
starts, all are started at once, and then each is shown as above, one after
another, under a ``config    NAME`` line; its module is named by its key
(``cap.mcp.NAME``). A server that fails is named on its failure's lines
(``mcp_client: NAME: handshake failed: ...``) and the others still run; the
exit status is the first failure's. An entry that is not stdio is named in one
warning line and left out. A config that cannot be used is a usage error, as
are an unknown ``--server`` (the line lists the names), ``--env``, ``--cwd``,
``--server-name`` or a ``COMMAND`` with ``--config`` (the file's entries say
them), and ``--call`` or ``--capture`` for more than one server. With
``--json``, one object: ``{"ok": ..., "servers": [<the usual object> + "name"]}``.

Options: ``--env KEY=VALUE`` (repeatable; the server gets only a small safe
environment plus these pairs, see :mod:`mcp_client.transport`; ``--env KEY``
passes this shell's own value of ``KEY``, and nothing else of it is passed),
``--cwd DIR``,
``--timeout SECONDS`` (handshake and each request; default 30),
``--server-name NAME`` (the module segment and the server named in every
``invoke``; default the server's ``serverInfo.name``), ``--quiet-server``
(the server's stderr to ``/dev/null``; by default it is captured, and its last
lines are printed under a failure they may explain), ``--source``
(also print the generated module), ``--call NAME JSON`` (call the tool
``NAME`` -- its wire name, or the Python name the surface shows, bare or after
its module -- with the JSON object ``JSON`` as its (wire) arguments, and print
its outcome alone: text blocks, other blocks by kind, ``isError``,
``structuredContent``; a name that is no tool's is refused before anything is
sent, and the line lists the tools), ``--surface`` (with ``--call``: print
the usual report before the outcome), ``--json`` (print one JSON object instead of the
text), ``--capture FILE`` (record the wire log there; replay it with
``python -m mcp_client replay FILE``, see :mod:`mcp_client.replay.run`),
``--strict`` (die on the first stdout line that is not
JSON; by default up to 100 such lines -- log lines and banners the spec forbids
-- are skipped, and one warning line on stderr says how many and shows the
first).

Jail options (see :mod:`mcp_client.jail`): ``--jail`` runs the server inside
bubblewrap -- no network, the filesystem read-only, credential places under
``$HOME`` hidden, a private ``/tmp``; without bwrap it fails (exit 3) rather
than run the server bare. With it: ``--allow-read DIR`` (repeatable; shows
a path the jail would cover, such as one under ``/tmp``, read-only),
``--allow-write DIR`` (repeatable),
``--allow-net``, ``--hide PATH`` (repeatable; added to the default list),
``--memory BYTES`` (``512M``, ``2G``: the whole jail's memory, a memory cgroup;
also an address-space limit per process),
``--cpu-seconds N`` and ``--max-processes N``. Any of them without ``--jail``
is a usage error. Before a jailed server starts, every element of its argv that
names an existing path (``/tmp/checkout/server.py``, ``--root=/tmp/data``) is
checked: one the jail would not show fails the start (exit 3), naming the
``--allow-read`` that shows it.

A server that fails prints, under the failure's line, the lines of its stderr
tail that read as an error (``error``, ``fatal``, ``exception``,
``traceback``, in any case) from before its last ten, then those last ten.

Server text (names, descriptions, results) is never printed raw: control and
direction-changing characters are removed or escaped first, so a hostile
server cannot drive the terminal.

Exit status, one per way to fail; each failure prints one line to stderr,
``mcp_client: <what> failed: <error class>: <reason>``, and no traceback:

====  ==========  ==============================================================
code  what        when
====  ==========  ==============================================================
0                 success (a tool result with ``isError: true`` is a result: 0)
1     internal    a bug in mcp_client (this one does print a traceback)
2     usage       bad options or arguments: unknown option, ``--env KEY`` with
                  ``KEY`` unset here, ``--call`` JSON that is not a JSON
                  object, a capture file that cannot be opened, a config file
                  that cannot be used, an unknown ``--server``
3     spawn       the server could not be started (no such command, bad cwd)
4     handshake   ``initialize`` failed, timed out or was refused, the server
                  died or wrote garbage first, or it declares no tools
5     version     the server chose a protocol version this client does not speak
6     listing     ``tools/list`` failed (malformed or lying listing, too many
                  pages, server error, death, timeout)
7     generation  the code generator refused the listing (too many tools, a
                  name collision, a surface too large)
8     call        ``--call`` failed: no such tool (nothing sent), server error
                  (bad arguments), malformed result, death, timeout
9     shutdown    the server could not be confirmed gone (retirement unconfirmed)
10    capture     ``--capture``: the log is incomplete -- the file could not be
                  created or written (a full disk, an I/O error) or entries were
                  dropped; after a failure of its own the session's code stays,
                  and a second line says the capture is incomplete
130   interrupt   interrupted (Ctrl-C or SIGTERM); the server was shut down first
141   output      stdout was closed early (``... | head``); the server was shut
                  down first, and nothing is printed about it
====  ==========  ==============================================================

With ``--json``, the object is printed on failure too, with ``"ok": false`` and
an ``"error"`` member (``what``, ``exit``, ``type``, ``message``) beside
whatever was learned before the failure. With ``--capture`` it has a
``"capture"`` member: ``file``, ``complete`` and, when it is not, why
(``incomplete``: entries not recorded, and the stream's error).
"""

from __future__ import annotations

import argparse
import errno
import io
import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, replace
from types import FrameType
from typing import (
    IO,
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    NoReturn,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
)

from .. import config
from .. import jail as jail_plan
from .._os import threads as _threads
from .._os.files import open_for_writing
from .._version import __version__
from ..client import Client, Options, prepare
from ..config import ConfiguredServer
from ..errors import (
    CleanupUnconfirmed,
    ConfigError,
    GenerateError,
    McpClientError,
    RetirementError,
    StartError,
    StderrTail,
    SymlinkRefused,
    TransportFailed,
    VersionUnsupported,
)
from ..jail import DEFAULT_HIDDEN, Jail
from ..jsonvalue import CorruptionReport, JsonValue, parse
from ..protocol import CallToolResult, InitializeResult, Text, ToolDescriptor
from ..text import escape, inert, sanitize, truncate
from ..transport import CAPTURE, Exited, ProcessTransport, Retirement, Spawn, child_environment
from . import demo_server
from .arguments import seconds_argument

if TYPE_CHECKING:
    from ..codegen import Generated

__all__ = ["main", "run", "Settings", "parse_arguments", "EXIT_CODES"]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_SPAWN = 3
EXIT_HANDSHAKE = 4
EXIT_VERSION = 5
EXIT_LISTING = 6
EXIT_GENERATION = 7
EXIT_CALL = 8
EXIT_SHUTDOWN = 9
EXIT_CAPTURE = 10
EXIT_INTERRUPTED = 130
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE, as a shell reports a writer killed by it

#: What failed -> its exit status (the table in the module doc).
EXIT_CODES: Dict[str, int] = {
    "internal": EXIT_INTERNAL,
    "usage": EXIT_USAGE,
    "spawn": EXIT_SPAWN,
    "handshake": EXIT_HANDSHAKE,
    "version": EXIT_VERSION,
    "listing": EXIT_LISTING,
    "generation": EXIT_GENERATION,
    "call": EXIT_CALL,
    "shutdown": EXIT_SHUTDOWN,
    "capture": EXIT_CAPTURE,
    "interrupt": EXIT_INTERRUPTED,
    "output": EXIT_OUTPUT_CLOSED,
}

PROG = "python -m mcp_client"
#: The console script's name (``setup.cfg``): the same command, installed.
CONSOLE_SCRIPT = "mcp-client"
#: How stderr lines start.
NAME = "mcp_client"
DEFAULT_TIMEOUT = 30.0
#: Stdout lines that are not JSON skipped without ``--strict`` (``Options.tolerated_noise_lines``):
#: a user trying a server wants its tools, and is told about the noise.
DEFAULT_NOISE = 100
#: Characters of a tool's title and description shown on its line.
_TOOL_TEXT = 72
#: Characters of a failure's reason shown on the one stderr line.
_REASON = 500
#: Lines of the server's stderr printed under a failure it explains.
_TAIL_LINES = 10
#: Characters of a wire name or a server name shown.
_NAME = 64
#: A server's stderr line that reads as its reason for failing.
_READS_AS_ERROR = re.compile(r"error|fatal|exception|traceback", re.IGNORECASE)


class Failure(Exception):
    """One expected failure: what failed, and the error that says why."""

    def __init__(self, what: str, error: BaseException) -> None:
        super().__init__(what)
        self.what = what
        self.error = error

    @property
    def code(self) -> int:
        return EXIT_CODES[self.what]

    def line(self, label: Optional[str] = None) -> str:
        """The one stderr line: ``mcp_client: <what> failed: <error class>: <reason>``
        (``mcp_client: <label>: ...`` for a server of a config file)."""
        name = NAME if label is None else "%s: %s" % (NAME, _name(label))
        if self.what == "interrupt":
            return "%s: interrupted; the server was shut down" % name
        if self.what == "usage":
            return "%s: usage failed: %s" % (name, sanitize(str(self.error), _REASON))
        detail = "%s: %s" % (type(self.error).__name__, _headline(self.error))
        return "%s: %s failed: %s" % (name, self.what, sanitize(detail, _REASON))

    def tail(self, label: Optional[str] = None) -> List[str]:
        """The server's stderr lines that explain its death: those that read as an
        error anywhere in the tail, then the last few."""
        error = self.error
        if not isinstance(error, StderrTail) or not error.stderr_tail:
            return []
        name = NAME if label is None else "%s: %s" % (NAME, _name(label))
        lines = error.stderr_tail.split("\n")
        last = lines[-_TAIL_LINES:]
        # The reason is often logged early and followed by a stack of noise (dbhub:
        # line 5 of 20), so the lines that read as one are shown wherever they are.
        earlier = [line for line in lines[:-_TAIL_LINES] if _READS_AS_ERROR.search(line)]
        shown: List[str] = []
        if earlier:
            earlier = earlier[-_TAIL_LINES:]
            shown += [
                "%s: server stderr, %d earlier line%s that read%s as an error:"
                % (
                    name,
                    len(earlier),
                    "" if len(earlier) == 1 else "s",
                    "s" if len(earlier) == 1 else "",
                )
            ] + ["  | " + line for line in earlier]
        return (
            shown
            + ["%s: server stderr, last %d lines:" % (name, len(last))]
            + ["  | " + line for line in last]
        )


def _headline(error: BaseException) -> str:
    """An error's text without the stderr tail its ``str()`` may end with."""
    return error.headline() if isinstance(error, StderrTail) else str(error)


# ----------------------------------------------------------------------------- arguments


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


class CaptureFailed(Exception):
    """The ``--capture`` log is incomplete, or could not be made; exit status 10."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=program(),
        usage="%(prog)s [options] [-- COMMAND ARGS...]\n"
        "       %(prog)s --config FILE [--server NAME] [options]\n"
        "       %(prog)s replay [--timeout SECONDS] [--serve] LOG\n"
        "       %(prog)s codemode --config FILE [options] [PROGRAM.py | -]\n"
        "       %(prog)s serve --config FILE [options]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start an MCP server over stdio (the bundled demo server when no COMMAND "
        "is given), handshake, list its tools, and print the server, the tools and "
        "the generated cap.mcp surface.",
        epilog="exit status: 0 ok, 2 usage, 3 spawn, 4 handshake, 5 version, 6 listing, "
        "7 generation, 8 call, 9 shutdown, 10 capture incomplete, 130 interrupted, "
        "141 output closed, "
        "1 internal error",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="inspect the servers of FILE ({\"mcpServers\": ...} or VS "
        "Code's {\"servers\": ...}), one after another",
    )
    parser.add_argument(
        "--server", metavar="NAME", help="with --config: only the server NAME of the file"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a variable in the server's (minimal) environment; KEY alone "
        "passes this shell's value of KEY; nothing else is passed; repeatable",
    )
    parser.add_argument("--cwd", metavar="DIR", help="the server's working directory")
    parser.add_argument(
        "--timeout",
        type=seconds_argument,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="deadline of the handshake and of each request (default %g)" % DEFAULT_TIMEOUT,
    )
    parser.add_argument(
        "--server-name",
        metavar="NAME",
        help="name for the generated module (default: the server's own name)",
    )
    parser.add_argument(
        "--quiet-server",
        action="store_true",
        help="discard the server's stderr (default: captured, and its "
        "last lines printed under a failure)",
    )
    parser.add_argument("--source", action="store_true", help="also print the generated module")
    parser.add_argument(
        "--call",
        nargs=2,
        metavar=("NAME", "JSON"),
        help="call tool NAME (its wire name or the surface's Python name) "
        "with the JSON object JSON as its arguments, and print the outcome "
        "alone",
    )
    parser.add_argument(
        "--surface",
        action="store_true",
        help="with --call, print the usual report (server, tools, surface) before the outcome",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--capture", metavar="FILE", help="record the wire log in FILE")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail on any stdout line that is not JSON (default: skip up to "
        "%d, with a warning)" % DEFAULT_NOISE,
    )
    _jail_arguments(parser)
    parser.add_argument("--version", action="version", version="mcp_client " + __version__)
    return parser


def program() -> str:
    """How this command was run, for its messages: ``mcp-client`` (the console
    script) or ``python -m mcp_client``."""
    return CONSOLE_SCRIPT if os.path.basename(sys.argv[0]) == CONSOLE_SCRIPT else PROG


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
    settings = Settings(
        spawn=Spawn(
            command[0], tuple(command[1:]), _environment(parsed.env, environ) or None, parsed.cwd
        ),
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
        if parsed.server is not None:
            raise UsageError("--server needs --config")
        return settings
    given = [
        flag
        for flag, value in (
            ("--env", parsed.env),
            ("--cwd", parsed.cwd),
            ("--server-name", parsed.server_name),
        )
        if value
    ]
    if given:  # each entry of the file says these for itself (its key names its module)
        raise UsageError("%s cannot go with --config: the file's entries give them" % given[0])
    try:
        loaded = config.load(parsed.config, environ)
    except ConfigError as e:
        raise UsageError("--config: %s" % e) from None
    servers = _selected(loaded, parsed.server, parsed.config)
    for flag, given_flag in (("--call", settings.call), ("--capture", settings.capture)):
        if given_flag is not None and len(servers) > 1:
            raise UsageError(
                "%s is for one server: name it with --server (the file has %s)"
                % (flag, ", ".join(_name(name) for name in loaded.names()))
            )
    return replace(settings, servers=servers, skipped=loaded.skipped)


def _selected(
    loaded: config.LoadedConfig, name: Optional[str], path: str
) -> Tuple[ConfiguredServer, ...]:
    """The servers ``--server`` picks: all without it, the one it names, or a usage error."""
    if name is None:
        return loaded.servers
    servers = tuple(server for server in loaded.servers if server.name == name)
    if not servers:
        raise UsageError(
            "--server %s: no such server in %s; its servers: %s"
            % (_name(name), _name(path), ", ".join(_name(each) for each in loaded.names()))
        )
    return servers


def _jail_arguments(parser: argparse.ArgumentParser) -> None:
    jail = parser.add_argument_group("jail (bubblewrap; Linux)")
    jail.add_argument(
        "--jail",
        action="store_true",
        help="run the server in a jail: no network, read-only filesystem, "
        "credentials hidden, private /tmp",
    )
    jail.add_argument(
        "--allow-read",
        action="append",
        default=[],
        metavar="DIR",
        help="show DIR read-only even where the jail covers it (under /tmp); repeatable",
    )
    jail.add_argument(
        "--allow-write",
        action="append",
        default=[],
        metavar="DIR",
        help="let the jailed server write under DIR; repeatable",
    )
    jail.add_argument(
        "--allow-net", action="store_true", help="let the jailed server use the network"
    )
    jail.add_argument(
        "--hide",
        action="append",
        default=[],
        metavar="PATH",
        help="hide PATH too (besides ~/.ssh, ~/.aws, ...); repeatable",
    )
    jail.add_argument(
        "--memory",
        type=bytes_argument,
        metavar="BYTES",
        help="memory limit of the whole jail, and address space per process (512M, 2G, ...)",
    )
    jail.add_argument(
        "--cpu-seconds", type=count_argument, metavar="N", help="CPU time limit per process"
    )
    jail.add_argument(
        "--max-processes",
        type=count_argument,
        metavar="N",
        help="processes and threads in the jail, all counted",
    )


def bytes_argument(text: str) -> int:
    """argparse type for a positive size: digits with an optional K, M or G (powers of 1024)."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) == 0:
        raise argparse.ArgumentTypeError("not a positive size: %r" % text)
    return int(digits) * scale


def count_argument(text: str) -> int:
    """argparse type for a positive integer."""
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError("not a positive integer: %r" % text)
    return int(text)


def _jail(parsed: argparse.Namespace) -> Optional[Jail]:
    given = [
        flag
        for flag, value in (
            ("--allow-read", parsed.allow_read),
            ("--allow-write", parsed.allow_write),
            ("--allow-net", parsed.allow_net),
            ("--hide", parsed.hide),
            ("--memory", parsed.memory),
            ("--cpu-seconds", parsed.cpu_seconds),
            ("--max-processes", parsed.max_processes),
        )
        if value
    ]
    if not parsed.jail:
        if given:  # a limit asked for and silently not applied is the one thing never to do
            raise UsageError("%s needs --jail" % given[0])
        return None
    try:
        return Jail(
            network=parsed.allow_net,
            readable=tuple(os.path.abspath(path) for path in parsed.allow_read),
            writable=tuple(os.path.abspath(path) for path in parsed.allow_write),
            hidden=DEFAULT_HIDDEN + tuple(os.path.abspath(path) for path in parsed.hide),
            memory_bytes=parsed.memory,
            cpu_seconds=parsed.cpu_seconds,
            max_processes=parsed.max_processes,
        )
    except ValueError as e:
        raise UsageError(str(e)) from None


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
    name, text = pair
    try:
        arguments = parse(text)
    except CorruptionReport as e:
        raise UsageError("--call %s: the arguments are not JSON: %s" % (name, e.reason)) from None
    if not isinstance(arguments, dict):
        raise UsageError("--call %s: the arguments must be a JSON object" % name)
    return name, arguments


# ----------------------------------------------------------------------------- the session


@dataclass
class Session:
    """What one run learned, step by step; the text and JSON output are made from it."""

    settings: Settings
    initialized: Optional[InitializeResult] = None
    tools: Optional[Tuple[ToolDescriptor, ...]] = None
    generated: Optional[Generated] = None
    called: Optional[CallToolResult] = None
    called_tool: Optional[str] = None  # the wire name --call's NAME stands for
    apart: bool = False  # a blank line before the report (a config's servers after the first)
    retirement: Optional[Retirement] = None
    failure: Optional[Failure] = None
    noise: Tuple[int, Optional[str]] = (0, None)  # lines skipped, the first one shown
    capture_lost: Optional[str] = None  # why the --capture log is incomplete, if it is


def run(settings: Settings, out: IO[str], err: IO[str]) -> int:
    """Run the main job with ``settings``; returns the exit status."""
    session = Session(settings)
    try:
        capture = _open_capture(settings.capture)
    except Failure as failure:
        session.failure = failure
    else:
        try:
            if settings.servers:  # --capture is for one server (_configured): it gets the log
                code = _run_configured(settings, capture, out, err)
            else:
                _run_client(session, capture, out)
        finally:
            if capture is not None:
                _close_capture(session, capture)
        if settings.servers and (session.capture_lost is None or code != EXIT_OK):
            return code
    _judge_capture(session)
    return _finish(session, out, err)


def _open_capture(path: Optional[str]) -> Optional[IO[str]]:
    if path is None:
        return None
    try:  # never through a link a server planted (see _files)
        fd = open_for_writing(path, os.O_CREAT | os.O_TRUNC, "the capture log")
        return os.fdopen(fd, "w", encoding="utf-8")
    except SymlinkRefused as e:
        raise Failure("usage", UsageError("--capture: %s" % e.reason)) from None
    except OSError as e:
        if e.errno in _DISK_FULL:  # the machine's state, not the command line's fault
            raise Failure(
                "capture", CaptureFailed("cannot create %s: %s" % (path, e.strerror or e))
            ) from None
        raise Failure(
            "usage", UsageError("--capture: cannot open %s: %s" % (path, e.strerror or e))
        ) from None


def _prepare(settings: Settings, capture: Optional[IO[str]]) -> Client:
    # Captured, not inherited: the server's last lines are printed under a
    # failure rather than mixed into ours as it runs (--quiet-server: dropped).
    stderr = subprocess.DEVNULL if settings.quiet_server else CAPTURE
    options = Options(
        handshake_timeout=settings.timeout,
        request_timeout=settings.timeout,
        capture=capture,
        tolerated_noise_lines=settings.tolerated_noise,
    )
    return prepare(ProcessTransport(settings.spawn, stderr=stderr, jail=settings.jail), options)


def _run_client(session: Session, capture: Optional[IO[str]], out: IO[str]) -> None:
    client = _prepare(session.settings, capture)
    _session(client, session, out, lambda: _connect_jailed(client, session.settings))


def _connect_jailed(client: Client, settings: Settings) -> InitializeResult:
    if settings.jail is not None:
        check_jailed_paths(settings.jail, settings.spawn)
    return client.connect()


def check_jailed_paths(jail: Jail, spawn: Spawn) -> None:
    """:class:`TransportFailed` naming the ``--allow-read`` needed when an element
    of the server's argv names an existing path the jail would not show (a
    script in a checkout under ``/tmp``); the jail's own check sees only the
    executable, and the server would fail inside, far from its cause."""
    from ..jail import spawn as jailer  # only with --jail

    base = spawn.cwd or os.getcwd()
    named: Dict[str, str] = {}  # real path -> the argument that names it
    for arg in spawn.argv():
        piece = arg.partition("=")[2] if arg.startswith("-") else arg  # --root=/tmp/x too
        path = os.path.join(base, piece)
        if piece and os.path.lexists(path):
            named.setdefault(os.path.realpath(path), arg)
    host = jailer.look(jail, spawn, child_environment(spawn))
    for real in jail_plan.unseen(jail, host, list(named)):
        shown = real if os.path.isdir(real) else os.path.dirname(real)
        raise TransportFailed(
            "the server's argument %s names %s, which the jail would not "
            "show (/tmp is private, hidden paths are empty): --allow-read %s "
            "shows it read-only" % (named[real], real, shown)
        )


def _session(
    client: Client, session: Session, out: IO[str], connect: Callable[[], InitializeResult]
) -> None:
    """The steps on ``client``, whose handshake is ``connect()``; then its retirement."""
    try:
        _steps(client, session, out, connect)
    except Failure as failure:
        session.failure = failure
    except KeyboardInterrupt as interrupt:
        session.failure = Failure("interrupt", interrupt)
    finally:
        _retire(client, session)
        session.noise = (client.noise_skipped, client.first_noise)
        _note_capture(session, client)


def _steps(
    client: Client, session: Session, out: IO[str], connect: Callable[[], InitializeResult]
) -> None:
    settings = session.settings
    report = None if settings.json_output or not settings.surface else out
    session.initialized = _step("handshake", connect)
    _print(report, _server_text(session))
    session.tools = _step("listing", client.list_tools)
    _print(report, _tools_text(session.tools))
    name = settings.server_name or settings.label or session.initialized.server_info.name
    from .. import codegen  # here: a client that never generates does not load the generator

    info = session.initialized
    session.generated = _step(
        "generation", lambda: codegen.generate(name, session.tools or (), info=info)
    )
    _print(report, _surface_text(session.generated))
    if settings.source:
        _print(None if settings.json_output else out, _source_text(session.generated))
    if settings.call is not None:
        name, arguments = settings.call
        try:
            tool = wire_name(name, session.tools, session.generated)
        except UnknownTool as e:
            raise Failure("call", e) from None
        session.called_tool = tool
        session.called = _step("call", lambda: client.call_tool(tool, arguments))
        _print(
            None if settings.json_output else out,
            _call_text(tool, session.called, leading=report is not None or settings.source),
        )


class UnknownTool(Exception):
    """``--call`` named no tool of the server: refused before anything is sent; exit 8."""


def wire_name(name: str, tools: Sequence[ToolDescriptor], generated: Generated) -> str:
    """The wire name of the tool ``name`` stands for: a wire name itself, or the
    Python name the surface shows, bare or after its module (``module.function``,
    ``cap.mcp.module.function``); :class:`UnknownTool` listing them otherwise.
    The Python names are the generator's own (``Generated.tools``)."""
    wire = [tool.name for tool in tools]
    if name in wire:
        return name
    python = {tool.function: tool.wire_name for tool in generated.tools}
    module = generated.module_name
    for prefix in (module + ".", module[len("cap.mcp.") :] + "."):
        if name.startswith(prefix) and name[len(prefix) :] in python:
            return python[name[len(prefix) :]]
    if name in python:
        return python[name]
    named = {tool: function for function, tool in python.items() if function != tool}
    listed = ", ".join(
        "%s (%s)" % (_name(tool), named[tool]) if tool in named else _name(tool) for tool in wire
    )
    raise UnknownTool(
        "no tool %s, so nothing was sent; the server's tools: %s" % (_name(name), listed or "none")
    )


# ----------------------------------------------------------------------------- --config


def _run_configured(
    settings: Settings, capture: Optional[IO[str]], out: IO[str], err: IO[str]
) -> int:
    """Every server of the config file: all prepared (the census), all connected
    at once, then inspected one after another in the usual output."""
    for line in settings.skipped:
        err.write("%s: warning: %s\n" % (NAME, line))
    sessions = [
        Session(replace(settings, spawn=server.spawn, label=server.name, servers=(), skipped=()))
        for server in settings.servers
    ]
    # Published before any server runs (SEED.md's census): whatever happens
    # from here on, the finally below retires every one of them.
    clients = [_prepare(session.settings, capture) for session in sessions]
    connecting: List[_Connecting] = []
    try:
        connecting = [
            _Connecting(_connector(client, session.settings))
            for client, session in zip(clients, sessions)
        ]
        return _inspect_each(sessions, clients, connecting, out, err)
    finally:
        _retire_all(sessions, clients, connecting)
        if settings.json_output:
            _json_out(
                out,
                {
                    "ok": all(s.failure is None for s in sessions),
                    "servers": [dict(_json_report(s), name=s.settings.label) for s in sessions],
                },
            )


def _inspect_each(
    sessions: Sequence[Session],
    clients: Sequence[Client],
    connecting: Sequence["_Connecting"],
    out: IO[str],
    err: IO[str],
) -> int:
    """Each server's report in file order; the first failure's exit status."""
    code, shown = EXIT_OK, False  # shown: a report was printed, so the next is set apart
    for session, client, handshake in zip(sessions, clients, connecting):
        session.apart = shown
        _session(client, session, out, handshake.result)
        shown = shown or session.initialized is not None
        _judge_capture(session)
        failed = _report_failure(session, err)
        if failed == EXIT_INTERRUPTED:
            return failed
        code = code or failed
    return code


def _retire_all(
    sessions: Sequence[Session], clients: Sequence[Client], connecting: Sequence["_Connecting"]
) -> None:
    for client in clients:
        client.stop()  # all at once: each retirement below then only waits for its own
    for session, client in zip(sessions, clients):
        if session.retirement is None and session.failure is None:
            _retire(client, session)  # not reached (an interrupt): retired all the same
    for handshake in connecting:
        handshake.join()


def _report_failure(session: Session, err: IO[str]) -> int:
    _warn_of_noise(session.noise, err)
    failure = session.failure
    if failure is None:
        return EXIT_OK
    label = session.settings.label
    for line in [failure.line(label)] + failure.tail(label):
        err.write(line + "\n")
    err.flush()
    return failure.code


def _connector(client: Client, settings: Settings) -> Callable[[], InitializeResult]:
    return lambda: _connect_jailed(client, settings)


class _Connecting:
    """One client's ``connect``, in a thread of its own, so that all servers start at once."""

    def __init__(self, connect: Callable[[], InitializeResult]) -> None:
        self._connect_once = connect
        self._result: Optional[InitializeResult] = None
        self._error: Optional[BaseException] = None
        self._thread: Optional[Any] = _threads.named(self._connect, "mcp-cli-connect")
        try:
            _threads.start(self._thread)
        except RuntimeError:  # no thread to be had: this one connects when asked
            self._thread = None

    def _connect(self) -> None:
        try:
            self._result = self._connect_once()
        except BaseException as e:  # handed to result(), in the main thread
            self._error = e

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def result(self) -> InitializeResult:
        """The handshake's result, or its error raised here."""
        if self._thread is None:
            return self._connect_once()
        self.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


_T = TypeVar("_T")


def _step(what: str, work: Callable[[], _T]) -> _T:
    """``work()``, with its expected failures turned into a :class:`Failure` of ``what``."""
    try:
        return work()
    except VersionUnsupported as e:
        raise Failure("version", e) from None
    except TransportFailed as e:
        raise Failure("spawn", e) from None
    except CleanupUnconfirmed as e:
        raise Failure("shutdown", e) from None
    except StartError as e:
        raise Failure("handshake", e) from None
    except GenerateError as e:
        raise Failure("generation", e) from None
    except McpClientError as e:
        raise Failure(what, e) from None


def _retire(client: Client, session: Session) -> None:
    try:
        session.retirement = client.shutdown()
    except RetirementError as e:
        # The one line goes to this failure, the one the user must act on; an
        # earlier one is named in it.
        earlier = session.failure
        if earlier is not None:
            e = type(e)("%s (after: %s failed: %s)" % (e, earlier.what, earlier.error))
        session.failure = Failure("shutdown", e)


def _finish(session: Session, out: IO[str], err: IO[str]) -> int:
    if session.settings.json_output:
        _json_out(out, _json_report(session))
    _warn_of_noise(session.noise, err)
    if session.failure is None:
        return EXIT_OK
    err.write(session.failure.line() + "\n")
    for line in session.failure.tail():
        err.write(line + "\n")
    if session.capture_lost is not None and session.failure.what != "capture":
        err.write(
            "%s: warning: the capture log %s is incomplete: %s\n"
            % (NAME, session.settings.capture, sanitize(session.capture_lost, _REASON))
        )
    err.flush()
    return session.failure.code


def _json_out(out: IO[str], report: Dict[str, Any]) -> None:
    out.write(json.dumps(report, indent=2) + "\n")
    out.flush()


def _warn_of_noise(noise: Tuple[int, Optional[str]], err: IO[str]) -> None:
    skipped, first = noise
    if skipped:
        err.write(
            '%s: warning: skipped %d line%s the server wrote to stdout that %s not JSON, '
            'the first: "%s"; the MCP spec forbids them (--strict refuses them)\n'
            % (
                NAME,
                skipped,
                "" if skipped == 1 else "s",
                "is" if skipped == 1 else "are",
                first or "",
            )
        )
        err.flush()


# ----------------------------------------------------------------------------- the capture


#: Errors that say the filesystem has no room (for a new file, or for its bytes).
_DISK_FULL = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT") if hasattr(errno, name)
)


def _close_capture(session: Session, capture: IO[str]) -> None:
    """Close our file of the log; a flush that fails now (a full disk) is a loss."""
    try:
        capture.close()
    except OSError as e:
        lost = session.capture_lost
        session.capture_lost = lost or "its end could not be written (%s)" % (e.strerror or e)


def _note_capture(session: Session, client: Client) -> None:
    """What the client's capture lacks, once the client is retired."""
    capture = client.capture
    if capture is None or capture.complete:
        return
    lost = "%d entr%s not recorded" % (capture.lost, "y" if capture.lost == 1 else "ies")
    session.capture_lost = lost if capture.failure is None else "%s: %s" % (lost, capture.failure)


def _judge_capture(session: Session) -> None:
    """An incomplete log fails an otherwise good run (exit 10): a replay of it
    would not be the session. After a failure of its own, that one stays."""
    if session.capture_lost is None or session.failure is not None:
        return
    session.failure = Failure(
        "capture",
        CaptureFailed(
            "the log %s is incomplete: %s" % (session.settings.capture, session.capture_lost)
        ),
    )


# ----------------------------------------------------------------------------- text


def _print(out: Optional[IO[str]], text: str) -> None:
    if out is not None:
        out.write(text)
        out.flush()  # progress shows as it happens, even through a pipe


def _server_text(session: Session) -> str:
    result = session.initialized
    assert result is not None
    info = result.server_info
    label = session.settings.label
    return "%s%sserver    %s %s\nprotocol  %s\ncommand   %s\n" % (
        "\n" if session.apart else "",
        "" if label is None else "config    %s\n" % _name(label),
        _name(info.name),
        _name(info.version) or "(no version)",
        result.protocol_version,
        _terminal(" ".join(session.settings.spawn.argv()), 400),
    )


def _tools_text(tools: Sequence[ToolDescriptor]) -> str:
    if not tools:
        return "\nno tools\n"
    names = [_name(tool.name) for tool in tools]
    width = min(max(len(name) for name in names), 32)
    lines = ["  %-*s  %s" % (width, name, _about(tool)) for name, tool in zip(names, tools)]
    return "\n%d tool%s\n%s\n" % (len(tools), "" if len(tools) == 1 else "s", "\n".join(lines))


def _about(tool: ToolDescriptor) -> str:
    parts = [part for part in (tool.title, tool.description) if part]
    if len(parts) == 2 and sanitize(parts[0], 200) == sanitize(parts[1], 200):
        parts = parts[:1]
    return sanitize(": ".join(parts), _TOOL_TEXT)


def _surface_text(generated: Generated) -> str:
    body = "".join("  " + line + "\n" for line in generated.surface.splitlines())
    return "\nsurface of %s\n%s" % (generated.module_name, body or "  (no functions)\n")


def _source_text(generated: Generated) -> str:
    return "\nsource of %s\n%s" % (generated.module_name, generated.source)


def _call_text(tool: str, result: CallToolResult, leading: bool = True) -> str:
    lines = [""] if leading else []
    lines.append("call %s: isError=%s" % (_name(tool), "true" if result.is_error else "false"))
    for block in result.content:
        if isinstance(block, Text):
            lines.append(_indented("text: ", _terminal(block.text)))
        else:
            lines.append("  %s block (not shown)" % _name(block.kind))
    if result.structured_content is not None:
        lines.append(
            _indented("structuredContent: ", _terminal(json.dumps(result.structured_content)))
        )
    if not result.content and result.structured_content is None:
        lines.append("  (no content)")
    return "\n".join(lines) + "\n"


def _indented(label: str, text: str) -> str:
    pad = " " * (len(label) + 2)
    return "  " + label + ("\n" + pad).join(text.split("\n"))


def _name(text: str) -> str:
    """A server-chosen name, shown as is when printable, escaped when not."""
    shown = text if text.isprintable() else escape(text)
    return truncate(shown, _NAME)


def _terminal(text: str, limit: Optional[int] = None) -> str:
    """Server text for a terminal: newlines and tabs kept, every other unprintable
    character escaped (so an ANSI escape or a bidi override arrives inert)."""
    return inert(text, keep="\n\t", limit=limit)  # cut before it is read


# ----------------------------------------------------------------------------- JSON


def _json_report(session: Session) -> Dict[str, Any]:
    report: Dict[str, Any] = {
        "ok": session.failure is None,
        "command": list(session.settings.spawn.argv()),
    }
    if session.initialized is not None:
        report["server"] = _json_server(session.initialized)
    if session.tools is not None:
        report["tools"] = [_json_tool(tool) for tool in session.tools]
    if session.generated is not None:
        report["module"] = session.generated.module_name
        report["surface"] = session.generated.surface
        if session.settings.source:
            report["source"] = session.generated.source
    if session.called is not None and session.settings.call is not None:
        report["call"] = _json_call(session.settings.call, session.called, session.called_tool)
    if session.retirement is not None:
        report["retirement"] = _json_retirement(session.retirement)
    if session.settings.capture is not None:
        report["capture"] = {
            "file": session.settings.capture,
            "complete": session.capture_lost is None,
            "incomplete": session.capture_lost,
        }
    if session.failure is not None:
        report["error"] = _json_error(session.failure)
    return report


def _json_server(result: InitializeResult) -> Dict[str, Any]:
    info = result.server_info
    return {
        "name": info.name,
        "version": info.version,
        "title": info.title,
        "protocolVersion": result.protocol_version,
        "capabilities": result.capabilities,
        "instructions": result.instructions,
    }


def _json_tool(tool: ToolDescriptor) -> Dict[str, Any]:
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": tool.annotations,
    }


def _json_call(
    call: Tuple[str, Dict[str, JsonValue]], result: CallToolResult, tool: Optional[str]
) -> Dict[str, Any]:
    content = [
        {"type": "text", "text": block.text} if isinstance(block, Text) else {"type": block.kind}
        for block in result.content
    ]
    return {
        "name": tool or call[0],
        "arguments": call[1],
        "isError": result.is_error,
        "content": content,
        "structuredContent": result.structured_content,
    }


def _json_retirement(retirement: Retirement) -> Dict[str, Any]:
    report: Dict[str, Any] = {"evidence": type(retirement).__name__}
    if isinstance(retirement, Exited):
        report["returncode"] = retirement.returncode
    return report


def _json_error(failure: Failure) -> Dict[str, Any]:
    return {
        "what": failure.what,
        "exit": failure.code,
        "type": type(failure.error).__name__,
        "message": str(failure.error),
    }


# ----------------------------------------------------------------------------- main


def _terminate(signum: int, frame: Optional[FrameType]) -> None:
    raise KeyboardInterrupt  # SIGTERM unwinds like Ctrl-C: through the shutdown


def _safe_streams() -> None:
    # A terminal or pipe that cannot encode some character must not crash the
    # report after the server was already shut down: escape it instead.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command-line entry point; returns the exit status."""
    _safe_streams()
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 0 and argv[0] == "replay":  # no option is positional: it is unambiguous
        from . import replay  # only here: the main job does not pay for importing it

        return replay.main(argv[1:], program() + " replay")
    if len(argv) > 0 and argv[0] == "codemode":
        from . import codemode  # only here, as replay: the main job does not load it

        return codemode.main(argv[1:], program() + " codemode")
    if len(argv) > 0 and argv[0] == "serve":  # code mode as an MCP server (mcp_client.cli.serve)
        from . import serve

        return serve.main(argv[1:], program() + " serve")
    try:
        settings = parse_arguments(argv)
    except UsageError as e:
        sys.stderr.write("%s: usage failed: %s (see %s --help)\n" % (NAME, e, program()))
        return EXIT_USAGE
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return run(settings, sys.stdout, sys.stderr)
    except KeyboardInterrupt:  # outside the session, or during its shutdown
        sys.stderr.write("%s: interrupted\n" % NAME)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of our stdout went away; the server is already gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return EXIT_OUTPUT_CLOSED
