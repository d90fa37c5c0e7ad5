"""The package's layers: no module imports a module of a layer above its own.

From the bottom: the base (the exceptions, the frozen values, server text made safe),
the pure codecs, the operating system (threads, files, processes), the generator, the
jail, the transport, the client (its engine in ``_core``, which nothing else imports),
the config reader, replay, code mode, and the commands on top. ``mcp_client/__init__``
is the face: it names everything, and loads each name on first use.

Every import counts, a function's own included (a lazy import is still a dependency);
only those under ``if TYPE_CHECKING:`` are left out (the type checker's alone). Each
module's imports are read from its syntax tree, so the check needs nothing imported.
"""

from __future__ import annotations

import ast
import os
import unittest
from typing import Dict, Iterator, List, Set, Tuple

import mcp_client

PACKAGE = os.path.dirname(os.path.abspath(mcp_client.__file__))

#: Each layer's units (the first name under ``mcp_client``), from the bottom.
LAYERS: Tuple[Tuple[str, ...], ...] = (
    ("_version", "_frozen", "_lazy", "text", "errors"),
    ("jsonvalue", "jsonrpc", "protocol", "stdio"),
    ("_os",),
    ("codegen",),
    ("jail",),
    ("transport",),
    ("capture", "_core", "client"),
    ("config",),
    ("replay",),
    ("codemode",),
    ("cli", "__main__"),
)
LAYER_OF: Dict[str, int] = {unit: n for n, units in enumerate(LAYERS) for unit in units}
#: The pure codecs: they touch no thread, process or selector, whatever imports them.
PURE = ("jsonvalue", "jsonrpc", "protocol", "stdio", "text", "errors", "_frozen", "_lazy")
IMPURE_STDLIB = ("threading", "subprocess", "selectors", "socket", "signal")


def modules() -> Iterator[Tuple[str, str]]:
    """(dotted name, path) of every module of the package."""
    for folder, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3]
                dotted = relative.replace(os.sep, ".")
                yield (
                    (dotted[: -len(".__init__")] if dotted.endswith(".__init__") else dotted),
                    path,
                )


def _type_checking_only(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` but the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking_only(child):
            for other in child.orelse:
                yield other
                yield from _walk(other)
            continue
        yield child
        yield from _walk(child)


def imports(dotted: str, path: str) -> Set[str]:
    """The absolute names ``path`` imports at run time (modules, or their attributes)."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    package = dotted if path.endswith("__init__.py") else dotted.rpartition(".")[0]
    found: Set[str] = set()
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found.update("%s.%s" % (base, alias.name) for alias in node.names)
    return found


def unit(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else ""


class Layers(unittest.TestCase):
    def test_every_unit_has_a_layer(self) -> None:
        units = {unit(name) for name, _ in modules()} - {""}
        self.assertEqual(units - set(LAYER_OF), set(), "a module of no layer: add it to LAYERS")

    def test_no_module_imports_a_higher_layer(self) -> None:
        upward: List[str] = []
        for name, path in modules():
            if name == "mcp_client":  # the face: every name, each on first use
                continue
            mine = LAYER_OF[unit(name)]
            for target in imports(name, path):
                if target.startswith("mcp_client.") and LAYER_OF.get(unit(target), -1) > mine:
                    upward.append("%s imports %s" % (name, target))
        self.assertEqual(upward, [])

    def test_only_the_client_imports_its_engine(self) -> None:
        outside = [
            "%s imports %s" % (name, target)
            for name, path in modules()
            if unit(name) not in ("_core", "client")
            for target in imports(name, path)
            if unit(target) == "_core"
        ]
        self.assertEqual(outside, [])

    def test_the_pure_modules_touch_no_thread_or_process(self) -> None:
        for name, path in modules():
            if unit(name) in PURE:
                with self.subTest(module=name):
                    stdlib = {target.partition(".")[0] for target in imports(name, path)}
                    self.assertEqual(stdlib & set(IMPURE_STDLIB), set())

    def test_the_scripts_stand_alone(self) -> None:
        # A ``*_script`` module runs in another process or is shipped as text (the jail's
        # pid 1, a server's lifeline, code mode's runtime): it imports nothing of the
        # package, which is not there, and nothing imports it (it would run here).
        scripts = [name for name, _ in modules() if name.endswith("_script")]
        self.assertIn("mcp_client.codemode.runtime_script", scripts)
        found = [
            "%s imports %s" % (name, target)
            for name, path in modules()
            for target in imports(name, path)
            if (name in scripts and target.startswith("mcp_client"))
            or any(target == script or target.startswith(script + ".") for script in scripts)
        ]
        self.assertEqual(found, [])

    def test_the_check_sees_an_upward_import(self) -> None:
        # The rule's own check: a module of the codecs that imported the client is caught.
        self.assertGreater(LAYER_OF[unit("mcp_client.client")], LAYER_OF[unit("mcp_client.stdio")])
        found = imports("mcp_client.stdio", os.path.join(PACKAGE, "stdio.py"))
        self.assertIn("mcp_client.errors.FramingFault", found)


if __name__ == "__main__":
    unittest.main()
