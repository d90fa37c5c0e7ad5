"""Replaying wire captures: the shipped ones, doctored ones, and ``--serve``.

The captures under ``tests/captures`` are real sessions of this client
(``tools/make_captures.py`` records them): one against ``mcp-server-time``
from PyPI, one against the bundled demo server, and several against hostile
scripted servers. Each is replayed offline in-process (a fresh client against
the recorded server lines through ``ChannelTransport``; the leak check of
``conftest.py`` applies), through the ``tools/replay.py`` command, and served
by ``tools/replay.py --serve`` to our own client in a child process.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Any, Callable, Dict, List, Optional, Sequence
from unittest import mock

import pytest

from mcp_client import Exited, Spawn, cli, start
from mcp_client import replay as replay_module
from mcp_client.errors import CallTimedOut, ClientBroken, LogError, ServerError, Unavailable
from mcp_client.replay import (
    Close,
    Overflow,
    Recorded,
    Responder,
    Write,
    parse_log,
    plan,
    same,
)
from mcp_client.replay import run as replay_run
from mcp_client.replay.run import drive, load

import hostile
from servers.pipes import Pipe
from support import LONG, OPTIONS, SHORT, server, text_of

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPLAY = os.path.join(REPO, "tools", "replay.py")
CAPTURES = os.path.join(REPO, "tests", "captures")

Entry = Dict[str, Any]


def capture(name: str) -> str:
    return os.path.join(CAPTURES, name + ".jsonl")


def run_replay(*args: str) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run(
        [sys.executable, REPLAY, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tempfile.gettempdir(),
    )


def entries(name: str) -> List[Entry]:
    with open(capture(name), encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.strip()]


def message(entry: Entry) -> Any:
    return json.loads(entry["text"])


def write_log(directory: str, items: Sequence[Entry]) -> str:
    path = os.path.join(directory, "doctored.jsonl")
    with open(path, "w", encoding="utf-8") as stream:
        for item in items:
            stream.write(json.dumps(item) + "\n")
    return path


def rewrite(
    items: List[Entry], where: Callable[[Entry], bool], change: Callable[[Any], Any]
) -> List[Entry]:
    """``items`` with every wire line matching ``where`` re-encoded after ``change``."""
    done = []
    for item in items:
        if "text" in item and where(item):
            item = dict(item, text=json.dumps(change(message(item))))
        done.append(item)
    return done


def is_send(method: Optional[str] = None) -> Callable[[Entry], bool]:
    def where(item: Entry) -> bool:
        if item.get("dir") != "send":
            return False
        return method is None or message(item).get("method") == method

    return where


# What replaying each shipped capture must print, line by line (regular expressions).
EXPECTED: Dict[str, List[str]] = {
    "time": [
        r"initialize ok 2025-06-18 \(mcp-time \S+\)",
        r"tools/list ok 2 tools",
        r"tools/call get_current_time ok isError=false",
        r"tools/call convert_time ok isError=false",
        r"tools/call convert_time ok isError=true",
        r"ping ok",
    ],
    "demo": [
        r"initialize ok 2025-06-18 \(mcp-client-demo 1\.0\.0\)",
        r"tools/list ok 5 tools",
        r"tools/call add ok isError=false",
        r"tools/call divide ok isError=true",
        r"tools/call no_such_tool failed ServerError: server error -32602: "
        r'Unknown tool: "no_such_tool"',
        r"ping ok",
    ],
    "invalid_utf8": [
        r"initialize ok 2025-06-18 \(scripted 1\.0\)",
        r"tools/list ok 2 tools",
        r"ping ok",
        r"tools/call echo failed ClientBroken: server sent an invalid line: "
        r"not JSON: not UTF-8 at byte 72; the line starts .*",
    ],
    "line_too_long": [
        r"initialize ok 2025-06-18 \(scripted 1\.0\)",
        r"tools/list ok 2 tools",
        r"ping ok",
        r"tools/call echo failed ClientBroken: framing: line of at least \d+ bytes; "
        r"the limit is 16777216 \(server scripted\)",
    ],
    "exit_mid_call": [
        r"initialize ok 2025-06-18 \(scripted 1\.0\)",
        r"tools/list ok 2 tools",
        r"ping ok",
        r"tools/call echo failed ClientBroken: server closed its stdout \(server scripted\)",
    ],
    "server_requests": [
        r"initialize ok 2025-06-18 \(scripted 1\.0\)",
        r"tools/call echo ok isError=false",
    ],
    "early_ping": [
        r"initialize ok 2025-06-18 \(scripted 1\.0\)",
        r"tools/call echo ok isError=false",
    ],
}


class ShippedCaptures(unittest.TestCase):
    def test_every_shipped_capture_is_expected(self) -> None:
        shipped = sorted(
            name[: -len(".jsonl")] for name in os.listdir(CAPTURES) if name.endswith(".jsonl")
        )
        self.assertEqual(shipped, sorted(EXPECTED))

    def test_in_process_replays_reproduce_every_outcome(self) -> None:
        for name, expected in EXPECTED.items():
            with self.subTest(capture=name):
                outcomes, divergences = drive(load(capture(name)), LONG)
                self.assertEqual(divergences, [])
                self.assertEqual(len(outcomes), len(expected), outcomes)
                for line, pattern in zip(outcomes, expected):
                    self.assertRegex(line, "\\A%s\\Z" % pattern)

    def test_the_command_replays_a_real_server_capture(self) -> None:
        done = run_replay(capture("time"))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        lines = done.stdout.splitlines()
        for line, pattern in zip(lines, EXPECTED["time"]):
            self.assertRegex(line, "\\A%s\\Z" % pattern)
        self.assertIn("the client matched the recording", lines[-1])
        self.assertEqual(len(lines), len(EXPECTED["time"]) + 1)

    def test_the_command_replays_a_hostile_capture_to_the_same_death(self) -> None:
        done = run_replay(capture("invalid_utf8"))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertRegex(
            done.stdout,
            re.escape(
                "tools/call echo failed ClientBroken: server sent "
                "an invalid line: not JSON: not UTF-8"
            ),
        )

    def test_the_hostile_capture_holds_the_exact_invalid_bytes(self) -> None:
        packed = [item["base64"] for item in entries("invalid_utf8") if "base64" in item]
        self.assertEqual(len(packed), 1)
        # The answer to the session's fourth request (after tools/list and ping).
        self.assertEqual(base64.b64decode(packed[0]), hostile.INVALID_UTF8.answer(4))

    def test_the_client_answers_to_server_requests_are_in_the_log(self) -> None:
        answers = [
            message(item)
            for item in entries("server_requests")
            if item.get("dir") == "send" and "method" not in message(item)
        ]
        self.assertEqual([answer["id"] for answer in answers], [1, "sampling-1"])
        self.assertEqual(answers[0]["result"], {})
        self.assertEqual(answers[1]["error"]["code"], -32601)


class FreshCaptures(unittest.TestCase):
    """Sessions recorded here and now, then replayed: concurrency and timeouts."""

    def record(self, behaviour: str, session: Callable[[Any], None], *args: str) -> str:
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        path = os.path.join(directory.name, "wire.jsonl")
        with start(server(behaviour, *args), dataclasses.replace(OPTIONS, capture=path)) as client:
            session(client)
        return path

    def test_concurrent_calls_answered_out_of_order(self) -> None:
        def two_at_once(client: Any) -> None:
            results: List[Any] = []
            threads = [
                threading.Thread(
                    target=lambda n=n: results.append(client.call_tool("echo", {"n": n}))
                )
                for n in (1, 2)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            self.assertEqual(len(results), 2)

        script = load(self.record("out_of_order", two_at_once, "2"))
        calls, _ = plan(script)
        self.assertTrue(calls[1].overlaps, "the first call's answer came after the second call")
        outcomes, divergences = drive(script, LONG)
        self.assertEqual(divergences, [])
        self.assertEqual(outcomes[1:], ["tools/call echo ok isError=false"] * 2)

    def test_a_timed_out_call_times_out_again(self) -> None:
        def impatient(client: Any) -> None:
            with self.assertRaises(CallTimedOut):
                client.call_tool("echo", {}, timeout=SHORT)
            client.ping()

        outcomes, divergences = drive(
            load(self.record("never_answer", impatient)), LONG, unanswered=SHORT
        )
        self.assertEqual(divergences, [])
        self.assertEqual(
            outcomes,
            [
                "initialize ok 2025-06-18 (scripted 1.0)",
                "tools/call echo failed CallTimedOut: tools/call got no answer within 0.3s",
                "ping ok",
            ],
        )

    def test_a_timed_out_session_shut_down_replays_as_a_timeout(self) -> None:
        def impatient(client: Any) -> None:
            with self.assertRaises(CallTimedOut):
                client.call_tool("echo", {}, timeout=SHORT)  # then shut down, never answered

        log = self.record("never_answer", impatient)
        script = load(log)
        self.assertFalse(script.ends_in_death, "the log says the client was shut down")
        outcomes, divergences = drive(script, LONG, unanswered=SHORT)
        self.assertEqual(divergences, [])
        self.assertEqual(
            outcomes,
            [
                "initialize ok 2025-06-18 (scripted 1.0)",
                "tools/call echo failed CallTimedOut: tools/call got no answer within 0.3s",
            ],
        )
        # Without the end events (a log of an older version) the unanswered last
        # request can only be taken for the server's death, as before.
        with open(log, encoding="utf-8") as stream:
            old = [
                line
                for line in stream
                if '"event": "' not in line or json.loads(line)["event"] in ("open", "retired")
            ]
        outcomes, _ = drive(parse_log(old), LONG, unanswered=SHORT)
        self.assertRegex(outcomes[1], r"\Atools/call echo failed ClientBroken: ")

    @pytest.mark.slow
    def test_a_late_answer_is_held_until_the_next_line(self) -> None:
        def impatient(client: Any) -> None:
            with self.assertRaises(CallTimedOut):
                client.call_tool("echo", {"delay": 2 * SHORT}, timeout=SHORT)
            time.sleep(4 * SHORT)  # the late answer arrives (and is dropped) meanwhile
            client.ping()

        script = load(self.record("slow", impatient))
        self.assertEqual(script.timed_out, frozenset([2]), "the log names the call timed out")
        late = [step for step in script.after[-1] if isinstance(step, Recorded)]
        self.assertEqual([step.ident for step in late], [2, 3], "the late answer, then ping's")
        outcomes, divergences = drive(script, LONG, unanswered=SHORT)
        self.assertEqual(divergences, [])
        self.assertEqual(
            outcomes[1:],
            [
                "tools/call echo failed CallTimedOut: tools/call got no answer within 0.3s",
                "ping ok",
            ],
        )


class Divergences(unittest.TestCase):
    def setUp(self) -> None:
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.dir = directory.name

    def replay(self, items: Sequence[Entry]) -> "subprocess.CompletedProcess[str]":
        return run_replay(write_log(self.dir, items))

    def assert_diverged(self, items: Sequence[Entry], pattern: str) -> str:
        done = self.replay(items)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertRegex(done.stdout, pattern)
        self.assertRegex(done.stdout.splitlines()[-1], r"\d+ divergences? from the recording")
        return done.stdout

    def test_changed_initialize_params_diverge(self) -> None:
        def widen(initialize: Any) -> Any:
            initialize["params"]["capabilities"] = {"sampling": {}}
            return initialize

        items = rewrite(entries("demo"), is_send("initialize"), widen)
        self.assert_diverged(
            items,
            r"DIVERGED seq 2 differs: the client sent "
            r".*\"capabilities\":\{\}",
        )

    def test_a_different_answer_to_the_servers_ping_diverges(self) -> None:
        def answer(item: Entry) -> bool:
            return (
                item.get("dir") == "send"
                and message(item).get("id") == 1
                and "result" in message(item)
            )

        items = rewrite(
            entries("server_requests"), answer, lambda reply: dict(reply, result={"pong": True})
        )
        self.assert_diverged(items, r"DIVERGED seq 7 differs")

    def test_a_line_the_recording_lacks_diverges(self) -> None:
        items = [item for item in entries("demo") if not is_send("notifications/initialized")(item)]
        self.assert_diverged(
            items,
            r"DIVERGED the client sent notification "
            r"notifications/initialized that the recording does not have",
        )

    def test_a_recorded_line_never_sent_diverges(self) -> None:
        items = entries("demo")
        extra = {
            "dir": "send",
            "seq": items[-1]["seq"] + 1,
            "text": '{"jsonrpc":"2.0","method":"notifications/cancelled"}',
        }
        self.assert_diverged(items + [extra], r"DIVERGED the client never sent recorded line seq")

    def test_other_request_ids_are_remapped(self) -> None:
        def shift(item: Any) -> Any:
            if isinstance(item.get("id"), int) and (
                "method" in item or "result" in item or "error" in item
            ):
                item["id"] += 100
            return item

        items = rewrite(entries("demo"), lambda item: True, shift)
        self.assertEqual(message(items[1])["id"], 101)
        done = self.replay(items)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("tools/call add ok isError=false", done.stdout)

    def test_an_unreadable_log_is_a_usage_error(self) -> None:
        path = os.path.join(self.dir, "bad.jsonl")
        with open(path, "w") as stream:
            stream.write('{"seq": 1, "event": "open", "detail": "x"}\nnot json\n')
        done = run_replay(path)
        self.assertEqual(done.returncode, 2)
        self.assertEqual(
            done.stderr.strip(),
            "replay: line 2: not JSON (Expecting value: line 1 column 1 (char 0))",
        )

    def test_a_missing_log_is_a_usage_error(self) -> None:
        done = run_replay(os.path.join(self.dir, "absent.jsonl"))
        self.assertEqual(done.returncode, 2)
        self.assertRegex(done.stderr, r"\Areplay: cannot read .*absent\.jsonl")

    def test_a_log_without_initialize_is_a_usage_error(self) -> None:
        items = [item for item in entries("demo") if not is_send("initialize")(item)]
        done = self.replay(items)
        self.assertEqual(done.returncode, 2)
        self.assertIn("no initialize request", done.stderr)


def wire(seq: int, direction: str, text: str) -> str:
    return json.dumps({"seq": seq, "dir": direction, "text": text})


def event(seq: int, kind: str) -> str:
    return json.dumps({"seq": seq, "event": kind, "detail": ""})


class Scripts(unittest.TestCase):
    """The pure half, ``mcp_client.replay``, on small hand-written logs."""

    LOG = [
        event(1, "open"),
        wire(2, "send", '{"jsonrpc":"2.0","id":1,"method":"ping"}'),
        wire(3, "recv", '{"jsonrpc":"2.0","method":"note"}'),
        wire(4, "recv", '{"jsonrpc": "2.0", "id": 1, "result": {}}'),  # spacing kept as is
        wire(5, "send", '{"jsonrpc":"2.0","id":2,"method":"ping"}'),
        event(6, "framing-fault"),
    ]

    def test_recorded_bytes_go_out_exactly_when_ids_agree(self) -> None:
        responder = Responder(parse_log(self.LOG))
        actions = responder.answer(b'{"id":1,"method":"ping","jsonrpc":"2.0"}')
        self.assertEqual(
            actions,
            [
                Write(b'{"jsonrpc":"2.0","method":"note"}\n'),
                Write(b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n'),
            ],
        )
        self.assertEqual(responder.divergences, [])

    def test_a_response_takes_the_live_request_id(self) -> None:
        responder = Responder(parse_log(self.LOG))
        actions = responder.answer(b'{"jsonrpc":"2.0","id":"abc","method":"ping"}')
        self.assertEqual(json.loads(actions[1].data), {"jsonrpc": "2.0", "id": "abc", "result": {}})

    def test_a_framing_fault_replays_as_an_overflow_and_the_death_closes(self) -> None:
        script = parse_log(self.LOG)
        self.assertTrue(script.ends_in_death)
        responder = Responder(script)
        responder.answer(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        actions = responder.answer(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
        self.assertEqual(actions, [Overflow(), Close()])
        self.assertGreater(Overflow().size, 16 * 1024 * 1024)
        self.assertEqual(responder.finish(), [])

    def test_a_ping_beyond_the_recording_is_answered_and_noted(self) -> None:
        responder = Responder(parse_log(self.LOG[:4]))
        responder.answer(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        actions = responder.answer(b'{"jsonrpc":"2.0","id":9,"method":"ping"}')
        self.assertEqual(actions, [Write(b'{"jsonrpc":"2.0","id":9,"result":{}}\n')])
        other = responder.answer(b'{"jsonrpc":"2.0","id":10,"method":"tools/list"}')
        self.assertEqual(json.loads(other[0].data)["error"]["code"], -32603)
        self.assertEqual(len(responder.finish()), 2)

    def test_json_is_compared_by_value_and_type(self) -> None:
        self.assertTrue(same({"a": [1, "x"], "b": None}, {"b": None, "a": [1, "x"]}))
        self.assertFalse(same(3, 3.0))
        self.assertFalse(same(1, True))
        self.assertFalse(same({"a": 1}, {"a": 1, "b": 2}))
        log = [
            wire(
                1,
                "send",
                '{"jsonrpc":"2.0","id":1,"method":"tools/call",'
                '"params":{"name":"t","arguments":{"b":3.0}}}',
            )
        ]
        responder = Responder(parse_log(log))
        responder.answer(
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
            b'"params":{"arguments":{"b":3},"name":"t"}}'
        )
        self.assertEqual(len(responder.divergences), 1)
        self.assertIn("seq 1 differs", responder.divergences[0])

    def test_out_of_order_lines_diverge(self) -> None:
        log = self.LOG[:2] + [wire(3, "send", '{"jsonrpc":"2.0","method":"a"}')]
        responder = Responder(parse_log(log))
        responder.answer(b'{"jsonrpc":"2.0","method":"a"}')
        responder.answer(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        self.assertEqual(len(responder.finish()), 1)
        self.assertIn("out of order", responder.finish()[0])

    def test_the_plan_drives_pages_as_one_listing(self) -> None:
        with open(capture("demo"), encoding="utf-8") as stream:
            calls, notes = plan(parse_log(stream))
        self.assertEqual(notes, [])
        self.assertEqual(
            [call.label() for call in calls],
            [
                "initialize",
                "tools/list",
                "tools/call add",
                "tools/call divide",
                "tools/call no_such_tool",
                "ping",
            ],
        )
        self.assertEqual(calls[1].pages, 3)
        self.assertFalse(calls[1].capped)
        self.assertFalse(any(call.overlaps for call in calls))

    def test_bad_entries_name_their_line(self) -> None:
        cases = {
            '[1]': "line 1: not a JSON object",
            '{"dir": "send", "text": "x"}': "line 1: seq is not an integer",
            '{"seq": 1, "dir": "sideways", "text": "x"}': "line 1: dir is 'sideways'",
            '{"seq": 1, "dir": "send"}': "line 1: a wire line needs exactly one of text and base64",
            '{"seq": 1, "dir": "send", "base64": "***"}': "line 1: base64 member is not base64",
            '{"seq": 1}': "line 1: neither a wire line (dir) nor an event",
        }
        for line, error in cases.items():
            with self.subTest(line=line):
                with self.assertRaises(LogError) as caught:
                    parse_log([line])
                self.assertIn(error, str(caught.exception))
        with self.assertRaises(LogError) as caught:
            parse_log(['{"seq": 2, "event": "a", "detail": ""}', '{"seq": 2, "event": "b"}'])
        self.assertIn("line 2: seq 2 does not follow 2", str(caught.exception))

    PING = '{"jsonrpc":"2.0","id":%d,"method":"ping"}'
    PONG = '{"jsonrpc":"2.0","id":%d,"result":{}}'

    def test_an_eof_closes_where_it_was_recorded(self) -> None:
        log = [
            wire(1, "send", self.PING % 1),
            wire(2, "recv", self.PONG % 1),
            wire(3, "send", self.PING % 2),
            event(4, "eof"),
            event(5, "died"),
            event(6, "retired"),
        ]
        script = parse_log(log)
        self.assertFalse(script.ends_in_death)
        responder = Responder(script)
        self.assertEqual(
            responder.answer((self.PING % 1).encode()), [Write((self.PONG % 1).encode() + b"\n")]
        )
        self.assertEqual(responder.answer((self.PING % 2).encode()), [Close()])

    def test_a_log_that_records_its_end_is_not_second_guessed(self) -> None:
        unanswered = [wire(1, "send", self.PING % 1)]
        self.assertTrue(parse_log(unanswered).ends_in_death, "an old log: taken for a death")
        self.assertFalse(parse_log(unanswered + [event(2, "died")]).ends_in_death)

    def test_a_timed_out_request_is_planned_unanswered(self) -> None:
        timed_out = json.dumps({"seq": 2, "event": "timed-out", "id": 1, "method": "ping"})
        log = [
            wire(1, "send", self.PING % 1),
            timed_out,
            wire(3, "recv", self.PONG % 1),
            wire(4, "send", self.PING % 2),
            wire(5, "recv", self.PONG % 2),
        ]
        script = parse_log(log)
        self.assertEqual(script.timed_out, frozenset([0]))
        calls, _ = plan(script)
        self.assertEqual([call.answered for call in calls], [False, True])
        responder = Responder(script)
        self.assertEqual(responder.answer((self.PING % 1).encode()), [], "the answer came late")
        self.assertEqual(len(responder.answer((self.PING % 2).encode())), 2)

    def test_a_capture_that_dropped_entries_is_a_divergence(self) -> None:
        dropped = json.dumps({"seq": 5, "event": "dropped", "detail": "3 entries", "entries": 3})
        _, notes = plan(parse_log([wire(1, "send", self.PING % 1), dropped]))
        self.assertEqual(
            notes,
            ["the capture lost entries before seq 5 (3 entries): the recording is incomplete"],
        )


def handshake_entries() -> List[Entry]:
    """The shipped demo capture up to ``notifications/initialized``: a handshake
    the replaying client reproduces."""
    items = entries("demo")
    last = next(
        number
        for number, item in enumerate(items)
        if item.get("dir") == "send" and "notifications/initialized" in item["text"]
    )
    return items[: last + 1]


def pings(count: int, overlapping: bool = False, timed_out: bool = False) -> List[Entry]:
    """A handshake, then ``count`` pings: each answered before the next (or
    all sent before any answer); with ``timed_out``, each timing out first."""
    items = handshake_entries()
    sent = [
        {"dir": "send", "text": '{"jsonrpc":"2.0","id":%d,"method":"ping"}' % ident}
        for ident in range(100, 100 + count)
    ]
    answers = [
        {"dir": "recv", "text": '{"jsonrpc":"2.0","id":%d,"result":{}}' % ident}
        for ident in range(100, 100 + count)
    ]
    late = [
        {"event": "timed-out", "detail": "ping", "id": ident, "method": "ping"}
        for ident in range(100, 100 + count)
    ]
    if overlapping:
        items += sent + answers
    else:
        for ask, late_one, answer in zip(sent, late, answers):
            items += [ask, late_one, answer] if timed_out else [ask, answer]
    return [dict(item, seq=seq) for seq, item in enumerate(items, 1)]


def python_calls(work: Callable[[], Any]) -> int:
    """How many Python functions ``work()`` calls (a count, not a time: it cannot flake)."""
    calls = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[0] += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls[0]


class HostileLogs(unittest.TestCase):
    """Issue 17 item 11: a log may be anyone's, and huge."""

    def setUp(self) -> None:
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.dir = directory.name

    def growth(self, work: Callable[[List[str]], Any], **shape: bool) -> float:
        """How much the calls of ``work(log lines)`` grow when the log doubles:
        2 when the work is linear in the log, 4 when it is quadratic."""
        small, large = (
            [json.dumps(item) for item in pings(count, **shape)] for count in (300, 600)
        )
        return python_calls(lambda: work(large)) / python_calls(lambda: work(small))

    def test_planning_and_matching_are_linear(self) -> None:
        # Once timeline.index per call, twice: 8,000 pings took 25 s to plan (now 0.04 s).
        def replay_all(lines: List[str]) -> None:
            script = parse_log(lines)
            plan(script)
            responder = Responder(script)
            for line in script.client:
                responder.answer(line.data)
            self.assertEqual(responder.finish(), [])

        self.assertLess(self.growth(replay_all), 2.5)

    def test_timed_out_calls_are_found_in_one_pass(self) -> None:
        def read(lines: List[str]) -> None:
            self.assertEqual(len(parse_log(lines).timed_out), len(lines) // 3 - 1)

        self.assertLess(self.growth(read, timed_out=True), 2.5)

    def test_calls_in_flight_past_the_bound_are_refused_in_one_line(self) -> None:
        bound = replay_module.MAX_CONCURRENT_CALLS
        with self.assertRaises(LogError) as caught:
            plan(parse_log(json.dumps(item) for item in pings(bound + 1, overlapping=True)))
        self.assertIn("more than %d calls in flight at once" % bound, str(caught.exception))
        path = write_log(self.dir, pings(600, overlapping=True))
        threads = threading.active_count()
        done = run_replay(path)
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        self.assertEqual(done.stdout, "")
        self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
        self.assertRegex(done.stderr, r"\Areplay: the log has more than %d calls in flight" % bound)
        with self.assertRaises(LogError):
            drive(load(path), LONG)  # refused before a thread is started
        self.assertEqual(threading.active_count(), threads)

    def test_as_many_calls_in_flight_as_the_bound_replay(self) -> None:
        bound = replay_module.MAX_CONCURRENT_CALLS
        outcomes, divergences = drive(
            load(write_log(self.dir, pings(bound, overlapping=True))), LONG
        )
        self.assertEqual(divergences, [])
        self.assertEqual(outcomes[1:], ["ping ok"] * bound)

    def test_the_bound_holds_while_driving_too(self) -> None:
        # A client slower than its recording must not pile up threads either: with
        # the bound at 3, ten overlapping pings never run more than 3 threads (the
        # first ones then time out: their recorded answers follow the tenth ping).
        peak = [0]

        class Counted(replay_run._Running):
            def __init__(self, *args: Any) -> None:
                super().__init__(*args)
                live = [t for t in threading.enumerate() if t.name.startswith("replay-call-")]
                peak[0] = max(peak[0], len(live))

        with (
            mock.patch.object(replay_run, "MAX_CONCURRENT_CALLS", 3),
            mock.patch.object(replay_run, "_Running", Counted),
        ):
            outcomes, _ = drive(load(write_log(self.dir, pings(10, overlapping=True))), SHORT)
        self.assertEqual(len(outcomes), 11, outcomes)
        self.assertEqual(peak[0], 3)

    def test_control_sequences_from_the_log_are_escaped(self) -> None:
        items = pings(1)
        hostile_text = "\x1b[2J\x1b]0;title\x07\u009b31m\u202eRLO\rback\nFORGED"
        items.insert(-2, {"dir": "send", "text": "not json " + hostile_text})  # never sent again
        items.append({"event": "dropped", "detail": hostile_text, "entries": 1, "bytes": 1})
        done = run_replay(
            write_log(self.dir, [dict(item, seq=seq) for seq, item in enumerate(items, 1)])
        )
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        diverged = [line for line in done.stdout.splitlines() if line.startswith("DIVERGED")]
        self.assertEqual(len(diverged), 3, done.stdout)  # lost, out of order, never sent
        self.assertIn("\\x1b[2J", done.stdout)  # shown, as an escape
        self.assertEqual(hostile.unsafe_characters(done.stdout + done.stderr, lines=True), [])

    def test_serve_escapes_what_it_reports_on_stderr(self) -> None:
        items = handshake_entries()
        recorded = {
            "jsonrpc": "2.0",
            "id": 100,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"x": "\u009b2J\u202eRLO\u2028"}},
        }
        items += [
            {"dir": "send", "text": json.dumps(recorded, ensure_ascii=False)},
            {"dir": "recv", "text": '{"jsonrpc":"2.0","id":100,"result":{"content":[]}}'},
        ]
        path = write_log(self.dir, [dict(item, seq=seq) for seq, item in enumerate(items, 1)])
        asked = [message(item) for item in items if item.get("dir") == "send"]
        asked[-1]["params"]["arguments"] = {"x": "\x1b[2J\u202e"}  # differs, hostile too
        feed = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in asked)
        done = subprocess.run(
            [sys.executable, REPLAY, "--serve", path],
            input=feed,
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ, PYTHONPATH=REPO),
        )
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("differs", done.stderr)
        self.assertIn("\\u202e", done.stderr)
        self.assertEqual(hostile.unsafe_characters(done.stderr, lines=True), [])


class EntryPoints(unittest.TestCase):
    """``python -m mcp_client replay`` from an installed package (no checkout), and the
    checkout's ``tools/replay.py``: the same command."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.site = tempfile.mkdtemp()  # the package alone, as pip installs it
        shutil.copytree(
            os.path.join(REPO, "mcp_client"),
            os.path.join(cls.site, "mcp_client"),
            ignore=shutil.ignore_patterns("__pycache__"),
        )

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.site)

    def module(self, *args: str) -> "subprocess.CompletedProcess[str]":
        env = dict(os.environ, PYTHONPATH=self.site)
        return subprocess.run(
            [sys.executable, "-m", "mcp_client", "replay", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=self.site,
        )

    def test_the_installed_package_replays_a_capture(self) -> None:
        done = self.module(capture("time"))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(done.stdout, run_replay(capture("time")).stdout)
        self.assertIn("the client matched the recording", done.stdout)

    def test_the_installed_package_serves_a_capture(self) -> None:
        spawn = Spawn(
            sys.executable,
            ("-m", "mcp_client", "replay", "--serve", capture("demo")),
            env={"PYTHONPATH": self.site},
            cwd=self.site,
        )
        with start(spawn, OPTIONS) as client:
            self.assertEqual(client.initialize_result.server_info.name, "mcp-client-demo")
            added = client.call_tool("add", {"a": 2, "b": 3})
        self.assertEqual(added.structured_content, {"sum": 5})

    def test_replay_after_the_double_dash_is_a_server_command(self) -> None:
        settings = cli.parse_arguments(["--quiet-server", "--", "replay", "LOG"])
        self.assertEqual(settings.spawn.argv(), ("replay", "LOG"))

    def test_usage_and_unreadable_logs_exit_2(self) -> None:
        self.assertEqual(self.module().returncode, 2)
        bad = os.path.join(self.site, "bad.jsonl")
        with open(bad, "w") as stream:
            stream.write('{"seq": 1, "dir": "send"}\n')
        done = self.module(bad)
        self.assertEqual(done.returncode, 2)
        self.assertEqual(
            done.stderr,
            "replay: line 1: a wire line needs exactly one of text and base64 (strings)\n",
        )
        helped = self.module("--help")
        self.assertEqual(helped.returncode, 0)
        self.assertIn("python -m mcp_client replay", helped.stdout)


class Serve(unittest.TestCase):
    """``tools/replay.py --serve``: our own client pointed at a capture."""

    def serve(self, name: str) -> Spawn:
        return Spawn(sys.executable, (REPLAY, "--serve", capture(name)))

    def recorded_result(self, name: str, ident: int) -> Any:
        for item in entries(name):
            if item.get("dir") == "recv" and message(item).get("id") == ident:
                return message(item)["result"]
        raise AssertionError("no recorded answer to id %d" % ident)

    def test_a_real_server_capture_answers_our_client(self) -> None:
        client = start(self.serve("time"), OPTIONS)
        try:
            self.assertEqual(client.initialize_result.server_info.name, "mcp-time")
            names = [tool.name for tool in client.list_tools()]
            self.assertEqual(names, ["get_current_time", "convert_time"])
            now = client.call_tool("get_current_time", {"timezone": "Europe/Warsaw"})
            recorded = self.recorded_result("time", 3)["structuredContent"]
            self.assertEqual(now.structured_content, recorded)
            converted = client.call_tool(
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            )
            self.assertEqual(converted.structured_content["time_difference"], "+9.0h")
            client.ping()
        finally:
            evidence = client.shutdown()
        self.assertIsInstance(evidence, Exited)

    def test_a_hostile_capture_kills_our_client_the_same_way(self) -> None:
        client = start(self.serve("invalid_utf8"), OPTIONS)
        try:
            client.list_tools()
            client.ping()
            with self.assertRaises(ClientBroken) as caught:
                client.call_tool("echo", {"message": "hello"})
            self.assertIn("not UTF-8", caught.exception.reason)
        finally:
            evidence = client.shutdown()
        self.assertIsInstance(evidence, Exited)

    def test_a_recorded_exit_closes_the_stream(self) -> None:
        client = start(self.serve("exit_mid_call"), OPTIONS)
        try:
            client.list_tools()
            client.ping()
            with self.assertRaises(Unavailable) as caught:
                client.call_tool("echo", {"message": "hello"})
            self.assertEqual(caught.exception.reason, "server closed its stdout")
        finally:
            evidence = client.shutdown()
        self.assertIsInstance(evidence, Exited)

    def test_server_requests_are_replayed_and_answered(self) -> None:
        with start(self.serve("server_requests"), OPTIONS) as client:
            result = client.call_tool("echo", {"n": 1})
        self.assertEqual(json.loads(text_of(result))["ping"], {"result": {}})

    def test_an_unrecorded_tool_call_is_an_error_not_a_hang(self) -> None:
        with start(self.serve("demo"), OPTIONS) as client:
            with self.assertRaises(ServerError) as caught:
                client.call_tool("reverse-text", {"text": "abc"})
        self.assertEqual(caught.exception.rpc_error.code, -32603)

    def test_any_client_ids_are_remapped(self) -> None:
        pipe = Pipe([sys.executable, REPLAY, "--serve", capture("demo")])
        self.addCleanup(pipe.kill)
        pipe.send({"jsonrpc": "2.0", "id": "first", "method": "initialize", "params": {}})
        answer = pipe.read_message()
        self.assertEqual(answer["id"], "first")
        self.assertEqual(answer["result"]["serverInfo"]["name"], "mcp-client-demo")
        pipe.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
            }
        )
        self.assertEqual(
            pipe.read_message(),
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "content": [{"type": "text", "text": "5"}],
                    "structuredContent": {"sum": 5},
                },
            },
        )
        pipe.send({"jsonrpc": "2.0", "id": 77, "method": "ping"})
        self.assertEqual(pipe.read_message(), {"jsonrpc": "2.0", "id": 77, "result": {}})
        pipe.send({"jsonrpc": "2.0", "id": 78, "method": "ping"})  # beyond the recording
        self.assertEqual(pipe.read_message(), {"jsonrpc": "2.0", "id": 78, "result": {}})
        pipe.close_stdin()
        self.assertEqual(pipe.wait(), 1, "it diverged from the recording, and says so")

    def test_a_call_with_other_arguments_is_answered_as_recorded_with_a_warning(self) -> None:
        import io

        from mcp_client.replay.run import serve_main

        lines = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 20, "b": 30}},
            },
        ]
        stdin = io.BytesIO(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        stdout, err = io.BytesIO(), io.StringIO()
        self.assertEqual(serve_main(capture("demo"), stdin, stdout, err), 1)
        answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
        self.assertEqual(answers[-1]["result"]["structuredContent"], {"sum": 5})  # as recorded
        warnings = [line for line in err.getvalue().splitlines() if "tools/call" in line]
        self.assertEqual(len(warnings), 1, err.getvalue())
        self.assertRegex(
            warnings[0],
            r'\Areplay --serve: seq \d+ differs: tools/call "add" with '
            r'other arguments than recorded, answered with the '
            r'recorded answer: the client sent ',
        )
        self.assertIn('"arguments":{"a":20,"b":30}', warnings[0])


if __name__ == "__main__":
    unittest.main()
