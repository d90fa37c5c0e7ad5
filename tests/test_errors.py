"""The error hierarchy: the drawing in ``errors.py``'s docstring is the class tree.

The tree is derived from the classes (each error's one ``McpClientError`` base;
mixins are not drawn) and the drawing is parsed, so neither can drift from the
other again: ``ChannelError`` was once drawn under ``RetirementError``.
"""

from __future__ import annotations

import ast
import pickle
import re
import unittest
from pathlib import Path
from typing import Dict, List, Tuple, Type

import mcp_client
from mcp_client import _version, errors, protocol
from mcp_client.errors import (
    BadMessage,
    ChannelError,
    ClientBroken,
    CorruptionReport,
    Fault,
    ForeignVersionFault,
    LineTooLong,
    McpClientError,
    StartError,
    ToolsNotDeclared,
    TransportFailed,
    Unavailable,
    VersionUnsupported,
    WriteFailed,
)

Edge = Tuple[str, str]
#: A drawn line: its depth (the root's children are 1), its connector prefix,
#: and how many of the prefix's 4-column slots are connectors.
Row = Tuple[int, str, int]

#: ``+-- Name, Name   description``, after any ``|   `` / ``    `` indentation.
_ENTRY = re.compile(r"^((?:[| ]   )*)\+-- (.*)$")


def drawn(doc: str) -> Tuple[str, List[Edge], List[Row]]:
    """The root, every (parent, child) the docstring's diagram draws, its rows."""
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    lines = [line[4:] for line in block.splitlines()]
    stack = [lines[0].strip()]  # stack[d]: the last class drawn at depth d
    edges: List[Edge] = []
    rows: List[Row] = []
    depth, continued = 0, False
    for line in lines[1:]:
        entry = _ENTRY.match(line)
        if entry is not None:
            depth, text = len(entry.group(1)) // 4 + 1, entry.group(2)
            rows.append((depth, entry.group(1), depth - 1))
        elif continued:  # a sibling list cut after a comma goes on here
            text = line.lstrip("| ")
            rows.append((depth, line[: 4 * depth], depth))
        else:
            raise AssertionError("not a diagram line: %r" % line)
        names = re.split(r"\s{2,}", text.strip())[0]  # the description is cut off
        continued = names.endswith(",")
        del stack[depth:]
        for child in (n.strip() for n in names.split(",") if n.strip()):
            edges.append((stack[depth - 1], child))
        stack.append(edges[-1][1])
    return stack[0], edges, rows


def later_sibling(rows: List[Row], index: int, depth: int) -> bool:
    """Whether an entry at ``depth`` follows row ``index`` under the same parent."""
    for later, _, slots in rows[index + 1 :]:
        if later < depth:
            return False
        if later == depth and slots == depth - 1:  # an entry, not a continuation
            return True
    return False


def class_tree() -> Dict[str, List[str]]:
    """Each error class in ``errors`` by name, with its ``McpClientError`` bases."""
    tree: Dict[str, List[str]] = {}
    for name, value in vars(errors).items():
        if (
            isinstance(value, type)
            and issubclass(value, McpClientError)
            and name == value.__name__
            and not name.startswith("_")
        ):
            tree[name] = [b.__name__ for b in value.__bases__ if issubclass(b, McpClientError)]
    return tree


class Diagram(unittest.TestCase):
    def setUp(self) -> None:
        assert errors.__doc__ is not None
        self.root, self.edges, self.rows = drawn(errors.__doc__)
        self.tree = class_tree()

    def test_the_root_is_drawn_at_the_top(self) -> None:
        self.assertEqual(self.root, "McpClientError")
        self.assertEqual(self.tree["McpClientError"], [])

    def test_each_class_has_one_error_base(self) -> None:
        # A tree, not a lattice: mixins (StderrTail, _Reason) are not errors.
        for name, parents in self.tree.items():
            if name != "McpClientError":
                self.assertEqual(len(parents), 1, name)

    def test_each_drawn_edge_is_a_real_one(self) -> None:
        for parent, child in self.edges:
            with self.subTest(child=child):
                self.assertTrue(child.isidentifier(), child)
                self.assertIn(child, self.tree, "drawn but not defined")
                self.assertEqual(self.tree[child], [parent])

    def test_connectors_run_exactly_to_the_last_sibling(self) -> None:
        # A "|" under a class that has no later sibling, or none under one
        # that has, draws the next entry under the wrong parent.
        for index, (_, prefix, slots) in enumerate(self.rows):
            for level in range(1, slots + 1):
                expected = "|   " if later_sibling(self.rows, index, level) else "    "
                self.assertEqual(
                    prefix[4 * (level - 1) : 4 * level],
                    expected,
                    "row %d, level %d" % (index + 1, level),
                )

    def test_each_class_is_drawn_once(self) -> None:
        children = [child for _, child in self.edges]
        self.assertEqual(len(children), len(set(children)))
        self.assertEqual(sorted(children + [self.root]), sorted(self.tree))


class ErrorsImportedFromOnePlace(unittest.TestCase):
    """Every test takes its errors from ``mcp_client.errors``: one name, one place,
    whichever module re-exports it (``from mcp_client import Unavailable`` too)."""

    def test_imports(self) -> None:
        names = set(class_tree()) | set(errors.DEPRECATED)
        tests = Path(__file__).parent
        strays = []
        for path in sorted(tests.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.module is not None
                    and node.module.split(".")[0] == "mcp_client"
                    and node.module != "mcp_client.errors"
                ):
                    strays += [
                        "%s:%d: from %s import %s"
                        % (path.relative_to(tests), node.lineno, node.module, alias.name)
                        for alias in node.names
                        if alias.name in names
                    ]
        self.assertEqual(strays, [])


class Reason(unittest.TestCase):
    """Four bases share one ``reason`` constructor; what it gives is unchanged."""

    BASES: Tuple[Type[McpClientError], ...] = (Fault, Unavailable, StartError, ChannelError)
    LEAVES: Tuple[Type[McpClientError], ...] = (
        CorruptionReport,
        BadMessage,
        LineTooLong,
        ClientBroken,
        TransportFailed,
        ToolsNotDeclared,
        WriteFailed,
    )

    def test_constructed_from_a_reason(self) -> None:
        for cls in self.BASES + self.LEAVES:
            with self.subTest(cls=cls.__name__):
                error = cls("because")
                self.assertEqual((str(error), error.args), ("because", ("because",)))
                self.assertEqual(getattr(error, "reason"), "because")

    def test_pickles(self) -> None:
        for cls in self.BASES + self.LEAVES:
            with self.subTest(cls=cls.__name__):
                error = pickle.loads(pickle.dumps(cls("because")))
                self.assertIs(type(error), cls)
                self.assertEqual(getattr(error, "reason"), "because")

    def test_defined_once(self) -> None:
        for cls in self.BASES:
            self.assertNotIn("__init__", vars(cls), cls.__name__)


class VersionNames(unittest.TestCase):
    """The fault and the start error are no longer each other's anagram."""

    def test_not_anagrams(self) -> None:
        self.assertNotEqual(sorted("ForeignVersionFault"), sorted("VersionUnsupported"))

    def test_start_error_carries_the_fault(self) -> None:
        fault = ForeignVersionFault("1999-01-01", ("2025-06-18",))
        error = VersionUnsupported(fault)
        self.assertEqual(
            (error.server_version, error.supported, error.reason),
            ("1999-01-01", ("2025-06-18",), fault.reason),
        )

    def test_old_name_still_works_and_warns(self) -> None:
        for module in (errors, protocol):
            with self.subTest(module=module.__name__):
                with self.assertWarnsRegex(DeprecationWarning, "use ForeignVersionFault"):
                    old = getattr(module, "UnsupportedVersion")
                self.assertIs(old, ForeignVersionFault)

    def test_other_missing_names_are_still_missing(self) -> None:
        for module in (errors, protocol):
            with self.assertRaises(AttributeError):
                getattr(module, "NoSuchError")


class VersionModule(unittest.TestCase):
    def test_the_package_reexports_it(self) -> None:
        self.assertEqual(mcp_client.__version__, _version.__version__)

    def test_no_module_imports_from_the_half_loaded_package(self) -> None:
        # ``from . import X`` inside the package must name a submodule: any
        # other name is read from ``__init__`` while it is still being run.
        package = Path(mcp_client.__file__).parent
        submodules = {p.stem for p in package.glob("*.py")} | {
            p.parent.name for p in package.glob("*/__init__.py")
        }
        for path in sorted(package.glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
                    for alias in node.names:
                        self.assertIn(alias.name, submodules, "%s: %s" % (path.name, alias.name))


if __name__ == "__main__":
    unittest.main()
