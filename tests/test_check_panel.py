"""The check says only what would fail: the panel of ``tools/check_panel.py``, held.

Every right program (few annotations, bare generics, a name reused, helpers without
types, a ``ToolOutput`` read by attribute) gets no message from ``CodeMode.check`` and
runs to its end; every wrong one gets the message that says why it would fail, and
no other error. ``warm_check`` fills the cache in the background, a check that comes
meanwhile waits for it, and a close ends it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import textwrap
import threading
import unittest
from typing import Any

from mcp_client import config
from mcp_client.codemode import CodeMode, _typecheck

from support import wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
import check_panel  # noqa: E402

sys.path.pop(0)


def warming() -> list:
    return [t for t in threading.enumerate() if t.name == "mcp-codemode-warm"]


#: The checked program's path, as mypy names it in what it says.
PROGRAM = "/tmp/run/program.py"


def said(output: str, signatures: Any = None, outputs: Any = frozenset()) -> tuple:
    """What the check makes of mypy's ``output`` on :data:`PROGRAM`."""
    return tuple(_typecheck._messages(output, PROGRAM, signatures or {}, outputs))


class WhereAFunctionIsDefined(unittest.TestCase):
    """mypy's note on where a called function lives becomes its signature, in the words
    of mypy 2 (``defined in "cap.mcp.demo"``) and of mypy 1 (``defined here``, at the
    generated module's line, a path of the runner's that the program must not be shown)."""

    ERROR = '/tmp/run/program.py:2: error: Unexpected keyword argument "c" for "add"  [call-arg]'
    SIGNATURES = {("cap.mcp.demo", "add"): "demo.add(a: int, b: int) -> AddResult"}
    SAID = (
        'line 2: Unexpected keyword argument "c" for "add"  [call-arg]',
        "line 2: note: the signature: demo.add(a: int, b: int) -> AddResult",
    )

    def messages(self, note: str) -> tuple:
        return said("%s\n%s\n" % (self.ERROR, note), self.SIGNATURES)

    def test_mypy_2s_words(self) -> None:
        note = '/tmp/run/program.py:2: note: "add" defined in "cap.mcp.demo"'
        self.assertEqual(self.messages(note), self.SAID)

    def test_mypy_1s_words_point_into_the_generated_module(self) -> None:
        note = '/tmp/mcp-codemode-x/lib/cap/mcp/demo.py:92: note: "add" defined here'
        self.assertEqual(self.messages(note), self.SAID)

    def test_a_note_into_another_of_the_runners_files_is_dropped(self) -> None:
        note = '/tmp/mcp-codemode-x/lib/cap/internal/mcp.py:7: note: "add" defined here'
        self.assertEqual(self.messages(note), self.SAID)

    def test_the_programs_own_function_keeps_its_note(self) -> None:
        note = '/tmp/run/program.py:1: note: "add" defined here'
        self.assertIn('line 1: note: "add" defined here', self.messages(note))


class AToolOutputsKeysAsAttributes(unittest.TestCase):
    """A module types a ToolOutput as a TypedDict of its own (it needs nothing of the
    runtime but invoke); the runtime's answers its three keys as attributes too, so the
    check drops mypy's word on reading one so -- for the ToolOutput types alone."""

    OUTPUTS = frozenset({"ToolOutput", "ReadNoteOutput"})

    def messages(self, error: str) -> tuple:
        return said("%s:3: error: %s\n" % (PROGRAM, error), outputs=self.OUTPUTS)

    def test_its_three_keys_read_as_attributes_are_no_message(self) -> None:
        for owner in sorted(self.OUTPUTS):
            for key in ("text", "data", "content"):
                error = '"%s" has no attribute "%s"  [attr-defined]' % (owner, key)
                self.assertEqual(self.messages(error), (), error)

    def test_another_attribute_or_another_types_is_still_said(self) -> None:
        for error in (
            '"ToolOutput" has no attribute "txet"  [attr-defined]',
            '"AddResult" has no attribute "text"  [attr-defined]',
        ):
            self.assertEqual(self.messages(error), ("line 3: " + error,))

    def test_a_key_it_does_not_have_is_said_with_the_keys_it_has(self) -> None:
        said = self.messages('TypedDict "ReadNoteOutput" has no key "txt"  [typeddict-item]')
        self.assertEqual(
            said,
            (
                'line 3: a ToolOutput has the keys "text", "data" and "content" (attributes '
                'too), not "txt"  [typeddict-item]',
            ),
        )


@unittest.skipUnless(_typecheck.have_mypy(), "mypy (the check extra) is not installed")
class CheckPanelCase(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="check-panel-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        path = os.path.join(self.dir, "servers.json")
        with open(path, "w") as out:
            json.dump(check_panel.config(), out)
        self.code = CodeMode.open(config.load(path).servers, jail_program=False)
        self.addCleanup(self.code.close)


class Panel(CheckPanelCase):
    def test_a_right_program_gets_no_message_and_runs(self) -> None:
        for name, program in check_panel.RIGHT:
            with self.subTest(name):
                checked = self.code.check(program)
                self.assertEqual((checked.ok, checked.messages), (True, ()))
                ran = self.code.run(program)
                self.assertEqual(ran.exit_status, 0, ran.stderr)

    def test_a_wrong_program_gets_the_one_message_that_says_why(self) -> None:
        for name, program, said in check_panel.WRONG:
            with self.subTest(name):
                checked = self.code.check(program)
                self.assertFalse(checked.ok)
                errors = [m for m in checked.messages if ": note: " not in m]
                self.assertEqual(len(errors), 1, checked.messages)
                self.assertIn(said, errors[0])
                self.assertEqual(self.code.run(program).exit_status, 1)

    def test_a_call_that_does_not_fit_gets_the_signature(self) -> None:
        checked = self.code.check("from cap.mcp import demo\ndemo.add(a=1, c=2)\n")
        self.assertEqual(
            checked.messages,
            (
                'line 2: Unexpected keyword argument "c" for "add"  [call-arg]',
                "line 2: note: the signature: demo.add(a: int, b: int) -> AddResult",
            ),
        )

    def test_strictness_about_the_programs_own_annotations_is_no_message(self) -> None:
        program = textwrap.dedent(
            """
            import json
            def keys(d: dict) -> list:
                return list(d)
            def helper(x):
                return x
            rows = []
            value = "1"
            value = json.loads(value)
            rows.append(helper(value))
            print(keys({}), rows)
            """
        )
        self.assertEqual(self.code.check(program).messages, ())


class Warming(CheckPanelCase):
    def test_the_cache_is_warmed_in_the_background_and_a_check_waits(self) -> None:
        self.code.warm_check()
        self.code.warm_check()  # once
        self.assertLessEqual(len(warming()), 1)
        checked = self.code.check("from cap.mcp import demo\nprint(demo.add(a=1, b=2))\n")
        self.assertEqual((checked.ok, checked.messages), (True, ()))
        cache = os.listdir(os.path.join(self.code._root, "mypy-cache"))  # noqa: SLF001
        self.assertTrue(cache)
        self.assertTrue(
            wait_until(
                lambda: not any(t.name == "mcp-codemode-warm" for t in threading.enumerate())
            )
        )

    def test_a_close_ends_the_warming(self) -> None:
        self.code.warm_check()
        self.code.close()
        self.assertTrue(
            wait_until(
                lambda: not any(t.name == "mcp-codemode-warm" for t in threading.enumerate())
            )
        )
        self.code.warm_check()  # after the close: nothing


if __name__ == "__main__":
    unittest.main()
