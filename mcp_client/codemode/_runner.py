"""Code mode's runner: :class:`CodeMode`, the lifetime of its servers and of its runs.

:meth:`CodeMode.open` starts the servers (``_fleet``) and writes the ``cap`` package
(``_program``); :meth:`CodeMode.close` kills every program still running, retires every
server and removes the root once the last run or check under way has cleaned up (one
lock orders them: runs are counted under way from their number to their cleanup, and
close waits on the ``_idle`` condition for the count to fall to none). Discovery reads
the generated tools (``_catalog``); a check is ``_typecheck``'s. A run has its number,
its directory (its program, its scratch, its own ``cap`` package: ``_imports`` names
what it is shown), its child (``_program.launch``) on four pipes served by
``_pipe.Serving`` with a ``_broker.Broker`` answering its calls, a wall clock, and a
:class:`RunResult` once the child and its jail are gone.

Logs on ``mcp_client.codemode``, the name of the face (users configure it).
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
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Set, Tuple

from .._os import process
from .._os.bounded import Brood
from ..client import Options
from ..config import ConfiguredServer
from ..errors import (
    CodeModeError,
    JailUnavailable,
    NoServerStarted,
    TokenRefused,
    TransportFailed,
)
from . import _approval, _catalog, _feed, _fleet, _imports, _pipe, _program, _roots, _typecheck
from ._broker import Book, Broker
from ._cleanup import remove_tree
from ._program import TAKEN_NAMES
from ._values import (
    CANCELLED,
    CLOSED,
    WALL_CLOCK,
    CheckResult,
    Limits,
    Match,
    Policy,
    RunResult,
    SearchResult,
)

if TYPE_CHECKING:  # pragma: no cover - annotations only: the jail and the store load on use
    from ..codegen.shapes import Store
    from ..jail import Jail

LOGGER = logging.getLogger("mcp_client.codemode")  # the face's name: users configure it

#: Seconds the runner waits for a program's pipes to close once its group is dead
#: (at once, unless something unjailed escaped the group holding a copy).
#: The file the check's cache is warmed with (never a program: ps tells them apart).
WARM_FILE = "warm_check.py"
LINGER = 5.0
#: Lines the run's stderr gives to the program's imports of ``cap.mcp`` names that are no
#: server's (a program of a thousand such imports gets these and a count).
MAX_UNKNOWN_NOTES = 5


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
        #: The directory of the store of learned shapes (``None``: no store): the runner's,
        #: never the program's (a path for the program's jail to hide).
        self.shapes_dir: Optional[str] = None if shapes is None else shapes.directory
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
        self._brood = Brood()  # the helpers' children (compile, mypy, a parse): close ends them
        self._checking = 0  # checks under way (at most _typecheck.MAX_CHECKS)
        self._scratch_taken = False  # a run has the shared scratch directory
        self._root_left_to_runs = False  # close() came from a run's own thread
        # Each generated function's signature line, for the check's note on a call that
        # does not fit it; the ToolOutput types, whose keys a program may read as
        # attributes; the warming of the check's cache, once begun (warm_check).
        self._signatures = {
            (g.module_name, tool.function): tool.brief.split("  # ", 1)[0]
            for g in self._generated
            for tool in g.tools
        }
        self._outputs = frozenset(name for g in self._generated for name in g.outputs)
        self._warmed: Optional[threading.Event] = None
        self._approvals = _approval.Approvals(limits.approval_ttl)  # tokens and their logs

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
        store = _store(shapes)
        slots = [_fleet.Slot(each.name, each.spawn, jail, options, store) for each in servers]
        refused = tuple(_taken(name) for name in taken)
        live, root = _start(slots, refused, jail_program)
        try:
            made = cls(
                slots, live, root, jail_program, policy, limits, scratch, hidden, store, shown
            )
            made.left_out = refused + made.left_out
            return made
        except BaseException:
            _fleet.retire_all(slots)
            _remove(root)
            _roots.release(root)
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
        self._brood.end_all()  # a check's compile() or mypy, a run's parse: killed now
        self._closing.set()
        self._approvals.close()
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
            _roots.release(self._root)

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
            _roots.release(self._root)

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
        """The whole doc of ``server.function`` (``codegen.described``: its signature once,
        without what every doc says); or, for a name that is not there, a message naming
        the closest ones (it does not raise)."""
        entry = _catalog.find(self._entries, name.strip())
        if entry is None:
            return _catalog.unknown(self._entries, name.strip())
        from ..codegen import described

        return described(entry.tool)

    def check(self, program: str) -> CheckResult:
        """``compile()``; then, where mypy is importable, mypy against ``cap`` (all of
        ``cap_dir``: every server's module, whatever the program imports): what would
        fail when the program runs, not the strictness of its own annotations
        (``_typecheck.MYPY_FLAGS``). A check that comes while :meth:`warm_check` warms
        the cache waits for it (as fast, and the cache is written once).

        At most ``_typecheck.MAX_CHECKS`` run at once: one more raises
        :class:`CodeModeError` (busy) at once. A check that close() cuts short raises it
        too (it has no verdict)."""
        with self._lock:
            busy = self._checking >= _typecheck.MAX_CHECKS
            if not busy:
                self._checking += 1
        if busy:
            raise CodeModeError(
                "busy: %d checks are running, the most at once; check again when one "
                "has ended" % _typecheck.MAX_CHECKS
            )
        try:
            self._enter()  # counted as under way: close() kills its children, waits for it
            try:
                warmed = self._warmed
                if warmed is not None:
                    warmed.wait(_typecheck.MYPY_TIMEOUT)
                return self._check_counted(program)
            finally:
                self._end()
        finally:
            with self._lock:
                self._checking -= 1

    def warm_check(self) -> None:
        """Fill the check's cache in the background (a thread, ``mcp-codemode-warm``): mypy
        once over every server's module and the standard library's most used, so that
        the first :meth:`check` is as fast as the later ones. Once; nothing without mypy.
        ``serve`` calls it when it starts; close() ends it."""
        with self._lock:
            if self._warmed is not None or self._closed or not _typecheck.have_mypy():
                return
            self._warmed = threading.Event()
            self._active += 1  # counted as under way from now: close() waits for it
        from .._os import threads

        threads.start(threads.named(self._warm, "mcp-codemode-warm", (self._warmed,)))

    def _warm(self, warmed: threading.Event) -> None:
        try:
            # A file of its own name: what ps shows of it is no program's.
            self._mypy(_typecheck.warm_program(self._modules), WARM_FILE)
        except Exception as e:  # never the caller's: a cold check is still a check
            LOGGER.info("the check's cache was not warmed: %s", e)
        finally:
            warmed.set()
            self._end()

    def _check_counted(self, program: str) -> CheckResult:
        failed = _typecheck.compiled(program, _program.PROGRAM_FILE, self._brood)
        self._check_open()  # a check that close() cut short has no verdict
        if failed is not None:
            return CheckResult(False, (failed,))
        if not _typecheck.have_mypy():
            return CheckResult(True, ())
        ok, messages = self._mypy(program)
        self._check_open()  # a check that close() cut short has no verdict
        return CheckResult(ok, tuple(messages), True)

    def _mypy(self, program: str, name: str = _program.PROGRAM_FILE) -> Tuple[bool, List[str]]:
        where = tempfile.mkdtemp(prefix="check-", dir=self._root)
        try:
            path = os.path.join(where, name)
            _program.write_text(path, program, "the program to check")
            cache = os.path.join(self._root, "mypy-cache")
            return _typecheck.mypy(
                path,
                self.cap_dir,
                cache,
                self._brood,
                signatures=self._signatures,
                outputs=self._outputs,
            )
        finally:
            shutil.rmtree(where, ignore_errors=True)

    # ----------------------------------------------------------------- running

    def run(
        self,
        program: str,
        *,
        timeout: Optional[float] = None,
        stdin: Optional[int] = None,
        tee: Optional[_pipe.Tee] = None,
        cancelled: Optional[threading.Event] = None,
        approver: Optional[_approval.Approver] = None,
        approve: Sequence[str] = (),
        progress: Optional[Callable[[str], None]] = None,
    ) -> RunResult:
        """Run ``program`` (Python source) and return how it ended. Thread-safe.

        ``timeout``: this run's wall clock, at most ``Limits.wall_clock``. ``stdin``:
        a descriptor whose content is the program's stdin, copied into a pipe (the
        program never holds the descriptor itself; ``None``: EOF at once). ``tee``: called
        with ``("stdout" | "stderr", bytes)`` as the kept output arrives (the command
        streams it). ``cancelled``: an event the caller sets to end the run; the program
        is killed at once, its call in flight given up, and ``RunResult.error`` is
        :data:`CANCELLED`. Raises :class:`JailUnavailable` when the jail cannot be had: a
        program is never run unjailed unless ``jail_program=False``. With a ``scratch``
        directory (one for every run), runs are one at a time: a run while another is
        under way raises :class:`CodeModeError` (busy) at once.

        A call that ``Policy.approve`` says waits for a person's yes is put to
        ``approver`` (a :class:`PendingCall` in, ``True``/``False`` or a
        :class:`Decision` out), the program blocked in its call and the wall clock
        paused, at most ``Limits.approval_timeout`` seconds. With no approver, the run
        stops before that call: ``RunResult.approval`` names it and holds a token, and
        ``run(program, approve=[token])`` runs the same program again, every call
        before it answered from this run's log (none is made twice), then that call
        made. A token works once, for ``Limits.approval_ttl`` seconds, for this
        program only: else :class:`TokenRefused`, and nothing runs. ``progress`` is
        called with a line for each call made, and while a person is asked.
        """
        self._take_scratch()
        try:
            book = Book(self._begin(), cancelled)
            try:
                gate = self._gate(program, approver, approve, progress)
                return self._run_counted(book, program, timeout, stdin, tee, gate)
            finally:
                self._end()
        finally:
            self._free_scratch()

    def _take_scratch(self) -> None:
        """The shared scratch directory, for this run alone; busy when another has it
        (two programs in one working directory would read and clobber each other's
        files, mid-write)."""
        if self._scratch is None:
            return
        with self._lock:
            busy = self._scratch_taken
            self._scratch_taken = True
        if busy:
            raise CodeModeError(
                "busy: a program is running in the shared scratch directory %s; runs with "
                "--scratch are one at a time, so run again when it has ended" % self._scratch
            )

    def _free_scratch(self) -> None:
        if self._scratch is not None:
            with self._lock:
                self._scratch_taken = False

    def _gate(
        self,
        program: str,
        approver: Optional[_approval.Approver],
        approve: Sequence[str],
        progress: Optional[Callable[[str], None]],
    ) -> _approval.Gate:
        """The run's approvals: its token, redeemed (spent now, whatever the run does)."""
        if isinstance(approve, str):
            raise TypeError("approve takes a sequence of tokens, not one string")
        if len(approve) > 1:
            raise TokenRefused("one approval token a run: the newest resumes every earlier one")
        digest = _approval.digest(program)
        held = self._approvals.redeem(approve[0], digest) if approve else None
        return _approval.Gate(
            self.policy, self.limits, digest, self._approvals, approver, progress, held
        )

    def _run_counted(
        self,
        book: Book,
        program: str,
        timeout: Optional[float],
        stdin: Optional[int],
        tee: Optional[_pipe.Tee],
        gate: _approval.Gate,
    ) -> RunResult:
        wall = self.limits.wall_clock if timeout is None else min(timeout, self.limits.wall_clock)
        run_dir = self._run_dir(book, program)
        book.gate = gate
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

    def _run_dir(self, book: Book, program: str) -> str:
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

    def _shown(self, book: Book, program: str) -> List[str]:
        """The server modules ``program`` is shown: those it imports by name, every one for
        ``from cap.mcp import *``. A name that is no server's fails as it would; the run's
        stderr (not the program: it learns no other server's name) names the closest."""
        named = _imports.imported(program, self._brood)
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
        self, run_dir: str, book: Book, wall: float, stdin: Optional[int], tee: Optional[_pipe.Tee]
    ) -> RunResult:
        child, feed, (calls_in, answers_out, out_in, err_in) = self._launch(run_dir, stdin)
        feed.start()
        book.gate.attach(lambda: process.end(child))  # a stop for an approval kills it
        broker = Broker(book, self._live, self.policy, self.limits, self._shapes, book.gate)
        serving = _pipe.Serving(
            calls_in,
            answers_out,
            out_in,
            err_in,
            broker.answer,
            self.limits.max_output_bytes,
            tee,
            abandon=broker.abandon,
        )
        try:
            return self._watch(child, serving, book, wall)
        finally:
            feed.stop()

    def _launch(
        self, run_dir: str, stdin: Optional[int]
    ) -> Tuple["subprocess.Popen[bytes]", _feed.Feed, Tuple[int, int, int, int]]:
        """The run's program started, its stdin's feed made (not started), and the runner's
        ends of its four pipes: calls, answers, stdout, stderr (the program's are closed)."""
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
        return child, feed, ours

    def _watch(
        self,
        child: "subprocess.Popen[bytes]",
        serving: _pipe.Serving,
        book: Book,
        wall: float,
    ) -> RunResult:
        with self._lock:
            self._children.add(child)
            closed = self._closed  # close() began after this run did: it is not to run
        error: Optional[str] = None
        ended = _EXITED
        try:
            serving.start()
            if not closed:
                ended = _wait(child, wall, book.cancelled, book.gate.paused)
            if ended == _WALL:
                error = "the program ran past its wall-clock limit (%g s) and was killed" % wall
            elif ended == _CANCELLED:
                error = CANCELLED
                LOGGER.info("run %d was cancelled by its caller: its program killed", book.number)
        finally:
            book.gate.over.set()  # a call waiting for a person's yes is not sent now
            process.end(child)  # the jail, or whatever the program left in its group
            with self._lock:
                self._children.discard(child)
            # The call in flight, if any, is given up now: nobody is left to read its
            # answer, and a wait for it would hold this run (and a SIGTERM) to its timeout.
            if not serving.finish(LINGER):
                book.notes.append("the program's pipes outlived it; they were closed")
        status = WALL_CLOCK if ended == _WALL else _status(child.returncode)
        if error is None and status > 128 and self._closed:  # close()'s kill, not a limit's
            error = CLOSED
        return self._result(status, serving, book, error or _why(status, book, self.limits))

    def _result(
        self, status: int, serving: _pipe.Serving, book: Book, error: Optional[str]
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
            status,
            serving.stdout.text(),
            serving.stderr.text(),
            calls,
            error,
            truncated,
            restarted,
            book.gate.approval,
        )


# ----------------------------------------------------------------------------- helpers


#: How a program's wait ended (:func:`_wait`).
_EXITED, _WALL, _CANCELLED = "exited", "wall clock", "cancelled"
#: Seconds between looks at a run's ``cancelled`` event while its program runs.
CANCEL_TURN = 0.05


def _wait(
    child: "subprocess.Popen[bytes]",
    wall: float,
    cancelled: Optional[threading.Event],
    paused: Callable[[], float],
) -> str:
    """Wait for ``child`` to exit within ``wall`` seconds, not counting the ``paused()``
    ones (a person asked for a yes), or until ``cancelled`` is set; which ended the wait.
    Watched in turns of :data:`CANCEL_TURN` s (a wait for a person that began at the
    deadline moves it on as it goes). The child is left unreaped: its group is ours."""
    started = time.monotonic()
    while True:
        left = started + wall + paused() - time.monotonic()
        if process.wait_unreaped(child, min(CANCEL_TURN, left) if left > 0 else 0.0):
            return _EXITED
        if cancelled is not None and cancelled.is_set():
            return _CANCELLED
        if started + wall + paused() <= time.monotonic():
            return _WALL


def _store(shapes: Optional[str]) -> Optional["Store"]:
    """The store of learned shapes kept in the directory ``shapes``, if one is given."""
    if shapes is None:
        return None
    from ..codegen.shapes import Store

    return Store(shapes)


def _start(
    slots: Sequence[_fleet.Slot], refused: Tuple[str, ...], jail_program: bool
) -> Tuple[List[_fleet.Slot], str]:
    """The slots that started (all are started at once) and the runner's root, made; when
    none started (:class:`NoServerStarted`, naming each) or the root cannot be made, every
    slot is retired."""
    try:
        live = _fleet.start_all(slots)
        if not live:
            error = NoServerStarted(
                "no server started"
                + "".join("\n" + line for line in refused)
                + "".join("\n" + slot.left_out() for slot in slots)
            )
            error.brief = "no server started" + "".join(
                "\n" + line for line in refused + tuple(s.left_out(False) for s in slots)
            )
            raise error
        # Jailed, under /tmp: the jail covers it, so only what it is given to see shows.
        parent = "/tmp" if jail_program else None
        _roots.sweep(parent)  # what runners killed by SIGKILL left there
        root = _roots.make(parent)  # claimed while this process lives
    except BaseException:
        _fleet.retire_all(slots)
        raise
    return live, root


def _server_jail(
    jailed: bool, readable: Sequence[str], writable: Sequence[str], network: bool
) -> Optional["Jail"]:
    if not jailed:
        return None
    from ..jail import Jail

    return Jail(network=network, readable=tuple(readable), writable=tuple(writable))


def _no_server(name: str, modules: List[str]) -> str:
    close = difflib.get_close_matches(name, modules, n=3, cutoff=0.5)
    return "the program imports cap.mcp.%s, which is no server's module%s" % (
        name,
        "; did you mean %s?" % ", ".join("`%s`" % each for each in close) if close else "",
    )


def _why(status: int, book: Book, limits: Limits) -> Optional[str]:
    """The run's one-line error: ``None`` for a clean exit."""
    stopped = book.gate.verdict()  # it stopped the run for an approval, or a divergence
    if stopped is not None:
        return stopped
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


def _about(slot: _fleet.Slot) -> _catalog.About:
    """What search reads of a server beyond its module: the names it gives itself, and
    its tools' descriptors."""
    result = slot.client.initialize_result
    info = result.server_info if result is not None else None
    names = tuple(n for n in (info.name, info.title) if n) if info is not None else ()
    return _catalog.About(names, dict(slot.descriptors))
