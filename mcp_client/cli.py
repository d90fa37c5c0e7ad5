"""``python -m mcp_client``: the main job, from a terminal, in one command.

::

    python -m mcp_client [options] [-- COMMAND ARGS...]
    python -m mcp_client replay [--timeout SECONDS] [--serve] LOG

Starts a stdio MCP server -- ``COMMAND ARGS...`` after ``--``, or with no
command the demo server that ships in the package -- handshakes, lists its
tools, generates the ``cap.mcp.<server>`` module for them, and prints the
server's name, version and protocol version, one line per tool (wire name,
then title and description, cut to fit) and the generated surface. Then it
shuts the server down; every way out, including a failure and Ctrl-C, goes
through that shutdown, so no server is ever left running.

Options: ``--env KEY=VALUE`` (repeatable; the server gets only a small safe
environment plus these pairs, see :mod:`mcp_client.transport`), ``--cwd DIR``,
``--timeout SECONDS`` (handshake and each request; default 30),
``--server-name NAME`` (the module segment and the server named in every
``invoke``; default the server's ``serverInfo.name``), ``--quiet-server``
(the server's stderr to ``/dev/null``; by default it is captured, and its last
lines are printed under a failure they may explain), ``--source``
(also print the generated module), ``--call NAME JSON`` (also call the tool
with wire name ``NAME`` with the JSON object ``JSON`` as its arguments, and
print the result: text blocks, other blocks by kind, ``isError``,
``structuredContent``), ``--json`` (print one JSON object instead of the
text), ``--capture FILE`` (record the wire log there; replay it with
``python -m mcp_client replay FILE``, see :mod:`mcp_client.replay_run`),
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
is a usage error.

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
2     usage       bad options or arguments: unknown option, ``--env`` without
                  ``=``, ``--call`` JSON that is not a JSON object, a capture
                  file that cannot be opened
3     spawn       the server could not be started (no such command, bad cwd)
4     handshake   ``initialize`` failed, timed out or was refused, the server
                  died or wrote garbage first, or it declares no tools
5     version     the server chose a protocol version this client does not speak
6     listing     ``tools/list`` failed (malformed or lying listing, too many
                  pages, server error, death, timeout)
7     generation  the code generator refused the listing (too many tools, a
                  name collision, a surface too large)
8     call        ``--call`` failed: server error (unknown tool, bad arguments),
                  malformed result, death, timeout
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
import signal
import subprocess
import sys
from dataclasses import dataclass
from types import FrameType
from typing import IO, Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple, TypeVar

from . import codegen, demo_server
from ._files import open_for_writing
from ._version import __version__
from .client import Client, Options, prepare
from .codegen import Generated, sanitize
from .errors import (
    StderrTail,
    CleanupUnconfirmed,
    GenerateError,
    McpClientError,
    RetirementError,
    StartError,
    SymlinkRefused,
    TransportFailed,
    VersionUnsupported,
)
from .jail import DEFAULT_HIDDEN, Jail
from .jsonvalue import CorruptionReport, JsonValue, parse
from .protocol import CallToolResult, InitializeResult, Text, ToolDescriptor
from .transport import CAPTURE, Exited, ProcessTransport, Retirement, Spawn

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
    "internal": EXIT_INTERNAL, "usage": EXIT_USAGE, "spawn": EXIT_SPAWN,
    "handshake": EXIT_HANDSHAKE, "version": EXIT_VERSION, "listing": EXIT_LISTING,
    "generation": EXIT_GENERATION, "call": EXIT_CALL, "shutdown": EXIT_SHUTDOWN,
    "capture": EXIT_CAPTURE,
    "interrupt": EXIT_INTERRUPTED, "output": EXIT_OUTPUT_CLOSED,
}

PROG = "python -m mcp_client"
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


class Failure(Exception):
    """One expected failure: what failed, and the error that says why."""

    def __init__(self, what: str, error: BaseException) -> None:
        super().__init__(what)
        self.what = what
        self.error = error

    @property
    def code(self) -> int:
        return EXIT_CODES[self.what]

    def line(self) -> str:
        """The one stderr line: ``mcp_client: <what> failed: <error class>: <reason>``."""
        if self.what == "interrupt":
            return "%s: interrupted; the server was shut down" % NAME
        if self.what == "usage":
            return "%s: usage failed: %s" % (NAME, sanitize(str(self.error), _REASON))
        detail = "%s: %s" % (type(self.error).__name__, _headline(self.error))
        return "%s: %s failed: %s" % (NAME, self.what, sanitize(detail, _REASON))

    def tail(self) -> List[str]:
        """The server's last stderr lines, when its death explains the failure."""
        error = self.error
        if not isinstance(error, StderrTail) or not error.stderr_tail:
            return []
        lines = error.stderr_tail.split("\n")[-_TAIL_LINES:]
        return ["%s: server stderr, last %d lines:" % (NAME, len(lines))] + [
            "  | " + line for line in lines]


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


class UsageError(Exception):
    """A command line that cannot be run; exit status 2."""


class CaptureFailed(Exception):
    """The ``--capture`` log is incomplete, or could not be made; exit status 10."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG, usage="%(prog)s [options] [-- COMMAND ARGS...]\n"
                         "       %(prog)s replay [--timeout SECONDS] [--serve] LOG",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start an MCP server over stdio (the bundled demo server when no COMMAND "
                    "is given), handshake, list its tools, and print the server, the tools and "
                    "the generated cap.mcp surface.",
        epilog="exit status: 0 ok, 2 usage, 3 spawn, 4 handshake, 5 version, 6 listing, "
               "7 generation, 8 call, 9 shutdown, 10 capture incomplete, 130 interrupted, "
               "141 output closed, "
               "1 internal error")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="set a variable in the server's (minimal) environment; repeatable")
    parser.add_argument("--cwd", metavar="DIR", help="the server's working directory")
    parser.add_argument("--timeout", type=seconds_argument, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="deadline of the handshake and of each request (default %g)"
                        % DEFAULT_TIMEOUT)
    parser.add_argument("--server-name", metavar="NAME",
                        help="name for the generated module (default: the server's own name)")
    parser.add_argument("--quiet-server", action="store_true",
                        help="discard the server's stderr (default: captured, and its "
                             "last lines printed under a failure)")
    parser.add_argument("--source", action="store_true", help="also print the generated module")
    parser.add_argument("--call", nargs=2, metavar=("NAME", "JSON"),
                        help="also call tool NAME with the JSON object JSON as its arguments")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object instead of text")
    parser.add_argument("--capture", metavar="FILE", help="record the wire log in FILE")
    parser.add_argument("--strict", action="store_true",
                        help="fail on any stdout line that is not JSON (default: skip up to "
                        "%d, with a warning)" % DEFAULT_NOISE)
    _jail_arguments(parser)
    parser.add_argument("--version", action="version", version="mcp_client " + __version__)
    return parser


def seconds_argument(text: str) -> float:
    """argparse type for a positive, finite number of seconds (shared with the replay command)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text) from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds, not %r" % text)
    return value


def parse_arguments(argv: Sequence[str]) -> Settings:
    """The settings for ``argv`` (without the program name); :class:`UsageError` if none."""
    options, command = _split(list(argv))
    parsed = _parser().parse_args(options)
    if command is None:
        command = [sys.executable, demo_server.__file__]  # by path: needs no sys.path
    return Settings(
        spawn=Spawn(command[0], tuple(command[1:]), _environment(parsed.env) or None,
                    parsed.cwd),
        timeout=parsed.timeout, server_name=parsed.server_name,
        quiet_server=parsed.quiet_server, source=parsed.source,
        call=None if parsed.call is None else _call(parsed.call),
        json_output=parsed.json, capture=parsed.capture, jail=_jail(parsed),
        tolerated_noise=0 if parsed.strict else DEFAULT_NOISE,
    )


def _jail_arguments(parser: argparse.ArgumentParser) -> None:
    jail = parser.add_argument_group("jail (bubblewrap; Linux)")
    jail.add_argument("--jail", action="store_true",
                      help="run the server in a jail: no network, read-only filesystem, "
                      "credentials hidden, private /tmp")
    jail.add_argument("--allow-read", action="append", default=[], metavar="DIR",
                      help="show DIR read-only even where the jail covers it (under /tmp); "
                      "repeatable")
    jail.add_argument("--allow-write", action="append", default=[], metavar="DIR",
                      help="let the jailed server write under DIR; repeatable")
    jail.add_argument("--allow-net", action="store_true", help="let the jailed server use the network")
    jail.add_argument("--hide", action="append", default=[], metavar="PATH",
                      help="hide PATH too (besides ~/.ssh, ~/.aws, ...); repeatable")
    jail.add_argument("--memory", type=bytes_argument, metavar="BYTES",
                      help="memory limit of the whole jail, and address space per process "
                           "(512M, 2G, ...)")
    jail.add_argument("--cpu-seconds", type=count_argument, metavar="N",
                      help="CPU time limit per process")
    jail.add_argument("--max-processes", type=count_argument, metavar="N",
                      help="processes and threads in the jail, all counted")


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
    given = [flag for flag, value in (
        ("--allow-read", parsed.allow_read), ("--allow-write", parsed.allow_write),
        ("--allow-net", parsed.allow_net),
        ("--hide", parsed.hide), ("--memory", parsed.memory),
        ("--cpu-seconds", parsed.cpu_seconds), ("--max-processes", parsed.max_processes)) if value]
    if not parsed.jail:
        if given:  # a limit asked for and silently not applied is the one thing never to do
            raise UsageError("%s needs --jail" % given[0])
        return None
    try:
        return Jail(network=parsed.allow_net,
                    readable=tuple(os.path.abspath(path) for path in parsed.allow_read),
                    writable=tuple(os.path.abspath(path) for path in parsed.allow_write),
                    hidden=DEFAULT_HIDDEN + tuple(os.path.abspath(path) for path in parsed.hide),
                    memory_bytes=parsed.memory, cpu_seconds=parsed.cpu_seconds,
                    max_processes=parsed.max_processes)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _split(argv: List[str]) -> Tuple[List[str], Optional[List[str]]]:
    if "--" not in argv:
        return argv, None
    cut = argv.index("--")
    if cut + 1 == len(argv):
        raise UsageError("no COMMAND after --")
    return argv[:cut], argv[cut + 1:]


def _environment(pairs: Sequence[str]) -> Dict[str, str]:
    env: Dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not key or not equals or "\0" in pair:
            raise UsageError("--env needs KEY=VALUE, not %r" % pair)
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
            _run_client(session, capture, out)
        finally:
            if capture is not None:
                _close_capture(session, capture)
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
            raise Failure("capture", CaptureFailed("cannot create %s: %s"
                                                   % (path, e.strerror or e))) from None
        raise Failure("usage", UsageError("--capture: cannot open %s: %s"
                                          % (path, e.strerror or e))) from None


def _run_client(session: Session, capture: Optional[IO[str]], out: IO[str]) -> None:
    settings = session.settings
    # Captured, not inherited: the server's last lines are printed under a
    # failure rather than mixed into ours as it runs (--quiet-server: dropped).
    stderr = subprocess.DEVNULL if settings.quiet_server else CAPTURE
    options = Options(handshake_timeout=settings.timeout, request_timeout=settings.timeout,
                      capture=capture, tolerated_noise_lines=settings.tolerated_noise)
    client = prepare(ProcessTransport(settings.spawn, stderr=stderr, jail=settings.jail), options)
    try:
        _steps(client, session, out)
    except Failure as failure:
        session.failure = failure
    except KeyboardInterrupt as interrupt:
        session.failure = Failure("interrupt", interrupt)
    finally:
        _retire(client, session)
        session.noise = (client.noise_skipped, client.first_noise)
        _note_capture(session, client)


def _steps(client: Client, session: Session, out: IO[str]) -> None:
    text = None if session.settings.json_output else out
    session.initialized = _step("handshake", client.connect)
    _print(text, _server_text(session))
    session.tools = _step("listing", client.list_tools)
    _print(text, _tools_text(session.tools))
    name = session.settings.server_name or session.initialized.server_info.name
    session.generated = _step("generation", lambda: codegen.generate(name, session.tools or ()))
    _print(text, _surface_text(session.generated))
    if session.settings.source:
        _print(text, _source_text(session.generated))
    if session.settings.call is not None:
        tool, arguments = session.settings.call
        session.called = _step("call", lambda: client.call_tool(tool, arguments))
        _print(text, _call_text(tool, session.called))


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
        out.write(json.dumps(_json_report(session), indent=2) + "\n")
        out.flush()
    _warn_of_noise(session.noise, err)
    if session.failure is None:
        return EXIT_OK
    err.write(session.failure.line() + "\n")
    for line in session.failure.tail():
        err.write(line + "\n")
    if session.capture_lost is not None and session.failure.what != "capture":
        err.write("%s: warning: the capture log %s is incomplete: %s\n"
                  % (NAME, session.settings.capture, sanitize(session.capture_lost, _REASON)))
    err.flush()
    return session.failure.code


def _warn_of_noise(noise: Tuple[int, Optional[str]], err: IO[str]) -> None:
    skipped, first = noise
    if skipped:
        err.write('%s: warning: skipped %d line%s the server wrote to stdout that %s not JSON, '
                  'the first: "%s"; the MCP spec forbids them (--strict refuses them)\n'
                  % (NAME, skipped, "" if skipped == 1 else "s", "is" if skipped == 1 else "are",
                     first or ""))
        err.flush()


# ----------------------------------------------------------------------------- the capture


#: Errors that say the filesystem has no room (for a new file, or for its bytes).
_DISK_FULL = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT")
                       if hasattr(errno, name))


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
    session.failure = Failure("capture", CaptureFailed(
        "the log %s is incomplete: %s" % (session.settings.capture, session.capture_lost)))


# ----------------------------------------------------------------------------- text


def _print(out: Optional[IO[str]], text: str) -> None:
    if out is not None:
        out.write(text)
        out.flush()  # progress shows as it happens, even through a pipe


def _server_text(session: Session) -> str:
    result = session.initialized
    assert result is not None
    info = result.server_info
    return ("server    %s %s\nprotocol  %s\ncommand   %s\n"
            % (_name(info.name), _name(info.version) or "(no version)", result.protocol_version,
               _terminal(" ".join(session.settings.spawn.argv()), 400)))


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


def _call_text(tool: str, result: CallToolResult) -> str:
    lines = ["", "call %s: isError=%s" % (_name(tool), "true" if result.is_error else "false")]
    for block in result.content:
        if isinstance(block, Text):
            lines.append(_indented("text: ", _terminal(block.text)))
        else:
            lines.append("  %s block (not shown)" % _name(block.kind))
    if result.structured_content is not None:
        lines.append(_indented("structuredContent: ",
                               _terminal(json.dumps(result.structured_content))))
    if not result.content and result.structured_content is None:
        lines.append("  (no content)")
    return "\n".join(lines) + "\n"


def _indented(label: str, text: str) -> str:
    pad = " " * (len(label) + 2)
    return "  " + label + ("\n" + pad).join(text.split("\n"))


def _name(text: str) -> str:
    """A server-chosen name, shown as is when printable, escaped when not."""
    shown = text if text.isprintable() else codegen.escape(text)
    return codegen.truncate(shown, _NAME)


def _terminal(text: str, limit: Optional[int] = None) -> str:
    """Server text for a terminal: newlines and tabs kept, every other unprintable
    character escaped (so an ANSI escape or a bidi override arrives inert)."""
    shown = "".join(char if char.isprintable() or char in "\n\t" else codegen.escape(char)
                    for char in text)
    return shown if limit is None else codegen.truncate(shown, limit)


# ----------------------------------------------------------------------------- JSON


def _json_report(session: Session) -> Dict[str, Any]:
    report: Dict[str, Any] = {"ok": session.failure is None,
                              "command": list(session.settings.spawn.argv())}
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
        report["call"] = _json_call(session.settings.call, session.called)
    if session.retirement is not None:
        report["retirement"] = _json_retirement(session.retirement)
    if session.settings.capture is not None:
        report["capture"] = {"file": session.settings.capture,
                             "complete": session.capture_lost is None,
                             "incomplete": session.capture_lost}
    if session.failure is not None:
        report["error"] = _json_error(session.failure)
    return report


def _json_server(result: InitializeResult) -> Dict[str, Any]:
    info = result.server_info
    return {"name": info.name, "version": info.version, "title": info.title,
            "protocolVersion": result.protocol_version, "capabilities": result.capabilities,
            "instructions": result.instructions}


def _json_tool(tool: ToolDescriptor) -> Dict[str, Any]:
    return {"name": tool.name, "title": tool.title, "description": tool.description,
            "inputSchema": tool.input_schema, "outputSchema": tool.output_schema,
            "annotations": tool.annotations}


def _json_call(call: Tuple[str, Dict[str, JsonValue]], result: CallToolResult) -> Dict[str, Any]:
    content = [{"type": "text", "text": block.text} if isinstance(block, Text)
               else {"type": block.kind} for block in result.content]
    return {"name": call[0], "arguments": call[1], "isError": result.is_error,
            "content": content, "structuredContent": result.structured_content}


def _json_retirement(retirement: Retirement) -> Dict[str, Any]:
    report: Dict[str, Any] = {"evidence": type(retirement).__name__}
    if isinstance(retirement, Exited):
        report["returncode"] = retirement.returncode
    return report


def _json_error(failure: Failure) -> Dict[str, Any]:
    return {"what": failure.what, "exit": failure.code, "type": type(failure.error).__name__,
            "message": str(failure.error)}


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
        from . import replay_run  # only here: the main job does not pay for importing it
        return replay_run.main(argv[1:])
    try:
        settings = parse_arguments(argv)
    except UsageError as e:
        sys.stderr.write("%s: usage failed: %s (see %s --help)\n" % (NAME, e, PROG))
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
