"""Issue 24 in code mode: results a model can trust, against the scripted calendar server.

The calendar case, replayed as the issue tells it: ``resolve_time`` declares no
``outputSchema`` and its text is a JSON object. A first program, written from the
surface alone, guesses its keys wrong. After one run with ``--shapes DIR``, the
surface shows what was observed (``observed{"resolved_local": str, ...}``), and a second
program written from that surface is right the first time, under ``mypy --strict``
too. The other programs read ``data``, narrow a content block, and meet
``cap.mcp.ResultMismatch`` from a server that breaks its own ``outputSchema``.

Each command runs as a user would run it: ``python -m mcp_client codemode``, the
program jailed, the server a child of the runner.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from typing import List

import pytest

from mcp_client import config
from mcp_client.codemode import CodeMode

from support import LONG

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CALENDAR = os.path.join(HERE, "servers", "calendar_server.py")

#: Written from the first surface: no key is shown, so it guesses "local" (wrong).
GUESS = """
from cap.mcp import calendar
out = calendar.resolve_time("2026-12-02", "Europe/Paris")
data = out["data"]
print("at", data.get("local") if isinstance(data, dict) else out["text"])
"""
#: Written from the surface after one run: the keys are there, one of them optional.
RIGHT = """
from cap.mcp import calendar
out = calendar.resolve_time("2026-12-02", "Europe/Paris")
local: str = out["data"]["resolved_local"]
print("at", local, "or", out["data"].get("adjusted_local"))
"""
BLOCKS = """
from cap.mcp import calendar
for block in calendar.snapshot()["content"]:
    if block["type"] == "image":
        mime: str = block["mimeType"]
        print("image", mime, len(block["data"]))
    elif block["type"] == "text":
        print("text", block["text"])
    else:
        print("other", block["type"])
print("prose data", calendar.say("hello")["data"])
"""
MISMATCH = """
from cap.mcp import ResultMismatch, CallFailed, calendar
print(calendar.kept_promise()["datetime"])
try:
    calendar.broken_promise()
except ResultMismatch as e:
    print("mismatch:", e, isinstance(e, CallFailed))
"""


class ResultsCase(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="results-test-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.shapes = os.path.join(self.dir, "shapes")
        self.config = os.path.join(self.dir, "servers.json")
        with open(self.config, "w") as out:
            json.dump(
                {"mcpServers": {"calendar": {"command": sys.executable, "args": [CALENDAR]}}}, out
            )
        self.env = dict(
            os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")])
        )

    def codemode(self, *args: str, program: str = "") -> "subprocess.CompletedProcess[str]":
        path = os.path.join(self.dir, "program.py")
        with open(path, "w") as out:
            out.write(textwrap.dedent(program))
        argv = [sys.executable, "-m", "mcp_client", "codemode", "--config", self.config, *args]
        if program:
            argv.append(path)
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=LONG * 4)


class CalendarCase(ResultsCase):
    @pytest.mark.slow
    def test_a_second_program_is_right_the_first_time_after_one_run(self) -> None:
        before = self.codemode("--surface", "--shapes", self.shapes).stdout
        self.assertIn(
            'resolve_time(when: str, zone: str) -> ToolOutput{"text": str, '
            '"data": dict | list | None',
            before,
        )
        self.assertNotIn("resolved_local", before)
        guessed = self.codemode("--shapes", self.shapes, program=GUESS)
        self.assertEqual(guessed.returncode, 0, guessed.stderr)
        self.assertEqual(guessed.stdout, "at None\n")  # a wrong answer, and nothing raised
        after = self.codemode("--surface", "--shapes", self.shapes).stdout
        self.assertIn(
            'resolve_time(when: str, zone: str) -> ResolveTimeOutput{"text": str, "data": '
            'observed{"resolved_local": str, "zone": str, "adjusted_local": str, ...}, '
            '"content": list[Block]}',
            after,
        )
        described = self.codemode(
            "--describe", "calendar.resolve_time", "--shapes", self.shapes
        ).stdout
        self.assertIn(
            "observed in 1 call; the server declares no outputSchema",
            " ".join(described.split()),
        )
        checked = self.codemode("--check", "--shapes", self.shapes, program=RIGHT)
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        right = self.codemode("--shapes", self.shapes, program=RIGHT)
        self.assertEqual(
            (right.returncode, right.stdout),
            (0, "at 2026-12-02 09:00 or 2026-12-02 10:00\n"),
            right.stderr,
        )

    def test_the_store_holds_kinds_and_keys_never_values(self) -> None:
        self.codemode("--shapes", self.shapes, program=GUESS)
        (name,) = os.listdir(self.shapes)
        with open(os.path.join(self.shapes, name)) as stream:
            text = stream.read()
        self.assertIn("resolved_local", text)
        for value in ("2026-12-02", "Europe/Paris", "09:00"):
            self.assertNotIn(value, text)

    def test_with_no_shapes_nothing_is_learned(self) -> None:
        self.codemode("--no-shapes", program=GUESS)
        self.assertFalse(os.path.exists(self.shapes))
        self.assertFalse(os.path.exists(os.path.join(os.environ["XDG_CACHE_HOME"], "mcp-client")))
        self.assertNotIn("resolved_local", self.codemode("--surface").stdout)

    def test_by_default_the_per_user_store_learns(self) -> None:
        self.codemode(program=GUESS)
        store = os.path.join(os.environ["XDG_CACHE_HOME"], "mcp-client", "shapes")
        self.assertEqual(len(os.listdir(store)), 1)
        self.assertEqual(os.stat(store).st_mode & 0o777, 0o700)
        self.assertIn('observed{"resolved_local"', self.codemode("--surface").stdout)
        self.assertNotIn("resolved_local", self.codemode("--surface", "--no-shapes").stdout)


#: What was learned once types: a string of JSON text given parsed, a repr read.
PARSED = """
from cap.mcp import calendar
total: int = calendar.report()["data"]["result"]["total"]
first = calendar.wrapped()["result"][0]["days"][0]
busy = calendar.busy_days()["data"]
print(total, first, busy["days"], busy["all_day"], busy["note"])
"""
#: Written before anything was learned: the strings are strings, the repr is read.
FIRST = """
import json
from cap.mcp import calendar
print(json.loads(calendar.report()["data"]["result"])["total"])
print(json.loads(calendar.wrapped()["result"])[0]["total"], calendar.busy_days()["data"])
"""


class Learning(ResultsCase):
    def test_a_string_of_json_text_is_given_parsed_once_learned(self) -> None:
        first = self.codemode("--shapes", self.shapes, program=FIRST)
        self.assertEqual(
            first.stdout.splitlines(),
            ["3", "3 {'days': ['mon', 'fri'], 'count': 2, 'all_day': True, 'note': None}"],
            first.stderr,
        )
        surface = self.codemode("--surface", "--shapes", self.shapes).stdout
        self.assertIn(
            'report() -> ReportOutput{"text": str, "data": observed{"result": observed{"total": '
            'int, "days": list[str], ...}, ...}, "content": list[Block]}',
            surface,
        )
        self.assertIn(
            'wrapped() -> WrappedResult{"result": list[observed{"total": int, "days": '
            "list[str], ...}]}",
            surface,
        )
        self.assertIn('"data": observed{"days": list[str], "count": int, "all_day": bool', surface)
        checked = self.codemode("--check", "--shapes", self.shapes, program=PARSED)
        self.assertEqual((checked.returncode, checked.stdout), (0, "ok\n"), checked.stderr)
        done = self.codemode("--shapes", self.shapes, program=PARSED)
        self.assertEqual(done.stdout, "3 mon ['mon', 'fri'] True None\n", done.stderr)

    def test_a_server_that_claims_to_be_another_teaches_it_nothing(self) -> None:
        with open(self.config, "w") as out:
            command = {"command": sys.executable, "args": [CALENDAR]}
            twin = {"command": sys.executable, "args": [CALENDAR, "--twin"]}
            json.dump({"mcpServers": {"calendar": command, "twin": twin}}, out)
        program = "from cap.mcp import twin\nprint(twin.resolve_time('d', 'z')['data'])\n"
        done = self.codemode("--shapes", self.shapes, program=program)
        self.assertEqual(done.stdout, "{'amount': 1.5, 'note': 'twin'}\n", done.stderr)
        surface = self.codemode("--surface", "--shapes", self.shapes).stdout
        self.assertIn(
            'cap.mcp.twin.resolve_time(when: str, zone: str) -> ResolveTimeOutput{', surface
        )
        calendar = [line for line in surface.splitlines() if "calendar.resolve_time" in line]
        self.assertEqual(len(calendar), 1)
        self.assertNotIn("amount", calendar[0])
        self.assertIn('"data": dict | list | None', calendar[0])


#: A ToolOutput read the way the SDKs and JavaScript code mode read a result, and as a dict.
ATTRIBUTES = """
import json
from cap.mcp import calendar
out = calendar.say("hi")
print(out.text == out["text"], out.data, isinstance(out, dict), json.dumps(out)[:18])
print(out.content[0]["type"], out.get("text"), sorted(out))
"""


class Programs(ResultsCase):
    @pytest.mark.slow
    def test_a_tool_output_reads_as_a_dict_and_by_attribute(self) -> None:
        checked = self.codemode("--check", "--no-shapes", program=ATTRIBUTES)
        self.assertEqual((checked.returncode, checked.stdout), (0, "ok\n"), checked.stderr)
        done = self.codemode("--no-shapes", program=ATTRIBUTES)
        self.assertEqual(
            done.stdout.splitlines(),
            [
                'True None True {"text": "You said',
                "text You said: hi ['content', 'data', 'text']",
            ],
            done.stderr,
        )
        wrong = self.codemode("--no-shapes", program=ATTRIBUTES + "out.txet\n")
        self.assertEqual(wrong.returncode, 1)
        self.assertIn(
            "AttributeError: a ToolOutput has no 'txet': its keys, attributes too, are text, "
            "data, content",
            wrong.stderr,
        )

    @pytest.mark.slow
    def test_a_program_narrows_a_block_and_reads_data(self) -> None:
        checked = self.codemode("--check", program=BLOCKS)
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        done = self.codemode(program=BLOCKS)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            done.stdout.splitlines(),
            ["text a picture", "image image/png 96", "other hologram", "prose data None"],
        )

    def test_a_program_meets_result_mismatch(self) -> None:
        done = self.codemode(program=MISMATCH)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            done.stdout.splitlines(),
            [
                "x",
                'mismatch: calendar.broken_promise: tool broken_promise broke its outputSchema at '
                '$["datetime"]: expected string, got integer 5 True',
            ],
        )

    def test_the_library_records_the_outcome_mismatch(self) -> None:
        servers: List[config.ConfiguredServer] = list(config.load(self.config).servers)
        with CodeMode.open(servers, jail_program=False, shapes=self.shapes) as code:
            result = code.run(textwrap.dedent(MISMATCH))
            module = open(os.path.join(code.cap_dir, "cap", "mcp", "calendar.py")).read()
        self.assertEqual([call.outcome for call in result.calls], ["ok", "mismatch"])
        # The module docstring names the server and holds its instructions, caged.
        self.assertIn(
            '("The tools of MCP server calendar, version 1.4.2 (title \\"Calendar\\"),', module
        )
        self.assertIn("Times are local to the zone asked for. Ask for one zone a call.", module)
        # A structured tool's shape is learned too, though only data types a surface.
        self.assertTrue(os.listdir(self.shapes))


if __name__ == "__main__":
    unittest.main()
