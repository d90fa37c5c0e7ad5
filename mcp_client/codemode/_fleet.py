"""Code mode's servers: started at once, kept up across runs, started again once dead.

A :class:`Slot` is one configured server: its spawn, its current client, what was
generated from its listing, and its tools' annotations (the policy reads them).
:func:`start_all` connects every slot at once; :meth:`Slot.client_for` hands a run
the client to call, starting a new one from the same spawn (and listing it again)
when the old one died before this run saw it die; :func:`retire_all` ends them.

A server that keeps failing -- its start again fails, or it dies before it has
answered one call -- is not started again at once: it waits :func:`restart_pause`
(doubling from :data:`RESTART_PAUSE` with each failure in a row, at most
:data:`MAX_RESTART_PAUSE`), and a call in the meantime fails at once
(``CallFailed``), so a crash loop costs each run a failed call, not a start.
:func:`retire_all` never waits for a start under way (one that hangs in its
handshake would hold the end for :data:`START_TIMEOUT`): it stops that client.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from .._os import threads as _threads
from ..client import Client, Options, prepare
from ..codegen.name import first_collision, sha256_digest
from ..errors import McpClientError, StderrTail
from ..protocol import ToolDescriptor
from ..text import sanitize, truncate
from ..transport import CAPTURE, ProcessTransport, Spawn

if TYPE_CHECKING:  # pragma: no cover - annotations only: the jail and codegen load on use
    from ..codegen import Generated, GeneratedTool
    from ..codegen.shapes import Store
    from ..jail import Jail

LOGGER = logging.getLogger("mcp_client.codemode")  # the face's name: users configure it

#: Seconds a server may take to shake hands, and then to list its tools.
START_TIMEOUT = 30.0
#: Seconds a failing server waits before it is started again: the first pause, the most.
RESTART_PAUSE, MAX_RESTART_PAUSE = 1.0, 60.0
#: Seconds generating one server's module may take once it is listed (issue 25: a
#: hostile listing once held every start for minutes). Past it the server is left out
#: with one line and the others start; the generation, which no thread can stop,
#: runs on to its end in the background and is thrown away.
GENERATE_TIMEOUT = 10.0
#: Seconds between looks at the slots still starting.
_TURN = 0.05
#: How much of a failed server's stderr is shown: lines, and characters a line.
TAIL_LINES, TAIL_CHARS = 10, 300


def restart_pause(failures: int) -> float:
    """Seconds to wait before a start again after ``failures`` failures in a row."""
    if failures <= 0:
        return 0.0
    return min(RESTART_PAUSE * 2.0 ** min(failures - 1, 30), MAX_RESTART_PAUSE)


def stderr_tail(client: Client) -> str:
    """The server's last stderr lines, each sanitized and capped, as ``\\n  | ...`` lines."""
    tail = client.stderr_tail.strip().splitlines()[-TAIL_LINES:]
    return "".join("\n  | " + sanitize(line, TAIL_CHARS) for line in tail)


class Slot:
    """One configured server; ``lock`` guards the client's replacement."""

    def __init__(
        self,
        name: str,
        spawn: Spawn,
        jail: Optional["Jail"],
        options: Options,
        shapes: Optional["Store"] = None,
    ) -> None:
        self.name = name
        self.spawn = spawn
        self.jail = jail
        self.options = options
        self.shapes = shapes  # learned shapes: read at generation, fed by every call
        self.lock = threading.Lock()  # one start again at a time
        self._guard = threading.Lock()  # the client's swap and ``retired``: held briefly
        self.client = self._prepare()
        self.generated: Optional["Generated"] = None
        self.tools: Dict[str, "GeneratedTool"] = {}  # by wire name
        self.functions: Dict[str, "GeneratedTool"] = {}  # by Python name
        self.annotations: Dict[str, Dict[str, object]] = {}  # by wire name
        self.descriptors: Dict[str, ToolDescriptor] = {}  # by wire name (the shapes' key)
        self.failure = ""
        self.broken_in: Optional[int] = None  # the run that saw the client die
        self.retired = False
        self.failures = 0  # failures in a row: a start again failed, or died unserved
        self.failed_at = 0.0  # when the last one was (monotonic)
        self.served = False  # the current client has answered a call
        self.listed_at: Optional[float] = None  # when generating began (monotonic)
        self.abandoned = False  # past GENERATE_TIMEOUT: what it makes is thrown away
        self.dropped: Optional[Client] = None  # the client we retired for a call given up
        self.dropped_why = ""  # ... and why (the note of its start again says it)
        self.starting_for: Optional[int] = None  # the run whose call is starting it again

    def source(self) -> str:
        """The key of this server's learned shapes: what the operator configured."""
        from ..codegen.shapes import source

        return source(self.name, (self.spawn.executable,) + self.spawn.args, self.spawn.cwd)

    def _prepare(self) -> Client:
        # Unjailed, a lifeline of its own: the server dies with the runner, even by SIGKILL.
        lifeline = self.jail is None
        transport = ProcessTransport(self.spawn, stderr=CAPTURE, jail=self.jail, lifeline=lifeline)
        return prepare(transport, self.options)

    def open(self) -> None:
        """Connect, list, generate; on failure ``failure`` says why and the client is stopped."""
        from .. import codegen

        try:
            self.client.connect()
            listing = self.client.list_tools(START_TIMEOUT)
            with self.lock:
                self.listed_at = time.monotonic()
            info = self.client.initialize_result
            learned = None
            if self.shapes is not None and info is not None:
                version = info.server_info.version
                learned = self.shapes.learned(self.source(), version, listing)
            generated = codegen.generate(self.name, listing, info=info, learned=learned)
        except McpClientError as e:  # the tail is shown apart, whole: not str()'s last lines
            with self.lock:
                if not self.abandoned:
                    self.failure = e.headline() if isinstance(e, StderrTail) else str(e)
            self.client.stop()
            return
        with self.lock:
            if not self.abandoned:
                self._adopt(generated, listing)

    def abandon_if_late(self, now: float, timeout: float) -> bool:
        """Leave the server out when its generation has run past ``timeout``; whether
        it is (or was already) abandoned."""
        with self.lock:
            if self.listed_at is not None and now - self.listed_at > timeout:
                if not self.abandoned:
                    self.abandoned = True
                    self.failure = "its module was not generated within %g s" % timeout
                    self.client.stop()
            return self.abandoned

    def _adopt(self, generated: "Generated", listing: Tuple[ToolDescriptor, ...]) -> None:
        self.tools = {tool.wire_name: tool for tool in generated.tools}
        self.functions = {tool.function: tool for tool in generated.tools}
        self.annotations = {tool.name: dict(tool.annotations or {}) for tool in listing}
        self.descriptors = {tool.name: tool for tool in listing}
        self.generated = generated

    def left_out(self, tail: bool = True) -> str:
        """The line that says why the server was left out; ``tail``: with the last
        lines of its stderr (for the operator, never a program or a host's model)."""
        hint = _PATH_HINT if _not_found(self.failure) else ""
        return "server %s left out: %s%s%s" % (
            self.name, self.failure, hint, stderr_tail(self.client) if tail else ""
        )  # fmt: skip

    def client_for(self, run: int) -> Tuple[Client, Optional[str]]:
        """The client run ``run`` calls, and a line when it had to be started again.

        A client that died before this run saw it die is replaced by a new one from
        the same spawn, listed again (the tools the run may call are the new
        listing's). One that died under this run stays dead for the rest of it:
        the program hears of the death once, as every call after it.
        """
        with self.lock:
            if self.retired or not self._dead() or self.broken_in == run or self._pausing():
                return self.client, None
            old = self.client
            said = "" if old is self.dropped else stderr_tail(old)
            why = "was dead" if old is not self.dropped else "was retired " + self.dropped_why
            old.stop()
            try:
                old.shutdown()
            except McpClientError:  # dead already: its evidence is all we lack
                pass
            with self._guard:
                if self.retired:  # retire_all came first: start nothing new
                    return self.client, None
                self.client = self._prepare()
            self.broken_in = None
            self.served = False
            self.starting_for = run
            try:
                failure = self._restart()
            finally:
                self.starting_for = None
            if failure is not None:
                self._failed()
                self.broken_in = run  # this run has heard of it: counted once
            if said:  # what a server says of itself is the operator's, never the run's
                LOGGER.warning("server %s died; the last of its stderr:%s", self.name, said)
            note = "server %s %s and was started again%s" % (
                self.name,
                why,
                "" if failure is None else " but failed: " + failure,
            )
            return self.client, note

    def drop(self, client: Client, why: str) -> None:
        """Retire ``client``, whose call was given up (it ran past its timeout, or its
        run ended): the server may still be at work on it, and one call at a time
        would make every later call of every run wait behind it. Its next call starts
        it again, whichever run makes it, without a pause (no failure: a slow call is
        not a crash); calls of other runs in flight on it fail."""
        with self._guard:
            if client is not self.client or self.retired:
                return
            self.dropped, self.dropped_why = client, why
            client.stop()  # never blocks: its calls in flight are settled at once

    def give_up_start(self, run: int) -> None:
        """Stop a start again that run ``run``'s call is waiting on (the run has ended)."""
        with self._guard:
            if self.starting_for == run and not self.retired:
                self.client.stop()

    def _pausing(self) -> bool:
        return time.monotonic() - self.failed_at < restart_pause(self.failures)

    def _failed(self) -> None:
        self.failures += 1
        self.failed_at = time.monotonic()

    def answered(self) -> None:
        """The current client answered a call: the failures in a row end."""
        with self.lock:
            self.served = True
            self.failures = 0

    def _restart(self) -> Optional[str]:
        try:
            self.client.connect()
            listing = self.client.list_tools(START_TIMEOUT)
        except McpClientError as e:
            self.client.stop()
            return e.headline() if isinstance(e, StderrTail) else str(e)
        fault = listing_fault(listing)
        if fault is not None:  # as the first listing would have been: refused, not mended
            self.client.stop()
            return fault
        wanted = {tool.name for tool in listing}
        self.annotations = {tool.name: dict(tool.annotations or {}) for tool in listing}
        self.descriptors = {tool.name: tool for tool in listing}
        self.tools = {wire: tool for wire, tool in self.tools.items() if wire in wanted}
        self.functions = {tool.function: tool for tool in self.tools.values()}
        return None

    def _dead(self) -> bool:
        from ..client import State

        return self.client.state in (State.CLOSED, State.BROKEN)

    def saw_death(self, run: int, client: Optional[Client] = None) -> None:
        with self.lock:
            if client is not None and client is self.dropped:
                return  # retired on purpose: no death, and the run may start it again
            if self._dead():
                if self.broken_in is None and not self.served:
                    self._failed()  # it died before it answered anything: a failure
                self.broken_in = run


def listing_fault(listing: Sequence[ToolDescriptor]) -> Optional[str]:
    """Why a listing of a server's next life is refused, as codegen refuses its first:
    too many tools, or two that are one name (twice listed, or once mangled): the
    policy would have to pick between their claims. ``None``: it may serve."""
    from ..codegen import MAX_TOOLS

    if len(listing) > MAX_TOOLS:
        return "%d tools listed; at most %d are generated" % (len(listing), MAX_TOOLS)
    collision = first_collision([tool.name for tool in listing], sha256_digest)
    if collision is None:
        return None
    first, second, mangled = collision.first, collision.second, collision.mangled
    return "tools %s and %s both become %s" % tuple(
        truncate(repr(name), TAIL_CHARS) for name in (first, second, mangled)
    )


def start_all(slots: Sequence[Slot], generate_timeout: Optional[float] = None) -> List[Slot]:
    """Open every slot at once; the ones that worked. Never waits on a generation past
    ``generate_timeout`` (:data:`GENERATE_TIMEOUT`): connecting and listing have their
    own deadlines, and a slot still generating past its own is abandoned."""
    timeout = GENERATE_TIMEOUT if generate_timeout is None else generate_timeout
    threads = [_threads.named(slot.open, "mcp-codemode-start-" + slot.name[:40]) for slot in slots]
    for thread in threads:
        _threads.start(thread)
    waiting = list(zip(slots, threads))
    while waiting:
        now = time.monotonic()
        waiting = [
            (slot, thread)
            for slot, thread in waiting
            if thread.is_alive() and not slot.abandon_if_late(now, timeout)
        ]
        if waiting:
            waiting[0][1].join(_TURN)
    return [slot for slot in slots if slot.generated is not None and not slot.abandoned]


def retire_all(slots: Sequence[Slot]) -> List[str]:
    """Retire every slot's client; a line for each not confirmed gone."""
    for slot in slots:
        with slot._guard:  # not slot.lock: a start again under way holds that
            slot.retired = True
            slot.client.stop()  # every kill requested first: they die together
    unconfirmed = []
    for slot in slots:
        try:
            slot.client.shutdown()
        except McpClientError as e:
            unconfirmed.append("server %s not confirmed gone: %s" % (slot.name, e))
    return unconfirmed


#: Said of a server whose command was not found: where a config's command is looked for.
_PATH_HINT = (
    " (a config's command, and its relative paths, are looked for on this process's PATH "
    "and in its working directory, which an MCP host chooses: name them by absolute path)"
)


def _not_found(failure: str) -> bool:
    return failure.startswith("cannot start ") and "No such file or directory" in failure
