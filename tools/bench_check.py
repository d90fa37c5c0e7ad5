#!/usr/bin/env python3
"""How long ``CodeMode.check`` takes: the first check of a runner, cold or warmed, and the
checks after it.

    python tools/bench_check.py [--samples N] [--json FILE]

Two panels. The small one is ``tools/check_panel.py``: the scripted calendar and the demo
server, 21 right and wrong programs. The big one is the ten recorded servers of
``tools/context_panel`` (137 tools, served again by ``tools/listing_server.py``), with
programs that import its largest modules; a check reads only what a program imports, so
these are the costly ones. For each panel, each sample is a new runner (a new mypy
cache):

* **cold**: its first check, nothing done before;
* **warmed**: ``warm_check()`` first (``serve`` does it when it starts), waited for, then
  the first check; the warming's own time is shown beside it (it runs in the
  background, while the host reads the instructions);
* **later**: every program of the panel checked once more on one warmed runner.

Medians (p50) and the largest, seconds. The goal: the first check at most 2 s at p50
once warmed. Nothing here is asserted by the tests (``tests/test_check_panel.py`` holds
what the check says, not how fast).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import check_panel  # noqa: E402

from mcp_client import config  # noqa: E402
from mcp_client.codemode import CodeMode  # noqa: E402

LISTING_SERVER = os.path.join(HERE, "listing_server.py")
BIG = ("fs", "git", "gh", "notes", "browser", "notion", "pg", "k8s", "time", "fetch")
#: The big panel's programs: the largest modules, called right and wrong.
BIG_PROGRAMS: List[str] = [
    "from cap.mcp import gh\n"
    "out = gh.create_issue(owner='o', repo='r', title='t', labels=['bug'])\n"
    "print(out.text, out['data'])\n",
    "from cap.mcp import gh, k8s\n"
    "print(gh.add_issue_comment(owner='o', repo='r', issue_number=3, bdy='x'))\n"
    "print(k8s.cleanup().text)\n",
    "from cap.mcp import notion\nprint(notion.API_delete_a_block(block_id='b')['txt'])\n",
    "from cap.mcp import fs, k8s, notion\n"
    "print(fs.create_directory(path='/tmp/x'), k8s.cleanup(), notion.API_delete_a_block('b'))\n",
    "import json\nfrom cap.mcp import pg\n"
    "rows = pg.query(sql='select 1').data\nprint(json.dumps(rows))\n",
]


def small() -> Tuple[Dict[str, Any], List[str]]:
    programs = [program for _, program in check_panel.RIGHT]
    programs += [program for _, program, _ in check_panel.WRONG]
    return check_panel.config(), programs


def big() -> Tuple[Dict[str, Any], List[str]]:
    servers = {
        key: {
            "command": sys.executable,
            "args": [LISTING_SERVER, os.path.join(HERE, "context_panel", key + ".json")],
        }
        for key in BIG
    }
    return {"mcpServers": servers}, BIG_PROGRAMS


def opened(config_json: Dict[str, Any], where: str) -> CodeMode:
    path = os.path.join(where, "servers.json")
    with open(path, "w") as out:
        json.dump(config_json, out)
    return CodeMode.open(config.load(path).servers, jail_program=False)


def timed(code: CodeMode, program: str) -> float:
    started = time.perf_counter()
    code.check(program)
    return time.perf_counter() - started


def panel(name: str, made: Tuple[Dict[str, Any], List[str]], samples: int) -> Dict[str, Any]:
    config_json, programs = made
    cold: List[float] = []
    first: List[float] = []
    warming: List[float] = []
    later: List[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-check-") as where:
        for index in range(samples):
            program = programs[index % len(programs)]
            with opened(config_json, where) as code:
                cold.append(timed(code, program))
            with opened(config_json, where) as code:
                started = time.perf_counter()
                code.warm_check()
                assert code._warmed is not None  # noqa: SLF001 (a bench: wait for it)
                code._warmed.wait()  # noqa: SLF001
                warming.append(time.perf_counter() - started)
                first.append(timed(code, program))
                if index == 0:
                    later = [timed(code, each) for each in programs]
    return {
        "panel": name,
        "programs": len(programs),
        "cold first check": summary(cold),
        "warming (background)": summary(warming),
        "warmed first check": summary(first),
        "later checks": summary(later),
    }


def summary(values: Sequence[float]) -> Dict[str, float]:
    return {"p50": round(statistics.median(values), 3), "max": round(max(values), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=5, help="runners a panel (5)")
    parser.add_argument("--json", help="write the figures to FILE")
    arguments = parser.parse_args()
    results = [panel("small", small(), arguments.samples), panel("big", big(), arguments.samples)]
    import mypy.version

    print("CodeMode.check, seconds (mypy %s, Python %s):" % (mypy.version.__version__,
                                                          sys.version.split()[0]))  # fmt: skip
    rows = ("cold first check", "warming (background)", "warmed first check", "later checks")
    print("  %-24s %-22s %-22s" % ("", "small panel", "big panel"))
    for row in rows:
        cells = ["p50 %.2f, max %.2f" % (r[row]["p50"], r[row]["max"]) for r in results]
        print("  %-24s %-22s %-22s" % (row, cells[0], cells[1]))
    for result in results:
        met = result["warmed first check"]["p50"] <= 2.0
        print("goal: warmed first check <= 2 s p50, %s panel: %s" % (
            result["panel"], "met" if met else "NOT met"))  # fmt: skip
    if arguments.json:
        with open(arguments.json, "w") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
