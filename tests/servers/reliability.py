"""Servers for the reliability tests: ``python reliability.py BEHAVIOUR [ARGS...]``.

Each is ``scripted.py``'s correct server with one handler replaced (see the
catalogue in ``__init__.py`` for the conventions):

``slow_reader SECONDS`` -- after answering ``initialize``, reads nothing for
SECONDS, then serves as ``good`` (echo); tools/call ``size`` answers with the
byte length of ``arguments["blob"]`` instead of echoing it; client: a large
request waits for room in the pipe, however long its timeout.
``ping_in_stall STALL`` -- tools/call ``stall``: sends the client a ``ping``
(id ``"p"``) 0.3 s later and reads nothing for STALL seconds; ``later``:
answered (echo) from a thread after ``arguments["delay"]`` seconds; ``size``:
as ``slow_reader``; ``answers``: the ids of the client's answers so far, comma-separated;
client: the ``later`` answer is read while an upload is stuck behind the stall, and the ping is
answered once the server reads again.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Dict, List

from scripted import Message, Server, echo_text, respond, send, text_result


def _size_or_echo(request: Message) -> None:
    arguments = request.get("params", {}).get("arguments", {})
    if request.get("params", {}).get("name") == "size":
        respond(request, text_result(str(len(arguments.get("blob", "")))))
    else:
        respond(request, text_result(echo_text(request)))


def _answer_later(request: Message) -> None:
    delay = float(request.get("params", {}).get("arguments", {}).get("delay", 1.0))
    timer = threading.Timer(delay, respond, (request, text_result(echo_text(request))))
    timer.daemon = True
    timer.start()


def slow_reader(argv: List[str]) -> None:
    pause = float(argv[0])
    server = Server()

    def initialize(request: Message) -> None:
        server.initialize(request)
        time.sleep(pause)

    server.handlers["initialize"] = initialize
    server.handlers["tools/call"] = _size_or_echo
    server.run()


def ping_in_stall(argv: List[str]) -> None:
    stall = float(argv[0])
    server = Server()

    def call(request: Message) -> None:
        name = request.get("params", {}).get("name")
        if name == "later":
            _answer_later(request)
        elif name == "answers":  # what the client answered to our requests, by id
            respond(request, text_result(",".join(sorted(map(str, server.answers)))))
        elif name == "stall":
            time.sleep(0.3)
            send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            time.sleep(stall)  # stdin unread meanwhile: the client's upload is stuck
            respond(request, text_result("stalled"))
        else:
            _size_or_echo(request)

    server.handlers["tools/call"] = call
    server.run()


BEHAVIOURS: Dict[str, Callable[[List[str]], None]] = {
    "slow_reader": slow_reader,
    "ping_in_stall": ping_in_stall,
}

if __name__ == "__main__":
    BEHAVIOURS[sys.argv[1]](sys.argv[2:])
