"""mcp_client: a synchronous, thread-based, standard-library-only MCP client over stdio.

Everything a harness needs comes from this one import; the rest is reached
through its module (``from mcp_client import codegen``)::

    from mcp_client import Spawn, start

    with start(Spawn("python", ("-m", "mcp_server_time"))) as client:
        tools = client.list_tools()
        result = client.call_tool("get_current_time", {"timezone": "UTC"})
        print(result.structured_content)

The names, by what they are for:

* starting a server: :class:`Spawn` (an argv, never a shell), :class:`ProcessTransport`
  (stderr, a :class:`Jail`, a lifeline), :func:`start`, :func:`prepare`,
  :func:`prepare_owned`, :class:`Options`;
* the client: :class:`Client` (``list_tools``, ``call_tool``, ``ping``, ``stop``,
  ``shutdown``), its :class:`State`, and the evidence of its end: :class:`Exited`,
  :class:`NoResource`, :class:`ChannelClosed`;
* what the server said: :class:`InitializeResult`, :class:`ToolDescriptor`,
  :class:`CallToolResult` with its :class:`Text` and :class:`Other` blocks; what a
  generated function returns for a tool without an ``outputSchema``:
  :class:`ToolOutput` and its typed blocks (:mod:`mcp_client.content`);
* the errors: one root, :class:`McpClientError`, and a family per verb
  (:class:`StartError`, :class:`ClientError`, :class:`RetirementError`; the rest in
  :mod:`mcp_client.errors`);
* the modules: :mod:`~mcp_client.codegen` (a server's tools as a Python module),
  :mod:`~mcp_client.codemode` (a model's program run against them),
  :mod:`~mcp_client.config` (the servers of a config file), :mod:`~mcp_client.jail`,
  :mod:`~mcp_client.capture` and :mod:`~mcp_client.replay`.
"""

from __future__ import annotations

import logging

from ._version import __version__
from .client import Client, Options, State, prepare, prepare_owned, start
from .errors import (
    CallTimedOut,
    CleanupUnconfirmed,
    ClientBroken,
    ClientClosed,
    ClientError,
    ClientInherited,
    HandshakeFailed,
    McpClientError,
    ResultMalformed,
    RetirementError,
    RetirementTimedOut,
    RetirementUnconfirmed,
    ServerError,
    StartError,
    ToolsNotDeclared,
    TooManyPages,
    TransportFailed,
    Unavailable,
    VersionUnsupported,
)
from .protocol import (
    CallToolResult,
    ClientInfo,
    InitializeResult,
    Other,
    ServerInfo,
    Text,
    ToolDescriptor,
)
from .transport import (
    ChannelClosed,
    ChannelTransport,
    Exited,
    NoResource,
    ProcessTransport,
    Spawn,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # what __getattr__ below gives, for the type checker
    from typing import Any, List

    from . import codegen as codegen
    from . import jail as jail
    from . import jailer as jailer
    from . import schema as schema
    from .content import (
        AudioContent,
        Block,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        ToolOutput,
    )
    from .jail import DEFAULT_HIDDEN, Jail
    from .protocol import ContentBlock

# Loaded on first use (PEP 562), so that a client that never jails and never
# generates does not pay for the jail's planner and the generator at import:
# name -> (module, attribute; None for the module itself).
_LAZY = {
    "ContentBlock": ("protocol", "ContentBlock"),  # a typing.Union: built on first use
    "Jail": ("jail", "Jail"),
    "DEFAULT_HIDDEN": ("jail", "DEFAULT_HIDDEN"),
    "codegen": ("codegen", None),
    "jail": ("jail", None),
    "jailer": ("jailer", None),
    "schema": ("schema", None),
    # What a generated function returns for a tool without an outputSchema, and its
    # blocks typed: TypedDicts a program narrows by "type" (mcp_client.content).
    "ToolOutput": ("content", "ToolOutput"),
    "Block": ("content", "Block"),
    "TextContent": ("content", "TextContent"),
    "ImageContent": ("content", "ImageContent"),
    "AudioContent": ("content", "AudioContent"),
    "ResourceLink": ("content", "ResourceLink"),
    "EmbeddedResource": ("content", "EmbeddedResource"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    import importlib

    module_name, attribute = _LAZY[name]
    module = importlib.import_module("." + module_name, __name__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


# A library never configures logging; it only makes sure nothing is printed
# when the application has not configured it either.
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "__version__",
    "Spawn",
    "ProcessTransport",
    "ChannelTransport",
    "Options",
    "ClientInfo",
    "Client",
    "InitializeResult",
    "ServerInfo",
    "ToolDescriptor",
    "CallToolResult",
    "ContentBlock",
    "Text",
    "Other",
    "ToolOutput",
    "Block",
    "TextContent",
    "ImageContent",
    "AudioContent",
    "ResourceLink",
    "EmbeddedResource",
    "State",
    "prepare",
    "prepare_owned",
    "start",
    "NoResource",
    "Exited",
    "ChannelClosed",
    "Jail",
    "DEFAULT_HIDDEN",
    "McpClientError",
    "ClientError",
    "Unavailable",
    "ClientClosed",
    "ClientBroken",
    "ClientInherited",
    "CallTimedOut",
    "ServerError",
    "ResultMalformed",
    "TooManyPages",
    "StartError",
    "TransportFailed",
    "HandshakeFailed",
    "VersionUnsupported",
    "ToolsNotDeclared",
    "CleanupUnconfirmed",
    "RetirementError",
    "RetirementTimedOut",
    "RetirementUnconfirmed",
]
