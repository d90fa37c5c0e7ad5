"""The program's side of code mode: the ``cap`` package it imports, and its launch.

Three things, all about the child that runs the model's program:

* :data:`RUNTIME`, the text of ``cap/internal/mcp.py``: the seam every generated
  function calls (``invoke`` sends the call over a pipe and reads the answer), the
  failures a call raises (one table, :data:`FAILURE_KINDS` on the runner's side, its
  twin ``FAILURES`` in the text), and an ``excepthook`` that cuts a traceback to the
  program's own frames and names the closest real names for a ``cap`` name that is
  not there.
* :func:`write_cap`: the package, written once into a directory.
* :func:`launch`: the child Python, jailed (``jailer.spawn_command`` with a memory
  cgroup) or not, its stdio on pipes the runner reads.

Nothing here serves a call: that is :mod:`mcp_client._pipe`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING, Dict, Optional, Sequence, Tuple

from .transport import SAFE_ENV_KEYS

if TYPE_CHECKING:  # pragma: no cover - annotations only: the jail loads on first use
    from .codegen import Generated

#: The failure kinds of the pipe protocol, each the class the program's runtime raises
#: (``FAILURES`` in :data:`RUNTIME` is the same table; a new kind is a line in each).
FAILURE_KINDS: Dict[str, str] = {
    "tool_failed": "ToolFailed",
    "call_failed": "CallFailed",
    "refused": "CallRefused",
    "mismatch": "ResultMismatch",
}

#: The name of the program's file in its run directory (tracebacks show it).
PROGRAM_FILE = "program.py"

#: cap/internal/mcp.py, in the program. It must pass ``mypy --strict`` (``check`` reads it).
RUNTIME = r'''"""The seam of the generated modules: each call goes to the runner over a pipe.

Written by mcp_client's code-mode runner. ``invoke`` is the only way a call leaves the
program; the runner serves only calls of the generated functions, and may refuse one
(``CallRefused``) by its policy or its limits (``CallFailed``).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
import threading
import traceback
import types
from typing import IO, Any, Dict, List, Optional, Set, Tuple, Type


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


def invoke(server: str, tool: str, arguments: Dict[str, Any]) -> Any:
    line = json.dumps({"server": server, "tool": tool, "arguments": arguments}, allow_nan=False)
    with _lock:
        out, into = _open()
        out.write(line.encode("utf-8") + b"\n")
        out.flush()  # buffered: a flush writes it all, a raw write may not
        reply = into.readline()
    if not reply:
        raise CallFailed("the runner is gone")
    answer = json.loads(reply)
    if "value" in answer:
        return answer["value"]
    failure = FAILURES.get(str(answer.get("failure")), CallFailed)
    raise failure(str(answer.get("message", "the call failed")))


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
            module, name, ", ".join("`%s`" % each for each in close)
        )
    shown = ", ".join(sorted(names)[:30]) or "none"
    return "`%s` has no `%s`; its names: %s" % (module, name, shown)


def _unbound(name: str) -> str:
    servers = _servers()
    if name in servers:
        return "`%s` is not defined; `from cap.mcp import %s` gives that server's module" % (
            name, name
        )
    close = _close(name, servers)
    if close:
        return "`%s` is not defined; the cap.mcp modules closest to it: %s" % (
            name, ", ".join("`%s`" % each for each in close)
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
            name for name, value in vars(loaded).items()
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


sys.excepthook = _excepthook
'''

#: sitecustomize.py beside the package, read by ``site`` as the program's Python starts: the
#: hook that explains errors, even for a program that never imports ``cap`` (a NameError on a
#: server's key). It imports the runtime only when there is an error to explain.
SITECUSTOMIZE = (
    '"""Written by mcp_client\'s code-mode runner: cap\'s error hook, loaded on first use."""\n\n'
    "import sys\n\n\n"
    "def _explain(kind, value, tb):\n"
    "    from cap.internal import mcp\n\n"
    "    mcp._excepthook(kind, value, tb)\n\n\n"
    "sys.excepthook = _explain\n"
)
CAP_INIT = (
    '"""Capabilities: ``cap.mcp.<server>``, one module per configured MCP server."""\n\n'
    "from cap.internal import mcp as _runtime  # noqa: F401  (its excepthook explains errors)\n"
)
CAP_MCP = (
    '"""The generated modules, one per server; the failures a call can raise."""\n\n'
    "from cap.internal.mcp import CallFailed, CallRefused, ResultMismatch, ToolFailed\n\n"
    '__all__ = ["CallFailed", "CallRefused", "ResultMismatch", "ToolFailed"]\n'
)


def cap_files(generated: Sequence["Generated"]) -> Dict[str, str]:
    """Every file of the ``cap`` package, by its path under the package's parent."""
    files = {
        "sitecustomize.py": SITECUSTOMIZE,
        "cap/__init__.py": CAP_INIT,
        "cap/internal/__init__.py": "",
        "cap/internal/mcp.py": RUNTIME,
        "cap/mcp/__init__.py": CAP_MCP,
    }
    for module in generated:
        files["cap/mcp/%s.py" % module.module_name.rsplit(".", 1)[-1]] = module.source
    return files


def write_cap(top: str, generated: Sequence["Generated"]) -> str:
    """The ``cap`` package under ``top`` (made if need be); returns ``top``, for sys.path."""
    for path, text in cap_files(generated).items():
        target = os.path.join(top, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as out:
            out.write(text)
    return top


# ----------------------------------------------------------------------------- the launch


def program_env(lib: str, fds: Tuple[int, int]) -> Dict[str, str]:
    """The program's environment: our safe keys, the package's path, its pipes."""
    env = {key: os.environ[key] for key in SAFE_ENV_KEYS if key in os.environ}
    env.update(PYTHONPATH=lib, PYTHONDONTWRITEBYTECODE="1", CAP_MCP_FDS="%d,%d" % fds)
    return env


def launch(
    run_dir: str,
    lib: str,
    fds: Tuple[int, int],
    stdio: Tuple[Optional[int], int, int],
    *,
    jailed: bool,
    memory_bytes: int,
) -> "subprocess.Popen[bytes]":
    """Start ``run_dir/program.py`` in a child Python whose cwd is ``run_dir/scratch``.

    ``fds`` are the program's ends of the call pipes; ``stdio`` its stdin (``None``:
    ``/dev/null``), stdout and stderr. Jailed, it sees only its file, the package
    and this interpreter, writes only its scratch, and its jail's memory cgroup holds
    ``memory_bytes``; the handle is bwrap's, in its own session. Unjailed, the same
    child in its own session, its address space capped (``RLIMIT_AS``) at once after
    its start: no jail, so nothing else holds it. Raises ``TransportFailed`` (jailed).
    """
    program = os.path.join(run_dir, PROGRAM_FILE)
    scratch = os.path.join(run_dir, "scratch")
    argv = [sys.executable, "-B", program]
    env = program_env(lib, fds)
    stdin = subprocess.DEVNULL if stdio[0] is None else stdio[0]
    if not jailed:
        child = subprocess.Popen(
            argv,
            env=env,
            cwd=scratch,
            pass_fds=fds,
            start_new_session=True,
            stdin=stdin,
            stdout=stdio[1],
            stderr=stdio[2],
        )
        _cap_address_space(child.pid, memory_bytes)
        return child
    from . import jailer
    from .jail import Jail

    jail = Jail(
        readable=(program, lib) + interpreter_under_tmp(),
        writable=(scratch,),
        memory_bytes=memory_bytes,
    )
    return jailer.spawn_command(
        jail, argv, env, cwd=scratch, pass_fds=fds, stdin=stdin, stdout=stdio[1], stderr=stdio[2]
    )


def _cap_address_space(pid: int, limit: int) -> None:
    try:
        import resource

        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
    except (ImportError, OSError, ValueError):  # gone already, or not Linux: nothing to cap
        pass


def interpreter_under_tmp() -> Tuple[str, ...]:
    """This interpreter's directories that the jail's private ``/tmp`` would hide."""
    places = (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable))
    found = dict.fromkeys(os.path.realpath(place) for place in places)
    return tuple(place for place in found if place == "/tmp" or place.startswith("/tmp/"))
