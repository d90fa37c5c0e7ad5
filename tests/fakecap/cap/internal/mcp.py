"""The fake ``cap.internal.mcp``: the one seam every generated function calls.

``invoke(server, tool, arguments)`` appends an :class:`Invocation` to the log of
the innermost active ``recording`` and returns what that recording's handler
returns (``None`` without one). Calling it outside any ``recording`` raises,
so a test can never lose a call silently. An end-to-end test routes the calls
to a live client like this::

    def to_client(server, tool, arguments):
        return client.call_tool(tool, arguments)

    with mcp.recording(to_client) as calls:
        result = module.get_current_time(timezone="Etc/UTC")
    assert calls[0].tool == "get_current_time"

The arguments object is recorded as given, not copied, so a test can check
that a whole-value function sends its ``dict`` unchanged. Thread-safe: calls
may come from any thread while a recording is active.

``contract(call_tool, tools)`` is the handler that answers the way every
generated module's header says ``invoke`` does (and CLAUDE.md): for a tool
that declares an ``outputSchema``, the call's ``structuredContent`` as the
server sent it, or :class:`ToolFailed` when the call failed (``isError``) or
brought no object; for any other tool, the whole ``CallToolResult``::

    with mcp.recording(mcp.contract(client.call_tool, tools)):
        now = module.get_current_time(timezone="Etc/UTC")  # a dict
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from mcp_client.protocol import CallToolResult, ToolDescriptor

__all__ = ["Invocation", "Handler", "ToolFailed", "invoke", "recording", "contract"]

#: Receives ``(server, tool, arguments)``; its return value is ``invoke``'s.
Handler = Callable[[str, str, Dict[str, Any]], Any]


@dataclass(frozen=True)
class Invocation:
    """One call of the seam, exactly as the generated function made it."""

    server: str
    tool: str
    arguments: Dict[str, Any]


_lock = threading.Lock()
# The innermost active recording: its log and its handler; None outside any.
_active: Optional[Tuple[List[Invocation], Optional[Handler]]] = None


def invoke(server: str, tool: str, arguments: Dict[str, Any]) -> Any:
    """Record the call in the active recording and answer with its handler."""
    with _lock:
        if _active is None:
            raise RuntimeError("cap.internal.mcp.invoke called outside recording()")
        log, handler = _active
        log.append(Invocation(server, tool, arguments))
    return None if handler is None else handler(server, tool, arguments)


@contextmanager
def recording(handler: Optional[Handler] = None) -> Iterator[List[Invocation]]:
    """Record every ``invoke`` in the block into the yielded (live) list."""
    global _active
    log: List[Invocation] = []
    with _lock:
        outer, _active = _active, (log, handler)
    try:
        yield log
    finally:
        with _lock:
            _active = outer


class ToolFailed(Exception):
    """A tool that declares an outputSchema answered without a result to return."""

    def __init__(self, tool: str, result: CallToolResult) -> None:
        super().__init__("%s: %s" % (tool, "isError" if result.is_error
                                     else "no structuredContent object"))
        self.tool = tool
        self.result = result


def contract(call_tool: Callable[[str, Dict[str, Any]], CallToolResult],
             tools: Sequence[ToolDescriptor]) -> Handler:
    """A handler that calls ``call_tool`` and answers as the generated header says."""
    declared = {tool.name for tool in tools if tool.output_schema is not None}

    def handler(server: str, tool: str, arguments: Dict[str, Any]) -> Any:
        result = call_tool(tool, arguments)
        if tool not in declared:
            return result
        if result.is_error or type(result.structured_content) is not dict:
            raise ToolFailed(tool, result)
        return result.structured_content

    return handler
