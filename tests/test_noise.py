"""Noise: stdout lines that are not JSON at all (issue 14).

The pure half (``mcp_client.noise`` and the distinction ``jsonrpc.decode``
draws) on examples and with hypothesis; then the client against real scripted
servers (``noisy``, ``json_noise``, ``binary_noise``): strict by default,
``Options(tolerated_noise_lines=N)`` skipping up to N such lines, and
``python -m mcp_client`` tolerating 100 unless ``--strict``.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import unittest
from types import ModuleType
from typing import Any, Dict, List

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client import Exited, Options, State, cli, prepare, start
from mcp_client._core import _noise as noise
from mcp_client.errors import (
    BadMessage,
    ClientBroken,
    CorruptionReport,
    HandshakeFailed,
    LineTooLong,
    MalformedMessage,
)
from mcp_client.jsonrpc import decode
from mcp_client.jsonvalue import parse
from mcp_client.stdio import MAX_LINE_BYTES

import hostile
from servers.scripted import NOISE_BANNER
from strategies import property_settings
from support import LONG, server, server_argv, text_of

PROPERTY = property_settings(300)
MIB = 1024 * 1024
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BANNER_SHOWN = "\\x1b[1mweather-wrapper\\x1b[0m v0.3: starting the server on stdio"
#: What ``noisy`` prints in a session of connect, list_tools, call_tool and ping.
SESSION_NOISE = 2 + 3


def tolerant(lines: int, **more: Any) -> Options:
    return Options(
        handshake_timeout=LONG,
        request_timeout=LONG,
        retire_timeout=LONG,
        tolerated_noise_lines=lines,
        **more,
    )


STRICT = tolerant(0)


def load_replay_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "replay_tool_for_noise", os.path.join(REPO, "tools", "replay.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REPLAY_TOOL = load_replay_tool()


# ----------------------------------------------------------------------------- pure


class Show(unittest.TestCase):
    def test_a_plain_line_is_itself(self) -> None:
        line = b"[Mock SDK Server] Executing add tool with a=2, b=3"
        self.assertEqual(noise.show(line), line.decode())

    def test_unprintable_characters_are_escaped(self) -> None:
        cases = [
            (NOISE_BANNER[0], BANNER_SHOWN),
            (b"bad \xff\xfe \xc3 bytes", "bad \\xff\\xfe \\xc3 bytes"),
            (b"C:\\temp", "C:\\\\temp"),  # so that \xNN shown is always an escape
            ("rtl \u202e and \u2028 and \0".encode(), "rtl \\u202e and \\u2028 and \\x00"),
            (b"tab\there", "tab\\x09here"),
            ("\U000e0041 tag".encode(), "\\U000e0041 tag"),
        ]
        for line, shown in cases:
            with self.subTest(line=line):
                self.assertEqual(noise.show(line), shown)

    def test_a_long_line_is_cut_to_the_limit(self) -> None:
        self.assertEqual(noise.show(b"a" * 200), "a" * 200)
        self.assertEqual(noise.show(b"a" * 201), "a" * 197 + "...")
        self.assertEqual(noise.show(b"x" * MAX_LINE_BYTES, 10), "xxxxxxx...")

    def test_an_escape_is_never_cut_in_half(self) -> None:
        self.assertEqual(noise.show(b"ab" + b"\xff" * 10, 10), "ab\\xff...")

    @PROPERTY
    @given(st.binary(max_size=1200), st.integers(0, 300))
    def test_total_bounded_and_printable(self, line: bytes, limit: int) -> None:
        shown = noise.show(line, limit)
        self.assertLessEqual(len(shown), limit)
        self.assertTrue(shown.isprintable(), shown)

    @pytest.mark.slow
    @PROPERTY
    @given(
        st.text(
            st.characters(
                blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"),
                blacklist_characters="\\",
            )
            | st.just(" "),
            max_size=200,
        )
    )
    def test_printable_text_within_the_limit_is_shown_as_is(self, text: str) -> None:
        self.assertEqual(noise.show(text.encode("utf-8")), text)


class LooksLikeText(unittest.TestCase):
    def test_log_lines_and_banners_are_text(self) -> None:
        latin1 = "Serveur d\xe9marr\xe9 sur stdio".encode("latin-1")
        for line in NOISE_BANNER + [b"Starting server on stdio...", latin1, b"\tindented"]:
            with self.subTest(line=line):
                self.assertTrue(noise.looks_like_text(line))

    def test_binary_garbage_is_not(self) -> None:
        for line in [bytes(range(0x80, 0x100)), b"\x00\x01\x02\x03", b"\xff" * MIB, b" \t "]:
            with self.subTest(line=line[:20]):
                self.assertFalse(noise.looks_like_text(line))

    @PROPERTY
    @given(st.binary(max_size=2000))
    def test_total(self, line: bytes) -> None:
        self.assertIsInstance(noise.looks_like_text(line), bool)


def malformed(line: bytes) -> MalformedMessage:
    try:
        decode(line)
    except MalformedMessage as fault:
        return fault
    raise AssertionError("%r decoded" % line)


class Refusal(unittest.TestCase):
    def test_a_text_line_is_quoted_and_names_the_option(self) -> None:
        line = b"Starting the server... (this line is not JSON)"
        reason = noise.refusal(malformed(line), line, 0)
        self.assertTrue(reason.startswith("not JSON: "), reason)
        self.assertIn('the line starts "Starting the server... (this line is not JSON)"', reason)
        self.assertIn("Options(tolerated_noise_lines=N)", reason)

    def test_binary_garbage_is_quoted_without_the_hint(self) -> None:
        line = bytes(range(0x80, 0x100))
        reason = noise.refusal(malformed(line), line, 0)
        self.assertIn('the line starts "\\x80\\x81', reason)
        self.assertNotIn("tolerated_noise_lines", reason)
        self.assertLess(len(reason), 200)

    def test_a_spent_tolerance_says_how_many_were_skipped(self) -> None:
        line = b"one log line too many"
        self.assertIn(
            "; 1 such line was skipped before it, as many as tolerated",
            noise.refusal(malformed(line), line, 1),
        )
        reason = noise.refusal(malformed(line), line, 3)
        self.assertIn("; 3 such lines were skipped before it, as many as tolerated", reason)
        self.assertNotIn("Options(", reason)


class WhatIsNoise(unittest.TestCase):
    """The distinction is ``decode``'s: not JSON at all, or JSON but not JSON-RPC."""

    def test_examples(self) -> None:
        self.assertIsInstance(malformed(b"[Mock SDK Server] Executing add tool"), MalformedMessage)
        for line in [b'{"hello": 1}', b"[]", b"42", b'"a log line as a JSON string"']:
            with self.subTest(line=line), self.assertRaises(BadMessage):
                decode(line)
        # The hostile lines (tests/hostile.py) that reach the decoder: invalid UTF-8 and
        # deep nesting are noise, a batch or a bad id are not.
        for hostile_line in hostile.LINES:
            if hostile_line.fault is LineTooLong:
                continue  # the framing refuses it first
            with self.subTest(line=hostile_line.key):
                if hostile_line.fault is MalformedMessage:
                    self.assertIn(hostile_line.reason, malformed(hostile_line.line).reason)
                else:
                    with self.assertRaises(BadMessage):
                        decode(hostile_line.line)

    @PROPERTY
    @given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
    def test_malformed_exactly_when_not_json(self, line: bytes) -> None:
        try:
            parse(line)
        except CorruptionReport:
            self.assertIsInstance(malformed(line), MalformedMessage)
            return
        try:
            decode(line)
        except MalformedMessage:  # pragma: no cover - the property's failure
            self.fail("JSON refused as not JSON: %r" % line)
        except BadMessage:
            pass


# ----------------------------------------------------------------------------- processes


def log_entries(path: str) -> List[Dict[str, Any]]:
    """A capture log's entries, read as the documented JSON lines."""
    with open(path, encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.strip()]


def recorded(entry: Dict[str, Any]) -> bytes:
    """A wire line's exact bytes: ``text`` (UTF-8) or ``base64``."""
    if "base64" in entry:
        return base64.b64decode(entry["base64"])
    return str(entry["text"]).encode("utf-8")


def refused(
    case: unittest.TestCase, behaviour: str, *args: str, options: Options = STRICT
) -> HandshakeFailed:
    """The handshake with ``behaviour`` fails, nothing was skipped, the server is reaped."""
    client = prepare(server(behaviour, *args), options)
    with case.assertRaises(HandshakeFailed) as caught:
        client.connect()
    case.assertIs(client.state, State.BROKEN)
    case.assertEqual(client.noise_skipped, 0)
    case.assertIsInstance(client.shutdown(), Exited)
    return caught.exception


class Strict(unittest.TestCase):
    def test_the_default_dies_with_the_line_and_the_hint(self) -> None:
        client = prepare(server("noisy"))  # Options() itself, not only tolerated_noise_lines=0
        self.assertEqual(client.options.tolerated_noise_lines, 0)
        with self.assertRaises(HandshakeFailed) as caught:
            client.connect()
        client.shutdown()
        reason = caught.exception.reason
        self.assertIn('server sent an invalid line: not JSON: ', reason)
        self.assertIn('the line starts "%s"' % BANNER_SHOWN, reason)
        self.assertIn("Options(tolerated_noise_lines=N)", reason)
        self.assertIsNone(client.first_noise)

    def test_binary_garbage_dies_without_the_hint(self) -> None:
        reason = refused(self, "binary_noise", "1000").reason
        self.assertIn('not UTF-8 at byte 0; the line starts "\\x80\\x81', reason)
        self.assertNotIn("tolerated_noise_lines", reason)


class Tolerant(unittest.TestCase):
    def setUp(self) -> None:
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.log = os.path.join(directory.name, "wire.jsonl")

    def session(self, options: Options) -> List[logging.LogRecord]:
        with self.assertLogs("mcp_client", logging.WARNING) as logs:
            with start(server("noisy"), options) as client:
                self.assertEqual([tool.name for tool in client.list_tools()], ["echo", "echo_1"])
                self.assertEqual(text_of(client.call_tool("echo", {"a": 1})), '{"a":1}')
                client.ping()
                self.assertEqual(client.noise_skipped, SESSION_NOISE)
                self.assertEqual(client.first_noise, BANNER_SHOWN)
        self.assertEqual(client.shutdown(), Exited(-9))
        return logs.records

    def test_noise_is_skipped_with_a_warning_each(self) -> None:
        records = self.session(tolerant(SESSION_NOISE))
        self.assertEqual([record.levelno for record in records], [logging.WARNING] * SESSION_NOISE)
        messages = [record.getMessage() for record in records]
        self.assertIn(
            "skipped stdout line 1 of %d tolerated, not JSON: %s" % (SESSION_NOISE, BANNER_SHOWN),
            messages[0],
        )
        self.assertIn("[Mock SDK Server] Executing tools/call with id ", messages[3])
        for message in messages:
            self.assertTrue(message.isprintable(), message)

    def test_the_capture_holds_the_noise_and_replays(self) -> None:
        self.session(tolerant(100, capture=self.log))
        entries = log_entries(self.log)
        received = [recorded(entry) for entry in entries if entry.get("dir") == "recv"]
        self.assertEqual(received[:2], NOISE_BANNER)
        events = [entry["detail"] for entry in entries if entry.get("event") == "noise-skipped"]
        self.assertEqual(events, ["%d of 100" % n for n in range(1, SESSION_NOISE + 1)])
        script = REPLAY_TOOL.load(self.log)
        self.assertEqual(script.tolerated, SESSION_NOISE)
        self.assertFalse(script.ends_in_death)
        outcomes, divergences = REPLAY_TOOL.drive(script, LONG)
        self.assertEqual(divergences, [])
        self.assertEqual(
            [line.split(" ok")[0] for line in outcomes],
            ["initialize", "tools/list", "tools/call echo", "ping"],
            outcomes,
        )

    def test_the_strict_capture_replays_its_death(self) -> None:
        client = prepare(server("noisy"), tolerant(0, capture=self.log))
        with self.assertRaises(HandshakeFailed):
            client.connect()
        client.shutdown()
        script = REPLAY_TOOL.load(self.log)
        self.assertEqual((script.tolerated, script.ends_in_death), (0, True))
        outcomes, divergences = REPLAY_TOOL.drive(script, LONG)
        self.assertEqual(divergences, [])
        self.assertIn("initialize failed HandshakeFailed", outcomes[0])

    def test_one_line_more_than_tolerated_is_a_death_that_counts(self) -> None:
        with self.assertLogs("mcp_client", logging.WARNING):
            client = start(server("noisy", "--banner", "2"), tolerant(2))
            with self.assertRaises(ClientBroken) as caught:
                client.list_tools()
        self.assertEqual(client.shutdown(), Exited(-9))
        reason = caught.exception.reason
        self.assertIn('the line starts "[Mock SDK Server] Executing tools/list with id ', reason)
        self.assertIn("2 such lines were skipped before it, as many as tolerated", reason)
        self.assertEqual(client.noise_skipped, 2)

    def test_json_that_is_not_json_rpc_is_a_death_whatever_is_tolerated(self) -> None:
        client = start(server("json_noise"), tolerant(100))
        with self.assertRaises(ClientBroken) as caught:
            client.call_tool("echo", {})
        self.assertEqual(client.shutdown(), Exited(-9))
        self.assertIn(
            "server sent an invalid line: jsonrpc member is None", caught.exception.reason
        )
        self.assertEqual(client.noise_skipped, 0)

    def test_binary_garbage_at_the_cap_is_skipped(self) -> None:
        with self.assertLogs("mcp_client", logging.WARNING) as logs:
            with start(server("binary_noise", str(MAX_LINE_BYTES)), tolerant(1)) as client:
                self.assertEqual(text_of(client.call_tool("echo", {})), "{}")
                first = client.first_noise
        self.assertEqual(len(logs.records), 1)
        assert first is not None
        self.assertTrue(first.startswith("\\x80\\x81\\x82") and first.endswith("..."), first)
        self.assertLessEqual(len(first), noise.SHOWN)
        self.assertLess(len(logs.records[0].getMessage()), 2 * noise.SHOWN)

    def test_a_seventeen_mib_noise_line_is_still_a_framing_death(self) -> None:
        failure = refused(self, "binary_noise", str(17 * MIB), options=tolerant(100))
        self.assertIn("framing", failure.reason)


# ----------------------------------------------------------------------------- the command


class Command(unittest.TestCase):
    def cli(self, *args: str) -> "subprocess.CompletedProcess[str]":
        env = dict(os.environ, PYTHONPATH=REPO)
        return subprocess.run(
            [sys.executable, "-m", "mcp_client", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=tempfile.gettempdir(),
        )

    def test_noise_is_tolerated_with_one_warning_line(self) -> None:
        done = self.cli("--call", "echo", "{}", "--", *server_argv("noisy"))
        self.assertEqual(done.returncode, cli.EXIT_OK, done.stderr)
        self.assertEqual(
            done.stderr.splitlines(),
            [
                'mcp_client: warning: skipped 4 lines the server wrote to stdout '
                'that are not JSON, the first: "%s"; the MCP spec forbids them '
                '(--strict refuses them)' % BANNER_SHOWN
            ],
        )
        self.assertIn("call echo: isError=false", done.stdout)

    def test_strict_refuses_the_first_line(self) -> None:
        done = self.cli("--strict", "--", *server_argv("noisy"))
        self.assertEqual(done.returncode, cli.EXIT_HANDSHAKE, done.stderr)
        lines = done.stderr.splitlines()
        self.assertEqual(len(lines), 1, done.stderr)
        self.assertTrue(lines[0].startswith("mcp_client: handshake failed: HandshakeFailed: "))
        self.assertIn(BANNER_SHOWN, lines[0])

    def test_strict_refuses_a_log_line_before_an_answer(self) -> None:
        done = self.cli(
            "--strict", "--call", "echo", "{}", "--", *server_argv("noisy", "--banner", "0")
        )
        self.assertEqual(done.returncode, cli.EXIT_LISTING, done.stderr)
        self.assertIn("[Mock SDK Server] Executing tools/list", done.stderr)
