#!/usr/bin/env python3
"""Record a real MCP server's listing once, for ``tools/context_panel/`` (``bench --context``).

    python tools/record_listing.py OUT.json [--cwd DIR] -- COMMAND ARGS...

Starts the server, does the handshake, walks every ``tools/list`` page and writes
``{"serverInfo": ..., "instructions": ..., "tools": [...]}``: each tool exactly as the
server sent it. A raw JSON-RPC loop rather than ``mcp_client.Client``, whose
``ToolDescriptor`` keeps only the fields it reads (a tool's ``_meta`` or ``icons``
would be lost). The server's stderr goes to ours; it is killed once recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
from typing import Any, Dict, List, Optional

Message = Dict[str, Any]
#: Seconds a server may take to answer (an npx or uvx start can fetch a package).
ANSWER_TIMEOUT = 120.0
#: Pages walked at most: a server whose cursor never ends is a bug, not a listing.
MAX_PAGES = 100


class Wire:
    """Newline-delimited JSON-RPC with one child process, one request at a time."""

    def __init__(self, argv: List[str], cwd: Optional[str]) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, start_new_session=True
        )
        self.pending, self.last = b"", 0

    def send(self, message: Message) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message).encode("utf-8") + b"\n")
        stdin.flush()

    def request(self, method: str, params: Message) -> Any:
        """The result of ``method``; server requests are answered "not found" meanwhile."""
        self.last += 1
        self.send({"jsonrpc": "2.0", "id": self.last, "method": method, "params": params})
        while True:
            message = self.receive()
            if "method" in message and "id" in message:  # the server asks: we do nothing
                error = {"code": -32601, "message": "not supported by the recorder"}
                self.send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            elif message.get("id") == self.last:
                if "error" in message:
                    raise SystemExit("%s refused: %s" % (method, message["error"]))
                return message["result"]

    def receive(self) -> Message:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            line, newline, rest = self.pending.partition(b"\n")
            if newline:
                self.pending = rest
                try:
                    message = json.loads(line)
                except ValueError:  # a server's stray print: not ours to record
                    continue
                if isinstance(message, dict):
                    return message
                continue
            ready, _, _ = select.select([stdout.fileno()], [], [], ANSWER_TIMEOUT)
            chunk = os.read(stdout.fileno(), 1 << 20) if ready else b""
            if not chunk:
                raise SystemExit("the server stopped answering (exit %s)" % self.process.poll())
            self.pending += chunk

    def close(self) -> None:
        try:
            os.killpg(self.process.pid, 9)  # npx and its children: the whole session
        except ProcessLookupError:
            pass
        self.process.wait()


def record(wire: Wire) -> Message:
    """The handshake's ``serverInfo`` and ``instructions``, and every page's tools."""
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "record-listing", "version": "1"},
    }
    started = wire.request("initialize", hello)
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools: List[Any] = []
    params: Message = {}
    for _ in range(MAX_PAGES):
        page = wire.request("tools/list", params)
        tools += page.get("tools", [])
        cursor = page.get("nextCursor")
        if not cursor:
            break
        params = {"cursor": cursor}
    return {
        "serverInfo": started.get("serverInfo"),
        "instructions": started.get("instructions"),
        "tools": tools,
    }


def main(argv: Optional[List[str]] = None) -> None:
    given = sys.argv[1:] if argv is None else argv
    # Split at "--" by hand: argparse's REMAINDER would take our own options too.
    split = given.index("--") if "--" in given else len(given)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the JSON file to write")
    parser.add_argument("--cwd", help="the server's working directory")
    args = parser.parse_args(given[:split])
    command = given[split + 1 :]
    if not command:
        parser.error("give the server's command after --")
    wire = Wire(command, args.cwd)
    try:
        listing = record(wire)
    finally:
        wire.close()
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(listing, out, indent=1, ensure_ascii=False)
        out.write("\n")
    print("%s: %d tools" % (args.out, len(listing["tools"])), file=sys.stderr)


if __name__ == "__main__":
    main()
