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
generated module's header says ``invoke`` does: ``mcp_client.codegen.deliver``
of the call's result, for the ``GeneratedTool`` whose wire name was called
(``tools`` is ``Generated.tools``): a ``"structured"`` tool's
``structuredContent``, a ``"result"`` tool's ``ToolOutput`` dict, or
``mcp_client.errors.ToolFailed``::

    generated = codegen.generate(server, client.list_tools())
    with mcp.recording(mcp.contract(client.call_tool, generated.tools)):
        now = module.get_current_time(timezone="Etc/UTC")  # a dict
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, Iterator, List, Optional, Sequence, Tuple, TypeVar

from mcp_client.codegen import GeneratedTool, deliver
from mcp_client.errors import ToolFailed
from mcp_client.protocol import CallToolResult

__all__ = ["Invocation", "Handler", "ToolFailed", "ToolOutput", "invoke", "recording", "contract"]

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


_Data = TypeVar("_Data")
_Block = TypeVar("_Block")


class ToolOutput(Dict[str, Any], Generic[_Data, _Block]):
    """The runtime's ``ToolOutput`` (code mode's ``runtime_script``), as a generated module
    names it: a dict whose keys read as attributes too."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def contract(
    call_tool: Callable[[str, Dict[str, Any]], CallToolResult], tools: Sequence[GeneratedTool]
) -> Handler:
    """A handler that calls ``call_tool`` and answers with ``codegen.deliver``, a
    ``"result"`` tool's dict a :class:`ToolOutput` (as code mode's runtime gives it)."""
    by_wire = {tool.wire_name: tool for tool in tools}

    def handler(server: str, tool: str, arguments: Dict[str, Any]) -> Any:
        made = by_wire[tool]
        value = deliver(made, call_tool(tool, arguments))
        return ToolOutput(value) if made.returns == "result" else value

    return handler
