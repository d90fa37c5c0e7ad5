"""The four tools of ``mcp-client serve``, over a ``CodeMode``: descriptors and answers.

``search_tools(query, limit)``, ``describe_tool(name)``, ``check_program(code)`` and
``run_program(code, timeout_s)``, each a :class:`mcp_client.codemode._mcp_server.Tool` with an
``inputSchema``, an ``outputSchema`` (the ``structuredContent`` it answers with, which
the SDK clients validate), a text block for hosts that read only text, and annotations
that say what it does: the three look-ups read only; ``run_program`` is what the
servers' tools are, as far as the policy lets them through. Arguments are checked here
(a wrong one is -32602, not a run). The ``instructions`` and ``run_program``'s
description say what a model needs to begin (:func:`instructions`,
:func:`run_description`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Sequence, Union

from ..errors import CodeModeError
from ..jsonvalue import JsonValue
from . import _catalog
from ._mcp_server import Refused, Result, Tool

if TYPE_CHECKING:  # pragma: no cover - annotations only: the runner loads in main
    from . import CodeMode, Limits, Policy, RunResult, SearchResult

__all__ = [
    "Terms",
    "tools",
    "instructions",
    "run_description",
    "functions_by_server",
    "run_value",
    "run_text",
    "SURFACE_IN_DESCRIPTION",
]

#: A surface this short is shown whole in ``run_program``'s description (bytes, UTF-8).
SURFACE_IN_DESCRIPTION = 4 * 1024
#: The most matches ``search_tools`` gives in one answer.
MAX_LIMIT = 50
#: The longest program ``check_program`` and ``run_program`` take (bytes, UTF-8).
MAX_PROGRAM_BYTES = 1024 * 1024
#: Function names shown on a server's line of the instructions, at most.
NAMES_SHOWN = 8

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


_MATCH = _object({"name": _STRING, "line": _STRING, "doc": _STRING}, ["name", "line", "doc"])
_CALL = _object(
    {"server": _STRING, "tool": _STRING, "ms": {"type": "number"}, "outcome": _STRING},
    ["server", "tool", "ms", "outcome"],
)
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
    },
    ["exit_status", "stdout", "stderr", "calls", "error", "truncated", "restarted"],
)


def _code_input(what: str) -> Dict[str, JsonValue]:
    return {"type": "string", "description": what, "maxLength": MAX_PROGRAM_BYTES}


# ----------------------------------------------------------------------------- the tools


def tools(mode: "CodeMode", terms: Terms) -> List[Tool]:
    """The four tools over ``mode``, described for its servers and ``terms``."""
    surface = mode.surface()
    return [
        Tool(_search_descriptor(), lambda arguments: _search(mode, arguments)),
        Tool(_describe_descriptor(), lambda arguments: _describe(mode, arguments)),
        Tool(_check_descriptor(), lambda arguments: _check(mode, arguments)),
        Tool(
            _run_descriptor(surface, terms),
            lambda arguments: _run(mode, terms.limits, arguments),
        ),
    ]


def _descriptor(
    name: str,
    title: str,
    description: str,
    properties: Dict[str, JsonValue],
    required: Sequence[str],
    output: Dict[str, JsonValue],
    annotations: Dict[str, JsonValue],
) -> Dict[str, JsonValue]:
    return {
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": _object(properties, required),
        "outputSchema": output,
        "annotations": dict(annotations, title=title),
    }


#: Looking things up: nothing changes, the same answer each time, nothing outside asked.
_LOOKUP: Dict[str, JsonValue] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


def _search_descriptor() -> Dict[str, JsonValue]:
    description = (
        "Find the functions a code-mode program can call, by what they do. Give a few words "
        "(a tool's name, its server, what it acts on); each match is a function of "
        "cap.mcp.<server> with its signature line (arguments and result, typed) and its doc. "
        "Search first, then write one program for run_program."
    )
    properties: Dict[str, JsonValue] = {
        "query": {"type": "string", "description": "words to match; empty lists every tool"},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": 10,
            "description": "the most matches to return",
        },
    }
    return _descriptor(
        "search_tools", "Search tools", description, properties, ["query"], SEARCH_OUTPUT, _LOOKUP
    )


def _describe_descriptor() -> Dict[str, JsonValue]:
    description = (
        "The whole doc of one function a program can call: its signature, parameters (with "
        "defaults and allowed values), result, what it raises. Name it as search_tools "
        'does: "server.function". An unknown name is answered with the closest names.'
    )
    properties: Dict[str, JsonValue] = {
        "name": {"type": "string", "description": '"server.function", e.g. "time.convert_time"'}
    }
    return _descriptor(
        "describe_tool", "Describe a tool", description, properties, ["name"],
        DESCRIBE_OUTPUT, _LOOKUP,
    )  # fmt: skip


def _check_descriptor() -> Dict[str, JsonValue]:
    description = (
        "Check a program before running it: compile() and, where mypy is installed, "
        "mypy --strict against the cap package (the same typed functions run_program "
        'gives). Each message names its line: "line 3: ... did you mean "sortBy"?". '
        "Nothing is run and no tool is called."
    )
    properties: Dict[str, JsonValue] = {"code": _code_input("the program's Python source")}
    return _descriptor(
        "check_program", "Check a program", description, properties, ["code"],
        CHECK_OUTPUT, _LOOKUP,
    )  # fmt: skip


def _run_descriptor(surface: str, terms: Terms) -> Dict[str, JsonValue]:
    description, limits = run_description(surface, terms), terms.limits
    properties: Dict[str, JsonValue] = {
        "code": _code_input("the program's Python source; it prints what you need to see"),
        "timeout_s": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": limits.wall_clock,
            "description": "seconds the run may take (default and most: %g)" % limits.wall_clock,
        },
    }
    return _descriptor(
        "run_program", "Run a program", description, properties, ["code"], RUN_OUTPUT,
        _run_annotations(terms.policy),
    )  # fmt: skip


def _run_annotations(policy: "Policy") -> Dict[str, JsonValue]:
    """The servers' effects as the policy lets them through: read-only only when every
    call that changes something is refused; destructive unless destructive calls are."""
    return {
        "readOnlyHint": policy.allow == "read-only" and not policy.allow_tools,
        "destructiveHint": policy.allow == "all" or bool(policy.allow_tools),
        "idempotentHint": False,
        "openWorldHint": True,  # the servers may reach anything; their claims are theirs
    }


def run_description(surface: str, terms: Terms) -> str:
    """``run_program``'s description: how to write a program, and the surface when small."""
    lines = [
        "Run one Python program that calls the servers' tools as typed functions: "
        "`from cap.mcp import <server>`, then `<server>.<function>(keyword=value, ...)`; "
        "each returns the tool's result. A failing call raises cap.mcp.ToolFailed (the tool "
        "reported an error; str() is its text), cap.mcp.CallFailed (the call did not "
        "complete: a timeout, a dead server, a limit) or cap.mcp.CallRefused (a CallFailed: "
        "the policy refused it, and it was never sent). Do the whole task in one program, "
        "with loops and conditions as needed, and print what you need to see: the answer "
        "is its exit status, stdout, stderr and every call made.",
        _limits_line(terms),
    ]
    if len(surface.encode("utf-8")) < SURFACE_IN_DESCRIPTION:
        lines.append("Every function there is:\n" + surface.rstrip("\n"))
    else:
        lines.append("Find the functions with search_tools first (describe_tool for one).")
    return "\n\n".join(lines)


def _limits_line(terms: Terms) -> str:
    limits, policy = terms.limits, terms.policy
    allowed = {
        "all": "every call is allowed",
        "non-destructive": "calls to tools that do not claim to be non-destructive are refused",
        "read-only": "calls to tools that do not claim to be read-only are refused",
    }.get(policy.allow, "policy: " + policy.allow)
    return (
        "Limits: %g s a run, %g s a call, %d calls a run, %d bytes each of stdout and "
        "stderr kept; %s.%s" % (
            limits.wall_clock, limits.call_timeout, limits.max_calls,
            limits.max_output_bytes, allowed, _JAILED if terms.jailed else "",
        )
    )  # fmt: skip


_JAILED = (
    " The program runs in a jail: no network, and its working directory is the only "
    "place it can write."
)


def instructions(mode: "CodeMode", terms: Terms) -> str:
    """What a host shows its model at the start: the servers, and how to begin."""
    servers = functions_by_server(mode.surface())
    lines = [
        "Code mode: the tools of %d MCP servers, called from one Python program that you "
        "write and run with run_program. In the program, `from cap.mcp import <server>`; "
        "the servers:" % len(servers)
    ]
    lines += [_server_line(key, names) for key, names in servers.items()]
    lines += [
        "Start with search_tools(query) to find the functions you need (each match gives "
        "its typed signature and doc; describe_tool(\"server.function\") gives one whole), "
        "then write one program that does the whole task and prints what you need; "
        "check_program(code) type-checks it first.",
        "A failing call raises cap.mcp.ToolFailed (the tool said it failed), "
        "cap.mcp.CallFailed (no answer: a timeout, a dead server, a limit) or "
        "cap.mcp.CallRefused (a CallFailed: refused by the policy, never sent); catch them "
        "where the program can go on.",
        _limits_line(terms),
    ]
    return "\n".join(lines)


def _server_line(key: str, names: List[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN]) + (", ..." if len(names) > NAMES_SHOWN else "")
    return "- %s: %d tool%s (%s)" % (key, len(names), "" if len(names) == 1 else "s", shown)


def functions_by_server(surface: str) -> Dict[str, List[str]]:
    """Each server's functions, in the surface's order (``cap.mcp.<key>.<function>(``)."""
    servers: Dict[str, List[str]] = {}
    for key, function in _FUNCTION.findall(surface):
        servers.setdefault(key, []).append(function)
    return servers


# ----------------------------------------------------------------------------- calls


def _search(mode: "CodeMode", arguments: Dict[str, JsonValue]) -> Union[Result, Refused]:
    query, limit = arguments.get("query"), arguments.get("limit", 10)
    if not isinstance(query, str):
        return Refused("query must be a string")
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        return Refused("limit must be an integer from 1 to %d" % MAX_LIMIT)
    found = mode.search(query, limit=limit)
    return _answer(_search_text(query, found), _search_value(found))


def _search_value(found: "SearchResult") -> Dict[str, JsonValue]:
    matches: List[JsonValue] = [
        {"name": "%s.%s" % (m.server, m.function), "line": m.line, "doc": m.doc}
        for m in found.matches
    ]
    return {"matches": matches, "total": found.total, "truncated": found.truncated}


def _search_text(query: str, found: "SearchResult") -> str:
    if not found.matches:
        return "no function matches %s; try other words, or an empty query for all" % (
            _catalog.shown_name(repr(query))
        )
    head = "%d of %d matching functions%s:" % (
        len(found.matches),
        found.total,
        " (more with a larger limit)" if found.truncated else "",
    )
    return "\n\n".join([head] + ["%s\n%s" % (m.line, m.doc) for m in found.matches])


def _describe(mode: "CodeMode", arguments: Dict[str, JsonValue]) -> Union[Result, Refused]:
    name = arguments.get("name")
    if not isinstance(name, str):
        return Refused("name must be a string")
    doc = mode.describe(name)
    # An unknown name is answered with the closest ones, in the runner's words.
    found = not doc.startswith("no tool ")
    return _answer(doc, {"name": name, "found": found, "doc": doc}, failed=not found)


def _check(mode: "CodeMode", arguments: Dict[str, JsonValue]) -> Union[Result, Refused]:
    code = _program(arguments)
    if isinstance(code, Refused):
        return code
    checked = mode.check(code)
    text = "ok" if checked.ok else "\n".join(checked.messages)
    if checked.ok and checked.messages:
        text = "ok, with notes:\n" + "\n".join(checked.messages)
    value: Dict[str, JsonValue] = {"ok": checked.ok, "messages": list(checked.messages)}
    return _answer(text, value)


def _run(
    mode: "CodeMode", limits: "Limits", arguments: Dict[str, JsonValue]
) -> Union[Result, Refused]:
    code = _program(arguments)
    if isinstance(code, Refused):
        return code
    timeout = arguments.get("timeout_s")
    if timeout is not None and not _seconds(timeout, limits.wall_clock):
        return Refused("timeout_s must be a number of seconds above 0, at most %g"
                       % limits.wall_clock)  # fmt: skip
    try:
        ran = mode.run(code, timeout=None if timeout is None else float(timeout))  # type: ignore[arg-type]
    except CodeModeError as e:  # closed under us (the end), or no jail: said, not raised
        return {"content": [{"type": "text", "text": "not run: %s" % e}], "isError": True}
    failed = ran.exit_status != 0 or ran.error is not None
    return _answer(run_text(ran), run_value(ran), failed=failed)


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


def run_value(ran: "RunResult") -> Dict[str, JsonValue]:
    """A run's ``structuredContent`` (``RUN_OUTPUT``)."""
    calls: List[JsonValue] = [
        {"server": c.server, "tool": c.tool, "ms": round(c.ms, 3), "outcome": c.outcome}
        for c in ran.calls
    ]
    return {
        "exit_status": ran.exit_status,
        "stdout": ran.stdout,
        "stderr": ran.stderr,
        "calls": calls,
        "error": ran.error,
        "truncated": ran.truncated,
        "restarted": list(ran.restarted),
    }


def run_text(ran: "RunResult") -> str:
    """A run for hosts that read only text: status and error, the streams, the calls."""
    parts = ["exit status %d" % ran.exit_status + ("; " + ran.error if ran.error else "")]
    if ran.stdout:
        parts.append("stdout:\n" + ran.stdout.rstrip("\n"))
    if ran.stderr:
        parts.append("stderr:\n" + ran.stderr.rstrip("\n"))
    if ran.calls:
        parts.append("calls:\n" + "\n".join(
            "%s.%s %s %.0f ms" % (c.server, c.tool, c.outcome, c.ms) for c in ran.calls
        ))  # fmt: skip
    if ran.restarted:
        parts.append("servers started again: " + ", ".join(ran.restarted))
    return "\n\n".join(parts)


def _answer(text: str, value: Dict[str, JsonValue], failed: bool = False) -> Result:
    result: Result = {"content": [{"type": "text", "text": text}], "structuredContent": value}
    if failed:
        result["isError"] = True
    return result
