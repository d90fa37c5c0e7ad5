"""The seam of the generated modules: each call goes to the runner over a pipe.

Written by mcp_client's code-mode runner. ``invoke`` is the only way a call leaves the
program; the runner serves only calls of the generated functions, and may refuse one
(``CallRefused``) by its policy or its limits (``CallFailed``).
"""

from __future__ import annotations

import difflib
import importlib.abc
import json
import os
import re
import sys
import threading
import traceback
import types
from typing import IO, Any, Dict, List, Optional, Sequence, Set, Tuple, Type


class ToolFailed(Exception):
    """The tool reported a failure; str() is its text."""


class CallFailed(Exception):
    """The call did not complete: a timeout, a dead server, a limit, an unknown tool."""


class CallRefused(CallFailed):
    """The runner's policy refused the call; it was never sent. str() names the rule."""


class ResultMismatch(CallFailed):
    """The result broke the outputSchema its tool declares: the server broke its promise.
    str() names where, what was expected and what came."""


#: The runner's failure kinds, each the exception the program gets.
FAILURES: Dict[str, Type[Exception]] = {
    "tool_failed": ToolFailed,
    "call_failed": CallFailed,
    "refused": CallRefused,
    "mismatch": ResultMismatch,
}

_lock = threading.Lock()  # one call on the pipe at a time, whichever thread makes it
_pipes: List[Tuple[IO[bytes], IO[bytes]]] = []


def _open() -> Tuple[IO[bytes], IO[bytes]]:
    if not _pipes:  # on first use: the package imports (and type-checks) without them
        calls, answers = (int(fd) for fd in os.environ["CAP_MCP_FDS"].split(","))
        _pipes.append((os.fdopen(calls, "wb"), os.fdopen(answers, "rb")))
    return _pipes[0]


#: The longest call line the runner reads (the wire's own bound, stdio.MAX_LINE_BYTES).
MAX_CALL_BYTES = 16 * 1024 * 1024
_gone: List[str] = []  # why the pipe is no more: every later call hears it


def invoke(server: str, tool: str, arguments: Dict[str, Any]) -> Any:
    line = json.dumps({"server": server, "tool": tool, "arguments": arguments}, allow_nan=False)
    data = line.encode("utf-8")
    if len(data) > MAX_CALL_BYTES:  # never sent: the pipe stays good for the next call
        raise CallFailed(
            "%s.%s: the call is %d bytes, over the %d a call may take; it was not sent"
            % (server, tool, len(data), MAX_CALL_BYTES)
        )
    _flush()  # what was printed before the call is kept, should the run end in it
    with _lock:
        if _gone:
            raise CallFailed(_gone[0])
        try:
            out, into = _open()
            out.write(data + b"\n")
            out.flush()  # buffered: a flush writes it all, a raw write may not
            reply = into.readline()
        except (OSError, ValueError) as e:  # a broken pipe, a closed file: the runner is gone
            _gone.append("the runner is gone (%s): no call can be made" % (e,))
            raise CallFailed(_gone[0]) from None
        if not reply.endswith(b"\n"):  # EOF, or an answer cut short by the runner's end
            _gone.append("the runner closed the pipe: no call can be made")
            raise CallFailed(_gone[0])
    answer = json.loads(reply)
    if "value" in answer:
        return answer["value"]
    failure = FAILURES.get(str(answer.get("failure")), CallFailed)
    raise failure(str(answer.get("message", "the call failed")))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # replaced, closed: the program's own
            pass


# ------------------------------------------------------------------ errors a model can act on

_CAP = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_MAIN = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
_MISSING = (
    re.compile(r"module '(cap(?:\.\w+)*)' has no attribute '(\w+)'"),
    re.compile(r"cannot import name '(\w+)' from '(cap(?:\.\w+)*)'"),
    re.compile(r"No module named '(cap(?:\.\w+)*)\.(\w+)'"),
)


def _excepthook(kind: Type[BaseException], value: BaseException, tb: Any) -> None:
    try:
        text = _report(kind, value, tb)
    except Exception:  # never lose the program's error to a bug of the hook's
        sys.__excepthook__(kind, value, tb)
        return
    sys.stderr.write(text)
    sys.stderr.flush()


def _report(kind: Type[BaseException], value: BaseException, tb: Any) -> str:
    report = traceback.TracebackException(kind, value, tb)
    cut = _cut(report, set())
    text = "".join(report.format())
    if cut:
        text += "(%d frame%s of the cap package left out)\n" % (cut, "" if cut == 1 else "s")
    hint = _hint(value)
    return text + ("hint: %s\n" % hint if hint else "")


def _cut(report: traceback.TracebackException, seen: Set[int]) -> int:
    """Drop the frames of the ``cap`` package from ``report`` and its chain; how many."""
    if id(report) in seen:
        return 0
    seen.add(id(report))
    kept = [frame for frame in report.stack if not frame.filename.startswith(_CAP)]
    cut = len(report.stack) - len(kept)
    for frame in kept:
        if frame.filename == _MAIN:  # the run directory's path says nothing to a model
            frame.line  # read now: the source is looked up by the old name  # noqa: B018
            frame.filename = os.path.basename(_MAIN)
    report.stack = traceback.StackSummary.from_list(kept)
    for linked in (report.__cause__, report.__context__):
        if linked is not None:
            cut += _cut(linked, seen)
    return cut


def _hint(value: BaseException) -> Optional[str]:
    message = str(value)
    for number, pattern in enumerate(_MISSING):
        found = pattern.search(message)
        if found is not None:
            module, name = found.groups() if number != 1 else found.groups()[::-1]
            return _closest(module, name)
    if isinstance(value, NameError):
        found = re.search(r"name '(\w+)' is not defined", message)
        if found is not None and _servers():
            return _unbound(found.group(1))
    return None


def _closest(module: str, name: str) -> str:
    names = _names_of(module)
    close = _close(name, names)
    if close:
        return "`%s` has no `%s`; did you mean %s?" % (
            module,
            name,
            ", ".join("`%s`" % each for each in close),
        )
    shown = ", ".join(sorted(names)[:30]) or "none"
    if module == "cap.mcp":  # its names are the servers' modules this program was shown
        return (
            "`cap.mcp` has no `%s`; a program is shown only the servers' modules it imports "
            "by name (`import cap.mcp.%s`); shown: %s" % (name, name, shown)
        )
    return "`%s` has no `%s`; its names: %s" % (module, name, shown)


def _unbound(name: str) -> str:
    servers = _servers()
    if name in servers:
        return "`%s` is not defined; `from cap.mcp import %s` gives that server's module" % (
            name,
            name,
        )
    close = _close(name, servers)
    if close:
        return "`%s` is not defined; the cap.mcp modules closest to it: %s" % (
            name,
            ", ".join("`%s`" % each for each in close),
        )
    return "`%s` is not defined" % name


def _close(name: str, names: List[str]) -> List[str]:
    """The names closest to ``name``, best first; a lower-case name is a function's."""
    if name[:1].islower():
        names = [each for each in names if each[:1].islower()] or names
    lowered = name.lower()
    found = set(difflib.get_close_matches(name, names, n=5, cutoff=0.5))
    found.update(each for each in names if lowered in each.lower())

    def likeness(each: str) -> float:
        return difflib.SequenceMatcher(None, lowered, each.lower()).ratio()

    return sorted(found, key=lambda each: (-likeness(each), each))[:5]


def _names_of(module: str) -> List[str]:
    names: Set[str] = set()
    loaded = sys.modules.get(module)
    if loaded is not None:
        names.update(
            name
            for name, value in vars(loaded).items()
            if not name.startswith("_") and _defined_in(value, module)
        )
    if module == "cap.mcp":
        names.update(_servers())
    return sorted(names)


def _defined_in(value: object, module: str) -> bool:
    """A function or type of ``module``'s own: not an import, a module, a constant."""
    if isinstance(value, types.FunctionType):
        return value.__module__ == module
    return isinstance(value, type) and value.__module__ == module


def _servers() -> List[str]:
    here = os.path.join(_CAP, "mcp")
    try:
        files = os.listdir(here)
    except OSError:
        return []
    return sorted(name[:-3] for name in files if name.endswith(".py") and name != "__init__.py")


# ------------------------------------------------------------ the modules it was not shown

#: What a cap.mcp module that is not there says: the program is shown only those it names.
NOT_SHOWN = (
    "No module named %r: a program is shown only the cap.mcp modules it imports by name "
    "in its source (`import cap.mcp.%s` or `from cap.mcp import %s`, anywhere in it; "
    "`from cap.mcp import *` shows them all); a dynamic import finds no other"
)


class _NotShown(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: a ``cap.mcp.<name>`` no finder found is one not shown (or no
    server at all: the program cannot tell, and is not told). Only the message is here:
    what hides the others is that their files are not in the program's package."""

    def find_spec(
        self,
        fullname: str,
        path: Optional[Sequence[str]],
        target: Optional[types.ModuleType] = None,
    ) -> None:
        parts = fullname.split(".")
        if len(parts) == 3 and parts[:2] == ["cap", "mcp"]:
            raise ModuleNotFoundError(NOT_SHOWN % (fullname, parts[2], parts[2]), name=fullname)
        return None


if not any(isinstance(finder, _NotShown) for finder in sys.meta_path):
    sys.meta_path.append(_NotShown())
sys.excepthook = _excepthook
