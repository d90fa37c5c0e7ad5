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
``long_fatal_line`` -- on tools/call writes one 300,000-byte stderr line that
starts ``FATAL: the index is corrupt``, then ``exiting`` , and exits 3 without
answering; client: the tail shows that line by its start and its true length.
``grandchild_on_eof`` -- tools/call ``spawn`` starts ``sleep 300`` in the
server's own process group (std streams on /dev/null) and answers its pid;
exits 0 at stdin EOF, leaving it behind; client with ``retire_grace``:
Exited(0), and the grandchild is gone with the group.
``fd2_probe`` -- on tools/call tries to read its fd 2 back (by
``/proc/self/fd/2``, and at offset 0) and to ``ftruncate`` it, then writes
``written by the server`` to it; answers ``{"kind": "file"|"fifo"|..., "read": TEXT or an
error, "pread": ..., "truncate": "done" or an error}``; client, jailed with
stderr to a file: the jail holds a pipe, not the file.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
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


FATAL_LINE = b"FATAL: the index is corrupt; " + b"x" * (300000 - 29)


def long_fatal_line(argv: List[str]) -> None:
    server = Server()

    def call(request: Message) -> None:
        os.write(2, b"starting\n" + FATAL_LINE + b"\nexiting\n")
        os._exit(3)

    server.handlers["tools/call"] = call
    server.run()


def grandchild_on_eof(argv: List[str]) -> None:
    server = Server()

    def call(request: Message) -> None:
        child = subprocess.Popen(
            ["sleep", "300"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        respond(request, text_result(str(child.pid)))

    server.handlers["tools/call"] = call
    server.run()
    os._exit(0)  # not waiting for the child: a server that leaves one behind


def _attempt(action: Callable[[], str]) -> str:
    try:
        return action()
    except OSError as e:
        return "refused: %s" % e


def _read_back() -> str:
    fd = os.open("/proc/self/fd/2", os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(fd, 65536).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _truncate() -> str:
    os.ftruncate(2, 0)
    return "done"


def fd2_probe(argv: List[str]) -> None:
    server = Server()

    def call(request: Message) -> None:
        mode = os.fstat(2).st_mode
        kind = "file" if stat.S_ISREG(mode) else "fifo" if stat.S_ISFIFO(mode) else "other"
        facts = {
            "kind": kind,
            "read": _attempt(_read_back),
            "pread": _attempt(lambda: os.pread(2, 65536, 0).decode("utf-8", "replace")),
            "truncate": _attempt(_truncate),
        }
        # After the reads: a read end opened through /proc of a pipe would take it.
        os.write(2, b"written by the server\n")
        respond(request, text_result(json.dumps(facts)))

    server.handlers["tools/call"] = call
    server.run()


BEHAVIOURS: Dict[str, Callable[[List[str]], None]] = {
    "long_fatal_line": long_fatal_line,
    "grandchild_on_eof": grandchild_on_eof,
    "fd2_probe": fd2_probe,
    "traceback_before_init": traceback_before_init,
    "stderr_then_die": stderr_then_die,
    "stderr_flood": stderr_flood,
    "eof_flush": eof_flush,
    "ignore_eof": ignore_eof,
}

if __name__ == "__main__":
    BEHAVIOURS[sys.argv[1]](sys.argv[2:])
