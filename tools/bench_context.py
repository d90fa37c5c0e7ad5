#!/usr/bin/env python3
"""What ``mcp-client serve`` costs a model's context, on panels of real servers' listings.

    python tools/bench.py --context [--json FILE]
    python tools/bench_context.py [--json FILE] [--misses] [--goals-strict]

The servers are recordings (``tools/context_panel/*.json``: ``tools/record_listing.py``
ran each real server once; its README names the packages and versions), served again
by ``tools/listing_server.py``: offline, and the same bytes on every run. Each panel is
a config of those servers, given to the real ``python -m mcp_client serve --config``
(this checkout's), which this script talks to over stdio as a host would, with
``--no-jail`` only where there is no bwrap (search and describe run nothing; the jail
only changes a sentence of the instructions). Two panels: ``big`` (every recording)
and ``small`` (memory and time: about ten tools).

The queries are ``tools/context_panel/queries.json``: what a model would type into
``search_tools`` for a task, each with the tools that do it (``server.function``, the
name ``describe_tool`` takes; any one of them is a hit). A panel is scored on the
queries whose expected tools it serves (the others' expectations left out).

What is counted, in bytes of UTF-8; every JSON value compact (``,`` and ``:`` with no
spaces, non-ASCII as itself), as ``bench --serve`` counts:

* **raw**: what a host without code mode shows: for each server,
  ``{"tools": [...]}`` with the tools exactly as recorded, summed over the servers;
* **show**: serve's ``initialize`` ``instructions`` plus its ``tools/list`` result;
* **one search**: ``search_tools`` with only ``query`` (every other argument its
  default), over the queries: the text of the result's content blocks (what a host
  that shows text gives its model: the primary figure), and apart, its
  ``structuredContent``; mean and max;
* **one describe**: ``describe_tool`` of each distinct expected tool, the same two ways;
* **discovery**: a task's cost, show + 2 x mean search + 1 x mean describe (text),
  and that over raw;
* **recall@k**: the queries with an expected tool among the first k matches.

A search's matches are read from ``structuredContent`` when it holds a list of
objects naming them (``server`` and ``function``, or ``name`` as
``"server.function"``), else from the text: each ``server.function`` token of a
configured server, in order (:func:`match_names`). The goals: recall@3 at least 90%
on each panel; discovery at most 8% of raw on the big panel, at most 1.0x on the
small one. The exit status is 0 (a report), or 1 with ``--goals-strict`` when a goal
is not met; 2 when the panel itself is wrong (an expected tool serve does not know).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PANEL_DIR = os.path.join(HERE, "context_panel")
LISTING_SERVER = os.path.join(HERE, "listing_server.py")
QUERIES = os.path.join(PANEL_DIR, "queries.json")

#: Each panel's servers: config keys, each recorded in ``tools/context_panel/<key>.json``.
PANELS: Dict[str, Tuple[str, ...]] = {
    "big": ("fs", "git", "gh", "notes", "browser", "notion", "pg", "k8s", "time", "fetch"),
    "small": ("notes", "time"),
}
#: The goals: recall@3 on every panel; discovery over raw, per panel.
GOAL_RECALL = 0.90
GOAL_DISCOVERY = {"big": 0.08, "small": 1.0}
#: The fixed cost's goal: show without the function list (which run_program's
#: description carries only when the functions are few), bytes.
GOAL_FIXED = 2560
#: The flags of the fixed cost reported with approvals on.
APPROVING = ("--approve", "non-read-only")
#: Where run_program's description begins its function list.
FUNCTION_LIST = "\n\nThe functions:\n"
#: Seconds any one answer of serve's may take (its start generates every module).
ANSWER_TIMEOUT = 180.0
#: The ranks recall is reported at.
RANKS = (1, 3, 5)

Message = Dict[str, Any]
Query = Dict[str, Any]


# ----------------------------------------------------------------------------- the host


class Host:
    """``python -m mcp_client serve --config`` on pipes, spoken to as a host does."""

    def __init__(self, config: str, stderr: str, extra: Sequence[str] = ()) -> None:
        path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
        flags = ([] if shutil.which("bwrap") else ["--no-jail"]) + list(extra)
        argv = [sys.executable, "-m", "mcp_client", "serve", "--config", config, *flags]
        self.stderr_path = stderr
        with open(stderr, "wb") as sink:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink,
                env=dict(os.environ, PYTHONPATH=path),
            )  # fmt: skip
        self.pending, self.last = b"", 0
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench-context", "version": "1"},
        }
        self.started: Message = self.request("initialize", hello)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Message) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message).encode("utf-8") + b"\n")
        stdin.flush()

    def request(self, method: str, params: Message) -> Any:
        """The result of one request; an error answer ends the bench (serve's fault)."""
        self.last += 1
        self.send({"jsonrpc": "2.0", "id": self.last, "method": method, "params": params})
        while True:
            answer = self.receive()
            if answer.get("id") == self.last:
                if "error" in answer:
                    raise SystemExit("serve refused %s: %s" % (method, answer["error"]))
                return answer["result"]

    def call(self, tool: str, arguments: Message) -> Message:
        result: Message = self.request("tools/call", {"name": tool, "arguments": arguments})
        return result

    def receive(self) -> Message:
        stdout = self.process.stdout
        assert stdout is not None
        while b"\n" not in self.pending:
            ready, _, _ = select.select([stdout.fileno()], [], [], ANSWER_TIMEOUT)
            chunk = os.read(stdout.fileno(), 1 << 20) if ready else b""
            if not chunk:
                raise SystemExit("serve stopped answering (exit %s):\n%s"
                                 % (self.process.poll(), self.stderr_tail()))  # fmt: skip
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        message: Message = json.loads(line)
        return message

    def stderr_tail(self) -> str:
        with open(self.stderr_path, "rb") as log:
            return log.read()[-2000:].decode("utf-8", "replace")

    def close(self) -> None:
        """EOF: serve retires its servers and exits."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(ANSWER_TIMEOUT)
        self.process.stdout.close()


# ----------------------------------------------------------------------------- counting


def compact(value: Any) -> int:
    """Bytes of ``value`` as compact JSON (the way every figure here counts JSON)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def text_bytes(result: Message) -> int:
    """Bytes of a tool result's text blocks: what a host that shows text shows."""
    return sum(len(text.encode("utf-8")) for text in texts(result))


def texts(result: Message) -> List[str]:
    blocks = result.get("content") or []
    return [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]


def recorded(key: str) -> Message:
    with open(os.path.join(PANEL_DIR, key + ".json"), encoding="utf-8") as source:
        listing: Message = json.load(source)
    return listing


def raw_bytes(keys: Sequence[str]) -> int:
    """What a host without code mode shows: each server's ``{"tools": [...]}`` as sent."""
    return sum(compact({"tools": recorded(key)["tools"]}) for key in keys)


# ----------------------------------------------------------------------------- matches


def match_names(result: Message, keys: Sequence[str]) -> List[str]:
    """The ``server.function`` names a search answered, best first.

    From ``structuredContent`` when a list in it (the first, walking it in order)
    holds objects that name a match; else from the text. Kept loose on purpose: the
    answer's shape may change, and recall should not."""
    names = structured_names(result.get("structuredContent"), keys)
    if names is None:
        names = text_names("\n".join(texts(result)), keys)
    return names


def structured_names(value: Any, keys: Sequence[str]) -> Optional[List[str]]:
    """The first list of match objects in ``value``, as names; ``None`` if there is none."""
    if isinstance(value, list):
        names = [name for name in (item_name(item, keys) for item in value) if name]
        if names:
            return names
    children: Iterable[Any] = value.values() if isinstance(value, dict) else ()
    if isinstance(value, list):
        children = value
    for child in children:
        found = structured_names(child, keys)
        if found is not None:
            return found
    return None


def item_name(item: Any, keys: Sequence[str]) -> Optional[str]:
    """``server.function`` of a match object: its two fields, or its dotted ``name``."""
    if not isinstance(item, dict):
        return None
    server, function, name = item.get("server"), item.get("function"), item.get("name")
    if isinstance(server, str) and isinstance(function, str):
        return "%s.%s" % (server, function)
    if isinstance(name, str) and name.partition(".")[0] in keys:
        return name
    return None


def text_names(text: str, keys: Sequence[str]) -> List[str]:
    """Each ``key.function`` token of a configured server in ``text``, once, in order
    (``cap.mcp.fs.read_file(`` gives ``fs.read_file``). Not inside a longer dotted
    name or a host name: ``developers.notion.com/...`` names no tool."""
    servers = "|".join(re.escape(key) for key in sorted(keys, key=len, reverse=True))
    token = r"(?:(?<=cap\.mcp\.)|(?<![\w.-]))((?:%s)\.[A-Za-z_]\w*)(?!\.\w|/)" % servers
    tokens = re.findall(token, text)
    return list(dict.fromkeys(tokens))


# ----------------------------------------------------------------------------- a panel


def load_queries() -> List[Query]:
    with open(QUERIES, encoding="utf-8") as source:
        queries: List[Query] = json.load(source)["queries"]
    return queries


def panel_queries(queries: Sequence[Query], keys: Sequence[str]) -> List[Query]:
    """The queries whose task this panel can do, each expecting only its tools."""
    kept = []
    for query in queries:
        expect = [name for name in query["expect"] if name.partition(".")[0] in keys]
        if expect:
            kept.append(dict(query, expect=expect))
    return kept


def write_config(keys: Sequence[str], where: str) -> str:
    """A config of the panel's recordings, each served by ``listing_server.py``."""
    entries = {
        key: {
            "command": sys.executable,
            "args": [LISTING_SERVER, os.path.join(PANEL_DIR, key + ".json")],
        }
        for key in keys
    }
    path = os.path.join(where, "servers.json")
    with open(path, "w", encoding="utf-8") as out:
        json.dump({"mcpServers": entries}, out)
    return path


def measure(name: str, queries: Sequence[Query]) -> Message:
    """One panel's figures, from one serve: show, every search, every describe."""
    keys = PANELS[name]
    mine = panel_queries(queries, keys)
    with tempfile.TemporaryDirectory(prefix="bench-context-") as where:
        host = Host(write_config(keys, where), os.path.join(where, "serve.stderr"))
        try:
            listing = host.request("tools/list", {})
            show = shown(host, listing)
            fixed = show - function_list_bytes(listing)
            searched = [search(host, query, keys) for query in mine]
            wanted = sorted({expected for query in mine for expected in query["expect"]})
            described = [host.call("describe_tool", {"name": each}) for each in wanted]
        finally:
            host.close()
    unknown = [each for each, result in zip(wanted, described) if result.get("isError")]
    if unknown:  # the queries name a tool serve does not have: the panel is wrong
        print("serve knows no %s: fix %s" % (", ".join(unknown), QUERIES), file=sys.stderr)
        raise SystemExit(2)
    tools = sum(len(recorded(key)["tools"]) for key in keys)
    made = figures(name, keys, tools, show, searched, described)
    made["fixed"] = fixed
    made["goals"]["fixed"] = fixed <= GOAL_FIXED
    made["fixed_approving"] = fixed_approving(keys)
    return made


def fixed_approving(keys: Sequence[str]) -> int:
    """The fixed cost when calls wait for a person's yes (``APPROVING``): the
    instructions' line on it and run_program's ``approve``; reported, not a goal,
    since a config opts into it."""
    with tempfile.TemporaryDirectory(prefix="bench-context-") as where:
        host = Host(write_config(keys, where), os.path.join(where, "serve.stderr"), APPROVING)
        try:
            listing = host.request("tools/list", {})
        finally:
            host.close()
    return shown(host, listing) - function_list_bytes(listing)


def shown(host: Host, listing: Message) -> int:
    """What a host shows its model at the start: the instructions and the listing."""
    return len(host.started.get("instructions", "").encode("utf-8")) + compact(listing)


def function_list_bytes(listing: Message) -> int:
    """The bytes of run_program's function list in the compact listing (0 without one)."""
    for tool in listing.get("tools", []):
        description = tool.get("description", "") if isinstance(tool, dict) else ""
        if tool.get("name") == "run_program" and FUNCTION_LIST in description:
            shown = description[description.index(FUNCTION_LIST) :]
            return compact(shown) - 2  # as it sits inside the description's quotes
    return 0


def search(host: Host, query: Query, keys: Sequence[str]) -> Message:
    """One query through ``search_tools`` with its defaults: the names and the bytes."""
    result = host.call("search_tools", {"query": query["query"]})
    names = match_names(result, keys)
    ranks = [names.index(e) + 1 for e in query["expect"] if e in names]
    return {
        "query": query["query"],
        "expect": query["expect"],
        "found": names[:5],
        "rank": min(ranks) if ranks else None,
        "text": text_bytes(result),
        "structured": compact(result.get("structuredContent")),
    }


def spread(values: Sequence[int]) -> Dict[str, float]:
    return {"mean": statistics.mean(values), "max": float(max(values))}


def figures(
    name: str,
    keys: Sequence[str],
    tools: int,
    show: int,
    searched: Sequence[Message],
    described: Sequence[Message],
) -> Message:
    """The panel's numbers, and its goals judged."""
    raw = raw_bytes(keys)
    search_text = spread([each["text"] for each in searched])
    describe_text = spread([text_bytes(each) for each in described])
    discovery = show + 2 * search_text["mean"] + describe_text["mean"]
    recall = {
        "@%d" % k: sum(1 for e in searched if e["rank"] and e["rank"] <= k) / len(searched)
        for k in RANKS
    }
    return {
        "servers": len(keys),
        "tools": tools,
        "queries": len(searched),
        "raw": raw,
        "show": show,
        "search_text": search_text,
        "search_structured": spread([each["structured"] for each in searched]),
        "describe_text": describe_text,
        "describe_structured": spread(
            [compact(each.get("structuredContent")) for each in described]
        ),
        "discovery": discovery,
        "discovery_ratio": discovery / raw,
        "recall": recall,
        "goals": {
            "recall@3": recall["@3"] >= GOAL_RECALL,
            "discovery": discovery / raw <= GOAL_DISCOVERY[name],
        },
        "searches": list(searched),
    }


# ----------------------------------------------------------------------------- report


def number(value: float) -> str:
    return "{:,.0f}".format(value)


def row(label: str, cells: Sequence[str]) -> str:
    return "  %-44s" % label + "".join("%-26s" % cell for cell in cells).rstrip()


#: The table's rows: a label, and each panel's cell.
ROWS: List[Tuple[str, Callable[[Message], str]]] = [
    ("servers, tools, queries", lambda p: "%d, %d, %d" % (p["servers"], p["tools"], p["queries"])),
    ("raw tools/list JSON (no code mode)", lambda p: number(p["raw"])),
    ("recall@1 / @3 / @5", lambda p: " / ".join(percent(p["recall"]["@%d" % k]) for k in RANKS)),
    ("show: instructions + tools/list", lambda p: ratio(p["show"], p["raw"])),
    ("  of it fixed (no function list)", lambda p: number(p["fixed"])),
    ("  fixed, with --approve non-read-only", lambda p: number(p["fixed_approving"])),
    ("one search, text: mean / max", lambda p: pair(p["search_text"])),
    ("  structuredContent: mean / max", lambda p: pair(p["search_structured"])),
    ("one describe, text: mean / max", lambda p: pair(p["describe_text"])),
    ("  structuredContent: mean / max", lambda p: pair(p["describe_structured"])),
    ("discovery: show + 2 searches + 1 describe", lambda p: ratio(p["discovery"], p["raw"])),
]


def lines(found: Dict[str, Message]) -> List[str]:
    """The table, one column a panel, the raw listing's bytes beside each figure; the goals."""
    report = [
        "The model's context through mcp-client serve (recorded real servers; bytes, UTF-8):",
        row("", ["%s panel" % name for name in found]),
    ]
    report += [row(label, [cell(p) for p in found.values()]) for label, cell in ROWS]
    report.append("goals:")
    for name, p in found.items():
        recall = "%s (%s)" % (met(p["goals"]["recall@3"]), percent(p["recall"]["@3"]))
        report.append(row("recall@3 >= %s, %s panel" % (percent(GOAL_RECALL), name), [recall]))
    for name, p in found.items():
        judged = "%s (%s)" % (met(p["fixed"] <= GOAL_FIXED), number(p["fixed"]))
        report.append(
            row("fixed cost <= %s bytes, %s panel" % (number(GOAL_FIXED), name), [judged])
        )
    for name, p in found.items():
        goal, share = GOAL_DISCOVERY[name], p["discovery_ratio"]
        judged = "%s (%s)" % (met(p["goals"]["discovery"]), share_of_raw(share))
        report.append(row("discovery <= %s, %s panel" % (share_of_raw(goal), name), [judged]))
    return report


def percent(share: float) -> str:
    return "%.0f%%" % (100 * share)


def share_of_raw(share: float) -> str:
    """A share of raw as the goals say it: a percentage below raw, a factor from it."""
    return "%.1f%% of raw" % (100 * share) if share < 1 else "%.2fx raw" % share


def ratio(value: float, raw: float) -> str:
    return "%s (%s)" % (number(value), share_of_raw(value / raw))


def pair(spread_: Dict[str, float]) -> str:
    return "%s / %s" % (number(spread_["mean"]), number(spread_["max"]))


def met(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def misses(found: Dict[str, Message]) -> List[str]:
    """Each query without a hit in the first three: what came first instead."""
    report = []
    for name, panel in found.items():
        wrong = [each for each in panel["searches"] if not (each["rank"] and each["rank"] <= 3)]
        report.append("%s panel, %d queries missed at 3:" % (name, len(wrong)))
        for each in wrong:
            rank = "rank %d" % each["rank"] if each["rank"] else "not in the answer"
            report.append("  %r -> %s; want %s (%s)" % (
                each["query"], ", ".join(each["found"][:3]) or "nothing",
                " or ".join(each["expect"]), rank))  # fmt: skip
    return report


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="the model's context through serve")
    parser.add_argument("--json", metavar="FILE", help="also write the raw figures here")
    parser.add_argument("--misses", action="store_true", help="list the queries missed at 3")
    parser.add_argument("--goals-strict", action="store_true", help="exit 1 if a goal is unmet")
    args = parser.parse_args(argv)
    queries = load_queries()
    found = {name: measure(name, queries) for name in PANELS}
    print("\n".join(lines(found) + (misses(found) if args.misses else [])))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(found, out, indent=1)
    every = all(ok for panel in found.values() for ok in panel["goals"].values())
    return 1 if args.goals_strict and not every else 0


if __name__ == "__main__":
    sys.exit(main())
