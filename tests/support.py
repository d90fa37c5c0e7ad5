"""Shared test helpers: named timeouts, the test servers, waiting, results, in-process peers."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Union

from mcp_client import ChannelTransport, Jail, Options, Spawn
from mcp_client.jsonvalue import JsonValue
from mcp_client.protocol import CallToolResult, Text
from mcp_client.transport import ChannelPeer

from servers import scripted

#: A deadline a test expects to pass (a timeout it provokes on purpose).
SHORT = 0.3
#: A deadline a test never expects to reach; generous for loaded machines.
LONG = 15.0

SERVERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "servers")
#: The scripts in ``tests/servers``, each documented in its docstring (``scripted.py``'s
#: catalogue is the docstring of ``tests/servers/__init__.py``); all but the last are servers.
SCRIPTS = (
    "scripted",
    "reliability",
    "diagnostics",
    "stress",
    "trickle",
    "jail_probe",
    "codemode_tools",
    "codemode_hostile",
    "jail_harness",
    "lifeline_harness",
)

OPTIONS = Options(handshake_timeout=LONG, request_timeout=LONG, retire_timeout=LONG)


def server_argv(name: str, *args: str) -> List[str]:
    """The argv of a test server under this interpreter, for raw pipes and the command line.

    ``name`` is one of :data:`SCRIPTS`, followed by that script's arguments
    (``"reliability", "slow_reader", "0.5"``; ``"trickle"``), or else a behaviour of
    ``scripted.py`` followed by its arguments (``"good", "--pages", "3"``).
    """
    if name in SCRIPTS:
        return [sys.executable, os.path.join(SERVERS, name + ".py"), *args]
    if name not in scripted.BEHAVIOURS:
        raise ValueError(
            "%r is neither a script in tests/servers nor a behaviour of scripted.py" % name
        )
    return [sys.executable, os.path.join(SERVERS, "scripted.py"), name, *args]


def server(
    name: str, *args: str, env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None
) -> Spawn:
    """The test server :func:`server_argv` names, as a ``Spawn``."""
    argv = server_argv(name, *args)
    return Spawn(argv[0], tuple(argv[1:]), env=env, cwd=cwd)


def wait_until(check: Callable[[], bool], timeout: float = LONG) -> bool:
    """Poll ``check`` until it holds (``True``) or ``timeout`` seconds pass (``False``)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def text_of(result: Union[CallToolResult, Dict[str, Any]]) -> str:
    """The text of a tool's answer, which must be one text block and nothing else:
    a ``CallToolResult``, or a raw ``tools/call`` response read off a pipe."""
    if isinstance(result, dict):
        [block] = result["result"]["content"]
        assert block["type"] == "text", block
        return str(block["text"])
    [text] = result.content
    assert isinstance(text, Text), result
    return text.text


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


def peer_serving(
    handlers: Optional[Dict[str, Handler]] = None, init: Optional[Dict[str, JsonValue]] = None
) -> Callable[[ChannelPeer], None]:
    """A well-behaved in-process server; ``handlers`` override methods by name."""
    table: Dict[str, Handler] = {
        "initialize": lambda request, peer: answer(peer, request, init or INIT_RESULT),
        "ping": lambda request, peer: answer(peer, request, {}),
        "tools/list": lambda request, peer: answer(
            peer, request, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        ),
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


def channel(
    handlers: Optional[Dict[str, Handler]] = None, init: Optional[Dict[str, JsonValue]] = None
) -> ChannelTransport:
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


def writes_idle(client: Any) -> bool:
    """Nobody holds ``client``'s writing turn or its writer's lock (each taken and let
    go here): a server that answers only then is sure its answer finds the reader free
    to write a listing's next page itself (``Outbox.try_send``)."""
    for lock in (client._requests._outbox._turn, client._session.conn._writer._lock):
        if not lock.acquire(False):
            return False
        lock.release()
    return True


# ----------------------------------------------------------------------------- jails

#: What a jailed test server needs that a jail's private /tmp would cover: the
#: checkout (its scripts) and this interpreter, when a CI run puts them there.
JAIL_READABLE = tuple(
    dict.fromkeys(
        path
        for path in map(
            os.path.realpath,
            (
                os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                sys.prefix,
                sys.base_prefix,
                os.path.dirname(sys.executable),
            ),
        )
        if path == "/tmp" or path.startswith("/tmp/")
    )
)


def jail_for_tests(**fields: Any) -> Jail:
    """``Jail(**fields)``, showing :data:`JAIL_READABLE` too (nothing, outside /tmp)."""
    fields["readable"] = JAIL_READABLE + tuple(fields.get("readable", ()))
    return Jail(**fields)


def jail_read_flags(flag: str = "--allow-read") -> List[str]:
    """The CLI's ``--allow-read`` flags for :data:`JAIL_READABLE` (or code mode's
    ``--server-read``, for its jailed servers)."""
    return [each for path in JAIL_READABLE for each in (flag, path)]
