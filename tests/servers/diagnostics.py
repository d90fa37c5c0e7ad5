"""Servers for the diagnostics tests: ``python diagnostics.py BEHAVIOUR [ARGS...]``.

Each is ``scripted.py``'s correct server with one thing changed (see the
catalogue conventions in ``__init__.py``):

``traceback_before_init`` -- on ``initialize`` raises ``LookupError("no such
profile: 'prod'")``: Python prints the traceback to stderr and exits 1;
client: HandshakeFailed whose text ends with the traceback's last line.
``stderr_then_die`` -- on tools/call writes ``fatal: lost the database`` to
stderr and exits 3 without answering; client: Unavailable with that line in
``stderr_tail``.
``stderr_flood`` -- tools/call ``flood`` with ``{"mb": N}`` starts a thread
that writes N MB of numbered stderr lines (``flood line 1`` ...) and then
``flood done after line K``; ``flooded`` answers ``yes`` once it has; other
calls echo; client: calls keep working, memory stays bounded, and the tail
ends with the true last lines.
``eof_flush PATH`` -- at stdin EOF writes ``flushed`` to PATH, then exits 0;
client with ``retire_grace``: Exited(0) and the file written.
``ignore_eof`` -- at stdin EOF sleeps for 300 s; client with ``retire_grace``:
killed when the grace ends (Exited(-9)).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, Dict, List

from scripted import LONG_SLEEP, Message, Server, echo_text, respond, text_result


def traceback_before_init(argv: List[str]) -> None:
    server = Server()

    def initialize(request: Message) -> None:
        raise LookupError("no such profile: 'prod'")

    server.handlers["initialize"] = initialize
    server.run()


def stderr_then_die(argv: List[str]) -> None:
    server = Server()

    def call(request: Message) -> None:
        sys.stderr.write("starting the query\nfatal: lost the database\n")
        sys.stderr.flush()
        os._exit(3)

    server.handlers["tools/call"] = call
    server.run()


def stderr_flood(argv: List[str]) -> None:
    server = Server()
    done = threading.Event()

    def flood(megabytes: float) -> None:
        target = int(megabytes * 1024 * 1024)
        written = number = 0
        while written < target:
            lines = "".join("flood line %d\n" % (number + step) for step in range(1, 1001))
            number += 1000
            sys.stderr.write(lines)
            written += len(lines)
        sys.stderr.write("flood done after line %d\n" % number)
        sys.stderr.flush()
        done.set()

    def call(request: Message) -> None:
        name = request.get("params", {}).get("name")
        arguments = request.get("params", {}).get("arguments", {})
        if name == "flood":
            threading.Thread(target=flood, args=(float(arguments["mb"]),), daemon=True).start()
            respond(request, text_result("started"))
        elif name == "flooded":
            respond(request, text_result("yes" if done.is_set() else "no"))
        else:
            respond(request, text_result(echo_text(request)))

    server.handlers["tools/call"] = call
    server.run()


def eof_flush(argv: List[str]) -> None:
    Server().run()
    with open(argv[0], "w") as state:
        state.write("flushed")
    sys.exit(0)


def ignore_eof(argv: List[str]) -> None:
    Server().run()
    time.sleep(LONG_SLEEP)


BEHAVIOURS: Dict[str, Callable[[List[str]], None]] = {
    "traceback_before_init": traceback_before_init,
    "stderr_then_die": stderr_then_die,
    "stderr_flood": stderr_flood,
    "eof_flush": eof_flush,
    "ignore_eof": ignore_eof,
}

if __name__ == "__main__":
    BEHAVIOURS[sys.argv[1]](sys.argv[2:])
