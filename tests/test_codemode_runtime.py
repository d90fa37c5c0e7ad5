"""Code mode's runtime, ``cap/internal/mcp.py`` in every program's package: a module of
the package (``mcp_client/codemode/runtime_script.py``, linted and type-checked with the
rest) that the package never imports and ships as text (``_program.RUNTIME``).

What holds it to the runner: the text shipped is the file's, whole; the failure kinds of
the pipe protocol are one table in two places (``FAILURE_KINDS`` on the runner's side,
``FAILURES`` in the runtime); and the runtime stands alone, importing nothing of the
package (the program has no ``mcp_client`` to import). That no module of the package
imports it is ``test_layers``'s rule for every ``*_script`` module.
"""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
import unittest
from typing import Dict, List

from mcp_client.codemode import _program

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(_program.__file__)), "runtime_script.py")


def _tree() -> ast.Module:
    with open(SCRIPT, encoding="utf-8") as source:
        return ast.parse(source.read(), SCRIPT)


class TheRuntime(unittest.TestCase):
    def test_the_text_shipped_is_the_file_whole(self) -> None:
        with open(SCRIPT, encoding="utf-8") as source:
            self.assertEqual(_program.RUNTIME, source.read())
        self.assertEqual(_program.cap_files([])["cap/internal/mcp.py"], _program.RUNTIME)

    def test_a_written_package_holds_it(self) -> None:
        top = tempfile.mkdtemp(prefix="cap-")
        self.addCleanup(shutil.rmtree, top, True)
        _program.write_cap(top, [])
        with open(os.path.join(top, "cap", "internal", "mcp.py"), encoding="utf-8") as written:
            self.assertEqual(written.read(), _program.RUNTIME)

    def test_its_failures_are_the_runners_failure_kinds(self) -> None:
        tables = [
            node.value
            for node in _tree().body
            if isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "FAILURES"
        ]
        self.assertEqual(len(tables), 1, "FAILURES is not in the runtime")
        table = tables[0]
        assert isinstance(table, ast.Dict)
        kinds: Dict[str, str] = {}
        for key, value in zip(table.keys, table.values):
            assert isinstance(key, ast.Constant) and isinstance(value, ast.Name)
            kinds[str(key.value)] = value.id
        self.assertEqual(kinds, _program.FAILURE_KINDS)

    def test_it_imports_only_the_standard_library(self) -> None:
        found: List[str] = []
        for node in ast.walk(_tree()):
            if isinstance(node, ast.ImportFrom):
                found.append("." * node.level + (node.module or ""))
            elif isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
        self.assertIn("json", found)  # the walk reads the real imports
        ours = [name for name in found if name.startswith((".", "mcp_client", "cap"))]
        self.assertEqual(ours, [])


if __name__ == "__main__":
    unittest.main()
