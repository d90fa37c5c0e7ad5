"""The docstrings are the API reference: every public name has one, and the
manual ``python -m pydoc mcp_client`` prints names neither a private module
nor the project's history."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import pydoc
import re
import subprocess
import sys
import unittest
from types import ModuleType
from typing import Any, Iterator, List, Tuple

import mcp_client
from mcp_client import errors

SCRIPTS = ("jail_init", "lifeline")


def public_modules() -> List[ModuleType]:
    """The package and every module of it whose name has no leading underscore."""
    names = [info.name for info in pkgutil.iter_modules(mcp_client.__path__)]
    # Scripts read as text and run in a child, never imported: the jail's pid 1, and
    # an unjailed server's lifeline.
    public = [
        "mcp_client." + name for name in names if not name.startswith("_") and name not in SCRIPTS
    ]
    return [mcp_client] + [importlib.import_module(name) for name in sorted(public)]


def exported(module: ModuleType) -> Iterator[Tuple[str, Any]]:
    """``module``'s public names: its ``__all__``, or (errors) what it defines."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_") and defined(v, module)]
    for name in names:
        yield name, getattr(module, name)


def defined(value: Any, module: ModuleType) -> bool:
    documentable = inspect.isclass(value) or inspect.isfunction(value)
    return documentable and getattr(value, "__module__", None) == module.__name__


def own_doc(value: Any) -> str:
    """The docstring written for ``value``, not one a dataclass or Enum made up."""
    doc = inspect.getdoc(value) or ""
    if inspect.isclass(value):
        generated = doc.startswith(value.__name__ + "(") or doc == "An enumeration."
        return "" if generated or value.__doc__ is None else doc
    return doc


def methods(cls: type) -> Iterator[Tuple[str, Any]]:
    """The public methods and properties a class defines itself."""
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            yield name, member
        elif isinstance(member, (classmethod, staticmethod)):
            yield name, member.__func__
        elif inspect.isfunction(member):
            yield name, member


class PublicNames(unittest.TestCase):
    def test_every_module_has_a_docstring(self) -> None:
        for module in public_modules():
            with self.subTest(module=module.__name__):
                self.assertTrue((module.__doc__ or "").strip())

    def test_every_public_class_and_function_has_one(self) -> None:
        missing = []
        for module in public_modules():
            for name, value in exported(module):
                if inspect.ismodule(value) or not (inspect.isclass(value) or callable(value)):
                    continue  # constants and type aliases: the module's text names them
                if inspect.isclass(value) or inspect.isfunction(value):
                    if not own_doc(value).strip():
                        missing.append("%s.%s" % (module.__name__, name))
        self.assertEqual(missing, [])

    def test_every_public_method_has_one(self) -> None:
        missing = []
        for module in public_modules():
            for name, value in exported(module):
                if not inspect.isclass(value):
                    continue
                for method, member in methods(value):
                    doc = inspect.getdoc(getattr(value, method, member)) or ""
                    if not doc.strip():
                        missing.append("%s.%s.%s" % (module.__name__, name, method))
        self.assertEqual(missing, [])

    def test_the_check_sees_a_missing_docstring(self) -> None:
        def undocumented() -> None:
            pass

        self.assertEqual(own_doc(undocumented), "")
        self.assertTrue(own_doc(errors.McpClientError))


#: What a user's manual must not name: the project's issues, its private parts.
HISTORY = re.compile(r"\bissues? \d+|\bissue #?\d+|#\d{2,}\b|_core\b")


class TheManual(unittest.TestCase):
    def pydoc(self, module: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "pydoc", module],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_pydoc_mcp_client_names_no_issue_and_no_private_module(self) -> None:
        text = self.pydoc("mcp_client")
        self.assertIn("CallToolResult", text)  # the check reads the real manual
        # pydoc lists every module of the package, private ones too; that list
        # is the one place a private name may appear.
        body = re.sub(r"PACKAGE CONTENTS\n(?:    .*\n)+", "", text)
        self.assertEqual(HISTORY.findall(body), [])

    def test_no_public_module_s_manual_names_an_issue_or_a_private_module(self) -> None:
        for module in public_modules():
            with self.subTest(module=module.__name__):
                text = pydoc.plain(pydoc.render_doc(module))
                body = re.sub(r"PACKAGE CONTENTS\n(?:    .*\n)+", "", text)
                self.assertEqual(HISTORY.findall(body), [])

    def test_the_pattern_finds_what_it_is_for(self) -> None:
        for text in ("since issue 18", "issues 6", "see #123", "mcp_client._core._state"):
            with self.subTest(text=text):
                self.assertTrue(HISTORY.search(text))
        self.assertIsNone(HISTORY.search("a core dump, 256 levels, RFC 7159"))


if __name__ == "__main__":
    unittest.main()
