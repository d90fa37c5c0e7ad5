"""What the code-mode library tests share: a temporary directory per test, and a
``CodeMode`` over named spawns in it that the test's cleanup closes."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from typing import Any, Dict

from mcp_client.codemode import CodeMode
from mcp_client.config import ConfiguredServer
from mcp_client.transport import Spawn

from support import server


def compile_message(source: str) -> str:
    """What this interpreter's ``compile()`` says of ``source`` as a check's line: 3.10
    words an unclosed bracket ``'(' was never closed``, 3.9 ``unexpected EOF while
    parsing``, each at its own line."""
    try:
        compile(source, "program.py", "exec")
    except SyntaxError as e:
        return "line %s: %s" % (e.lineno or 0, e.msg)
    raise AssertionError("%r compiles" % source)


class RunnerCase(unittest.TestCase):
    #: The temporary directory's prefix, so that a leftover names its suite.
    PREFIX = "codemode-"
    #: ``jail_program`` unless a test asks otherwise: suites whose attacks are on the
    #: runner, not on the jail, run their programs unjailed (faster, and on any machine).
    JAIL_PROGRAM = True

    def setUp(self) -> None:
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix=self.PREFIX))
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, *names: str) -> str:
        return os.path.join(self.dir, *names)

    def open(self, servers: Dict[str, Spawn], **options: Any) -> CodeMode:
        options.setdefault("jail_program", self.JAIL_PROGRAM)
        code = CodeMode.open(
            [ConfiguredServer(name, spawn) for name, spawn in servers.items()], **options
        )
        self.addCleanup(code.close)
        return code

    def notes(self) -> Spawn:
        """The suite's scripted notes server, its logs in this test's directory."""
        return server("codemode_tools", self.dir)
