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
  :class:`ToolOutput` and its typed blocks (:mod:`mcp_client.codegen.content`);
* the errors: one root, :class:`McpClientError`, and a family per verb
  (:class:`StartError`, :class:`ClientError`, :class:`RetirementError`; the rest in
  :mod:`mcp_client.errors`);
* the modules: :mod:`~mcp_client.codegen` (a server's tools as a Python module),
  :mod:`~mcp_client.codemode` (a model's program run against them),
  :mod:`~mcp_client.config` (the servers of a config file), :mod:`~mcp_client.jail`,
  :mod:`~mcp_client.capture` and :mod:`~mcp_client.replay`.
"""

from __future__ import annotations

import sys

from . import _lazy
from ._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:  # what __getattr__ below gives, for the type checker
    from typing import Any, List

    from . import codegen as codegen
    from . import jail as jail
    from .client import Client, Options, State, prepare, prepare_owned, start
    from .codegen import schema as schema
    from .codegen.content import (
        AudioContent,
        Block,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        ToolOutput,
    )
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
    from .jail import DEFAULT_HIDDEN, Jail
    from .jail import spawn as jailer  # noqa: F401 -- the face gives it (its old name)
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

#: Every name of the face, loaded on first use (PEP 562): ``import mcp_client`` -- and so
#: the import of any one module of it, a codec say -- loads none of the client, the
#: transport, the jail or the generator until a name of theirs is read.
#: name -> (module under the package, attribute; None for the module itself).
_FACE = {
    **dict.fromkeys(("Client", "Options", "State", "prepare", "prepare_owned", "start"), "client"),
    **dict.fromkeys(
        (
            "CallTimedOut",
            "CleanupUnconfirmed",
            "ClientBroken",
            "ClientClosed",
            "ClientError",
            "ClientInherited",
            "HandshakeFailed",
            "McpClientError",
            "ResultMalformed",
            "RetirementError",
            "RetirementTimedOut",
            "RetirementUnconfirmed",
            "ServerError",
            "StartError",
            "ToolsNotDeclared",
            "TooManyPages",
            "TransportFailed",
            "Unavailable",
            "VersionUnsupported",
        ),
        "errors",
    ),
    **dict.fromkeys(
        (
            "CallToolResult",
            "ClientInfo",
            "ContentBlock",  # a typing.Union: built on first use
            "InitializeResult",
            "Other",
            "ServerInfo",
            "Text",
            "ToolDescriptor",
        ),
        "protocol",
    ),
    **dict.fromkeys(
        (
            "ChannelClosed",
            "ChannelTransport",
            "Exited",
            "NoResource",
            "ProcessTransport",
            "Spawn",
        ),
        "transport",
    ),
    "Jail": "jail",
    "DEFAULT_HIDDEN": "jail",
    # What a generated function returns for a tool without an outputSchema, and its
    # blocks typed: TypedDicts a program narrows by "type" (mcp_client.codegen.content).
    **dict.fromkeys(
        (
            "ToolOutput",
            "Block",
            "TextContent",
            "ImageContent",
            "AudioContent",
            "ResourceLink",
            "EmbeddedResource",
        ),
        "codegen.content",
    ),
}
#: The modules the face gives by name (the old homes of the moved ones included).
_MODULES = {
    "codegen": "codegen",
    "jail": "jail",
    "jailer": "jail.spawn",
    "schema": "codegen.schema",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _MODULES:
        value = importlib.import_module("." + _MODULES[name], __name__)
    elif name in _FACE:
        value = getattr(importlib.import_module("." + _FACE[name], __name__), name)
    else:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_FACE) | set(_MODULES))


# The modules that moved into subpackages keep their old names (mcp_client.jailer is
# mcp_client.jail.spawn, ...): a finder that answers only for those names, last in line.
_lazy.keep_old_names(sys.meta_path)

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
