"""mcp_client: a synchronous, thread-based, standard-library-only MCP client over stdio.

Everything a harness needs comes from this one import; the rest is reached
through its module (``from mcp_client import codegen``)::

    from mcp_client import Spawn, start

    with start(Spawn("python", ("-m", "mcp_server_time"))) as client:
        tools = client.list_tools()
        result = client.call_tool("get_current_time", {"timezone": "UTC"})
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any, List

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
    ContentBlock,
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

if TYPE_CHECKING:  # what __getattr__ below gives, for the type checker
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

# Loaded on first use (PEP 562), so that a client that never jails and never
# generates does not pay for the jail's planner and the generator at import:
# name -> (module, attribute; None for the module itself).
_LAZY = {
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
