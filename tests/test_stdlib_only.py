"""The runtime needs the standard library only.

A fresh interpreter started with ``-I -S`` (isolated: no user site, no
PYTHON* variables, no current directory on the path; and no ``site``, so no
third-party package is importable at all) imports ``mcp_client`` and every
``mcp_client.*`` module it can find. The module list is discovered, not
written down, so modules added later are covered without touching this file.
A ``__main__`` module is not executed; its imports are read from its syntax
tree instead.

Two verdicts, kept apart so that a failure says which one broke:
- every module imports under ``-S`` (a third-party import cannot succeed there);
- nothing outside ``sys.stdlib_module_names`` ends up in ``sys.modules``
  (Python 3.10+, where that list exists).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest
from typing import Any, Dict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODEC_MODULES = {
    "mcp_client.errors",
    "mcp_client.jsonvalue",
    "mcp_client.jsonrpc",
    "mcp_client.protocol",
    "mcp_client.stdio",
}

CHILD = r"""
import ast, importlib, json, pkgutil, sys
sys.path.insert(0, sys.argv[1])
report = {"imported": [], "failed": {}, "main_imports": {}}

def main_imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return sorted(names)

def visit(package):
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.name.endswith(".__main__"):
            spec = info.module_finder.find_spec(info.name)
            report["main_imports"][info.name] = main_imports(spec.origin)
            continue
        try:
            module = importlib.import_module(info.name)
        except BaseException as error:
            report["failed"][info.name] = "%s: %s" % (type(error).__name__, error)
            continue
        report["imported"].append(info.name)
        if info.ispkg:
            visit(module)

try:
    import mcp_client
except BaseException as error:
    report["failed"]["mcp_client"] = "%s: %s" % (type(error).__name__, error)
else:
    report["imported"].append("mcp_client")
    visit(mcp_client)
report["modules"] = sorted(sys.modules)
report["stdlib"] = sorted(getattr(sys, "stdlib_module_names", []))
report["builtin"] = sorted(sys.builtin_module_names)
print(json.dumps(report))
"""


def run_child() -> Dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", CHILD, REPO],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    if done.returncode != 0:
        raise AssertionError("child failed (%d): %s" % (done.returncode, done.stderr[-2000:]))
    report: Dict[str, Any] = json.loads(done.stdout)
    return report


class StdlibOnly(unittest.TestCase):
    report: Dict[str, Any]

    @classmethod
    def setUpClass(cls) -> None:
        cls.report = run_child()

    def test_discovery_found_the_package(self) -> None:
        # Guards the two checks below against passing over an empty list.
        imported = set(self.report["imported"]) | set(self.report["failed"])
        self.assertIn("mcp_client", imported)
        self.assertLessEqual(CODEC_MODULES, imported)

    def test_every_module_imports_without_site_packages(self) -> None:
        self.assertEqual(
            self.report["failed"],
            {},
            "modules that do not import under python -I -S (a third-party "
            "import, or a module that is broken)",
        )

    def test_only_stdlib_modules_are_loaded(self) -> None:
        if not self.report["stdlib"]:
            self.skipTest(
                "sys.stdlib_module_names needs Python 3.10+; imports were "
                "still checked under -S by the test above"
            )
        allowed = (
            set(self.report["stdlib"]) | set(self.report["builtin"]) | {"__main__", "mcp_client"}
        )
        foreign = sorted(
            name for name in self.report["modules"] if name.split(".")[0] not in allowed
        )
        for module, names in self.report["main_imports"].items():
            foreign.extend(
                "%s (imported by %s)" % (name, module) for name in names if name not in allowed
            )
        self.assertEqual(foreign, [])


if __name__ == "__main__":
    unittest.main()
