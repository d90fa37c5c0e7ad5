"""Code mode as a library: a model's program runs jailed against generated modules.

::

    from mcp_client import config
    from mcp_client.codemode import CodeMode, Limits, Policy

    with CodeMode.open(config.load("servers.json").servers,
                       policy=Policy(allow="non-destructive")) as code:
        print(code.surface())                       # what the model is shown
        print(code.search("time zone").matches[0].line)
        result = code.run("from cap.mcp import time\\nprint(time.get_current_time(timezone='UTC'))")
        print(result.exit_status, result.stdout, result.calls)

:meth:`CodeMode.open` starts every server at once (one that fails is named in
``left_out`` with its stderr tail, and the others serve), generates a module
``cap.mcp.<key>`` for each and writes the ``cap`` package once into a private
directory (``cap_dir``) that lives until :meth:`CodeMode.close`; each run is shown
its own copy of the runtime and of the modules its source imports by name (hard
links: ``mcp_client.codemode._imports``, ``_program.show_cap``). Servers stay up
across runs; one that died is started again, from the same spawn, by the next run
that calls it (``RunResult.restarted`` names it, and its stderr says why).

:meth:`CodeMode.run` writes the program into a run directory, starts a child Python
(jailed unless ``jail_program=False``: it sees its package, its file and this
interpreter, writes only its scratch directory, its working directory; no network;
a memory cgroup of ``Limits.memory_bytes``), serves its calls on a thread of its own,
multiplexed on the shared clients (runs may overlap: each has its child and its
thread), and returns a :class:`RunResult` once the child and its jail are gone.

**Limits** (:class:`Limits`, every one enforced): the wall clock (the child's process
group is killed past it: exit status 124); each call's timeout (``CallFailed``); the
calls a run may make (the call past the cap is refused with ``CallFailed`` naming
the limit, and never sent); the bytes of stdout and stderr kept (each cut with a
marker giving the bytes dropped; the program is never blocked on its output); the
jail's memory (unjailed, the child's address space is capped instead, a weaker bound).

**Policy** (:class:`Policy`): ``allow="all"``, ``"non-destructive"`` or
``"read-only"``, read from each tool's annotations with MCP's defaults where a
server says nothing (``readOnlyHint`` false, ``destructiveHint`` true), plus names
(``server.function``) allowed or denied outright; a denial wins. A refused call is
never sent: the program gets ``cap.mcp.CallRefused`` (a ``CallFailed``) naming the
rule, and its record's outcome is ``refused``. **Annotations are the server's own
claims**: a server that lies about a tool gets it called. What holds then is the
jail: run the servers jailed too (``jail_servers=True``) when they are not trusted.

**Errors a model can act on**: a failed program's traceback is cut to the
program's own frames (none of the ``cap`` package's), and a ``cap`` name that is
not there (``AttributeError``, ``ImportError``, ``NameError``) ends with a hint
naming the closest real ones ("`cap.mcp.files` has no `read`; did you mean
`read_file`, `read_text_file`?").

:meth:`CodeMode.describe` of an unknown name does not raise: it returns a message
that names the closest tools, which is what a model needs to go on.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set, Tuple

from .._os import process
from ..client import Options
from ..config import ConfiguredServer
from ..errors import (
    CodeModeError,
    JailUnavailable,
    McpClientError,
    NoServerStarted,
    ResultMismatch,
    ToolFailed,
    TransportFailed,
    Unavailable,
)
from ..jsonvalue import parse
from . import _catalog, _feed, _fleet, _imports, _pipe, _program, _typecheck
from ._cleanup import remove_tree

if TYPE_CHECKING:  # pragma: no cover - annotations only: the store loads when asked for
    from ..codegen.shapes import Store

__all__ = [
    "CallRecord",
    "CheckResult",
    "CodeMode",
    "CodeModeError",
    "Limits",
    "Match",
    "Policy",
    "RunResult",
    "SearchResult",
    "WALL_CLOCK",
    "CLOSED",
    "ALLOW",
    "TAKEN_NAMES",
]

LOGGER = logging.getLogger(__name__)

#: ``RunResult.exit_status`` when the wall clock ended the program (as ``timeout(1)``).
WALL_CLOCK = 124
#: The policies ``Policy.allow`` takes.
ALLOW = ("all", "non-destructive", "read-only")
#: Seconds the runner waits for a program's pipes to close once its group is dead
#: (at once, unless something unjailed escaped the group holding a copy).
LINGER = 5.0
#: The names ``cap.mcp`` binds itself, which no server's key may take: its failures
#: (the results branch adds ``ResultMismatch``) and ``internal`` (the seam's name in
#: every generated module). A key is used verbatim where Python allows (issue 19),
#: so these would shadow them; they are refused, never renamed.
TAKEN_NAMES = frozenset(_program.FAILURE_KINDS.values()) | {"ResultMismatch", "internal"}
#: ``RunResult.error`` of a run that close() ended.
CLOSED = "the runner was closed while the program ran: it was killed"
#: Records kept of the calls refused past ``Limits.max_calls`` (the rest are counted in
#: ``RunResult.error``): a program looping past its cap cannot grow the result.
EXTRA_RECORDS = 16
#: Lines the run's stderr gives to the program's imports of ``cap.mcp`` names that are no
#: server's (a program of a thousand such imports gets these and a count).
MAX_UNKNOWN_NOTES = 5


@dataclass(frozen=True)
class Limits:
    """What a run may take; every one is enforced (see the module docstring).

    The jail's four (``memory_bytes``, ``max_tasks``, ``scratch_bytes``,
    ``cpu_seconds``) hold by default; a machine that cannot enforce one (no memory
    or pids cgroup to be had) refuses the run with :class:`JailUnavailable` naming
    what is missing, and ``enforced=False`` (``--no-limits``) is the explicit way out:
    then the jail has none of the four, only the wall clock, the calls and the output.
    """

    wall_clock: float = 300.0  # seconds a run may take, whole
    call_timeout: float = 60.0  # seconds per tool call
    max_calls: int = 50  # tool calls a run may make (FastMCP caps at 50)
    max_output_bytes: int = 64 * 1024  # stdout and stderr each; the rest is cut, with a marker
    memory_bytes: int = 512 * 1024 * 1024  # the program jail's memory cgroup
    max_tasks: int = 64  # processes and threads of the jail at once: a pids cgroup
    scratch_bytes: int = 256 * 1024 * 1024  # the scratch tmpfs (inside memory_bytes)
    cpu_seconds: int = 120  # CPU time of each of the program's processes (RLIMIT_CPU)
    enforced: bool = True  # False: none of the jail's four (--no-limits)

    def __post_init__(self) -> None:
        for name in ("wall_clock", "call_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError("Limits.%s must be a positive number, not %r" % (name, value))
        for name in ("max_calls", "max_output_bytes", "memory_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError("Limits.%s must be an int >= 0, not %r" % (name, value))
        for name in ("max_tasks", "scratch_bytes", "cpu_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError("Limits.%s must be a positive int, not %r" % (name, value))
        if not isinstance(self.enforced, bool):
            raise TypeError("Limits.enforced must be a bool, not %r" % (self.enforced,))
        if self.memory_bytes < 1 << 20:
            raise ValueError("Limits.memory_bytes must be at least 1 MiB (a Python needs more)")


@dataclass(frozen=True)
class Policy:
    """Which calls are sent, from the tools' annotations (the server's claims)."""

    allow: str = "all"  # "all" | "non-destructive" | "read-only"
    allow_tools: Tuple[str, ...] = ()  # "server.function" always allowed
    deny_tools: Tuple[str, ...] = ()  # "server.function" always refused (wins over allow)

    def __post_init__(self) -> None:
        if self.allow not in ALLOW:
            raise ValueError(
                "Policy.allow must be one of %s, not %r" % (", ".join(ALLOW), self.allow)
            )
        for name in ("allow_tools", "deny_tools"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise TypeError("Policy.%s takes a sequence of names, not one string" % name)
            object.__setattr__(self, name, tuple(value))
            for each in getattr(self, name):
                if not isinstance(each, str) or "." not in each:
                    raise ValueError("Policy.%s: %r is not server.function" % (name, each))

    def refusal(self, names: Sequence[str], hints: Dict[str, object]) -> Optional[str]:
        """``None`` when the call may be sent, else the rule that refuses it.

        ``names`` are the tool's ``server.function`` spellings (its Python name and its
        wire name); ``hints`` its annotations as the server sent them.
        """
        shown = names[0]
        if any(name in self.deny_tools for name in names):
            return "%s is refused by the policy: it is in deny_tools" % shown
        if self.allow == "all" or any(name in self.allow_tools for name in names):
            return None
        read_only = hints.get("readOnlyHint") is True  # MCP's default: false
        destructive = hints.get("destructiveHint") is not False  # MCP's default: true
        if self.allow == "read-only" and not read_only:
            return (
                "%s is refused by the policy allow=read-only: the server does not say "
                "readOnlyHint: true" % shown
            )
        if self.allow == "non-destructive" and not read_only and destructive:
            return (
                "%s is refused by the policy allow=non-destructive: the server says neither "
                "readOnlyHint: true nor destructiveHint: false" % shown
            )
        return None


@dataclass(frozen=True)
class CallRecord:
    """One call a program made."""

    server: str
    tool: str  # the function's name in cap.mcp.<server>
    ms: float
    outcome: str  # "ok" | "tool_failed" | "call_failed" | "refused" | "mismatch"


@dataclass(frozen=True)
class RunResult:
    """How a run ended."""

    exit_status: int  # the program's, 128+N for a signal; WALL_CLOCK for the wall clock
    stdout: str  # cut to Limits.max_output_bytes, with a marker
    stderr: str  # likewise; the runner's own lines ("codemode: ...") follow the program's
    calls: Tuple[CallRecord, ...]
    error: Optional[str]  # None, or one line: why the run failed (timeout, limit, ...)
    truncated: bool  # stdout or stderr was cut
    restarted: Tuple[str, ...] = ()  # servers started again during this run


@dataclass(frozen=True)
class Match:
    """One tool found by :meth:`CodeMode.search`."""

    server: str
    function: str  # "server.function" is how describe() names it
    line: str  # the surface line
    doc: str  # the whole doc a model reads (codegen.described)
    brief: str = ""  # one line: the signature, types by name, and the first sentence


@dataclass(frozen=True)
class SearchResult:
    """What :meth:`CodeMode.search` found: the best ``matches``, how many matched."""

    matches: Tuple[Match, ...]
    total: int  # how many tools matched, shown or not
    truncated: bool  # more matched than ``limit``


@dataclass(frozen=True)
class CheckResult:
    """What :meth:`CodeMode.check` found: ``ok``, and one message a fault."""

    ok: bool
    messages: Tuple[str, ...]  # "line N: <mypy's / compile's own words>"
    mypy: bool = False  # whether mypy ran (it is optional: the ``check`` extra)


@dataclass
class _Run:
    """One run's book: its number, its calls, what it restarted."""

    number: int
    calls: List[CallRecord] = field(default_factory=list)
    count: int = 0
    refused_by_limit: int = 0
    restarted: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class CodeMode:
    """Servers started, the ``cap`` package written, programs run. A context manager."""

    def __init__(
        self,
        slots: Sequence[_fleet.Slot],
        live: Sequence[_fleet.Slot],
        root: str,
        jail_program: bool,
        policy: Policy,
        limits: Limits,
        scratch: Optional[str] = None,
        hidden: Sequence[str] = (),
        shapes: Optional["Store"] = None,
        shown: Sequence[str] = (),
    ) -> None:
        self._scratch = scratch
        self._hidden = tuple(hidden)
        self._unhidden = tuple(shown)
        self._slots = tuple(slots)
        self._shapes = shapes
        self._live = {slot.name: slot for slot in live}
        self._root = root
        self._jail_program = jail_program
        self.policy = policy
        self.limits = limits
        self.servers: Tuple[str, ...] = tuple(self._live)
        self.left_out: Tuple[str, ...] = tuple(
            slot.left_out() for slot in slots if slot.generated is None
        )
        self.cap_dir = os.path.join(root, "lib")
        self._generated = [slot.generated for slot in live if slot.generated is not None]
        self._modules = frozenset(g.module_name.rsplit(".", 1)[-1] for g in self._generated)
        self._entries = _catalog.entries(
            [(slot.name, g) for slot, g in zip(live, self._generated)],
            {slot.name: _about(slot) for slot in live},
        )
        _program.write_cap(self.cap_dir, self._generated)
        self._lock = threading.Lock()
        self._runs = 0
        self._children: Set["subprocess.Popen[bytes]"] = set()
        self._closed = False
        # Runs under way (from their number to their cleanup): close() waits for them,
        # so that no run makes its directory under a root already removed.
        self._active = 0
        self._idle = threading.Condition(self._lock)
        self._closing = threading.Event()  # set once close() has begun (a test's hook)
        self._root_left_to_runs = False  # close() came from a run's own thread

    # ----------------------------------------------------------------- opening, closing

    @classmethod
    def open(
        cls,
        servers: Sequence[ConfiguredServer],
        *,
        jail_program: bool = True,
        jail_servers: bool = False,
        policy: Policy = Policy(),
        limits: Limits = Limits(),
        server_readable: Sequence[str] = (),
        server_writable: Sequence[str] = (),
        server_network: bool = False,
        scratch: Optional[str] = None,
        hidden: Sequence[str] = (),
        shapes: Optional[str] = None,
        shown: Sequence[str] = (),
    ) -> "CodeMode":
        """Start ``servers`` (what ``config.load`` returns) and write the ``cap`` package.

        ``shapes``, a directory: the store of learned shapes (``mcp_client.codegen.shapes``).
        The modules are generated with what it holds, and every call a run delivers
        adds its result's shape (never a value) to it, written when the run ends.

        ``jail_servers=True`` runs every server in the project's ``Jail``, with
        ``server_readable``/``server_writable``/``server_network`` for all of them.
        Raises :class:`NoServerStarted` when none starts (``str()`` names each one's
        failure) and :class:`JailUnavailable` when a jail is asked for and bubblewrap
        is not there.

        ``scratch``: a host directory for the programs' working directory, bound
        writable in their jail (the only way to a host directory: by default it is a
        tmpfs of ``Limits.scratch_bytes`` inside the jail). ``hidden``: the files and
        directories the runner was given by name -- the config, a shapes store, a log --
        which read empty in the program's jail, as ``DEFAULT_HIDDEN`` (credentials, every
        MCP host's config) do; the command passes its own. ``shown``: entries of
        ``DEFAULT_HIDDEN`` the program sees after all (never one of ``hidden``).

        A server whose key is a name ``cap.mcp`` binds itself (:data:`TAKEN_NAMES`:
        ``from cap.mcp import ToolFailed`` would be its module, and ``except
        ToolFailed:`` a ``TypeError``) is not started: it is left out with one line
        naming the key. Rename it in the config.
        """
        if (jail_program or jail_servers) and shutil.which("bwrap") is None:
            from ..jail import INSTALL_HINT

            raise JailUnavailable("bubblewrap (bwrap) is not on PATH: %s" % INSTALL_HINT)
        jail = _server_jail(jail_servers, server_readable, server_writable, server_network)
        options = Options(
            handshake_timeout=_fleet.START_TIMEOUT, request_timeout=limits.call_timeout
        )
        taken = [each.name for each in servers if each.name in TAKEN_NAMES]
        servers = [each for each in servers if each.name not in TAKEN_NAMES]
        store = None
        if shapes is not None:
            from ..codegen.shapes import Store

            store = Store(shapes)
        slots = [_fleet.Slot(each.name, each.spawn, jail, options, store) for each in servers]
        refused = tuple(_taken(name) for name in taken)
        try:
            live = _fleet.start_all(slots)
            if not live:
                raise NoServerStarted(
                    "no server started"
                    + "".join("\n" + line for line in refused)
                    + "".join("\n" + slot.left_out() for slot in slots)
                )
            # Jailed, under /tmp: the jail covers it, so only what it is given to see shows.
            root = tempfile.mkdtemp(prefix="mcp-codemode-", dir="/tmp" if jail_program else None)
        except BaseException:
            _fleet.retire_all(slots)
            raise
        try:
            made = cls(
                slots,
                live,
                root,
                jail_program,
                policy,
                limits,
                scratch,
                hidden,
                shapes=store,
                shown=shown,
            )
            made.left_out = refused + made.left_out
            return made
        except BaseException:
            _fleet.retire_all(slots)
            shutil.rmtree(root, ignore_errors=True)
            raise

    def __enter__(self) -> "CodeMode":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill every program still running, retire every server, remove ``cap_dir``.

        Ordered with :meth:`run`: a run after it raises :class:`CodeModeError`; a run
        under way is killed (its program, or the one it is about to start, whose
        registration sees the close) and close returns once every run has cleaned up.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            children = list(self._children)
        self._closing.set()
        for child in children:
            process.end(child)
        for line in _fleet.retire_all(self._slots):  # ends a start again a run waits on
            LOGGER.warning("%s", line)
        with self._lock:
            # A tee that closes runs on a run's serving thread, which that run waits on:
            # then the last run to end removes the root, not this call.
            self._root_left_to_runs = self._active > 0 and _on_a_serving_thread()
            while self._active and not self._root_left_to_runs:
                self._idle.wait()
        if not self._root_left_to_runs:
            _remove(self._root)

    def _begin(self) -> int:
        """A run's number, counted as under way; raises once closed."""
        self._enter()
        with self._lock:
            self._runs += 1
            return self._runs

    def _enter(self) -> None:
        """Count a run or a check as under way (close() waits for it); raises once closed."""
        with self._lock:
            self._check_open()
            self._active += 1

    def _end(self) -> None:
        with self._lock:
            self._active -= 1
            self._idle.notify_all()
            last = self._active == 0 and self._root_left_to_runs
        if last:
            _remove(self._root)

    def _check_open(self) -> None:
        if self._closed:
            raise CodeModeError("this CodeMode is closed")

    # ----------------------------------------------------------------- discovery

    def surface(self, brief: bool = False) -> str:
        """Every server's surface, one line a function; ``brief``: each function's brief
        line instead (its signature, types by name, and its doc's first sentence)."""
        if brief:
            return "\n".join(tool.brief for g in self._generated for tool in g.tools)
        return "\n".join(generated.surface.rstrip("\n") for generated in self._generated)

    def search(self, query: str, *, limit: int = 10) -> SearchResult:
        """The tools that match ``query``, best first (BM25F over their names, title, server,
        description and parameters), at most ``limit`` of those worth showing; ``total``
        counts every tool that matched."""
        from ..codegen import described

        found = _catalog.ranked(self._entries, query)
        shown = tuple(
            Match(entry.server, entry.tool.function, entry.tool.line, described(entry.tool),
                  entry.tool.brief)
            for entry in _catalog.shown(found, limit)
        )  # fmt: skip
        return SearchResult(shown, len(found), len(found) > max(limit, 0))

    def describe(self, name: str) -> str:
        """The surface line and full doc of ``server.function``; or, for a name that is
        not there, a message naming the closest ones (it does not raise)."""
        entry = _catalog.find(self._entries, name.strip())
        if entry is None:
            return _catalog.unknown(self._entries, name.strip())
        from ..codegen import described

        return described(entry.tool)

    def check(self, program: str) -> CheckResult:
        """``compile()``; then, where mypy is importable, ``mypy --strict`` against ``cap``
        (all of ``cap_dir``: every server's module, whatever the program imports)."""
        self._enter()  # counted as under way: close() kills its mypy and waits for it
        try:
            return self._check_counted(program)
        finally:
            self._end()

    def _check_counted(self, program: str) -> CheckResult:
        failed = _typecheck.compiled(program, _program.PROGRAM_FILE)
        if failed is not None:
            return CheckResult(False, (failed,))
        if not _typecheck.have_mypy():
            return CheckResult(True, ())
        where = tempfile.mkdtemp(prefix="check-", dir=self._root)
        try:
            path = os.path.join(where, _program.PROGRAM_FILE)
            _program.write_text(path, program, "the program to check")
            cache = os.path.join(self._root, "mypy-cache")
            adopted: List["subprocess.Popen[bytes]"] = []
            ok, messages = _typecheck.mypy(
                path, self.cap_dir, cache, started=lambda child: self._adopt(child, adopted)
            )
        finally:
            shutil.rmtree(where, ignore_errors=True)
            with self._lock:
                self._children.difference_update(adopted)
        self._check_open()  # a check that close() cut short has no verdict
        return CheckResult(ok, tuple(messages), True)

    def _adopt(self, child: "subprocess.Popen[bytes]", adopted: List[Any]) -> None:
        """A check's mypy, killed by close(): at once if close() has begun already."""
        adopted.append(child)
        with self._lock:
            closing = self._closed
            if not closing:
                self._children.add(child)
        if closing:
            process.end(child)

    # ----------------------------------------------------------------- running

    def run(
        self,
        program: str,
        *,
        timeout: Optional[float] = None,
        stdin: Optional[int] = None,
        tee: Optional[_pipe.Tee] = None,
    ) -> RunResult:
        """Run ``program`` (Python source) and return how it ended. Thread-safe.

        ``timeout``: this run's wall clock, at most ``Limits.wall_clock``. ``stdin``:
        a descriptor whose content is the program's stdin, copied into a pipe (the
        program never holds the descriptor itself; ``None``: EOF at once). ``tee``: called
        with ``("stdout" | "stderr", bytes)`` as the kept output arrives (the command
        streams it). Raises :class:`JailUnavailable` when the jail cannot be had: a
        program is never run unjailed unless ``jail_program=False``.
        """
        book = _Run(self._begin())
        try:
            return self._run_counted(book, program, timeout, stdin, tee)
        finally:
            self._end()

    def _run_counted(
        self,
        book: _Run,
        program: str,
        timeout: Optional[float],
        stdin: Optional[int],
        tee: Optional[_pipe.Tee],
    ) -> RunResult:
        wall = self.limits.wall_clock if timeout is None else min(timeout, self.limits.wall_clock)
        run_dir = self._run_dir(book, program)
        try:
            result = self._run_in(run_dir, book, wall, stdin, tee)
        except BaseException:
            _remove(run_dir)
            raise
        finally:  # what the run's calls taught, kept whatever became of the run
            if self._shapes is not None:
                self._shapes.flush()
        left = _remove(run_dir)  # whatever the program left there: its status stands
        if left is None:
            return result
        return dataclasses.replace(result, stderr=result.stderr + "codemode: " + left + "\n")

    def _run_dir(self, book: _Run, program: str) -> str:
        """The run's directory: its program, its scratch, and its own ``cap`` package (``lib``:
        the runtime and the modules it imports by name, linked from ``cap_dir``)."""
        run_dir = os.path.join(self._root, "run-%d" % book.number)
        os.makedirs(os.path.join(run_dir, "scratch"))
        try:
            path = os.path.join(run_dir, _program.PROGRAM_FILE)
            _program.write_text(path, program, "the program")
            shown = self._shown(book, program)
            _program.show_cap(self.cap_dir, os.path.join(run_dir, "lib"), shown)
        except BaseException:
            _remove(run_dir)
            raise
        return run_dir

    def _shown(self, book: _Run, program: str) -> List[str]:
        """The server modules ``program`` is shown: those it imports by name, every one for
        ``from cap.mcp import *``. A name that is no server's fails as it would; the run's
        stderr (not the program: it learns no other server's name) names the closest."""
        named = _imports.imported(program)
        if _imports.STAR in named:
            return sorted(self._modules)
        unknown = sorted(
            name
            for name in named - self._modules - TAKEN_NAMES  # cap.mcp's own: CallFailed...
            if not (name.startswith("__") and name.endswith("__"))
        )
        for name in unknown[:MAX_UNKNOWN_NOTES]:
            book.notes.append(_no_server(name, sorted(self._modules)))
        if len(unknown) > MAX_UNKNOWN_NOTES:
            book.notes.append(
                "and %d more imports of cap.mcp names that are no server's"
                % (len(unknown) - MAX_UNKNOWN_NOTES)
            )
        return sorted(named & self._modules)

    def _run_in(
        self, run_dir: str, book: _Run, wall: float, stdin: Optional[int], tee: Optional[_pipe.Tee]
    ) -> RunResult:
        pipes = [os.pipe() for _ in range(4)]  # calls, answers, stdout, stderr
        (calls_in, calls_out), (answers_in, answers_out) = pipes[0], pipes[1]
        (out_in, out_out), (err_in, err_out) = pipes[2], pipes[3]
        ours = (calls_in, answers_out, out_in, err_in)
        feed = _feed.Feed(stdin)  # a pipe even for a file: the program never holds ours
        try:
            child = _program.launch(
                run_dir,
                os.path.join(run_dir, "lib"),
                (calls_out, answers_in),
                (feed.program_end, out_out, err_out),
                jailed=self._jail_program,
                limits=self.limits,
                scratch=self._scratch,
                hidden=self._hidden,
                shown=self._unhidden,
            )
        except BaseException as e:
            for fd in ours:
                os.close(fd)
            feed.stop()
            if isinstance(e, TransportFailed):
                raise JailUnavailable("the program cannot run jailed: %s" % e) from e
            raise
        finally:
            for fd in (calls_out, answers_in, out_out, err_out, feed.program_end):
                os.close(fd)
        feed.start()
        serving = _pipe.Serving(
            calls_in,
            answers_out,
            out_in,
            err_in,
            lambda line: self._answer(book, line),
            self.limits.max_output_bytes,
            tee,
        )
        try:
            return self._watch(child, serving, book, wall)
        finally:
            feed.stop()

    def _watch(
        self,
        child: "subprocess.Popen[bytes]",
        serving: _pipe.Serving,
        book: _Run,
        wall: float,
    ) -> RunResult:
        with self._lock:
            self._children.add(child)
            closed = self._closed  # close() began after this run did: it is not to run
        error: Optional[str] = None
        try:
            serving.start()
            if not closed and not process.wait_unreaped(child, wall):
                error = "the program ran past its wall-clock limit (%g s) and was killed" % wall
        finally:
            process.end(child)  # the jail, or whatever the program left in its group
            with self._lock:
                self._children.discard(child)
            if not serving.join(LINGER):
                book.notes.append("the program's pipes outlived it; they were closed")
            serving.stop()
        status = WALL_CLOCK if error is not None else _status(child.returncode)
        if error is None and status > 128 and self._closed:  # close()'s kill, not a limit's
            error = CLOSED
        return self._result(status, serving, book, error or _why(status, book, self.limits))

    def _result(
        self, status: int, serving: _pipe.Serving, book: _Run, error: Optional[str]
    ) -> RunResult:
        truncated = False
        for kept in (serving.stdout, serving.stderr):
            if kept.dropped:
                truncated = True
                kept.note(
                    "[codemode: %d bytes of %s dropped: past Limits.max_output_bytes (%d)]"
                    % (kept.dropped, kept.name, kept.limit)
                )
        for note in serving.notes + book.notes + ([error] if error else []):
            serving.stderr.note("codemode: " + note)
        with book.lock:
            calls, restarted = tuple(book.calls), tuple(book.restarted)
        return RunResult(
            status, serving.stdout.text(), serving.stderr.text(), calls, error, truncated, restarted
        )

    # ----------------------------------------------------------------- one call

    def _answer(self, book: _Run, line: bytes) -> Dict[str, Any]:
        """The answer to one call line of the program (``_pipe`` writes it back)."""
        try:  # the program is untrusted: only a generated function's call is served
            request = parse(line)
            if not isinstance(request, dict):
                raise TypeError("not an object")
            slot = self._live[str(request["server"])]
            tool = slot.tools[str(request["tool"])]
            arguments = request["arguments"]
            if type(arguments) is not dict:
                raise TypeError("arguments is not an object")
        except (McpClientError, ValueError, KeyError, TypeError) as e:
            return _failure("call_failed", "not a call of a generated function: %r" % (e,))
        started = time.monotonic()
        kind, answer = self._call(book, slot, tool, arguments)
        ms = (time.monotonic() - started) * 1000.0
        with book.lock:
            if len(book.calls) < self.limits.max_calls + EXTRA_RECORDS:
                book.calls.append(CallRecord(slot.name, tool.function, round(ms, 3), kind))
        return answer

    def _call(
        self, book: _Run, slot: _fleet.Slot, tool: Any, arguments: Dict[str, Any]
    ) -> Tuple[str, Dict[str, Any]]:
        names = _policy_names(slot, tool)
        with book.lock:  # every call counts, refused or not: the records stay bounded
            book.count += 1
            over = book.count > self.limits.max_calls
            book.refused_by_limit += over
        if over:
            return "call_failed", _failure("call_failed", _call_limit(names[0], self.limits))
        refused = self.policy.refusal(names, slot.annotations.get(tool.wire_name, {}))
        if refused is not None:
            return "refused", _failure("refused", refused)
        client, note = slot.client_for(book.number)
        if note is not None:
            with book.lock:
                book.restarted.append(slot.name)
                book.notes.append(note)
        return self._send(book, slot, client, tool, arguments, names[0])

    def _send(
        self,
        book: _Run,
        slot: _fleet.Slot,
        client: Any,
        tool: Any,
        arguments: Dict[str, Any],
        name: str,
    ) -> Tuple[str, Dict[str, Any]]:
        from ..codegen import deliver

        try:
            result = client.call_tool(tool.wire_name, arguments, timeout=self.limits.call_timeout)
            slot.answered()
            value = deliver(tool, result)
            self._learn(slot, client, tool, value, result.structured_content)
            return "ok", {"value": value}
        except ResultMismatch as e:  # the server broke its own outputSchema
            return "mismatch", _failure("mismatch", "%s: %s" % (name, e))
        except ToolFailed as e:  # deliver's: the call was answered (slot.answered above)
            return "tool_failed", _failure("tool_failed", str(e))
        except McpClientError as e:
            if isinstance(e, Unavailable):
                slot.saw_death(book.number)
            return "call_failed", _failure("call_failed", "%s: %s" % (name, e))

    def _learn(
        self, slot: _fleet.Slot, client: Any, tool: Any, value: Any, structured: Any
    ) -> None:
        """Add the shapes of what was delivered to the store (never a value)."""
        info = client.initialize_result
        descriptor = slot.descriptors.get(tool.wire_name)
        if self._shapes is None or info is None or descriptor is None:
            return
        data = value.get("data") if tool.returns == "result" else None
        about = info.server_info
        self._shapes.observe(about.name, about.version, descriptor, data, structured)


# ----------------------------------------------------------------------------- helpers


def _server_jail(
    jailed: bool, readable: Sequence[str], writable: Sequence[str], network: bool
) -> Any:
    if not jailed:
        return None
    from ..jail import Jail

    return Jail(network=network, readable=tuple(readable), writable=tuple(writable))


def _about(slot: _fleet.Slot) -> _catalog.About:
    """What search reads of a server beyond its module: the names it gives itself, and
    its tools' descriptors."""
    result = slot.client.initialize_result
    info = result.server_info if result is not None else None
    names = tuple(n for n in (info.name, info.title) if n) if info is not None else ()
    return _catalog.About(names, dict(slot.descriptors))


def _policy_names(slot: _fleet.Slot, tool: Any) -> Tuple[str, ...]:
    """The spellings of a tool a policy's names may use: the config's key or the module's
    (``cap.mcp.<module>``, what the surface shows: ``my-notes`` is ``my_notes_<digest>``),
    then the function or the wire name. A denial spelt as the surface spells it holds."""
    keys = [slot.name]
    if slot.generated is not None:
        keys.append(slot.generated.module_name.rsplit(".", 1)[-1])
    return tuple(
        dict.fromkeys(
            "%s.%s" % (key, name) for key in keys for name in (tool.function, tool.wire_name)
        )
    )


def _no_server(name: str, modules: List[str]) -> str:
    close = difflib.get_close_matches(name, modules, n=3, cutoff=0.5)
    return "the program imports cap.mcp.%s, which is no server's module%s" % (
        name,
        "; did you mean %s?" % ", ".join("`%s`" % each for each in close) if close else "",
    )


def _failure(kind: str, message: str) -> Dict[str, Any]:
    return {"failure": kind, "message": message}


def _call_limit(name: str, limits: Limits) -> str:
    return "%s: refused: this run made its %d tool calls, the limit (Limits.max_calls)" % (
        name,
        limits.max_calls,
    )


def _why(status: int, book: _Run, limits: Limits) -> Optional[str]:
    """The run's one-line error: ``None`` for a clean exit."""
    if book.refused_by_limit:
        return "the program went past its %d tool calls (Limits.max_calls): %d refused" % (
            limits.max_calls,
            book.refused_by_limit,
        )
    if status == 128 + signal.SIGKILL:
        if not limits.enforced:
            return "the program was killed by SIGKILL"
        return (
            "the program was killed by SIGKILL: past its memory limit (%d bytes, "
            "Limits.memory_bytes) or its CPU time (%d s, Limits.cpu_seconds)"
            % (limits.memory_bytes, limits.cpu_seconds)
        )
    if status > 128:
        return "the program was killed by signal %d" % (status - 128)
    return None


def _status(code: Optional[int]) -> int:
    code = 0 if code is None else code
    return 128 - code if code < 0 else code


def _taken(name: str) -> str:
    return (
        "server %s left out: its key is a name cap.mcp binds itself (%s); rename it in the "
        "config" % (name, ", ".join(sorted(TAKEN_NAMES)))
    )


def _on_a_serving_thread() -> bool:
    return threading.current_thread().name.startswith("mcp-codemode-run")


def _remove(path: str) -> Optional[str]:
    """Remove a run's directory; the one line saying what stayed, logged too."""
    left = remove_tree(path)
    if left is not None:
        LOGGER.warning("cleanup: %s", left)
        return "cleanup: " + left
    return None
