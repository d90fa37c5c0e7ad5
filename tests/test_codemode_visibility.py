"""Issue 25 item 1, the cap package: a program is shown only the modules it imports.

Two servers, ``notes`` (``codemode_tools.py``) and ``calendar``
(``calendar_server.py``). A jailed program that imports ``cap.mcp.notes`` must not
read, list or import ``cap/mcp/calendar.py`` by any path: its package's directory,
the runner's shared one, ``/proc/self/root`` and ``/proc/1/root``, a walk of every
file under ``/tmp``, ``importlib``, ``__import__``, ``find_spec``, ``pkgutil``. The
imports are read from the program's syntax tree (``mcp_client._imports``), anywhere
in it; ``from cap.mcp import *`` shows every module.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import sys
import tempfile
import textwrap
import unittest
import warnings
from typing import Any, Dict, Optional
from unittest import mock

from mcp_client.codemode import MAX_UNKNOWN_NOTES, CodeMode, RunResult, _imports, _program
from mcp_client.transport import Spawn

from codemode_support import RunnerCase

HERE = os.path.dirname(os.path.abspath(__file__))
CALENDAR = Spawn(sys.executable, (os.path.join(HERE, "servers", "calendar_server.py"),))
#: A name only the calendar's generated module holds (spelt apart in every program).
MARKER = "broken_promise"

#: Every way to the calendar's module a program that imports notes alone might try; each
#: probe prints what it got (the type of the error, or what it found).
PROBES = r'''
import importlib, importlib.util, json, os, pkgutil, sys
import cap.mcp.notes

MARKER = "broken" + "_promise"
here = os.path.dirname(os.path.abspath(cap.mcp.__file__))
found = {}


def probe(name, action):
    try:
        found[name] = action()
    except Exception as e:
        found[name] = "%s: %s" % (type(e).__name__, e)


def reading(path):
    with open(path, "rb") as stream:
        return stream.read()[:0].decode() + "read"


def holding_the_marker(top):
    hits = []
    for where, _, files in os.walk(top):
        for name in files:
            path = os.path.join(where, name)
            try:
                with open(path, "rb") as stream:
                    if MARKER.encode() in stream.read() or name == "calendar.py":
                        hits.append(path)
            except OSError:
                pass
    return hits


probe("listed", lambda: sorted(os.listdir(here)))
probe("pkgutil", lambda: sorted(each.name for each in pkgutil.iter_modules(cap.mcp.__path__)))
for label, path in (("beside", os.path.join(here, "calendar.py")),
                    ("shared", os.path.join(SHARED, "cap", "mcp", "calendar.py"))):
    probe(label, lambda path=path: reading(path))
    for root in ("/proc/self/root", "/proc/1/root"):
        probe(label + " via " + root, lambda path=path, root=root: reading(root + path))
probe("walk /tmp", lambda: holding_the_marker("/tmp"))
probe("walk /proc/self/root/tmp", lambda: holding_the_marker("/proc/self/root/tmp"))
probe("import_module", lambda: importlib.import_module("cap.mcp.calendar").__name__)
probe("__import__", lambda: __import__("cap.mcp.calendar").__name__)
probe("find_spec", lambda: str(importlib.util.find_spec("cap.mcp.calendar")))
probe("exec", lambda: exec("from cap.mcp import calendar"))
probe("in sys.modules", lambda: sorted(name for name in sys.modules if name.startswith("cap.mcp.")))
probe("notes works", lambda: cap.mcp.notes.pid()["text"].isdigit())
print(json.dumps(found))
'''


class VisibilityCase(RunnerCase):
    PREFIX = "codemode-visible-"

    def open(self, servers: Optional[Dict[str, Spawn]] = None, **options: Any) -> CodeMode:
        """Two servers, unless a test names others: ``notes`` and ``calendar``."""
        both = {"notes": self.notes(), "calendar": CALENDAR}
        return super().open(both if servers is None else servers, **options)

    def run_program(self, code: CodeMode, source: str) -> RunResult:
        return code.run(textwrap.dedent(source))

    def printed(self, code: CodeMode, source: str) -> Dict[str, Any]:
        result = self.run_program(code, "SHARED = %r\n" % code.cap_dir + textwrap.dedent(source))
        self.assertEqual(result.exit_status, 0, result.stderr)
        found: Dict[str, Any] = json.loads(result.stdout)
        return found


class AJailedProgramSeesOnlyWhatItImports(VisibilityCase):
    def test_importing_notes_gives_no_way_to_the_calendars_module(self) -> None:
        code = self.open()
        shared = os.path.join(code.cap_dir, "cap", "mcp", "calendar.py")
        with open(shared) as stream:
            self.assertIn(MARKER, stream.read(), "the runner wrote it: there is one to find")
        found = self.printed(code, PROBES)
        self.assertEqual(found.pop("listed"), ["__init__.py", "notes.py"])
        self.assertEqual(found.pop("pkgutil"), ["notes"])
        self.assertEqual(found.pop("walk /tmp"), [])
        self.assertEqual(found.pop("walk /proc/self/root/tmp"), [])
        self.assertEqual(found.pop("in sys.modules"), ["cap.mcp.notes"])
        self.assertIs(found.pop("notes works"), True)
        self.assertTrue(found.pop("exec").startswith("ImportError: cannot import name"))
        for way in ("import_module", "__import__", "find_spec"):
            self.assertEqual(
                found.pop(way),
                "ModuleNotFoundError: " + _program_not_shown("cap.mcp.calendar"),
                way,
            )
        self.assertEqual(len(found), 6, found)
        for way, got in found.items():  # by its path, beside or shared, through /proc
            # (the jail's pid 1 is not dumpable: its /proc/1/root is not even to be tried)
            refusals = ("FileNotFoundError: ",) + (("PermissionError: ",) if "/1/" in way else ())
            self.assertTrue(got.startswith(refusals), (way, got))

    def test_importing_both_shows_both(self) -> None:
        code = self.open()
        result = self.run_program(
            code,
            """
            import os
            import cap.mcp.notes as n
            from cap.mcp import calendar
            print(sorted(os.listdir(os.path.dirname(calendar.__file__))))
            print(n.pid()["text"].isdigit(), calendar.say("hi") is not None)
            """,
        )
        self.assertEqual(result.exit_status, 0, result.stderr)
        self.assertEqual(
            result.stdout, "['__init__.py', 'calendar.py', 'notes.py']\nTrue True\n", result.stderr
        )

    def test_a_star_import_shows_every_module_and_binds_what_it_did(self) -> None:
        code = self.open()
        result = self.run_program(
            code,
            """
            import importlib, os
            from cap.mcp import *
            here = os.path.dirname(importlib.import_module("cap.mcp.calendar").__file__)
            notes = importlib.import_module("cap.mcp.notes")
            print(sorted(os.listdir(here)), notes.pid()["text"] > "")
            print(sorted(name for name in dir() if not name.startswith("_")))
            """,
        )
        self.assertEqual(result.exit_status, 0, result.stderr)
        self.assertEqual(
            result.stdout.splitlines(),
            [
                "['__init__.py', 'calendar.py', 'notes.py'] True",
                # cap.mcp's __all__, as before: its failures; the servers are imported by name
                "['CallFailed', 'CallRefused', 'ResultMismatch', 'ToolFailed', 'here', "
                "'importlib', 'notes', 'os']",
            ],
        )

    def test_an_import_anywhere_counts(self) -> None:
        code = self.open()
        result = self.run_program(
            code,
            """
            import importlib


            def never_called():
                try:
                    if False:
                        from cap.mcp.calendar import say
                except ImportError:
                    pass


            print(importlib.import_module("cap.mcp.calendar").__name__)
            importlib.import_module("cap.mcp.notes")
            """,
        )
        self.assertEqual(result.exit_status, 1)
        self.assertEqual(result.stdout, "cap.mcp.calendar\n", result.stderr)
        self.assertIn("ModuleNotFoundError: " + _program_not_shown("cap.mcp.notes"), result.stderr)
        self.assertIn("\nhint: `cap.mcp` has no `notes`; ", result.stderr)

    def test_a_dynamic_import_the_program_does_not_name_fails_with_the_rule(self) -> None:
        code = self.open()
        result = self.run_program(
            code,
            """
            import importlib
            name = "".join(["cal", "endar"])
            importlib.import_module("cap.mcp." + name)
            """,
        )
        self.assertEqual(result.exit_status, 1)
        self.assertIn(
            "ModuleNotFoundError: No module named 'cap.mcp.calendar': a program is shown only "
            "the cap.mcp modules it imports by name in its source (`import cap.mcp.calendar` "
            "or `from cap.mcp import calendar`, anywhere in it; `from cap.mcp import *` shows "
            "them all); a dynamic import finds no other\n",
            result.stderr,
        )
        self.assertIn(
            "hint: `cap.mcp` has no `calendar`; a program is shown only the servers' modules "
            "it imports by name (`import cap.mcp.calendar`); shown: none\n",
            result.stderr,
        )
        self.assertNotIn("codemode: ", result.stderr, "a dynamic name is not the runner's to see")

    def test_names_that_are_no_server_fail_as_before_and_the_runner_names_a_few(self) -> None:
        code = self.open()
        bogus = ["calendr"] + ["nothing%d" % number for number in range(MAX_UNKNOWN_NOTES + 1)]
        result = self.run_program(
            code,
            "import os, cap.mcp\nfrom cap.mcp import CallFailed, ToolFailed, __doc__\n"
            + "".join(
                "try:\n    import cap.mcp.%s\nexcept ImportError:\n    pass\n" % n for n in bogus
            )
            + "print(sorted(os.listdir(os.path.dirname(cap.mcp.__file__))))\n",
        )
        self.assertEqual(result.exit_status, 0, result.stderr)
        self.assertEqual(result.stdout, "['__init__.py']\n")
        notes = [line for line in result.stderr.splitlines() if line.startswith("codemode: ")]
        self.assertEqual(
            notes[0],
            "codemode: the program imports cap.mcp.calendr, which is no server's module; "
            "did you mean `calendar`?",
        )
        self.assertEqual(len(notes), MAX_UNKNOWN_NOTES + 1, notes)
        self.assertEqual(
            notes[-1], "codemode: and 2 more imports of cap.mcp names that are no server's"
        )

    def test_a_program_past_the_inline_parse_is_read_in_a_child_alike(self) -> None:
        code = self.open()
        padding = "# %s\n" % ("x" * 78) * (_imports.INLINE_BYTES // 80 + 1)
        with mock.patch.object(_imports, "parsed", side_effect=AssertionError("parsed here")):
            result = self.run_program(
                code,
                padding
                + "import os\nfrom cap.mcp import calendar\n"
                + "print(sorted(os.listdir(os.path.dirname(calendar.__file__))))\n",
            )
        self.assertEqual(result.exit_status, 0, result.stderr)
        self.assertEqual(result.stdout, "['__init__.py', 'calendar.py']\n")


class UnjailedTheRuleHoldsButNothingIsHidden(VisibilityCase):
    def test_the_import_fails_alike_and_the_shared_file_is_there(self) -> None:
        code = self.open(jail_program=False)
        found = self.printed(
            code,
            """
            import importlib, json, os
            import cap.mcp.notes
            try:
                importlib.import_module("cap.mcp.calendar")
                imported = True
            except ModuleNotFoundError:
                imported = False
            shared = os.path.join(SHARED, "cap", "mcp", "calendar.py")
            print(json.dumps({"imported": imported, "readable": os.path.isfile(shared)}))
            """,
        )
        # docs/security-program.md: unjailed, the runner's own directory is the program's
        # to read; only its package (what an import finds) is cut to what it names.
        self.assertEqual(found, {"imported": False, "readable": True})


class TheImportsOfAProgram(unittest.TestCase):
    def test_every_spelling_of_an_import_is_read(self) -> None:
        source = textwrap.dedent("""
            import os, cap.mcp.a
            import cap.mcp.b as y
            from cap.mcp import c, d as e
            from cap.mcp import (f,
                                 g)
            from cap.mcp.h import anything
            from cap.mcp.i.deeper import anything_else
            import cap.mcp.j.k
            import cap, cap.mcp, cap.internal.mcp
            from cap import mcp
            from cap.internal import mcp as seam
            from . import relative
            from .cap.mcp import z
            import capx.mcp.q, cap.mcpx.r
            import cap.mcp.ｌ

            def f():
                try:
                    import cap.mcp.m
                except ImportError:
                    from cap.mcp import n
            class K:
                if False:
                    from cap.mcp.o import p
            x = "\\d"
            importlib.import_module("cap.mcp.dynamic")
            """)
        expected = set("abcdfghijlmno")
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            self.assertEqual(_imports.imported(source), expected)
            self.assertEqual(warned, [], "the program's invalid escape is not the runner's")
            self.assertEqual(_imports.named(ast.parse(source)), expected)

    def test_a_star_import_is_star(self) -> None:
        self.assertEqual(_imports.imported("from cap.mcp import *\n"), {_imports.STAR})
        self.assertEqual(_imports.imported("from cap import *\n"), set())

    def test_a_program_that_does_not_parse_names_nothing(self) -> None:
        for source in ("import cap.mcp.a\nx = (", "(" * 10000, "import cap.mcp.a\n\ud800\n"):
            self.assertEqual(_imports.imported(source), set(), source[:20])

    def test_a_large_program_is_parsed_in_a_bounded_child_alike(self) -> None:
        source = "import cap.mcp.a\n" + "# pad\n" * (_imports.INLINE_BYTES // 6 + 1)
        source += "from cap.mcp import b\nx = '\\d'\n"
        self.assertGreater(len(source), _imports.INLINE_BYTES)
        with mock.patch.object(_imports, "parsed", side_effect=AssertionError("parsed here")):
            self.assertEqual(_imports.imported(source), {"a", "b"})
        self.assertEqual(_imports.imported(source + "x = (\n"), set())

    def test_a_runs_package_is_links_to_the_one_written(self) -> None:
        top = tempfile.mkdtemp(prefix="cap-")
        self.addCleanup(shutil.rmtree, top, True)
        self.assertEqual(set(_program.cap_files([])), set(_program.RUNTIME_FILES))
        for path in _program.RUNTIME_FILES + ("cap/mcp/a.py", "cap/mcp/b.py"):
            os.makedirs(os.path.dirname(os.path.join(top, "lib", path)), exist_ok=True)
            with open(os.path.join(top, "lib", path), "w") as out:
                out.write("# %s\n" % path)
        run = _program.show_cap(os.path.join(top, "lib"), os.path.join(top, "run"), ["b"])
        self.assertEqual(
            sorted(os.listdir(os.path.join(run, "cap", "mcp"))), ["__init__.py", "b.py"]
        )
        for path in _program.RUNTIME_FILES + ("cap/mcp/b.py",):
            self.assertTrue(
                os.path.samefile(os.path.join(top, "lib", path), os.path.join(run, path)), path
            )


def _program_not_shown(name: str) -> str:
    short = name.rsplit(".", 1)[-1]
    return _program_text_not_shown() % (name, short, short)


def _program_text_not_shown() -> str:
    """NOT_SHOWN as the runtime holds it (the runtime is text: read it from there)."""
    found = ast.parse(_program.RUNTIME)
    for node in found.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "NOT_SHOWN":
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError("NOT_SHOWN is not in the runtime")


if __name__ == "__main__":
    unittest.main()
