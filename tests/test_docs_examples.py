"""The examples of README.md and docs/*.md, run as they are written.

A fenced block is marked by an HTML comment on the line before it (blank lines
between are allowed); CLAUDE.md documents the convention:

* ``<!-- example: run -->`` before a ``python`` block: the block is a program,
  run in the document's directory; it must exit 0. Before a ``sh``/``console``
  block: each ``$ `` line (``\\`` continues it) is run by ``bash`` in that
  directory, and the lines after it, up to the next ``$ ``, are its output
  (stdout and stderr). It must exit 0, or N when the line ends ``# exit N``.
* ``<!-- example: output -->`` before a block: the stdout of the ``run`` python
  block just before it.
* ``<!-- example: file NAME -->`` before a block: its text is written to NAME
  in the document's directory (a config file, a program), for the examples after.
* ``<!-- example: skip, REASON -->``: not run, for the reason given.

Every ``python`` block is marked ``run`` or ``skip`` with a reason. In expected
output, a line ``...`` stands for any lines (none included), and ``...`` inside
a line for any text. ``run needs=bwrap`` skips the example where that command is
missing, saying so. Each document's examples run in order, in one temporary
directory of their own, against the real servers the test extra installs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from dataclasses import dataclass
from typing import List, Optional, Tuple

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE_TIMEOUT = 300
MARK = re.compile(r"^\s*<!-- example: (run|output|file|skip)\b(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)```\s*([\w-]*)\s*$")  # indented too: a block in a list item


@dataclass(frozen=True)
class Block:
    """A fenced block: where it starts, its language, its text, and its mark."""

    line: int
    lang: str
    text: str
    mark: Optional[str]  # run, output, file, skip; None when unmarked
    argument: str  # what follows the mark: a file's name, a skip's reason, needs=...


def blocks(markdown: str) -> List[Block]:
    """Every fenced block of ``markdown``, with the mark just before it."""
    found: List[Block] = []
    lines = markdown.split("\n")
    mark: Optional[Tuple[str, str]] = None
    index = 0
    while index < len(lines):
        line = lines[index]
        marked, fence = MARK.match(line), FENCE.match(line)
        if marked:
            mark = (marked.group(1), marked.group(2).strip(" ,"))
        elif fence:
            end = index + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            indent = len(fence.group(1))
            text = "\n".join(line[indent:] for line in lines[index + 1 : end]) + "\n"
            kind, argument = mark if mark else (None, "")
            found.append(Block(index + 1, fence.group(2), text, kind, argument))
            mark, index = None, end
        elif line.strip():
            mark = None  # a mark holds only for the block right after it
        index += 1
    return found


def pattern(expected: str) -> "re.Pattern[str]":
    """``expected`` as a regular expression: ``...`` lines and spans are wildcards."""
    parts = []
    for line in expected.rstrip("\n").split("\n"):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            spans = [re.escape(span) for span in line.rstrip().split("...")]
            parts.append("[^\n]*".join(spans) + r"[ \t]*\n")
    return re.compile("".join(parts))


def matches(expected: str, actual: str) -> bool:
    if not expected.strip():
        return not actual.strip()
    lines = [line.rstrip() for line in actual.rstrip("\n").split("\n")] if actual else []
    return pattern(expected).fullmatch("".join(line + "\n" for line in lines)) is not None


def commands(text: str) -> List[Tuple[str, str, int]]:
    """A shell block's ``$ `` commands: (command, expected output, exit status)."""
    found: List[Tuple[str, List[str], int]] = []
    lines = text.rstrip("\n").split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and index + 1 < len(lines):
                index += 1
                command = command[:-1] + " " + lines[index].strip()
            status = re.search(r"#\s*exit (\d+)\s*$", command)
            found.append((command, [], int(status.group(1)) if status else 0))
        elif found:
            found[-1][1].append(line)
        index += 1
    return [(command, "\n".join(out) + "\n" if out else "", code) for command, out, code in found]


#: A directory holding this checkout's ``mcp-client``, first on the examples' PATH.
SHIMS = tempfile.mkdtemp(prefix="mcp-docs-bin-")
SHIM = """#!%s
import sys
sys.path.insert(0, %r)
from mcp_client.cli import main
sys.exit(main())
"""


def setUpModule() -> None:
    # The console script the install makes, but for this checkout: a server an example
    # starts gets a minimal environment (no PYTHONPATH), and must still run this code.
    path = os.path.join(SHIMS, "mcp-client")
    with open(path, "w", encoding="utf-8") as script:
        script.write(SHIM % (sys.executable, REPO))
    os.chmod(path, 0o755)


def tearDownModule() -> None:
    shutil.rmtree(SHIMS, ignore_errors=True)


def environment() -> dict:
    """This checkout's mcp-client, then this interpreter, first on PATH; this checkout
    importable."""
    env = dict(os.environ)
    first = [SHIMS, os.path.dirname(sys.executable)]
    env["PATH"] = os.pathsep.join(first + [env.get("PATH", "")])
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def documents() -> List[str]:
    docs = os.path.join(REPO, "docs")
    names = sorted(name for name in os.listdir(docs) if name.endswith(".md"))
    return ["README.md"] + [os.path.join("docs", name) for name in names]


class MarkingCase(unittest.TestCase):
    def read(self, document: str) -> List[Block]:
        with open(os.path.join(REPO, document), encoding="utf-8") as source:
            return blocks(source.read())


class Marking(MarkingCase):
    def test_every_python_block_is_run_or_skipped_with_a_reason(self) -> None:
        for document in documents():
            for block in self.read(document):
                if block.lang != "python":
                    continue
                with self.subTest(document=document, line=block.line):
                    self.assertIn(block.mark, ("run", "skip", "file"))
                    if block.mark == "skip":
                        self.assertTrue(block.argument, "a skip names its reason")

    def test_an_output_block_follows_a_program(self) -> None:
        for document in documents():
            found = self.read(document)
            for before, block in zip([None] + found[:-1], found):
                if block.mark == "output":
                    with self.subTest(document=document, line=block.line):
                        self.assertIsNotNone(before)
                        assert before is not None
                        self.assertEqual((before.mark, before.lang), ("run", "python"))

    def test_the_parser_and_the_wildcards(self) -> None:
        text = (
            "<!-- example: run -->\n```python\nprint(1)\n```\n\n"
            "<!-- example: output -->\n\n```\n1\n```\nprose\n```python\nx\n```\n"
        )
        found = blocks(text + "- item\n\n  ```python\n  y = 1\n  ```\n")
        self.assertEqual(found[-1].text, "y = 1\n")
        found = found[:-1]
        self.assertEqual(
            [(b.mark, b.lang) for b in found],
            [("run", "python"), ("output", "")] + [(None, "python")],
        )
        self.assertTrue(matches("a\n...\nz ... end\n", "a\nb\nc\nz middle end\n"))
        self.assertTrue(matches("a\n...\n", "a\n"))
        self.assertTrue(matches("", ""))
        self.assertFalse(matches("", "something\n"))
        self.assertFalse(matches("a\nb\n", "a\nc\n"))
        self.assertEqual(
            commands("$ echo a \\\n  b  # exit 3\na b\n"), [("echo a  b  # exit 3", "a b\n", 3)]
        )


#: What a user's documentation does not name: the project's issues and commits.
HISTORY = re.compile(r"\bissues? #?\d+|(?<![\w/-])#\d{2,}\b|\bcommit [0-9a-f]{7,}")
COMMIT = re.compile(r"(?<![\w./-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])")


class TheTwoCommands(unittest.TestCase):
    def test_ci_runs_the_readme_s_test_command_verbatim(self) -> None:
        def command_in(path: str, start: str) -> List[str]:
            with open(os.path.join(REPO, path), encoding="utf-8") as source:
                return [line for line in source.read().split("\n") if line.startswith(start)]

        start = "{ command -v bwrap"
        readme, ci = command_in("README.md", start), command_in(".ci/run", start)
        self.assertEqual(len(readme), 1)
        self.assertEqual(readme, ci)

    def test_the_main_job_is_the_demo_server(self) -> None:
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as source:
            self.assertIn("python -m pip install -e . && python -m mcp_client\n", source.read())

    def test_the_library_in_ten_lines_passes_mypy_strict(self) -> None:
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as source:
            readme = source.read()
        section = readme[readme.index("## The library in ten lines") :]
        program = next(b for b in blocks(section) if b.lang == "python" and b.mark == "run")
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "example.py")
            with open(path, "w", encoding="utf-8") as out:
                out.write(program.text)
            done = subprocess.run(
                [sys.executable, "-m", "mypy", "--strict", "--config-file=", "--no-incremental",
                 "--cache-dir", os.devnull, path],
                capture_output=True, text=True, cwd=REPO, timeout=EXAMPLE_TIMEOUT,
            )  # fmt: skip
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)


class NoHistory(unittest.TestCase):
    def test_no_document_names_an_issue_or_a_commit(self) -> None:
        for document in documents():
            with open(os.path.join(REPO, document), encoding="utf-8") as source:
                text = source.read()
            with self.subTest(document=document):
                self.assertEqual(HISTORY.findall(text), [])
                self.assertEqual(COMMIT.findall(text), [])

    def test_the_patterns_find_what_they_are_for(self) -> None:
        for text in ("since issue 19", "FastMCP #3077", "(main, 32cd445)"):
            with self.subTest(text=text):
                self.assertTrue(HISTORY.search(text) or COMMIT.search(text))
        for text in ("cap.mcp.mcp_time_d2a7aa6c", "2025-06-18", "a 16 MiB line", "[#top]"):
            with self.subTest(text=text):
                self.assertIsNone(HISTORY.search(text) or COMMIT.search(text))


class Examples(MarkingCase):
    """One test a document: its examples in order, in a directory of their own."""

    def run_document(self, document: str) -> None:
        if sys.version_info < (3, 10):
            self.skipTest("the examples' servers from PyPI need Python 3.10+")
        with tempfile.TemporaryDirectory(prefix="mcp-docs-") as directory:
            found = self.read(document)
            for index, block in enumerate(found):
                after = found[index + 1] if index + 1 < len(found) else None
                with self.subTest(document=document, line=block.line):
                    self.run_block(block, after, directory)

    def run_block(self, block: Block, after: Optional[Block], directory: str) -> None:
        if block.mark == "file":
            with open(os.path.join(directory, block.argument), "w", encoding="utf-8") as out:
                out.write(block.text)
            return
        if block.mark != "run":
            return
        need = re.search(r"needs=(\S+)", block.argument)
        if need and shutil.which(need.group(1)) is None:
            self.skipTest("needs %s, which this machine lacks" % need.group(1))
        if block.lang == "python":
            expected = after.text if after is not None and after.mark == "output" else None
            self.run_program(block, directory, expected)
        else:
            for command, expected, status in commands(block.text):
                self.run_command(command, expected, status, directory)

    def run_program(self, block: Block, directory: str, expected: Optional[str]) -> None:
        path = os.path.join(directory, "example_%d.py" % block.line)
        with open(path, "w", encoding="utf-8") as out:
            out.write(block.text)
        done = subprocess.run(
            [sys.executable, path],
            cwd=directory,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=EXAMPLE_TIMEOUT,
        )
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        if expected is not None:
            self.assertTrue(matches(expected, done.stdout), "got:\n" + done.stdout)

    def run_command(self, command: str, expected: str, status: int, directory: str) -> None:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=directory,
            env=environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=EXAMPLE_TIMEOUT,
        )
        self.assertEqual(done.returncode, status, "$ %s\n%s" % (command, done.stdout))
        self.assertTrue(matches(expected, done.stdout), "$ %s\ngot:\n%s" % (command, done.stdout))


#: The documents whose examples take seconds (servers started, jails, mypy): the slow tier.
SLOW_DOCUMENTS = {
    "README.md",
    "docs/api.md",
    "docs/codemode.md",
    "docs/jail.md",
    "docs/reliability.md",
    "docs/surface.md",
}


def _add_document_tests() -> None:
    for document in documents():
        name = "test_" + re.sub(r"\W", "_", os.path.basename(document)[: -len(".md")].lower())

        def test(self: Examples, document: str = document) -> None:
            self.run_document(document)

        test.__name__ = test.__qualname__ = name
        # A mark applies to a named function (pytest takes a lambda for the mark's argument).
        setattr(Examples, name, pytest.mark.slow(test) if document in SLOW_DOCUMENTS else test)


_add_document_tests()

if __name__ == "__main__":
    unittest.main()
