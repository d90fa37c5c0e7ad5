#!/usr/bin/env python3
"""A small, fast MCP stdio server for ``tools/bench.py``: standard library only.

Every client in the benchmark talks to this same server, so it must never be the
bottleneck: every answer that can be is precomputed as bytes, requests are read
as raw byte lines, and each reply goes out with one ``os.write`` loop.

It serves:

* ``initialize`` -- answers the client's requested revision when it knows it;
* ``ping`` -- ``{}``;
* ``tools/list`` -- ``--tools`` tools (default 1,000) over ``--pages`` pages
  (default 20), the cursor being the next page's index; ``echo`` and ``blob``
  come first, so a client that re-lists page one to learn output schemas (the
  official SDK does) finds them there;
* ``tools/call`` ``echo`` -- a small text result (``"ok"``);
* ``tools/call`` ``blob`` with ``{"size": N}`` -- a text result of N bytes (cached);
* notifications -- ignored; anything else -- ``-32601``.

Run: ``python tools/echo_server.py [--tools N] [--pages P]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional

KNOWN_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
OUT = 1


def dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def tool(name: str, index: int) -> Dict[str, object]:
    return {
        "name": name,
        "description": "Benchmark tool number %d: takes a query and a limit." % index,
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "minimum": 1, "default": 10},
            },
            "required": ["query"],
        },
    }


def tool_pages(count: int, pages: int) -> List[bytes]:
    """The ``result`` of each ``tools/list`` page, as JSON bytes."""
    names = ["echo", "blob"] + ["tool_%04d" % i for i in range(2, max(count, 2))]
    tools = [tool(name, i) for i, name in enumerate(names[: max(count, 2)])]
    size = -(-len(tools) // max(pages, 1))
    results = []
    for page in range(max(pages, 1)):
        body: Dict[str, object] = {"tools": tools[page * size : (page + 1) * size]}
        if page + 1 < pages:
            body["nextCursor"] = str(page + 1)
        results.append(dumps(body))
    return results


class Server:
    def __init__(self, tools: int, pages: int) -> None:
        self.pages = tool_pages(tools, pages)
        self.echo = dumps({"content": [{"type": "text", "text": "ok"}], "isError": False})
        self.blobs: Dict[int, bytes] = {}

    def blob(self, size: int) -> bytes:
        if size not in self.blobs:
            text = "x" * size
            self.blobs[size] = dumps(
                {"content": [{"type": "text", "text": text}], "isError": False}
            )
        return self.blobs[size]

    def result(self, method: str, params: Dict[str, object]) -> Optional[bytes]:
        if method == "tools/call":
            arguments = params.get("arguments")
            if params.get("name") == "blob" and isinstance(arguments, dict):
                return self.blob(int(arguments.get("size", 0)))
            return self.echo
        if method == "tools/list":
            return self.pages[int(str(params.get("cursor") or 0))]
        if method == "ping":
            return b"{}"
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in KNOWN_VERSIONS else "2025-06-18"
            return dumps(
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "bench-echo", "version": "1.0"},
                }
            )
        return None

    def reply(self, line: bytes) -> bytes:
        message = json.loads(line)
        if "id" not in message:
            return b""  # a notification
        ident = dumps(message["id"])
        result = self.result(message.get("method", ""), message.get("params") or {})
        if result is None:
            return (
                b'{"jsonrpc":"2.0","id":'
                + ident
                + b',"error":{"code":-32601,"message":"method not found"}}\n'
            )
        return b'{"jsonrpc":"2.0","id":' + ident + b',"result":' + result + b'}\n'


def write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(OUT, view) :]


def serve(server: Server) -> None:
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return
        if line.strip():
            out = server.reply(line)
            if out:
                write_all(out)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=20)
    args = parser.parse_args(argv)
    try:
        serve(Server(args.tools, args.pages))
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
