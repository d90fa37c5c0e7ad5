"""A server that trickles one never-ending line: ``python trickle.py``.

It answers ``initialize`` like a correct server, then writes the head of a
notification and after it one byte per ``write`` system call, without end and
without a newline, never reading stdin again. The client must hold the pending
line in memory proportional to its bytes, whatever the chunk sizes, until it
retires the server (SIGKILL). Standard library only.
"""

from __future__ import annotations

import json
import os
import sys

HEAD = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"'


def answer_initialize() -> bool:
    line = sys.stdin.buffer.readline()
    if not line:
        return False
    request = json.loads(line)
    result = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "trickle", "version": "1.0"},
    }
    reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    os.write(1, json.dumps(reply, separators=(",", ":")).encode("utf-8") + b"\n")
    return True


def trickle() -> None:
    os.write(1, HEAD)
    byte = b"x"
    while True:  # ended by the client's SIGKILL (or a broken pipe)
        os.write(1, byte)


def main() -> int:
    if not answer_initialize():
        return 0
    try:
        trickle()
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
