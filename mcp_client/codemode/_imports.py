"""The ``cap.mcp`` modules a program imports by name, read from its syntax tree.

A jailed program is shown only these (``_program.show_cap``): the runtime of the
``cap`` package plus the module of each server it names in an import statement,
anywhere in its source (inside a function, a ``try``, a branch never taken)::

    import cap.mcp.a            import cap.mcp.a as y        from cap.mcp import a, b as c
    from cap.mcp.a import f     from cap.mcp import *        (every module: STAR)

Only import statements count: ``importlib.import_module("cap.mcp.a")``, ``__import__``
or ``exec`` name nothing, whatever their argument (a program's text is what a reader
audits). A name that is no server is the caller's to drop.

The tree is built here for a program of at most :data:`INLINE_BYTES`, with warnings
off (a program's invalid escapes are its own stderr's business, not the runner's);
a larger one is parsed by this file run as a script in a child Python (``-I -S``,
its address space capped, within :data:`PARSE_TIMEOUT`, a child of the runner's
:class:`~mcp_client._os.bounded.Brood`: its close kills it): ``ast.parse`` of a 1 MiB
program can take half a gigabyte and seconds, which the runner must not pay. A
program that does not parse names nothing (it will not run either).
"""

from __future__ import annotations

import ast
import json
import sys
import threading
import warnings
from typing import TYPE_CHECKING, FrozenSet, Iterable, List, Optional, Set

if TYPE_CHECKING:  # pragma: no cover - this file also runs as a script, with no package
    from .._os.bounded import Brood

#: The name :func:`named` gives for ``from cap.mcp import *``: every module is shown.
STAR = "*"
#: The largest program parsed in the runner's own process (bytes, UTF-8): at most
#: some 45 MB and tens of ms of ``ast.parse``, the cost of the run's own start.
INLINE_BYTES = 64 * 1024
#: Seconds, and bytes of address space, the child that parses a larger one may take.
PARSE_TIMEOUT = 60.0
PARSE_MEMORY = 2 * 1024 * 1024 * 1024

_PACKAGE = ("cap", "mcp")
# warnings.catch_warnings swaps a process-wide list: two runs' parses must not interleave.
_quiet = threading.Lock()


def named(tree: ast.AST) -> FrozenSet[str]:
    """The servers' module names ``tree`` imports from ``cap.mcp``, :data:`STAR` for ``*``."""
    found: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_server(alias.name.split(".")) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.update(_from(node.module.split("."), (alias.name for alias in node.names)))
    found.discard("")
    return frozenset(found)


def _from(module: List[str], names: Iterable[str]) -> Iterable[str]:
    if tuple(module) == _PACKAGE:  # from cap.mcp import a, b (or *)
        return list(names)
    return [_server(module)]  # from cap.mcp.a import f; from cap import mcp: nothing


def _server(parts: List[str]) -> str:
    """``a`` for ``cap.mcp.a`` (and ``cap.mcp.a.x``), else ``""``."""
    return parts[2] if len(parts) > 2 and tuple(parts[:2]) == _PACKAGE else ""


def parsed(source: str) -> FrozenSet[str]:
    """:func:`named` of ``source`` parsed here; nothing when it does not parse."""
    with _quiet, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source, "program.py")
        except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
            return frozenset()
    return named(tree)


def imported(source: str, brood: Optional["Brood"] = None) -> FrozenSet[str]:
    """What ``source`` imports from ``cap.mcp``: parsed here when small, else in a child
    of ``brood`` (the runner's: its close kills it; one of its own when none is given)."""
    data = source.encode("utf-8", "surrogatepass")
    if len(data) <= INLINE_BYTES:
        return parsed(source)
    return _in_child(data, brood)


def _in_child(data: bytes, brood: Optional["Brood"]) -> FrozenSet[str]:
    from .._os.bounded import Brood
    from ..errors import TransportFailed

    brood = Brood() if brood is None else brood

    argv = (sys.executable, "-I", "-S", __file__)
    try:
        ended = brood.run(argv, data, memory=PARSE_MEMORY, timeout=PARSE_TIMEOUT)
    except TransportFailed:  # no child to be had: the program is shown nothing
        return frozenset()
    if ended is None:
        return frozenset()
    try:
        names = json.loads(ended[1].decode("utf-8"))
    except ValueError:  # it died (past its memory): the program will not run either
        return frozenset()
    return frozenset(name for name in names if isinstance(name, str))


def _main() -> None:
    source = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
    sys.stdout.write(json.dumps(sorted(parsed(source))))


if __name__ == "__main__":
    _main()
