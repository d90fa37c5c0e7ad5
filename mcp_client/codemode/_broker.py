"""One run's calls, brokered: what the runner answers each call line of its program.

A :class:`Broker` is made for each run, around the run's :class:`Book`; its
:meth:`Broker.answer` is what :class:`~mcp_client.codemode._pipe.Serving` calls, on the
run's serving thread, with every complete call line. The program is untrusted: only a
call of a generated function of a server that started is served. Each call is counted
against ``Limits.max_calls`` (past it, refused and never sent) and judged by the
:class:`Policy` (a refused call is never sent either), then sent on the server's
current client, started again when it died before this run saw it die
(``_fleet.Slot.client_for``); its result is delivered as the generated function
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

from ..errors import McpClientError, ResultMismatch, ToolFailed, Unavailable
from ..jsonvalue import parse
from ._approval import Gate
from ._values import CallRecord, Limits, Policy

if TYPE_CHECKING:  # pragma: no cover - annotations only: codegen and the store load on use
    from ..client import Client
    from ..codegen import GeneratedTool
    from ..codegen.shapes import Store
    from ..jsonvalue import JsonValue
    from ._fleet import Slot

#: Records kept of the calls refused past ``Limits.max_calls`` (the rest are counted in
#: ``RunResult.error``): a program looping past its cap cannot grow the result.
EXTRA_RECORDS = 16

#: A call's outcome (``CallRecord.outcome``) and the answer the program gets: ``{"value":
#: ...}`` or ``{"failure": KIND, "message": TEXT}``, KIND one of ``_program.FAILURE_KINDS``.
Outcome = Tuple[str, Dict[str, Any]]


@dataclass
class Book:
    """One run's book: its number, its calls, what it restarted, its notes for stderr."""

    number: int
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
        self.gate = gate if gate is not None else book.gate

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
        hints = slot.annotations.get(tool.wire_name, {})
        refused = self.policy.refusal(names, hints)
        if refused is not None:
            return "refused", _failure("refused", refused)
        held = self.gate.approve(slot.name, tool.function, tool.wire_name, arguments, names, hints)
        if held is not None:  # refused by a person, or the run stops here for a token
            return held
        client, note = slot.client_for(book.number)
        if note is not None:
            with book.lock:
                book.restarted.append(slot.name)
                book.notes.append(note)
        return self._send(slot, client, tool, arguments, names[0])

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
            self._learn(slot, client, tool, value, result.structured_content)
            return "ok", {"value": value}
        except ResultMismatch as e:  # the server broke its own outputSchema
            return "mismatch", _failure("mismatch", "%s: %s" % (name, e))
        except ToolFailed as e:  # deliver's: the call was answered (slot.answered above)
            return "tool_failed", _failure("tool_failed", str(e))
        except McpClientError as e:
            if isinstance(e, Unavailable):
                slot.saw_death(self.book.number)
            return "call_failed", _failure("call_failed", "%s: %s" % (name, e))

    def _learn(
        self,
        slot: "Slot",
        client: "Client",
        tool: "GeneratedTool",
        value: Any,  # what deliver returned: a ToolOutput dict for a "result" tool
        structured: "JsonValue",
    ) -> None:
        """Add the shapes of what was delivered to the store (never a value)."""
        info = client.initialize_result
        descriptor = slot.descriptors.get(tool.wire_name)
        if self.shapes is None or info is None or descriptor is None:
            return
        data = value.get("data") if tool.returns == "result" else None
        about = info.server_info
        self.shapes.observe(about.name, about.version, descriptor, data, structured)


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


def _failure(kind: str, message: str) -> Dict[str, Any]:
    return {"failure": kind, "message": message}


def _call_limit(name: str, limits: Limits) -> str:
    return "%s: refused: this run made its %d tool calls, the limit (Limits.max_calls)" % (
        name,
        limits.max_calls,
    )
