"""The program's side of code mode: the ``cap`` package it imports, and its launch.

Three things, all about the child that runs the model's program:

* :data:`RUNTIME`, the text of ``cap/internal/mcp.py`` (the file ``runtime_script.py``
  beside this one, read as text): the seam every generated function calls
  (``invoke`` sends the call over a pipe and reads the answer), the failures a call
  raises (one table, :data:`FAILURE_KINDS` on the runner's side, its twin
  ``FAILURES`` in the runtime), and an ``excepthook`` that cuts a traceback to the
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
    from ._values import Limits

#: The failure kinds of the pipe protocol, each the class the program's runtime raises
#: (``FAILURES`` in :data:`RUNTIME` is the same table; a new kind is a line in each).
FAILURE_KINDS: Dict[str, str] = {
    "tool_failed": "ToolFailed",
    "call_failed": "CallFailed",
    "refused": "CallRefused",
    "mismatch": "ResultMismatch",
}

#: The names ``cap.mcp`` binds itself, which no server's key may take: its failures
#: (the results branch adds ``ResultMismatch``) and ``internal`` (the seam's name in
#: every generated module). A key is used verbatim where Python allows (issue 19),
#: so these would shadow them; they are refused, never renamed.
TAKEN_NAMES = frozenset(FAILURE_KINDS.values()) | {"ResultMismatch", "internal"}

#: The name of the program's file in its run directory (tracebacks show it).
PROGRAM_FILE = "program.py"
_RUNTIME_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime_script.py")


def _read_runtime() -> str:
    with open(_RUNTIME_FILE, encoding="utf-8") as source:
        return source.read()


#: cap/internal/mcp.py, in the program: the text of :mod:`.runtime_script`, a file of this
#: package that the package never imports (imported, it would take over this process's
#: excepthook and import system). It must pass ``mypy --strict`` (``check`` reads it): as a
#: file of the package, it is checked with the package.
RUNTIME = _read_runtime()

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
        # The memory cgroup bounds what the program uses; an RLIMIT_AS would count what
        # its threads reserve (8 MiB of stack, 64 MiB of malloc arena each): 16 threads
        # of a 14 MB program met 512 MiB.
        address_space_limit=False,
    )


def interpreter_under_tmp() -> Tuple[str, ...]:
    """This interpreter's directories that the jail's private ``/tmp`` would hide."""
    places = (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable))
    found = dict.fromkeys(os.path.realpath(place) for place in places)
    return tuple(place for place in found if place == "/tmp" or place.startswith("/tmp/"))
