"""One run's calls, brokered: what the runner answers each call line of its program.

A :class:`Broker` is made for each run, around the run's :class:`Book`; its
:meth:`Broker.answer` is what :class:`~mcp_client.codemode._pipe.Serving` calls, on the
run's serving thread, with every complete call line. The program is untrusted: only a
call of a generated function of a server that started is served. Each call is counted
against ``Limits.max_calls`` (past it, refused and never sent), given the server's
current client, started again when it died before this run saw it die
(``_fleet.Slot.client_for``), and judged by the :class:`Policy` on that life's claims
(a refused call is never sent either); its result is delivered as the generated function
returns it (``codegen.deliver``), and its shape, never a value, goes to the store of
learned shapes when there is one. The book records every call, boundedly. The run's
approval gate (``_approval.Gate``) numbers each call, answers the ones an approved run
made already from its log, and holds a call that waits for a person's yes.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from ..errors import (
    CallTimedOut,
    McpClientError,
    ResultMismatch,
    StderrTail,
    ToolFailed,
    Unavailable,
)
from ..jsonvalue import parse
from ._approval import Gate
from ._values import CallRecord, Limits, Policy

if TYPE_CHECKING:  # pragma: no cover - annotations only: codegen and the store load on use
    from ..client import Client
    from ..codegen import GeneratedTool
    from ..codegen.shapes import Store
    from ..jsonvalue import JsonValue
    from ..protocol import CallToolResult
    from ._fleet import Slot

#: Records kept of the calls refused past ``Limits.max_calls`` (the rest are counted in
#: ``RunResult.error``): a program looping past its cap cannot grow the result.
EXTRA_RECORDS = 16

#: Why a server was retired with a call of ours in flight (its start again's note says it).
TIMED_OUT = "after a call ran past its timeout"
RUN_ENDED = "after a run ended with a call in flight"

#: A call's outcome (``CallRecord.outcome``) and the answer the program gets: ``{"value":
#: ...}`` or ``{"failure": KIND, "message": TEXT}``, KIND one of ``_program.FAILURE_KINDS``.
Outcome = Tuple[str, Dict[str, Any]]


@dataclass
class Book:
    """One run's book: its number, its calls, what it restarted, its notes for stderr;
    ``cancelled``, set by the run's caller to end it (the program is killed)."""

    number: int
    cancelled: Optional[threading.Event] = None
    calls: List[CallRecord] = field(default_factory=list)
    count: int = 0
    refused_by_limit: int = 0
    restarted: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The run's approvals (numbering, replay, asking, stopping); the runner sets its own.
    gate: Gate = field(default_factory=lambda: Gate(Policy(), Limits(), "", None))


class Broker:
    """One run's calls: each line read, counted, judged by the policy, sent, recorded."""

    def __init__(
        self,
        book: Book,
        live: Mapping[str, "Slot"],
        policy: Policy,
        limits: Limits,
        shapes: Optional["Store"],
        gate: Optional[Gate] = None,
    ) -> None:
        self.book = book
        self.live = live  # the servers that started, by their config's key
        self.policy = policy
        self.limits = limits
        self.shapes = shapes  # the store of learned shapes, fed by every delivered call
        # The call being made (its slot, and its client once known), and whether the
        # run has ended: both under the book's lock.
        self._in_flight: Optional[Tuple["Slot", Optional["Client"]]] = None
        self._ended = False
        self.gate = gate if gate is not None else book.gate

    def abandon(self) -> None:
        """The run has ended (its program is gone, or it is being killed): the call in
        flight, if any, is given up now rather than awaited to its timeout. Its server
        is retired (``Slot.drop``): it may still be at work on the call, and the next
        run must not wait behind it. No call is sent after this."""
        with self.book.lock:
            self._ended = True
            in_flight, self._in_flight = self._in_flight, None
        if in_flight is None:
            return
        slot, client = in_flight
        if client is None:  # still getting its client: a start again for this run ends
            slot.give_up_start(self.book.number)
        else:
            slot.drop(client, RUN_ENDED)

    def answer(self, line: bytes) -> Dict[str, Any]:
        """The answer to one call line of the program (``_pipe`` writes it back)."""
        try:  # the program is untrusted: only a generated function's call is served
            slot, tool, arguments = self._read(line)
        except (McpClientError, ValueError, KeyError, TypeError) as e:
            return _failure("call_failed", "not a call of a generated function: %r" % (e,))
        started = time.monotonic()
        replayed = self.gate.replay(slot.name, tool.function, tool.wire_name, arguments)
        if replayed is None:
            kind, answer = self._call(slot, tool, arguments)
        else:  # answered from an approved run's log (never sent), or the run ends here
            with self.book.lock:
                self.book.count += 1
            kind, answer = replayed
        ms = (time.monotonic() - started) * 1000.0
        approval, by = self.gate.settled(kind, answer)
        with self.book.lock:
            if len(self.book.calls) < self.limits.max_calls + EXTRA_RECORDS:
                self.book.calls.append(
                    CallRecord(slot.name, tool.function, round(ms, 3), kind, approval, by)
                )
        return answer

    def _read(self, line: bytes) -> Tuple["Slot", "GeneratedTool", Dict[str, "JsonValue"]]:
        """The server, the generated function and the arguments a call line names."""
        request = parse(line)
        if not isinstance(request, dict):
            raise TypeError("not an object")
        slot = self.live[str(request["server"])]
        tool = slot.tools[str(request["tool"])]
        arguments = request["arguments"]
        if type(arguments) is not dict:
            raise TypeError("arguments is not an object")
        return slot, tool, arguments

    def _call(
        self, slot: "Slot", tool: "GeneratedTool", arguments: Dict[str, "JsonValue"]
    ) -> Outcome:
        names = _policy_names(slot, tool)
        book = self.book
        with book.lock:  # every call counts, refused or not: the records stay bounded
            book.count += 1
            over = book.count > self.limits.max_calls
            book.refused_by_limit += over
        if over:
            return "call_failed", _failure("call_failed", _call_limit(names[0], self.limits))
        with book.lock:
            if self._ended:
                return "abandoned", _failure("call_failed", _ended(names[0]))
            self._in_flight = (slot, None)
        try:
            client, note = slot.client_for(book.number)
            if note is not None:
                with book.lock:
                    book.restarted.append(slot.name)
                    book.notes.append(note)
            # Judged by the claims of the life the call goes to: a start again lists anew.
            hints = slot.annotations.get(tool.wire_name, {})
            refused = self.policy.refusal(names, hints)
            if refused is not None:
                return "refused", _failure("refused", refused)
            with book.lock:  # a person's wait holds no call on the server
                self._in_flight = None
            held = self.gate.approve(
                slot.name, tool.function, tool.wire_name, arguments, names, hints
            )
            if held is not None:  # refused by a person, or the run stops here for a token
                return held
            with book.lock:
                if self._ended:
                    return "abandoned", _failure("call_failed", _ended(names[0]))
                self._in_flight = (slot, client)
            return self._send(slot, client, tool, arguments, names[0])
        finally:
            with book.lock:
                self._in_flight = None

    def _send(
        self,
        slot: "Slot",
        client: "Client",
        tool: "GeneratedTool",
        arguments: Dict[str, "JsonValue"],
        name: str,
    ) -> Outcome:
        from ..codegen import deliver

        try:
            result = client.call_tool(tool.wire_name, arguments, timeout=self.limits.call_timeout)
            slot.answered()
            value = deliver(tool, result)
            self._learn(slot, client, tool, value, result)
            if tool.returns == "result":  # the program's runtime makes it a ToolOutput
                return "ok", {"value": value, "output": True}
            return "ok", {"value": value}
        except ResultMismatch as e:  # the server broke its own outputSchema
            return "mismatch", _failure("mismatch", "%s: %s" % (name, e))
        except ToolFailed as e:  # deliver's: the call was answered (slot.answered above)
            return "tool_failed", _failure("tool_failed", str(e))
        except McpClientError as e:
            return self._failed(slot, client, name, e)

    def _failed(self, slot: "Slot", client: "Client", name: str, error: McpClientError) -> Outcome:
        """A call that got no answer: timed out (its server retired: it may be at work on
        it still), its run ended (given up), or its server died or was retired."""
        said = "%s: %s" % (name, _own_words(error))
        if isinstance(error, CallTimedOut):
            slot.drop(client, TIMED_OUT)
            said += "; server %s was retired, and its next call starts it again" % slot.name
        elif isinstance(error, Unavailable):
            with self.book.lock:
                ended = self._ended
            if ended:
                return "abandoned", _failure("call_failed", _ended(name))
            if client is slot.dropped:  # another run's call was given up: not a death
                said = "%s: server %s was retired %s, and its next call starts it again" % (
                    name, slot.name, slot.dropped_why
                )  # fmt: skip
            slot.saw_death(self.book.number, client)
        return "call_failed", _failure("call_failed", said)

    def _learn(
        self,
        slot: "Slot",
        client: "Client",
        tool: "GeneratedTool",
        value: Any,  # what deliver returned: a ToolOutput dict for a "result" tool
        result: "CallToolResult",
    ) -> None:
        """Add the shapes of what the server sent to the store (never a value): the
        data and structuredContent as they came, before deliver parsed a string of JSON
        text in them (so that a string which once holds none is learned a string)."""
        info = client.initialize_result
        descriptor = slot.descriptors.get(tool.wire_name)
        if self.shapes is None or info is None or descriptor is None:
            return
        data = value.get("data") if tool.returns == "result" else None
        if tool.parsed and tool.returns == "result":
            from ..codegen.content import parse_data, text_of

            data = parse_data(text_of(result))
        structured = result.structured_content
        # Keyed by what the operator configured, never by the server's own claim:
        # a server naming itself as another must not teach that one's shapes.
        version = info.server_info.version
        self.shapes.observe(slot.source(), version, descriptor, data, structured)


def _policy_names(slot: "Slot", tool: "GeneratedTool") -> Tuple[str, ...]:
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


def _own_words(error: McpClientError) -> str:
    """The error's text for the program: without the server's stderr tail, which
    ``str()`` carries (what a server prints of itself -- its config, its keys -- is for
    the operator's log, where ``mcp_client.server`` records it)."""
    return error.headline() if isinstance(error, StderrTail) else str(error)


def _ended(name: str) -> str:
    return "%s: given up: the run ended while it was in flight" % name


def _failure(kind: str, message: str) -> Dict[str, Any]:
    return {"failure": kind, "message": message}


def _call_limit(name: str, limits: Limits) -> str:
    return "%s: refused: this run made its %d tool calls, the limit (Limits.max_calls)" % (
        name,
        limits.max_calls,
    )
