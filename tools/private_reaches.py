"""Count the places where one module reads or writes another object's private names.

A *reach* is an attribute access ``obj._name`` (one leading underscore, not a
dunder) in a module of the package, where ``obj`` is not ``self`` or ``cls``
and ``_name`` is not bound as an attribute anywhere in that same module (a
``self._name = ...`` store, a class-level assignment or a method definition).
So ``client._lock`` in ``_connect.py`` counts, since the lock belongs to
``client.py``; ``other._lock`` between two objects of one class in one module
does not, that being the module's own business; nor does ``os._exit``. Module objects reached by
attribute (``_threads.start``) count as reaches only when the name is private.

Usage: ``python tools/private_reaches.py [PACKAGE_DIR] [--list]`` prints the
total and the count per module (``--list``: every reach, ``file:line name``).
The issue that asked for it (18) measured 67 such reaches from three modules
into ``Client`` before the seam was cut.
"""

from __future__ import annotations

import ast
import os
import sys
from typing import Dict, List, Set, Tuple

OWN = ("self", "cls")
#: Standard-library modules whose underscored names are documented API (``os._exit``).
STDLIB_API = ("os", "sys")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def bound_here(tree: ast.AST) -> Set[str]:
    """The private attribute names this module itself defines."""
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                names.update(_class_names(item))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in OWN:
                names.add(node.attr)
    return {name for name in names if _private(name)}


def _class_names(item: ast.stmt) -> Set[str]:
    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {item.name}
    if isinstance(item, ast.Assign):
        return {t.id for t in item.targets if isinstance(t, ast.Name)}
    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
        return {item.target.id}
    return set()


def reaches(source: str) -> List[Tuple[int, str]]:
    """(line, ``obj._name``) for every reach in one module's source."""
    tree = ast.parse(source)
    own = bound_here(tree)
    found: List[Tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _private(node.attr):
            continue
        if node.attr in own:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in OWN + STDLIB_API:
            continue
        found.append((node.lineno, "%s.%s" % (ast.unparse(node.value), node.attr)))
    return sorted(found)


def census(package: str) -> Dict[str, List[Tuple[int, str]]]:
    """Reaches per module file (relative path) under ``package``."""
    result: Dict[str, List[Tuple[int, str]]] = {}
    for root, _dirs, files in sorted(os.walk(package)):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    found = reaches(f.read())
                if found:
                    result[os.path.relpath(path, package)] = found
    return result


def main(argv: List[str]) -> int:
    listing = "--list" in argv
    args = [a for a in argv if a != "--list"]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    package = args[0] if args else os.path.join(here, "mcp_client")
    found = census(package)
    print("cross-module private reaches: %d" % sum(len(v) for v in found.values()))
    for module, hits in found.items():
        print("  %-24s %d" % (module, len(hits)))
        if listing:
            for line, text in hits:
                print("    %s:%d %s" % (module, line, text))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
