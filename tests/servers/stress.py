"""Servers for the stress tests: ``python stress.py BEHAVIOUR [ARGS...]``.

Each is ``scripted.py``'s correct server with one handler replaced (see the
catalogue in ``__init__.py`` for the conventions):

``hold`` -- never answers a tools/call (keeps reading), except tools/call
``count``, answered at once with the number of tools/call requests held so far
as text (``"50"``); client: a test can tell that every one of its calls has
reached the server, i.e. is in flight, before it kills the server.
"""

from __future__ import annotations

import sys
from typing import Callable, Dict, List

from scripted import Message, Server, respond, text_result


def hold(argv: List[str]) -> None:
    server = Server()
    held: List[Message] = []

    def call(request: Message) -> None:
        if request.get("params", {}).get("name") == "count":
            respond(request, text_result(str(len(held))))
        else:
            held.append(request)  # never answered

    server.handlers["tools/call"] = call
    server.run()


BEHAVIOURS: Dict[str, Callable[[List[str]], None]] = {"hold": hold}


def main(argv: List[str]) -> int:
    if not argv or argv[0] not in BEHAVIOURS:
        sys.stderr.write("usage: stress.py BEHAVIOUR; one of: %s\n" % ", ".join(BEHAVIOURS))
        return 2
    BEHAVIOURS[argv[0]](argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
