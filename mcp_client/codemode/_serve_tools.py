"""The four tools of ``mcp-client serve``, over a ``CodeMode``: descriptors and answers.

``search_tools(query, limit)``, ``describe_tool(name)``, ``check_program(code)``
and ``run_program(code, timeout_s, approve)``, each a
:class:`mcp_client.codemode._mcp_server.Tool` with an ``inputSchema``, an
``outputSchema`` (the ``structuredContent`` it answers with, which the SDK clients
validate), a text block for hosts that read only text, and annotations that say what
it does: the three look-ups read only; ``run_program`` is what the
servers' tools are, as far as the policy lets them through. Arguments are checked here
(a wrong one is -32602, not a run). The ``instructions`` and ``run_program``'s
description say what a model needs to begin (:func:`instructions`,
:func:`run_description`).

With approvals (``Policy.approve``), ``run_program`` asks the host's user for each
call that waits for a yes (``elicitation/create``) when the host declared
``elicitation``; else the run stops there and its answer holds ``approval_required``
and a token, which ``approve`` takes back. A host that asked for progress (a
``progressToken``) is sent a ``notifications/progress`` for each call a run makes.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

from ..errors import CodeModeError
from ..jsonvalue import JsonValue
from ..text import inert
from . import _approval, _catalog
from ._mcp_server import CallContext, Refused, Result, Tool

if TYPE_CHECKING:  # pragma: no cover - annotations only: the runner loads in main
    from . import (
        Approval,
        CallRecord,
        CheckResult,
        CodeMode,
        Limits,
        Policy,
        RunResult,
        SearchResult,
    )

__all__ = [
    "Terms",
    "tools",
    "instructions",
    "run_description",
    "functions_by_server",
    "unavailable",
    "unavailable_instructions",
    "run_value",
    "run_text",
    "check_text",
    "no_match",
    "SURFACE_IN_DESCRIPTION",
]

#: A surface this short is shown whole in ``run_program``'s description (bytes, UTF-8).
SURFACE_IN_DESCRIPTION = 4 * 1024
#: The most matches ``search_tools`` gives in one answer, and how many by default.
MAX_LIMIT, LIMIT = 50, 8
#: How much of each match ``search_tools`` shows: one line, or the line and the whole doc.
DETAILS = ("brief", "full")
#: The longest program ``check_program`` and ``run_program`` take (bytes, UTF-8).
MAX_PROGRAM_BYTES = 1024 * 1024

_FUNCTION = re.compile(r"^cap\.mcp\.(\w+)\.(\w+)\(", re.MULTILINE)


@dataclass(frozen=True)
class Terms:
    """What the tools promise a model: the runner's limits and policy, and the jail."""

    limits: "Limits"
    policy: "Policy"
    jailed: bool = True


# ----------------------------------------------------------------------------- schemas

_STRING: Dict[str, JsonValue] = {"type": "string"}
_INTEGER: Dict[str, JsonValue] = {"type": "integer"}
_BOOLEAN: Dict[str, JsonValue] = {"type": "boolean"}


def _object(properties: Dict[str, JsonValue], required: Sequence[str]) -> Dict[str, JsonValue]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _strings() -> Dict[str, JsonValue]:
    return {"type": "array", "items": _STRING}


_MATCH = _object({"name": _STRING, "line": _STRING, "doc": _STRING}, ["name", "line"])
_CALL = _object(
    {
        "server": _STRING,
        "tool": _STRING,
        "ms": {"type": "number"},
        "outcome": _STRING,
        "approval": _STRING,
        "by": _STRING,
    },
    ["server", "tool", "ms", "outcome"],
)
#: A run stopped before a call that waits for a person's yes (``approval_required``).
_PENDING = _object(
    {
        "call": _STRING,
        "position": _INTEGER,
        "arguments": _STRING,
        "why": _STRING,
        "token": {"type": ["string", "null"]},
        "expires_in_s": {"type": "number"},
        "replayed_calls": _INTEGER,
        "note": _STRING,
    },
    ["call", "position", "arguments", "why", "token"],
)
#: What each tool's ``structuredContent`` holds, whole (docs/serve.md shows them); the
#: descriptors carry each one's top level only (:data:`OUTPUT_KEYS`): a host's model
#: reads the listing, and the answers' text says the rest.
SEARCH_OUTPUT = _object(
    {"matches": {"type": "array", "items": _MATCH}, "total": _INTEGER, "truncated": _BOOLEAN},
    ["matches", "total", "truncated"],
)
DESCRIBE_OUTPUT = _object(
    {"name": _STRING, "found": _BOOLEAN, "doc": _STRING}, ["name", "found", "doc"]
)
CHECK_OUTPUT = _object({"ok": _BOOLEAN, "messages": _strings()}, ["ok", "messages"])
RUN_OUTPUT = _object(
    {
        "exit_status": _INTEGER,
        "stdout": _STRING,
        "stderr": _STRING,
        "calls": {"type": "array", "items": _CALL},
        "error": {"type": ["string", "null"]},
        "truncated": _BOOLEAN,
        "restarted": _strings(),
        "approval_required": _PENDING,
    },
    ["exit_status", "stdout", "stderr", "calls", "error", "truncated", "restarted"],
)
#: The key each descriptor's ``outputSchema`` requires (the answer's shape whole is above).
OUTPUT_KEYS = {
    "search_tools": "matches",
    "describe_tool": "doc",
    "check_program": "ok",
    "run_program": "exit_status",
}


def _output(name: str) -> Dict[str, JsonValue]:
    return {"type": "object", "required": [OUTPUT_KEYS[name]]}


#: A program's source (at most MAX_PROGRAM_BYTES: refused past it, by name).
_CODE: Dict[str, JsonValue] = {"type": "string"}


# ----------------------------------------------------------------------------- the tools


def tools(mode: "CodeMode", terms: Terms) -> List[Tool]:
    """The four tools over ``mode``, described for its servers and ``terms``."""
    return [
        Tool(_search_descriptor(), lambda arguments: _search(mode, arguments)),
        Tool(_describe_descriptor(), lambda arguments: _describe(mode, arguments)),
        Tool(_check_descriptor(), lambda arguments: _check(mode, arguments)),
        Tool(
            _run_descriptor(_small_surface(mode), terms),
            lambda arguments, context=None: _run(mode, terms, arguments, context),
            context=True,  # the host's cancellation (or its going away) kills the run
        ),
    ]


def _descriptor(
    name: str,
    description: str,
    properties: Dict[str, JsonValue],
    required: Sequence[str],
    annotations: Dict[str, JsonValue],
) -> Dict[str, JsonValue]:
    return {
        "name": name,
        "description": description,
        "inputSchema": _object(properties, required),
        "outputSchema": _output(name),
        "annotations": annotations,
    }


#: Looking things up: nothing changes, and nothing outside is asked (MCP's defaults
#: for the rest: a read-only tool destroys nothing).
_LOOKUP: Dict[str, JsonValue] = {"readOnlyHint": True, "openWorldHint": False}


def _search_descriptor() -> Dict[str, JsonValue]:
    description = (
        'Find functions by what they do: a line each (signature, first sentence); detail "full" '
        "adds each whole doc."
    )
    properties: Dict[str, JsonValue] = {
        "query": _STRING,
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": LIMIT},
        "detail": {"enum": list(DETAILS)},
    }
    return _descriptor("search_tools", description, properties, ["query"], _LOOKUP)


def _describe_descriptor() -> Dict[str, JsonValue]:
    description = "One function's whole doc."
    properties: Dict[str, JsonValue] = {
        "name": {"type": "string", "description": "server.function"}
    }
    return _descriptor("describe_tool", description, properties, ["name"], _LOOKUP)


def _check_descriptor() -> Dict[str, JsonValue]:
    description = "Type-check a program; runs nothing."
    properties: Dict[str, JsonValue] = {"code": _CODE}
    return _descriptor("check_program", description, properties, ["code"], _LOOKUP)


def _run_descriptor(surface: str, terms: Terms) -> Dict[str, JsonValue]:
    description, limits = run_description(surface, terms), terms.limits
    properties: Dict[str, JsonValue] = {
        "code": _CODE,
        "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": limits.wall_clock},
    }
    if terms.policy.approves:  # said only where a token can be had
        properties["approve"] = {"type": "array", "items": _STRING}
    return _descriptor(
        "run_program", description, properties, ["code"], _run_annotations(terms.policy)
    )


def _run_annotations(policy: "Policy") -> Dict[str, JsonValue]:
    """The servers' effects as the policy lets them through: read-only only when every
    call that changes something is refused; destructive unless destructive calls are.
    (Idempotent and open-world: MCP's defaults, false and true, say it.)"""
    return {
        "readOnlyHint": policy.allow == "read-only" and not policy.allow_tools,
        "destructiveHint": policy.allow == "all" or bool(policy.allow_tools),
    }


def _small_surface(mode: "CodeMode") -> str:
    """Every function's brief line, when they are few enough to show whole; else ""."""
    lines = mode.surface(brief=True)
    return lines if len(lines.encode("utf-8")) < SURFACE_IN_DESCRIPTION else ""


def run_description(surface: str, terms: Terms) -> str:
    """``run_program``'s description: what it runs and answers, and the functions when
    they are few (``surface``: their lines; "" when there are too many to show)."""
    text = "Run a Python program (see the instructions): its exit status, output and calls."
    if surface:
        text += "\n\nThe functions:\n" + surface.rstrip("\n")
    return text


def _limits_line(terms: Terms) -> str:
    limits, policy = terms.limits, terms.policy
    allowed = {
        "all": "",
        "non-destructive": "; a call to a tool that does not say it is non-destructive is refused",
        "read-only": "; a call to a tool that does not say it is read-only is refused",
    }.get(policy.allow, "; policy: " + policy.allow)
    return "Limits: %g s a run, %g s a call, %d calls, %s of stdout and stderr each%s.%s" % (
        limits.wall_clock,
        limits.call_timeout,
        limits.max_calls,
        _size(limits.max_output_bytes),
        allowed,
        _JAILED if terms.jailed else "",
    )


def _size(count: int) -> str:
    if count % 1024 == 0 and count >= 1024:
        return "%d KiB" % (count // 1024)
    return "%d bytes" % count


_JAILED = " Jailed: no network; it writes only its working directory."


def instructions(mode: "CodeMode", terms: Terms) -> str:
    """What a host shows its model at the start: the servers, how to begin, what a call
    returns and raises, the limits. Each fact once: the tools' descriptions do not
    repeat it."""
    servers = functions_by_server(mode.surface())
    listed = ", ".join("%s (%d)" % (key, len(names)) for key, names in servers.items())
    return "\n".join(
        [
            "MCP servers' tools as Python functions, called from one program run with "
            "run_program. Servers (functions): %s." % listed,
            "Find functions with search_tools, one's doc with describe_tool. In the program: "
            "`from cap.mcp import <server>`, `<server>.<function>(name=value)`.",
            "A function returns its result type (a dict) or a ToolOutput: a dict "
            '{"text": str, "data": the text parsed (JSON or Python literal) or None, '
            '"content": [blocks]} whose keys are attributes too (out.text).',
            "A failed call raises cap.mcp.ToolFailed (the tool reported an error) or "
            "cap.mcp.CallFailed (server error, timeout, dead server, limit; subclasses: "
            "CallRefused, refused by policy, never sent; ResultMismatch, a result unlike its "
            "type).",
            "Do the whole task in one program; print what you need.",
            _limits_line(terms),
        ]
        + _approvals_line(terms.policy)
    )


def unavailable(reason: str, terms: Terms) -> List[Tool]:
    """The four tools when no runner could be opened (no server started, a config or
    a jail that cannot be had): each answers ``reason``, as a failed call, so that a
    host's model and its user read why (a host shows a server that exits at start
    only as a closed connection)."""

    def answer(arguments: Dict[str, JsonValue]) -> Result:
        text = "code mode is not available: %s" % reason
        return {"content": [{"type": "text", "text": text}], "isError": True}

    descriptors = (_search_descriptor(), _describe_descriptor(), _check_descriptor(),
                   _run_descriptor("", terms))  # fmt: skip
    return [Tool(descriptor, answer) for descriptor in descriptors]


def unavailable_instructions(reason: str) -> str:
    """The ``instructions`` of a ``serve`` that cannot run programs: why, and what to do."""
    return (
        "Code mode is not available: %s\nEvery tool answers with this reason. The user "
        "should fix the configuration (the server's stderr has the details) and restart "
        "this server." % reason
    )


def _approvals_line(policy: "Policy") -> List[str]:
    """What waits for a person's yes, and what to do when a run stops for one; nothing
    when nothing does (the line costs every host's context)."""
    if not policy.approves:
        return []
    which = {
        "all": "All calls",
        "destructive": "Calls to tools not marked read-only or non-destructive",
        "non-read-only": "Calls to tools not marked read-only",
        "none": "Calls",
    }[policy.approve]
    named = ", ".join(policy.approve_tools[:5]) + (", ..." if len(policy.approve_tools) > 5 else "")
    if policy.approve_tools:
        which += " (and %s)" % named if policy.approve != "none" else " to " + named
    line = (
        "%s wait for a person's yes (no: CallRefused). A run may stop with "
        "approval_required: ask the user, then run the same code with approve=[its token]."
    )
    return [line % which]


def functions_by_server(surface: str) -> Dict[str, List[str]]:
    """Each server's functions, in the surface's order (``cap.mcp.<key>.<function>(``)."""
    servers: Dict[str, List[str]] = {}
    for key, function in _FUNCTION.findall(surface):
        servers.setdefault(key, []).append(function)
    return servers


# ----------------------------------------------------------------------------- calls


def _search(mode: "CodeMode", arguments: Dict[str, JsonValue]) -> Union[Result, Refused]:
    refused = _unexpected(arguments, ("query", "limit", "detail"))
    query, limit = arguments.get("query"), _whole(arguments.get("limit", LIMIT))
    detail = arguments.get("detail", "brief")
    if refused is None and not isinstance(query, str):
        refused = Refused("query must be a string")
    if refused is None and (limit is None or not 1 <= limit <= MAX_LIMIT):
        refused = Refused("limit must be an integer from 1 to %d" % MAX_LIMIT)
    if refused is None and detail not in DETAILS:
        refused = Refused("detail must be one of %s" % ", ".join(DETAILS))
    if refused is not None:
        return refused
    found = mode.search(str(query), limit=int(limit or LIMIT))
    full = detail == "full"
    return _answer(_search_text(str(query), found, full), _search_value(found, full))


def _whole(value: JsonValue) -> Optional[int]:
    """An integer as JSON Schema reads one: ``10`` or ``10.0``, never ``true``."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return None


def _unexpected(arguments: Dict[str, JsonValue], known: Sequence[str]) -> Optional[Refused]:
    """Every schema here says ``additionalProperties: false``: a misspelt argument is
    refused by its name, not ignored (``timeout`` for ``timeout_s`` would run with the
    whole wall clock)."""
    extra = sorted(name for name in arguments if name not in known)
    if not extra:
        return None
    return Refused(
        "unknown argument%s %s; this tool takes %s"
        % ("" if len(extra) == 1 else "s", ", ".join(_shown_key(e) for e in extra[:5]),
           ", ".join(known))
    )  # fmt: skip


def _shown_key(name: str) -> str:
    return _catalog.shown_name(ascii(name))


def _search_value(found: "SearchResult", full: bool) -> Dict[str, JsonValue]:
    matches: List[JsonValue] = []
    for match in found.matches:
        shown: Dict[str, JsonValue] = {"name": "%s.%s" % (match.server, match.function)}
        shown["line"] = match.brief or match.line
        if full:
            shown["doc"] = match.doc
        matches.append(shown)
    return {"matches": matches, "total": found.total, "truncated": found.truncated}


def no_match(query: str) -> str:
    """What a search that found nothing says."""
    return "no function matches %s; try other words, or an empty query for all" % (
        _catalog.shown_name(repr(query))
    )


def _search_text(query: str, found: "SearchResult", full: bool) -> str:
    if not found.matches:
        return no_match(query)
    head = "%d of %d matching functions%s:" % (
        len(found.matches),
        found.total,
        " (more with a larger limit)" if found.truncated else "",
    )
    if full:
        return "\n\n".join([head] + [m.doc for m in found.matches])
    return "\n".join([head] + [m.brief or m.line for m in found.matches])


def _describe(mode: "CodeMode", arguments: Dict[str, JsonValue]) -> Union[Result, Refused]:
    name = arguments.get("name")
    refused = _unexpected(arguments, ("name",))
    if refused is None and not isinstance(name, str):
        refused = Refused("name must be a string")
    if refused is None and not _encodable(str(name)):
        refused = Refused('name must be text UTF-8 can carry: "server.function"')
    if refused is not None:
        return refused
    doc = mode.describe(str(name))
    # An unknown name is answered with the closest ones, in the runner's words.
    found = not doc.startswith("no tool ")
    return _answer(doc, {"name": name, "found": found, "doc": doc}, failed=not found)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check(mode: "CodeMode", arguments: Dict[str, JsonValue]) -> Union[Result, Refused]:
    code = _unexpected(arguments, ("code",)) or _program(arguments)
    if isinstance(code, Refused):
        return code
    try:
        checked = mode.check(code)
    except CodeModeError as e:  # busy, or cut short by the end: said, not raised
        return {"content": [{"type": "text", "text": "not checked: %s" % e}], "isError": True}
    value: Dict[str, JsonValue] = {"ok": checked.ok, "messages": list(checked.messages)}
    return _answer(check_text(checked), value)


def check_text(checked: "CheckResult") -> str:
    """A check as text: ``ok``, ``ok, with notes:`` and them, or the messages."""
    if not checked.ok:
        return "\n".join(checked.messages)
    return "ok, with notes:\n" + "\n".join(checked.messages) if checked.messages else "ok"


def _run(
    mode: "CodeMode",
    terms: Terms,
    arguments: Dict[str, JsonValue],
    context: Optional[CallContext] = None,
) -> Union[Result, Refused]:
    limits = terms.limits
    known = ("code", "timeout_s", "approve") if terms.policy.approves else ("code", "timeout_s")
    code = _unexpected(arguments, known) or _program(arguments)
    if isinstance(code, Refused):
        return code
    timeout = arguments.get("timeout_s")
    if timeout is not None and not _seconds(timeout, limits.wall_clock):
        return Refused("timeout_s must be a number of seconds above 0, at most %g"
                       % limits.wall_clock)  # fmt: skip
    tokens = _tokens(arguments.get("approve", []))
    if isinstance(tokens, Refused):
        return tokens
    options: Dict[str, Any] = {}  # only what is asked for (a runner of old takes none)
    if context is not None:
        options["cancelled"] = context.cancelled
    if tokens:
        options["approve"] = tokens
    if context is not None and context.reports_progress:
        options["progress"] = context.progress
    if (
        context is not None
        and terms.policy.approves
        and _approval.host_elicits(context.host_capabilities)
    ):
        options["approver"] = _approval.elicitation(context.ask, limits.approval_timeout)
    try:
        ran = mode.run(
            code,
            timeout=None if timeout is None else float(timeout),  # type: ignore[arg-type]
            **options,
        )
    except CodeModeError as e:  # closed under us (the end), no jail, a token refused
        return {"content": [{"type": "text", "text": "not run: %s" % e}], "isError": True}
    failed = ran.exit_status != 0 or ran.error is not None
    return _answer(run_text(ran), run_value(ran), failed=failed)


def _tokens(value: JsonValue) -> Union[List[str], Refused]:
    """``approve``: the token of a run that stopped for a person's yes (one at most)."""
    if not isinstance(value, list) or not all(isinstance(each, str) for each in value):
        return Refused("approve must be an array of the token strings a stopped run gave")
    if len(value) > 1:
        return Refused("approve takes one token: the newest one resumes every earlier step")
    return [str(each) for each in value]


def _seconds(value: JsonValue, most: float) -> bool:
    if type(value) not in (int, float):
        return False
    # Compared first: an int past a float's range (10**400) is then never converted.
    return 0 < value <= most and math.isfinite(value)  # type: ignore[arg-type, operator]


def _program(arguments: Dict[str, JsonValue]) -> Union[str, Refused]:
    code = arguments.get("code")
    if not isinstance(code, str):
        return Refused("code must be a string: the program's Python source")
    if len(code) > MAX_PROGRAM_BYTES:
        return Refused("code is over %d bytes" % MAX_PROGRAM_BYTES)
    try:  # JSON carries a lone surrogate ("\ud800"); a program's file cannot
        encoded = code.encode("utf-8")
    except UnicodeEncodeError as e:
        return Refused("code is not text UTF-8 can carry: %s" % e.reason)
    if len(encoded) > MAX_PROGRAM_BYTES:
        return Refused("code is over %d bytes" % MAX_PROGRAM_BYTES)
    return code


def _shown(output: str) -> str:
    r"""A program's output as a host may show it to a person: every control character but
    ``\n`` and ``\t`` (ANSI escapes, ``\r``, C1, bidi overrides) spelt ``\xNN``/``\uNNNN``,
    as ``codemode`` does for a terminal."""
    return inert(output, keep="\n\t")


def run_value(ran: "RunResult") -> Dict[str, JsonValue]:
    """A run's ``structuredContent`` (``RUN_OUTPUT``); the program's output escaped
    (:func:`_shown`)."""
    calls: List[JsonValue] = [_call_value(c) for c in ran.calls]
    value: Dict[str, JsonValue] = {
        "exit_status": ran.exit_status,
        "stdout": _shown(ran.stdout),
        "stderr": _shown(ran.stderr),
        "calls": calls,
        "error": ran.error,
        "truncated": ran.truncated,
        "restarted": list(ran.restarted),
    }
    approval = getattr(ran, "approval", None)  # a result of old has none
    if approval is not None:
        value["approval_required"] = _pending_value(approval)
    return value


def _call_value(call: "CallRecord") -> Dict[str, JsonValue]:
    value: Dict[str, JsonValue] = {
        "server": call.server,
        "tool": call.tool,
        "ms": round(call.ms, 3),
        "outcome": call.outcome,
    }
    approval, by = getattr(call, "approval", ""), getattr(call, "by", "")
    if approval:  # said only where someone was asked (or a token spoke)
        value["approval"] = approval
        if by:
            value["by"] = by
    return value


def _pending_value(approval: "Approval") -> Dict[str, JsonValue]:
    call = approval.call
    value: Dict[str, JsonValue] = {
        "call": call.name,
        "position": call.position,
        "arguments": call.shown_arguments(),
        "why": call.reason,
        "token": approval.token,
        "expires_in_s": approval.expires_in,
        "replayed_calls": approval.replayed,
    }
    if approval.note:
        value["note"] = approval.note
    return value


def run_text(ran: "RunResult") -> str:
    """A run for hosts that read only text: status and error, the streams (escaped, as
    :func:`run_value`'s), the calls."""
    parts = ["exit status %d" % ran.exit_status + ("; " + ran.error if ran.error else "")]
    if ran.stdout:
        parts.append("stdout:\n" + _shown(ran.stdout).rstrip("\n"))
    if ran.stderr:
        parts.append("stderr:\n" + _shown(ran.stderr).rstrip("\n"))
    if ran.calls:
        parts.append("calls:\n" + "\n".join(
            "%s.%s %s %.0f ms" % (c.server, c.tool, c.outcome, c.ms) for c in ran.calls
        ))  # fmt: skip
    if ran.restarted:
        parts.append("servers started again: " + ", ".join(ran.restarted))
    approval = getattr(ran, "approval", None)
    if approval is not None:
        parts.insert(1, _approval_text(approval))
    return "\n\n".join(parts)


def _approval_text(approval: "Approval") -> str:
    """What a model reads of a run that stopped for a person's yes: what to ask, and how
    to go on (the runner's words, before anything the program printed)."""
    call = approval.call
    head = "approval_required: call %d, %s(%s), waits for a person's yes." % (
        call.position,
        call.name,
        call.shown_arguments(),
    )
    if approval.token is None:
        return head + " This run cannot be resumed: %s." % approval.note
    before = approval.replayed
    return head + (
        " Ask the user whether to make this call. Only if they say yes, run the same code "
        "again, unchanged, with approve=[%s] (once, within %g s): %s answered from this "
        "run's log, not made again."
        % (json.dumps(approval.token), approval.expires_in,
           "the call before it is" if before == 1 else "the %d calls before it are" % before)
    )  # fmt: skip


def _answer(text: str, value: Dict[str, JsonValue], failed: bool = False) -> Result:
    result: Result = {"content": [{"type": "text", "text": text}], "structuredContent": value}
    if failed:
        result["isError"] = True
    return result
