"""Code mode's check of a program before it runs: ``compile()``, then ``mypy --strict``.

``compile()`` always runs. Where mypy is importable (the optional ``check`` extra;
the runtime stays standard library only), ``mypy --strict`` checks the program
against the written ``cap`` package, in a child of its own session, within
:data:`MYPY_TIMEOUT` seconds (past it, the child's group is killed and the check
says so). Each message is ``line N: <compile's or mypy's own words>``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
from typing import List, Optional, Tuple

#: Seconds mypy may take (a first check of a large package takes several).
MYPY_TIMEOUT = 120.0
#: How many of mypy's messages are kept.
MAX_MESSAGES = 50

_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?:\d+:)? (?P<kind>error|note): (?P<text>.*)$")


def compiled(program: str, filename: str) -> Optional[str]:
    """``None``, or the one message ``compile()`` gives."""
    try:
        compile(program, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        return "line %s: %s" % (e.lineno or 0, e.msg)
    except (ValueError, OverflowError, RecursionError, MemoryError) as e:  # NUL bytes, depth
        return "line 0: %s" % e
    return None


def have_mypy() -> bool:
    return importlib.util.find_spec("mypy") is not None


def mypy(path: str, lib: str, cache: str, timeout: float = MYPY_TIMEOUT) -> Tuple[bool, List[str]]:
    """``mypy --strict path`` with ``lib`` on its path: (passed, messages)."""
    argv = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--no-pretty"]
    argv += ["--show-column-numbers", "--cache-dir", cache, "--hide-error-context", path]
    env = dict(os.environ, MYPYPATH=lib)
    env.pop("PYTHONPATH", None)  # the program sees only cap, as it does when it runs
    child = subprocess.Popen(
        argv,
        env=env,
        cwd=os.path.dirname(path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        out, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, ["line 0: mypy did not finish within %g s; the check is incomplete" % timeout]
    finally:
        _end(child)
    return child.returncode == 0, _messages(out.decode("utf-8", "replace"), path)


def _end(child: "subprocess.Popen[bytes]") -> None:
    if child.returncode is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        child.communicate()


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
