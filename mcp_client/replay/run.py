"""Replay a wire capture offline, or serve it as a stdio MCP server (impure: threads, I/O).

    python -m mcp_client replay [--timeout SECONDS] LOG
    python -m mcp_client replay --serve LOG

(``python tools/replay.py ...`` in a checkout is the same command.) The log is
read and matched by the pure :mod:`mcp_client.replay`; this module drives a
client through it, or serves it on stdin/stdout.

A LOG is what ``Options(capture=...)`` (or ``python -m mcp_client --capture
FILE``) records: one JSON object a line, every line sent and received.

**Replay** (the default) drives a fresh client through the calls the log
records -- ``initialize`` (``connect``), each ``tools/list`` (with its cursor
pages), each ``tools/call``, each ``ping`` -- against an in-process peer
(``ChannelTransport``, no process) that answers every client line with the
server lines recorded after the matching recorded client line. The recorded
server's own requests and notifications are replayed too, and the client's
answers to them are checked like everything else it sends. One outcome is
printed per call::

    initialize ok 2025-06-18 (mcp-time 2026.10.19)
    tools/list ok 2 tools
    tools/call get_current_time ok isError=false
    ping ok
    tools/call echo failed ClientBroken: server sent an invalid line: ...

then every divergence (see ``mcp_client.replay``: lines compared as JSON,
request ids remapped, everything else -- ``clientInfo`` included, which the
client is given from the log -- compared), then a summary line. A call whose
answer the log does not hold, or that timed out in the recording (its
``timed-out`` event), waits at most one second (or ``--timeout``, if shorter),
so it times out again; a log whose server died ends with the peer closing its
output where the recording shows it.

**Serve** (``--serve``) acts as a stdio MCP server on stdin/stdout that answers
from the log: each request is matched to the next recorded request of the same
method (one with equal params first; a ``tools/call`` only to a call of the
same tool), and its recorded answer is sent with the live request's id; the
server's recorded requests and notifications go out where they were recorded.
A ``ping`` beyond the log is answered ``{}``; any other unmatched request gets
a -32603 error. Divergences go to stderr, one line each. Point any client at a
capture with ``-- python -m mcp_client replay --serve LOG``.

Every line printed that quotes the log or a live line (``DIVERGED`` lines,
``--serve``'s stderr) has its unprintable characters escaped
(:func:`mcp_client.replay.printable`): a log is whatever its writer put there.
A replay runs each overlapping call in a thread of its own, so a log with more
than :data:`~mcp_client.replay.MAX_CONCURRENT_CALLS` (64) calls in flight at
once is refused, in one line, before any thread starts; and should a live
client fall behind its recording, a call waits for the oldest ones until fewer
than that many run.

Exit status: 0 the client matched the recording (``--serve``: stdin reached
EOF or the recorded server died); 1 the client diverged; 2 usage, or the log
cannot be read or replayed (too many calls in flight at once).
"""

from __future__ import annotations

import os
import threading
import time
from typing import IO, Callable, List, Sequence, Tuple

from ..capture import load_log
from ..client import Client, Options, prepare
from ..errors import LogError, McpClientError, RetirementError
from ..protocol import INITIALIZE, TOOLS_CALL, TOOLS_LIST, ClientInfo
from ..text import sanitize
from ..transport import ChannelPeer, ChannelTransport
from . import (
    MAX_CONCURRENT_CALLS,
    Action,
    Call,
    Close,
    Responder,
    Script,
    Write,
    client_info,
    max_pages,
    schedule,
    script_of,
)

__all__ = [
    "drive",
    "load",
    "perform",
    "replay_main",
    "serve_main",
    "EXIT_MATCHED",
    "EXIT_DIVERGED",
    "EXIT_USAGE",
    "UNANSWERED_TIMEOUT",
]

EXIT_MATCHED = 0
EXIT_DIVERGED = 1
EXIT_USAGE = 2

#: The longest wait for an answer the log does not hold.
UNANSWERED_TIMEOUT = 1.0
#: Characters of an error's text shown in an outcome line.
_REASON_CHARS = 300


def load(path: str) -> Script:
    """The script of the log at ``path``; :class:`LogError` when it cannot be read."""
    return script_of(load_log(path))


def perform(actions: Sequence[Action], write: Callable[[bytes], None]) -> bool:
    """Carry out a responder's actions; ``False`` once the peer must stop (``Close``)."""
    for action in actions:
        if isinstance(action, Close):
            return False
        write(action.data if isinstance(action, Write) else b"x" * action.size)
    return True


# ----------------------------------------------------------------------------- replay


class _Shared:
    """The responder, shared by the peer thread and the driver, under one condition."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.changed = threading.Condition()

    def opening(self) -> List[Action]:
        with self.changed:
            return self.responder.opening()

    def answer(self, line: bytes) -> List[Action]:
        with self.changed:
            actions = self.responder.answer(line)
            self.changed.notify_all()
            return actions

    def wait(self, ready: Callable[[], bool], deadline: float) -> None:
        with self.changed:
            self.changed.wait_for(ready, max(0.0, deadline - time.monotonic()))

    def poke(self) -> None:
        with self.changed:
            self.changed.notify_all()


def _peer(shared: _Shared) -> Callable[[ChannelPeer], None]:
    def serve(peer: ChannelPeer) -> None:
        if not perform(shared.opening(), peer.write):
            return
        while True:
            line = peer.read_line()
            if line is None:
                return
            if line.strip() and not perform(shared.answer(line), peer.write):
                return

    return serve


class _Running:
    """One call in a thread of its own (a call the recording shows overlapping the next)."""

    def __init__(self, work: Callable[[], str], shared: _Shared, number: int) -> None:
        self.outcome = ""
        self._work = work
        self._shared = shared
        self.thread = threading.Thread(
            target=self._run, name="replay-call-%d" % number, daemon=True
        )
        self.thread.start()

    def _run(self) -> None:
        try:
            self.outcome = self._work()
        finally:
            self._shared.poke()

    def done(self) -> bool:
        return not self.thread.is_alive()


def _options(script: Script, calls: Sequence[Call], timeout: float, unanswered: float) -> Options:
    info = client_info(script)
    pages = max_pages(calls)
    return Options(
        client_info=ClientInfo(*info) if info else Options().client_info,
        handshake_timeout=_timeout(calls[0], timeout, unanswered),
        request_timeout=timeout,
        max_tool_pages=pages if pages is not None else Options().max_tool_pages,
        retire_timeout=timeout,
        tolerated_noise_lines=script.tolerated,
    )


def _timeout(call: Call, timeout: float, unanswered: float) -> float:
    return timeout if call.answered else min(timeout, unanswered)


def _outcome(client: Client, call: Call, timeout: float) -> str:
    try:
        return "ok" + _perform_call(client, call, timeout)
    except McpClientError as e:
        return "failed %s: %s" % (type(e).__name__, sanitize(str(e), _REASON_CHARS))


def _perform_call(client: Client, call: Call, timeout: float) -> str:
    if call.method == INITIALIZE:
        result = client.connect()
        info = result.server_info
        return " %s (%s %s)" % (
            result.protocol_version,
            sanitize(info.name, 60),
            sanitize(info.version, 60),
        )
    if call.method == TOOLS_LIST:
        return " %d tools" % len(client.list_tools(timeout))
    if call.method == TOOLS_CALL:
        assert isinstance(call.params, dict)
        name, arguments = call.params["name"], call.params.get("arguments", {})
        assert isinstance(name, str) and isinstance(arguments, dict)
        called = client.call_tool(name, arguments, timeout)
        return " isError=%s" % ("true" if called.is_error else "false")
    client.ping(timeout)
    return ""


def drive(
    script: Script, timeout: float, unanswered: float = UNANSWERED_TIMEOUT
) -> Tuple[List[str], List[str]]:
    """Replay ``script`` against a fresh client: (outcome lines, divergences).

    ``timeout`` bounds each call; ``unanswered`` (if shorter) a call whose answer
    the log does not hold.
    """
    calls, notes = schedule(script)
    if not calls or calls[0].method != INITIALIZE:
        raise LogError("the log holds no initialize request to start from")
    shared = _Shared(Responder(script))
    client = prepare(
        ChannelTransport(_peer(shared), name="replay"), _options(script, calls, timeout, unanswered)
    )
    outcomes: List[str] = []
    try:
        outcomes = _drive_calls(client, calls, shared, timeout, unanswered)
    finally:
        retirement = _retire(client)
    if retirement:
        outcomes.append(retirement)
    return outcomes, notes + shared.responder.finish()


def _drive_calls(
    client: Client, calls: Sequence[Call], shared: _Shared, timeout: float, unanswered: float
) -> List[str]:
    running: List[Tuple[Call, _Running]] = []
    for number, call in enumerate(calls):
        _make_room(running)
        task = _Running(_work(client, call, _timeout(call, timeout, unanswered)), shared, number)
        running.append((call, task))
        if call.overlaps:  # go on once its request is out, as the recording did
            shared.wait(_sent_or_done(shared, call, task), time.monotonic() + timeout)
        else:
            task.thread.join()
    for _, task in running:
        task.thread.join()
    return ["%s %s" % (sanitize(call.label(), 120), task.outcome) for call, task in running]


def _make_room(running: Sequence[Tuple[Call, _Running]]) -> None:
    """Wait, oldest first, until fewer than MAX_CONCURRENT_CALLS calls run. The
    plan refused a log that needs more; a live client slower than its recording
    must not get past the bound either (each call ends by its own deadline)."""
    live = [task for _, task in running if not task.done()]
    for task in live[: max(0, len(live) - MAX_CONCURRENT_CALLS + 1)]:
        task.thread.join()


def _work(client: Client, call: Call, timeout: float) -> Callable[[], str]:
    return lambda: _outcome(client, call, timeout)


def _sent_or_done(shared: _Shared, call: Call, task: _Running) -> Callable[[], bool]:
    return lambda: shared.responder.matched(call.index) or task.done()


def _retire(client: Client) -> str:
    try:
        client.shutdown()
    except RetirementError as e:
        return "shutdown failed %s: %s" % (type(e).__name__, e)
    return ""


def replay_main(path: str, timeout: float, out: IO[str]) -> int:
    """Replay the capture at ``path`` and write one outcome a call to ``out``; the
    exit status: 0 when the client matched the recording, 1 when it diverged."""
    script = load(path)
    outcomes, divergences = drive(script, timeout)
    for line in outcomes:
        out.write(line + "\n")
    for line in divergences:
        out.write("DIVERGED %s\n" % line)
    lines = len(script.timeline)
    if divergences:
        out.write(
            "replay of %s: %d divergence%s from the recording\n"
            % (path, len(divergences), "" if len(divergences) == 1 else "s")
        )
        return EXIT_DIVERGED
    out.write("replay of %s: the client matched the recording (%d lines)\n" % (path, lines))
    return EXIT_MATCHED


# ----------------------------------------------------------------------------- serve


def serve_main(path: str, stdin: IO[bytes], stdout: IO[bytes], err: IO[str]) -> int:
    """Serve the capture at ``path`` as a stdio MCP server on ``stdin``/``stdout``,
    each difference from the recording one line on ``err``, until ``stdin`` ends."""
    responder = Responder(load(path))
    reported = 0

    def write(data: bytes) -> None:
        stdout.write(data)
        stdout.flush()

    try:
        if perform(responder.opening(), write):
            for raw in stdin:
                line = raw.rstrip(b"\n").rstrip(b"\r")
                if line.strip() and not perform(responder.answer(line), write):
                    break
                reported = _report(responder.divergences, reported, err)
    except BrokenPipeError:  # the client went away (or refused an overflow): our end
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
    _report(responder.divergences, reported, err)
    return EXIT_DIVERGED if responder.divergences else EXIT_MATCHED


def _report(divergences: List[str], reported: int, err: IO[str]) -> int:
    for line in divergences[reported:]:
        err.write("replay --serve: %s\n" % line)
    err.flush()
    return len(divergences)
