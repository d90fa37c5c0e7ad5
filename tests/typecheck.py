"""``mypy --strict`` run over files in a directory, for the tests that type-check
generated modules and the programs written against them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

#: ``path:line: error|note: message``, as mypy prints with ``--hide-error-context``.
_FINDING = re.compile(r"([^:]+):\d+: (?:error|note): (.*)")


def mypy_strict(root: Path, files: List[str]) -> Tuple[int, Dict[str, List[str]]]:
    """mypy's exit status and each file's errors and notes; ``root`` is the
    working directory and ``MYPYPATH`` (where the generated ``cap`` lives).

    Raises AssertionError when mypy did not run at all (exit status past 1, or
    anything on its stderr), so that a broken install never reads as "no errors".
    """
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
         "--no-error-summary", "--hide-error-context", *files],
        cwd=root,
        env=dict(os.environ, MYPYPATH=str(root)),
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    if done.returncode not in (0, 1) or done.stderr.strip():
        raise AssertionError("mypy did not run: %s" % (done.stderr or done.stdout))
    findings: Dict[str, List[str]] = {}
    for line in done.stdout.splitlines():
        match = _FINDING.match(line)
        # "X defined here" notes point at a definition another file's error is
        # about (mypy 1.x prints them): not a finding in the defining file.
        if match and not match.group(2).endswith("defined here"):
            findings.setdefault(match.group(1), []).append(match.group(2))
    return done.returncode, findings
