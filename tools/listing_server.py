#!/usr/bin/env python3
"""A recorded listing served again: a stdlib MCP server over one ``tools/context_panel`` file.

    python tools/listing_server.py FILE

``FILE`` is ``{"serverInfo": ..., "instructions": ..., "tools": [...]}`` as
``tools/record_listing.py`` wrote it from a real server. This answers what a client
needs to list the tools again, byte for byte as they were recorded, with no network,
no credentials and no package of the real server: ``bench --context`` measures the
model's context over these, offline and the same on every run.

One JSON line in, one JSON line out, on stdio: ``initialize`` (the recorded
``serverInfo`` and ``instructions``; the client's protocol version when it is one of
:data:`VERSIONS`, else the newest), ``ping``, ``tools/list`` (every tool, one page) and
``tools/call`` (always ``isError``: a recording has no tools to run). Notifications
are ignored; any other request is -32601, a line that is not a JSON-RPC request -32700
or -32600.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, Optional

Message = Dict[str, Any]

#: The protocol versions echoed back; the first is answered to any other.
VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")


def load(path: str) -> Message:
    """The recorded listing; its shape checked here, so a bad file fails at the start."""
    with open(path, encoding="utf-8") as source:
        listing = json.load(source)
    if not isinstance(listing, dict) or not isinstance(listing.get("tools"), list):
        raise SystemExit("%s: not a recorded listing (no tools array)" % path)
    return listing


def initialized(listing: Message, params: Any) -> Message:
    """The ``initialize`` result: the recorded identity, our one capability."""
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    result: Message = {
        "protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
        "capabilities": {"tools": {}},
        "serverInfo": listing.get("serverInfo") or {"name": "recorded", "version": "0"},
    }
    if listing.get("instructions") is not None:
        result["instructions"] = listing["instructions"]
    return result


def answer(listing: Message, message: Any) -> Optional[Message]:
    """The response to one decoded line, or ``None`` for a notification."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        ident = message.get("id") if isinstance(message, dict) else None
        return error(ident if isinstance(ident, (str, int)) else None, -32600, "not a request")
    if "id" not in message:
        return None  # notifications/initialized, cancelled, anything else: nothing to say
    method, ident = message["method"], message["id"]
    if method == "initialize":
        result: Message = initialized(listing, message.get("params"))
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": listing["tools"]}
    elif method == "tools/call":
        refused = {"type": "text", "text": "recorded listing: no calls"}
        result = {"content": [refused], "isError": True}
    else:
        return error(ident, -32601, "method not found: %s" % method)
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def error(ident: Any, code: int, text: str) -> Message:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": text}}


def serve(listing: Message) -> None:
    """Answer line by line until EOF; each answer flushed, so a client never waits on us."""
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            reply: Optional[Message] = error(None, -32700, "parse error")
        else:
            reply = answer(listing, message)
        if reply is not None:
            sys.stdout.buffer.write(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
            sys.stdout.buffer.flush()


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: listing_server.py FILE")
    serve(load(sys.argv[1]))


if __name__ == "__main__":
    main()
