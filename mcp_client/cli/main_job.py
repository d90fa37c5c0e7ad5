"""``mcp-client`` (or ``python -m mcp_client``): the main job, from a terminal, in one command.

::

    mcp-client [options] [-- COMMAND ARGS...]
    mcp-client --config FILE [--server NAME]... [options]

Starts a stdio MCP server -- ``COMMAND ARGS...`` after ``--``, or with no
command the demo server that ships in the package -- handshakes, lists its
tools, generates the ``cap.mcp.<server>`` module for them, and prints the
server's name, version and protocol version, one line per tool (wire name,
then title and description, cut to fit) and the generated surface. Then it
shuts the server down; every way out, including a failure, Ctrl-C and SIGTERM,
goes through that shutdown, so no server is ever left running.

``--config FILE`` takes the servers from a config file instead (Claude
Desktop's, Cursor's and Claude Code's ``{"mcpServers": ...}`` or VS Code's
``{"servers": ...}``; see :mod:`mcp_client.config`), and ``--server NAME``
(repeatable) only those of them. Every server is prepared (published for the
shutdown) before any starts, all are started at once, and then each is shown as
above, one after another, under a ``config    NAME`` line; its module is named
by its key (``cap.mcp.NAME``). A server that fails is named on its failure's
lines (``mcp_client: NAME: handshake failed: ...``) and the others still run;
the exit status is the first failure's. An entry that is not stdio is named in
one warning line and left out. A config that cannot be used is a usage error,
as are an unknown ``--server`` (the line lists the names), ``--env``,
``--cwd``, ``--server-name`` or a ``COMMAND`` with ``--config`` (the file's
entries say them), and ``--call`` or ``--capture`` for more than one server.
With ``--json``, one object: ``{"ok": ..., "servers": [<the usual object> + "name"]}``.

Options: ``--env KEY=VALUE`` (repeatable; the server gets only a small safe
environment plus these pairs, see :mod:`mcp_client.transport`; ``--env KEY``
passes this shell's own value of ``KEY``, and nothing else of it is passed),
``--cwd DIR``, ``--timeout DURATION`` (handshake and each request; ``30``,
``90s``, ``2m``; default 30 s), ``--server-name NAME`` (the module segment and
the server named in every ``invoke``; default the server's
``serverInfo.name``), ``--quiet-server`` (the server's stderr to
``/dev/null``; by default it is captured, and its last lines are printed under
a failure they may explain), ``--source`` (also print the generated module),
``--call NAME JSON`` (call the tool ``NAME`` -- its wire name, or the Python
name the surface shows, bare or after its module -- with the JSON object
``JSON`` as its (wire) arguments, and print its outcome alone: text blocks,
other blocks by kind, ``isError``, ``structuredContent``; a name that is no
tool's is refused before anything is sent, and the line lists the tools),
``--surface`` (with ``--call``: print the usual report before the outcome),
``--json`` (print one JSON object instead of the text), ``--capture FILE``
(record the wire log there; replay it with ``mcp-client replay FILE``, see
:mod:`mcp_client.replay.run`), ``--strict`` (die on the first stdout line that
is not JSON; by default up to 100 such lines -- log lines and banners the spec
forbids -- are skipped, and one warning line on stderr says how many and shows
the first).

Jail options (see :mod:`mcp_client.jail`): ``--jail-servers`` (``--jail``) runs
the server inside bubblewrap -- no network, the filesystem read-only,
credential places under ``$HOME`` hidden, a private ``/tmp``; without bwrap it
fails (exit 3) rather than run the server bare. With it: ``--server-read PATH``
(repeatable; shows a path the jail would cover, such as one under ``/tmp``,
read-only), ``--server-write PATH`` (repeatable), ``--server-network``,
``--hide PATH`` (repeatable; added to the default list), ``--memory SIZE``
(``512M``, ``2G``: the whole jail's memory, a memory cgroup; also an
address-space limit per process), ``--cpu-seconds DURATION`` and ``--max-tasks
N``. Any of them without ``--jail-servers`` is a usage error. The older
spellings ``--allow-read``, ``--allow-write``, ``--allow-net`` and
``--max-processes`` still work (:mod:`mcp_client.cli.arguments`). Before a
jailed server starts, every element of its argv that names an existing path
(``/tmp/checkout/server.py``, ``--root=/tmp/data``) is checked: one the jail
would not show fails the start (exit 3), naming the ``--server-read`` that
shows it.

A server that fails prints, under the failure's line, the lines of its stderr
tail that read as an error (``error``, ``fatal``, ``exception``,
``traceback``, in any case) from before its last ten, then those last ten.
Server text (names, descriptions, results) is never printed raw
(:mod:`mcp_client.cli.render`).

Exit status (:mod:`mcp_client.cli.exits`), one per way to fail; each failure
prints one line to stderr, ``mcp_client: <what> failed: <error class>:
<reason>``, and no traceback: 0 success (a tool result with ``isError: true``
is a result: 0); 2 usage (an unknown option, ``--env KEY`` with ``KEY`` unset
here, ``--call`` JSON that is not a JSON object, a capture file that cannot be
opened, a config file that cannot be used, an unknown ``--server``); 3 spawn
(the server could not be started: no such command, a bad cwd, no bwrap); 4
handshake (``initialize`` failed, timed out or was refused, the server died or
wrote garbage first, or it declares no tools); 5 version (the server chose a
protocol version this client does not speak); 6 listing (``tools/list``
failed: malformed or lying listing, too many pages, server error, death,
timeout); 7 generation (the code generator refused the listing: too many tools,
a name collision, a surface too large); 8 call (``--call`` failed: no such tool
(nothing sent), server error, malformed result, death, timeout); 9 shutdown
(the server could not be confirmed gone); 10 capture (``--capture``: the log is
incomplete -- the file could not be created or written, or entries were
dropped; after a failure of its own the session's code stays, and a second
line says the capture is incomplete); 70 internal (a bug in mcp_client: this
one prints a traceback); 130 interrupted (Ctrl-C) and 143 terminated (SIGTERM),
the server shut down first; 141 stdout was closed early (``... | head``), the
server shut down first, and nothing is printed about it.

With ``--json``, the object is printed on failure too, with ``"ok": false`` and
an ``"error"`` member (``what``, ``exit``, ``type``, ``message``) beside
whatever was learned before the failure. With ``--capture`` it has a
``"capture"`` member: ``file``, ``complete`` and, when it is not, why
(``incomplete``: entries not recorded, and the stream's error).
"""

from __future__ import annotations

import errno
import os
import subprocess
from dataclasses import dataclass, replace
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from .. import jail as jail_plan
from .._os import threads as _threads
from .._os.files import open_for_writing
from ..client import Client, Options, prepare
from ..errors import (
    CleanupUnconfirmed,
    GenerateError,
    McpClientError,
    RetirementError,
    StartError,
    SymlinkRefused,
    TransportFailed,
    VersionUnsupported,
)
from ..jail import Jail
from ..protocol import CallToolResult, InitializeResult, ToolDescriptor
from ..text import sanitize
from ..transport import CAPTURE, ProcessTransport, Retirement, Spawn, child_environment
from . import exits, render
from .arguments import SERVER_READ
from .render import NAME, REASON, name, show
from .settings import Settings, UsageError

if TYPE_CHECKING:
    from ..codegen import Generated

__all__ = [
    "EXIT_CODES",
    "CaptureFailed",
    "Failure",
    "Inspection",
    "UnknownTool",
    "check_jailed_paths",
    "run",
    "wire_name",
]

#: What failed -> its exit status (:data:`mcp_client.cli.exits.TABLE`).
EXIT_CODES: Dict[str, int] = exits.codes("mcp-client")


class Failure(Exception):
    """One expected failure: what failed, and the error that says why."""

    def __init__(self, what: str, error: BaseException) -> None:
        super().__init__(what)
        self.what = what
        self.error = error

    @property
    def code(self) -> int:
        """Its exit status: the table's for ``what``, ``128 + N`` for a signal N."""
        if isinstance(self.error, KeyboardInterrupt):
            return exits.status_of(self.error)
        return EXIT_CODES[self.what]


class CaptureFailed(Exception):
    """The ``--capture`` log is incomplete, or could not be made; exit status 10."""


class UnknownTool(Exception):
    """``--call`` named no tool of the server: refused before anything is sent; exit 8."""


@dataclass
class Inspection:
    """What one run of the main job learned about one server, step by step; the text
    and JSON output are made from it (:mod:`mcp_client.cli.render`)."""

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


# ----------------------------------------------------------------------------- the run


def run(settings: Settings, out: IO[str], err: IO[str]) -> int:
    """Run the main job with ``settings``; returns the exit status."""
    inspection = Inspection(settings)
    try:
        capture = _open_capture(settings.capture)
    except Failure as failure:
        inspection.failure = failure
    else:
        code = _run_captured(inspection, capture, out, err)
        if settings.servers and (inspection.capture_lost is None or code != exits.OK):
            return code
    _judge_capture(inspection)
    return _finish(inspection, out, err)


def _run_captured(
    inspection: Inspection, capture: Optional[IO[str]], out: IO[str], err: IO[str]
) -> int:
    """The run, its capture closed after it; a config's exit status (a lone server's
    is judged by :func:`_finish`)."""
    try:
        if inspection.settings.servers:  # --capture is for one server: it gets the log
            return _run_configured(inspection.settings, capture, out, err)
        client = _prepare(inspection.settings, capture)
        _inspect(client, inspection, out, lambda: _connect_jailed(client, inspection.settings))
        return exits.OK
    finally:
        if capture is not None:
            _close_capture(inspection, capture)


def _open_capture(path: Optional[str]) -> Optional[IO[str]]:
    if path is None:
        return None
    try:  # never through a link a server planted (see _files)
        fd = open_for_writing(path, os.O_CREAT | os.O_TRUNC, "the capture log")
        return os.fdopen(fd, "w", encoding="utf-8")
    except SymlinkRefused as e:
        raise Failure("usage", UsageError("--capture: %s" % e.reason)) from None
    except OSError as e:
        reason = e.strerror or e
        if e.errno in _DISK_FULL:  # the machine's state, not the command line's fault
            raise Failure(
                "capture", CaptureFailed("cannot create %s: %s" % (path, reason))
            ) from None
        raise Failure(
            "usage", UsageError("--capture: cannot open %s: %s" % (path, reason))
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


def _connect_jailed(client: Client, settings: Settings) -> InitializeResult:
    if settings.jail is not None:
        check_jailed_paths(settings.jail, settings.spawn)
    return client.connect()


def check_jailed_paths(jail: Jail, spawn: Spawn) -> None:
    """:class:`TransportFailed` naming the ``--server-read`` needed when an element
    of the server's argv names an existing path the jail would not show (a
    script in a checkout under ``/tmp``); the jail's own check sees only the
    executable, and the server would fail inside, far from its cause."""
    from ..jail import spawn as jailer  # only with --jail-servers

    named = _named_paths(spawn)
    host = jailer.look(jail, spawn, child_environment(spawn))
    for real in jail_plan.unseen(jail, host, list(named)):
        shown = real if os.path.isdir(real) else os.path.dirname(real)
        raise TransportFailed(
            "the server's argument %s names %s, which the jail would not "
            "show (/tmp is private, hidden paths are empty): %s %s "
            "shows it read-only" % (named[real], real, SERVER_READ.canonical, shown)
        )


def _named_paths(spawn: Spawn) -> Dict[str, str]:
    """Real path -> the argument that names it, for each argument that names one."""
    base = spawn.cwd or os.getcwd()
    named: Dict[str, str] = {}
    for arg in spawn.argv():
        piece = arg.partition("=")[2] if arg.startswith("-") else arg  # --root=/tmp/x too
        path = os.path.join(base, piece)
        if piece and os.path.lexists(path):
            named.setdefault(os.path.realpath(path), arg)
    return named


# ----------------------------------------------------------------------------- the steps


def _inspect(
    client: Client, inspection: Inspection, out: IO[str], connect: Callable[[], InitializeResult]
) -> None:
    """The steps on ``client``, whose handshake is ``connect()``; then its retirement."""
    try:
        _steps(client, inspection, out, connect)
    except Failure as failure:
        inspection.failure = failure
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM (exits.Stopped)
        inspection.failure = Failure("interrupt", interrupt)
    finally:
        _retire(client, inspection)
        inspection.noise = (client.noise_skipped, client.first_noise)
        _note_capture(inspection, client)


def _steps(
    client: Client, inspection: Inspection, out: IO[str], connect: Callable[[], InitializeResult]
) -> None:
    settings = inspection.settings
    report = None if settings.json_output or not settings.surface else out
    inspection.initialized = info = _step("handshake", connect)
    show(report, render.server_text(inspection))
    inspection.tools = tools = _step("listing", client.list_tools)
    show(report, render.tools_text(tools))
    module = settings.server_name or settings.label or info.server_info.name
    from .. import codegen  # here: a client that never generates does not load the generator

    generated = _step("generation", lambda: codegen.generate(module, tools, info=info))
    inspection.generated = generated
    show(report, render.surface_text(generated))
    if settings.source:
        show(None if settings.json_output else out, render.source_text(generated))
    if settings.call is not None:
        _call(client, inspection, out, leading=report is not None or settings.source)


def _call(client: Client, inspection: Inspection, out: IO[str], leading: bool) -> None:
    """``--call``: the tool's wire name found, the call made, its outcome shown."""
    settings = inspection.settings
    assert settings.call is not None and inspection.tools is not None
    assert inspection.generated is not None
    given, arguments = settings.call
    try:
        tool = wire_name(given, inspection.tools, inspection.generated)
    except UnknownTool as e:
        raise Failure("call", e) from None
    inspection.called_tool = tool
    inspection.called = called = _step("call", lambda: client.call_tool(tool, arguments))
    show(None if settings.json_output else out, render.call_text(tool, called, leading))


def wire_name(given: str, tools: Sequence[ToolDescriptor], generated: Generated) -> str:
    """The wire name of the tool ``given`` stands for: a wire name itself, or the
    Python name the surface shows, bare or after its module (``module.function``,
    ``cap.mcp.module.function``); :class:`UnknownTool` listing them otherwise.
    The Python names are the generator's own (``Generated.tools``)."""
    wire = [tool.name for tool in tools]
    if given in wire:
        return given
    python = {tool.function: tool.wire_name for tool in generated.tools}
    module = generated.module_name
    for prefix in (module + ".", module[len("cap.mcp.") :] + "."):
        if given.startswith(prefix) and given[len(prefix) :] in python:
            return python[given[len(prefix) :]]
    if given in python:
        return python[given]
    named = {tool: function for function, tool in python.items() if function != tool}
    listed = ", ".join(
        "%s (%s)" % (name(tool), named[tool]) if tool in named else name(tool) for tool in wire
    )
    raise UnknownTool(
        "no tool %s, so nothing was sent; the server's tools: %s" % (name(given), listed or "none")
    )


_T = TypeVar("_T")


#: The errors that say which step failed, whichever step raised them (the first that matches).
_OWN_STEP = (
    (VersionUnsupported, "version"),
    (TransportFailed, "spawn"),
    (CleanupUnconfirmed, "shutdown"),
    (StartError, "handshake"),
    (GenerateError, "generation"),
)


def _step(what: str, work: Callable[[], _T]) -> _T:
    """``work()``, with its expected failures turned into a :class:`Failure` of ``what``."""
    try:
        return work()
    except McpClientError as e:
        step = next((name for kind, name in _OWN_STEP if isinstance(e, kind)), what)
        raise Failure(step, e) from None


def _retire(client: Client, inspection: Inspection) -> None:
    try:
        inspection.retirement = client.shutdown()
    except RetirementError as e:
        # The one line goes to this failure, the one the user must act on; an
        # earlier one is named in it.
        earlier = inspection.failure
        if earlier is not None:
            e = type(e)("%s (after: %s failed: %s)" % (e, earlier.what, earlier.error))
        inspection.failure = Failure("shutdown", e)


def _finish(inspection: Inspection, out: IO[str], err: IO[str]) -> int:
    if inspection.settings.json_output:
        render.json_out(out, render.json_report(inspection))
    _warn_of_noise(inspection.noise, err)
    failure = inspection.failure
    if failure is None:
        return exits.OK
    _say(err, render.failure_lines(failure))
    if inspection.capture_lost is not None and failure.what != "capture":
        lost = sanitize(inspection.capture_lost, REASON)
        _say(
            err,
            [
                "%s: warning: the capture log %s is incomplete: %s"
                % (NAME, inspection.settings.capture, lost)
            ],
        )
    return failure.code


def _say(err: IO[str], lines: Sequence[str]) -> None:
    err.write("".join(line + "\n" for line in lines))
    err.flush()


def _warn_of_noise(noise: Tuple[int, Optional[str]], err: IO[str]) -> None:
    warning = render.noise_warning(noise)
    if warning is not None:
        _say(err, [warning])


# ----------------------------------------------------------------------------- --config


def _run_configured(
    settings: Settings, capture: Optional[IO[str]], out: IO[str], err: IO[str]
) -> int:
    """Every server of the config file: all prepared (the census), all connected
    at once, then inspected one after another in the usual output."""
    _say(err, ["%s: warning: %s" % (NAME, line) for line in settings.skipped])
    inspections = [
        Inspection(replace(settings, spawn=server.spawn, label=server.name, servers=(), skipped=()))
        for server in settings.servers
    ]
    # Published before any server runs (SEED.md's census): whatever happens
    # from here on, the finally below retires every one of them.
    clients = [_prepare(each.settings, capture) for each in inspections]
    connecting: List[_Connecting] = []
    try:
        connecting = [
            _Connecting(_connector(client, each.settings))
            for client, each in zip(clients, inspections)
        ]
        return _inspect_each(inspections, clients, connecting, out, err)
    finally:
        _retire_all(inspections, clients, connecting)
        if settings.json_output:
            render.json_out(out, render.json_configured(inspections))


def _inspect_each(
    inspections: Sequence[Inspection],
    clients: Sequence[Client],
    connecting: Sequence["_Connecting"],
    out: IO[str],
    err: IO[str],
) -> int:
    """Each server's report in file order; the first failure's exit status."""
    code, shown = exits.OK, False  # shown: a report was printed, so the next is set apart
    for inspection, client, handshake in zip(inspections, clients, connecting):
        inspection.apart = shown
        _inspect(client, inspection, out, handshake.result)
        shown = shown or inspection.initialized is not None
        _judge_capture(inspection)
        failed = _report_failure(inspection, err)
        if failed in (exits.INTERRUPTED, exits.TERMINATED):
            return failed
        code = code or failed
    return code


def _retire_all(
    inspections: Sequence[Inspection],
    clients: Sequence[Client],
    connecting: Sequence["_Connecting"],
) -> None:
    for client in clients:
        client.stop()  # all at once: each retirement below then only waits for its own
    for inspection, client in zip(inspections, clients):
        if inspection.retirement is None and inspection.failure is None:
            _retire(client, inspection)  # not reached (an interrupt): retired all the same
    for handshake in connecting:
        handshake.join()


def _report_failure(inspection: Inspection, err: IO[str]) -> int:
    _warn_of_noise(inspection.noise, err)
    failure = inspection.failure
    if failure is None:
        return exits.OK
    _say(err, render.failure_lines(failure, inspection.settings.label))
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


# ----------------------------------------------------------------------------- the capture


#: Errors that say the filesystem has no room (for a new file, or for its bytes).
_DISK_FULL = frozenset(
    getattr(errno, each) for each in ("ENOSPC", "EDQUOT") if hasattr(errno, each)
)


def _close_capture(inspection: Inspection, capture: IO[str]) -> None:
    """Close our file of the log; a flush that fails now (a full disk) is a loss."""
    try:
        capture.close()
    except OSError as e:
        lost = inspection.capture_lost
        inspection.capture_lost = lost or "its end could not be written (%s)" % (e.strerror or e)


def _note_capture(inspection: Inspection, client: Client) -> None:
    """What the client's capture lacks, once the client is retired."""
    capture = client.capture
    if capture is None or capture.complete:
        return
    lost = "%d entr%s not recorded" % (capture.lost, "y" if capture.lost == 1 else "ies")
    inspection.capture_lost = (
        lost if capture.failure is None else "%s: %s" % (lost, capture.failure)
    )


def _judge_capture(inspection: Inspection) -> None:
    """An incomplete log fails an otherwise good run (exit 10): a replay of it
    would not be the session. After a failure of its own, that one stays."""
    if inspection.capture_lost is None or inspection.failure is not None:
        return
    reason = "the log %s is incomplete: %s" % (inspection.settings.capture, inspection.capture_lost)
    inspection.failure = Failure("capture", CaptureFailed(reason))
