"""mcp_client: a synchronous, thread-based, standard-library-only MCP client over stdio."""

from __future__ import annotations

__version__ = "0.1.0"
