"""The program's side of code mode: the ``cap`` package it imports, and its launch.

Three things, all about the child that runs the model's program:

* :data:`RUNTIME`, the text of ``cap/internal/mcp.py``: the seam every generated
  function calls (``invoke`` sends the call over a pipe and reads the answer), the
  failures a call raises (one table, :data:`FAILURE_KINDS` on the runner's side, its
  twin ``FAILURES`` in the text), and an ``excepthook`` that cuts a traceback to the
  program's own frames and names the closest real names for a ``cap`` name that is
  not there.
* :func:`write_cap`: the package, written once into a directory; :func:`show_cap`, a
  run's own package, hard links of the runtime and of the modules its program
  imports by name (the others are in no file system it sees, jailed; the runtime's
  last finder says why an import of one fails, and names no other server).
* :func:`launch`: the child Python, jailed (``jailer.spawn_command`` with a memory
  cgroup) or not, its stdio on pipes the runner reads.

Nothing here serves a call: that is :mod:`mcp_client.codemode._pipe`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING, Dict, Iterable, Optional, Sequence, Tuple

from .._os import process
from ..transport import SAFE_ENV_KEYS

if TYPE_CHECKING:  # pragma: no cover - annotations only: the jail loads on first use
    from ..codegen import Generated
    from ..jail import Jail
    from . import Limits

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
        files[module_file(module.module_name.rsplit(".", 1)[-1])] = module.source
    return files


#: The files of the package every program is shown: its runtime, whatever it imports.
RUNTIME_FILES = (
    "sitecustomize.py",
    "cap/__init__.py",
    "cap/internal/__init__.py",
    "cap/internal/mcp.py",
    "cap/mcp/__init__.py",
)


def module_file(module: str) -> str:
    """The path, under the package's parent, of server module ``module`` (``cap.mcp.<it>``)."""
    return "cap/mcp/%s.py" % module


def show_cap(top: str, target: str, modules: Iterable[str]) -> str:
    """A run's own ``cap`` package under ``target``: :data:`RUNTIME_FILES` and the files of
    ``modules`` only, each hard-linked from the package written under ``top`` (nothing is
    generated again; a copy where a link cannot be made). Returns ``target``, for sys.path."""
    for path in RUNTIME_FILES + tuple(module_file(module) for module in modules):
        made = os.path.join(target, path)
        os.makedirs(os.path.dirname(made), exist_ok=True)
        try:
            os.link(os.path.join(top, path), made, follow_symlinks=False)
        except OSError:  # a file system without hard links
            shutil.copyfile(os.path.join(top, path), made, follow_symlinks=False)
    return target


def write_cap(top: str, generated: Sequence["Generated"]) -> str:
    """The ``cap`` package under ``top`` (made if need be); returns ``top``, for sys.path."""
    for path, text in cap_files(generated).items():
        target = os.path.join(top, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        write_text(target, text, "a cap module")
    return top


def write_text(path: str, text: str, role: str) -> None:
    """``text`` into ``path``, never through a link (``--keep-cap DIR`` is the operator's,
    and an unjailed program can write beside its own file)."""
    from .._os.files import open_for_writing

    fd = open_for_writing(path, os.O_CREAT | os.O_TRUNC, role)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


# ----------------------------------------------------------------------------- the launch


def program_env(lib: str, fds: Tuple[int, int]) -> Dict[str, str]:
    """The program's environment: our safe keys, the package's path, its pipes."""
    env = {key: os.environ[key] for key in SAFE_ENV_KEYS if key in os.environ}
    env.update(PYTHONPATH=lib, PYTHONDONTWRITEBYTECODE="1", CAP_MCP_FDS="%d,%d" % fds)
    return env


#: The program's working directory in its jail when no ``scratch`` is given: under the
#: jail's private ``/tmp``, a tmpfs of ``Limits.scratch_bytes`` that no host directory
#: backs and that vanishes with the jail.
SCRATCH_INSIDE = "/tmp/scratch"


def launch(
    run_dir: str,
    lib: str,
    fds: Tuple[int, int],
    stdio: Tuple[int, int, int],
    *,
    jailed: bool,
    limits: "Limits",
    scratch: Optional[str] = None,
    hidden: Sequence[str] = (),
    shown: Sequence[str] = (),
) -> "subprocess.Popen[bytes]":
    """Start ``run_dir/program.py`` in a child Python.

    ``fds`` are the program's ends of the call pipes; ``stdio`` its stdin, stdout and
    stderr, pipes of the runner's (nothing the program reopens through
    ``/proc/self/fd`` leads to a file of the host's). Jailed, it sees only its file,
    the package and this interpreter; ``hidden`` (the files the runner was given by
    name: its config...) read empty, as ``DEFAULT_HIDDEN`` do but those ``shown``
    (never one of ``hidden``); it runs as nobody when we are root; its cwd is
    :data:`SCRATCH_INSIDE`, or the host directory ``scratch`` (bound writable: the
    only way to one); the jail holds ``limits``' four unless ``limits.enforced`` is
    false. The handle is bwrap's, in its own session. Unjailed, the same child in
    its own session, cwd ``scratch`` or ``run_dir/scratch``, its address space
    (``RLIMIT_AS``) and CPU seconds capped at once after its start: no jail, so
    nothing bounds its tasks or its disk. Raises ``TransportFailed`` (jailed).
    """
    program = os.path.join(run_dir, PROGRAM_FILE)
    argv = [sys.executable, "-B", program]
    env = program_env(lib, fds)
    if not jailed:
        child = process.start(
            argv,
            env=env,
            cwd=scratch or os.path.join(run_dir, "scratch"),
            pass_fds=fds,
            stdin=stdio[0],
            stdout=stdio[1],
            stderr=stdio[2],
        )
        if limits.enforced:
            process.cap(
                child.pid, address_space=limits.memory_bytes, cpu_seconds=limits.cpu_seconds
            )
        return child
    from ..jail import spawn as jailer

    if os.geteuid() == 0:  # its jail runs as nobody: its files are others' to read
        _readable_by_all(program, lib)
    return jailer.spawn_command(
        program_jail(program, lib, limits, scratch, hidden, shown),
        argv,
        env,
        cwd=scratch,
        inside_cwd=None if scratch else SCRATCH_INSIDE,
        pass_fds=fds,
        stdin=stdio[0],
        stdout=stdio[1],
        stderr=stdio[2],
    )


def _readable_by_all(program: str, lib: str) -> None:
    """The program's file and its package readable (the directories searchable) by any
    uid, whatever our umask: a root runner's jail is nobody's, and the jail binds them
    in by name. Nothing here is secret; the run directory above stays root's alone."""
    modes = [(program, 0o644), (lib, 0o755)]
    for top, directories, files in os.walk(lib):
        modes += [(os.path.join(top, name), 0o755) for name in directories]
        modes += [(os.path.join(top, name), 0o644) for name in files]
    for path, mode in modes:
        if not os.path.islink(path):  # the runner wrote none; a link's target is not ours
            os.chmod(path, mode)


def program_jail(
    program: str,
    lib: str,
    limits: "Limits",
    scratch: Optional[str],
    hidden: Sequence[str],
    shown: Sequence[str] = (),
) -> "Jail":
    """The program's jail: what it sees, what it writes, what it may take. ``shown``:
    entries of ``DEFAULT_HIDDEN`` (as spelt there, or a home's path of one) it sees."""
    from ..jail import DEFAULT_HIDDEN, NOBODY, Jail, default_entry

    homes = [home for home in (os.environ.get("HOME"), os.path.expanduser("~")) if home]
    unhidden = {default_entry(path, homes) for path in shown}
    bounded = limits.enforced
    return Jail(
        run_as=NOBODY,  # never root: a root harness's program runs as nobody, no capability
        readable=(program, lib) + interpreter_under_tmp(),
        writable=(scratch,) if scratch else (),
        hidden=tuple(entry for entry in DEFAULT_HIDDEN if entry not in unhidden)
        + tuple(os.path.abspath(path) for path in hidden),  # the runner's own: never shown
        memory_bytes=limits.memory_bytes if bounded else None,
        max_processes=limits.max_tasks if bounded else None,
        tmp_bytes=limits.scratch_bytes if bounded else None,
        cpu_seconds=limits.cpu_seconds if bounded else None,
    )


def interpreter_under_tmp() -> Tuple[str, ...]:
    """This interpreter's directories that the jail's private ``/tmp`` would hide."""
    places = (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable))
    found = dict.fromkeys(os.path.realpath(place) for place in places)
    return tuple(place for place in found if place == "/tmp" or place.startswith("/tmp/"))
