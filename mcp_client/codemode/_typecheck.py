"""Code mode's check of a program before it runs: ``compile()``, then ``mypy --strict``.

``compile()`` always runs, in a child Python of its own (``-I -S``: no site, no
user path) whose address space is capped (:data:`COMPILE_MEMORY`) before it reads
the program, within :data:`COMPILE_TIMEOUT` seconds: a 1 MiB program can make
``compile()`` take half a gigabyte and seconds of the GIL, which the runner (and
every run ``serve`` holds) must not pay. Where mypy is importable (the optional
``check`` extra; the runtime stays standard library only), ``mypy --strict`` checks
the program against the written ``cap`` package, in a child of its own session,
within :data:`MYPY_TIMEOUT` seconds (past it, the child's group is killed and the
check says so) and :data:`MYPY_MEMORY` bytes of address space, with **no
configuration file** (``--config-file=``): mypy otherwise reads ``mypy.ini``,
``pyproject.toml`` or ``setup.cfg`` in every directory up from the check's (``/tmp``
among them, which anyone may write) and the user's own config, and a config's
``plugins`` are code that mypy runs. Each message is ``line N: <compile's or
mypy's own words>``.

Both children are a :class:`~mcp_client._os.bounded.Brood`'s, the runner's: each dies
with the runner, even by SIGKILL (a lifeline), and the runner's close kills them at
once. At most :data:`MAX_CHECKS` checks run at once (the runner refuses one more):
each holds a core and up to :data:`MYPY_MEMORY` bytes while it runs.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from typing import List, Optional, Tuple

from .._os.bounded import Brood
from ..errors import TransportFailed

#: Seconds mypy may take (a first check of a large package takes several).
MYPY_TIMEOUT = 120.0
#: Bytes of address space mypy may map (a check of the cap package maps ~300 MB).
MYPY_MEMORY = 4 * 1024 * 1024 * 1024
#: Seconds, and bytes of address space, ``compile()`` of one program may take.
COMPILE_TIMEOUT = 60.0
COMPILE_MEMORY = 2 * 1024 * 1024 * 1024

#: The child that compiles: the program on stdin (UTF-8, lone surrogates kept), the one
#: message or nothing on stdout. Its own failures (MemoryError) are messages too.
_COMPILE = r"""
import sys
source = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
try:
    compile(source, sys.argv[1], "exec", dont_inherit=True)
except SyntaxError as e:
    sys.stdout.write("line %s: %s" % (e.lineno or 0, e.msg))
except MemoryError:
    sys.stdout.write("line 0: the program is too large to compile")
except (ValueError, OverflowError, RecursionError) as e:
    sys.stdout.write("line 0: %s" % e)
"""
#: Checks at once (each a compile() and a mypy child): one more is refused, busy.
MAX_CHECKS = 2
#: How many of mypy's messages are kept.
MAX_MESSAGES = 50

_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?:\d+:)? (?P<kind>error|note): (?P<text>.*)$")


def compiled(
    program: str,
    filename: str,
    brood: Optional[Brood] = None,
    timeout: float = COMPILE_TIMEOUT,
) -> Optional[str]:
    """``None``, or the one message ``compile()`` gives (in a bounded child of ``brood``,
    whose end kills it; of one of its own when none is given)."""
    brood = Brood() if brood is None else brood
    argv = (sys.executable, "-I", "-S", "-c", _COMPILE, filename)
    data = program.encode("utf-8", "surrogatepass")
    try:
        ended = brood.run(argv, data, memory=COMPILE_MEMORY, timeout=timeout)
    except TransportFailed as e:
        return "line 0: compile() could not start: %s" % e
    if ended is None:
        return "line 0: compile() did not finish within %g s" % timeout
    status, out = ended
    if status != 0 and not out:
        return "line 0: compile() could not finish (exit status %d)" % status
    return out.decode("utf-8", "replace") or None


def have_mypy() -> bool:
    return importlib.util.find_spec("mypy") is not None


def mypy(
    path: str, lib: str, cache: str, brood: Brood, timeout: float = MYPY_TIMEOUT
) -> Tuple[bool, List[str]]:
    """``mypy --strict path`` with ``lib`` on its path: (passed, messages); a child of
    ``brood``, whose end kills it."""
    argv = [sys.executable, "-m", "mypy", "--config-file=", "--strict", "--no-error-summary"]
    argv += ["--no-pretty", "--show-column-numbers", "--cache-dir", cache]
    argv += ["--hide-error-context", path]
    env = dict(os.environ, MYPYPATH=lib)
    env.pop("PYTHONPATH", None)  # the program sees only cap, as it does when it runs
    try:
        ended = brood.run(
            tuple(argv),
            b"",
            memory=MYPY_MEMORY,
            timeout=timeout,
            env=env,
            cwd=os.path.dirname(path),
            merge_stderr=True,
        )
    except TransportFailed as e:
        return False, ["line 0: mypy could not start: %s" % e]
    if ended is None:
        return False, ["line 0: mypy did not finish within %g s; the check is incomplete" % timeout]
    status, out = ended
    return status == 0, _messages(out.decode("utf-8", "replace"), path)


def _messages(output: str, path: str) -> List[str]:
    messages = []
    for line in output.splitlines():
        found = _LINE.match(line)
        if found is None:
            if line.strip() and "Success" not in line:
                messages.append("line 0: mypy: %s" % line.strip())
            continue
        where = "line %s" % found.group("line")
        if os.path.basename(found.group("file")) != os.path.basename(path):
            where = "%s (in %s)" % (where, found.group("file"))
        kind = "" if found.group("kind") == "error" else "note: "
        messages.append("%s: %s%s" % (where, kind, found.group("text")))
    return messages[:MAX_MESSAGES]
