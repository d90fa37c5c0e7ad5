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
from typing import (
    IO,
    Any,
    Dict,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    Type,
)


class ToolFailed(Exception):
    """The tool reported a failure; str() is its text."""

    __module__ = "cap.mcp"  # where a program imports it: its traceback names it so


class CallFailed(Exception):
    """The call did not complete: the server answered it with an error (JSON-RPC), a
    timeout, a dead server, a limit, an unknown tool. str() says which."""

    __module__ = "cap.mcp"


class CallRefused(CallFailed):
    """The runner's policy refused the call; it was never sent. str() names the rule."""

    __module__ = "cap.mcp"


class ResultMismatch(CallFailed):
    """The result broke the outputSchema its tool declares: the server broke its promise.
    str() names where, what was expected and what came."""

    __module__ = "cap.mcp"


class ToolOutput(Dict[str, Any]):
    """What a tool without an outputSchema returns: a dict ``{"text", "data", "content"}``
    whose keys read as attributes too (``out.text`` is ``out["text"]``): the text blocks
    joined, that text parsed (JSON, or a Python literal) or None, every content block.
    Each server's module types it as a ``TypedDict`` of the three keys (``ToolOutput``,
    or a learned one's), so that it needs nothing of this module but ``invoke``; the
    check lets a program read the three as attributes."""

    __slots__ = ()  # no attribute of its own: an attribute is a key

    def __getattr__(self, name: str) -> Any:
        try:
            return dict.__getitem__(self, name)
        except KeyError:
            raise AttributeError(
                "a ToolOutput has no %r: its keys, attributes too, are text, data, content" % name
            ) from None


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
        return ToolOutput(answer["value"]) if answer.get("output") else answer["value"]
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
    if getattr(report, "filename", None) == _MAIN:  # a SyntaxError's own file
        report.filename = os.path.basename(_MAIN)
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
    if isinstance(value, TypeError):
        found = _BAD_CALL.match(message)
        if found is not None:
            return _signatures(found.group(1), found.group(2))
    return None


#: A call that does not fit its function's signature (CPython's words, 3.9 to 3.13).
_BAD_CALL = re.compile(
    r"(?:\w+\.)*(\w+)\(\) (?:got an unexpected keyword argument '(\w+)'|missing \d+ "
    r"required|takes \d+ positional|takes from \d+ to \d+ positional|got multiple values|"
    r"got some positional-only)"
)


def _signatures(function: str, keyword: Optional[str]) -> Optional[str]:
    """The signature of each generated function named ``function``, and the parameter
    closest to a wrong ``keyword``; ``None`` when no ``cap.mcp`` module has one."""
    found = []
    for module in sorted(sys.modules):
        loaded = sys.modules[module]
        value = getattr(loaded, function, None) if module.startswith("cap.mcp.") else None
        if isinstance(value, types.FunctionType) and value.__module__ == module:
            found.append((module, value))
    if not found:
        return None
    import inspect  # here: a program that makes no such mistake never loads it

    lines = ["%s.%s%s" % (module, function, _signature(value)) for module, value in found[:3]]
    hint = "the signature: " + "; ".join(lines)
    names = [n for _, value in found for n in inspect.signature(value).parameters]
    close = difflib.get_close_matches(keyword, names, n=1, cutoff=0.5) if keyword else []
    return hint + ("; did you mean `%s`?" % close[0] if close else "")


def _signature(function: types.FunctionType) -> str:
    """``(name: str, *, limit: Optional[int] = None) -> ReadNoteResult``: the module's
    own prefixes left out."""
    import inspect

    text = str(inspect.signature(function))
    text = re.sub(r"\b(?:typing|builtins|cap\.mcp\.\w+|cap\.internal\.mcp)\.", "", text)
    return text


def _closest(module: str, name: str) -> str:
    names = _names_of(module)
    close = _close(name, names)
    if close:
        return "`%s` has no `%s`; did you mean %s?" % (
            module,
            name,
            ", ".join("`%s`" % each for each in close),
        )
    if module == "cap.mcp":  # its names are the servers' modules this program was shown
        return (
            "`cap.mcp` has no `%s`; a program is shown only the servers' modules it imports "
            "by name (`import cap.mcp.%s`); shown: %s"
            % (name, name, _listed([each for each in names if each in _servers()]))
        )
    functions = [each for each in names if each[:1].islower()]
    kinds = [each for each in names if not each[:1].islower() and each not in _BLOCK_TYPES]
    return "`%s` has no `%s`; its functions: %s; its types: %s" % (
        module,
        name,
        _listed(functions),
        _listed(kinds),
    )


#: The content-block types every module declares alike: not this module's own names.
_BLOCK_TYPES = frozenset(
    "Annotations TextContent ImageContent AudioContent ResourceLink TextResourceContents "
    "BlobResourceContents EmbeddedResource".split()
)


def _listed(names: List[str]) -> str:
    shown = sorted(names)
    return ", ".join(shown[:30]) + (", ..." if len(shown) > 30 else "") if shown else "none"


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
