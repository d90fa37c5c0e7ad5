"""mcp_client: a synchronous, thread-based, standard-library-only MCP client over stdio.

Everything a harness needs comes from this one import; the rest is reached
through its module (``from mcp_client import codegen``)::

    from mcp_client import Spawn, start

    with start(Spawn("python", ("-m", "mcp_server_time"))) as client:
        tools = client.list_tools()
        result = client.call_tool("get_current_time", {"timezone": "UTC"})
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
from .jail import DEFAULT_HIDDEN, Jail
from .protocol import ClientInfo
from .transport import (
    ChannelClosed,
    ChannelTransport,
    Exited,
    NoResource,
    ProcessTransport,
    Spawn,
)

# A library never configures logging; it only makes sure nothing is printed
# when the application has not configured it either.
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "__version__", "Spawn", "ProcessTransport", "ChannelTransport", "Options", "ClientInfo",
    "Client", "State", "prepare", "prepare_owned", "start",
    "NoResource", "Exited", "ChannelClosed", "Jail", "DEFAULT_HIDDEN",
    "McpClientError",
    "ClientError", "Unavailable", "ClientClosed", "ClientBroken", "ClientInherited",
    "CallTimedOut",
    "ServerError", "ResultMalformed", "TooManyPages",
    "StartError", "TransportFailed", "HandshakeFailed", "VersionUnsupported",
    "ToolsNotDeclared", "CleanupUnconfirmed",
    "RetirementError", "RetirementTimedOut", "RetirementUnconfirmed",
]
