"""Shared test helpers: named timeouts, scripted servers, and in-process peers."""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, Callable, Dict, Optional

from mcp_client import ChannelTransport, Options, Spawn
from mcp_client.jsonvalue import JsonValue
from mcp_client.transport import ChannelPeer

#: A deadline a test expects to pass (a timeout it provokes on purpose).
SHORT = 0.3
#: A deadline a test never expects to reach; generous for loaded machines.
LONG = 15.0

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTED = os.path.join(HERE, "servers", "scripted.py")

OPTIONS = Options(handshake_timeout=LONG, request_timeout=LONG, retire_timeout=LONG)


def scripted(behaviour: str, *args: str) -> Spawn:
    """A scripted server process (see ``tests/servers``) running ``behaviour``."""
    return Spawn(sys.executable, (SCRIPTED, behaviour) + args)


def python_server(code: str) -> Spawn:
    """A throwaway server: ``python -c code``."""
    return Spawn(sys.executable, ("-c", code))


INIT_RESULT: Dict[str, JsonValue] = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "peer", "version": "1.0"},
}

Handler = Callable[[Dict[str, Any], ChannelPeer], None]


def answer(peer: ChannelPeer, request: Dict[str, Any], result: JsonValue) -> None:
    peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def echo_tool(request: Dict[str, Any], peer: ChannelPeer) -> None:
    """Answer a ``tools/call`` with its arguments as JSON text."""
    text = json.dumps(request["params"]["arguments"], sort_keys=True)
    answer(peer, request, {"content": [{"type": "text", "text": text}]})


def peer_serving(handlers: Optional[Dict[str, Handler]] = None,
                 init: Optional[Dict[str, JsonValue]] = None) -> Callable[[ChannelPeer], None]:
    """A well-behaved in-process server; ``handlers`` override methods by name."""
    table: Dict[str, Handler] = {
        "initialize": lambda request, peer: answer(peer, request, init or INIT_RESULT),
        "ping": lambda request, peer: answer(peer, request, {}),
        "tools/list": lambda request, peer: answer(peer, request, {"tools": [
            {"name": "echo", "inputSchema": {"type": "object"}}]}),
        "tools/call": echo_tool,
    }
    table.update(handlers or {})

    def serve(peer: ChannelPeer) -> None:
        while True:
            line = peer.read_line()
            if line is None:
                return
            request = json.loads(line)
            handler = table.get(request.get("method", ""))
            if handler is not None and "id" in request:
                handler(request, peer)

    return serve


def channel(handlers: Optional[Dict[str, Handler]] = None,
            init: Optional[Dict[str, JsonValue]] = None) -> ChannelTransport:
    return ChannelTransport(peer_serving(handlers, init), name="test")


def same(a: Any, b: Any) -> bool:
    """Structural equality of JSON values that also tells 1 from 1.0 from True,
    -0.0 from 0.0, and one member order from another (``==`` tells none of these)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)
