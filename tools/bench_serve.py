#!/usr/bin/env python3
"""``mcp-client serve``'s figures, for ``tools/bench.py`` (``--serve``; also in the full run).

* **Shown before the first call**, in bytes: what a host's model gets from ``serve``
  (the ``instructions`` plus its ``tools/list`` result, as JSON), beside the whole
  surface and the raw ``tools/list`` JSON of the same servers -- what a host shows its
  model without code mode -- counted as ``bench --codemode`` counts them, for the same
  two configs (``bench.SHOWN_PANELS``: time, memory and filesystem, and the test panel's servers
  together). Bytes are counted, not timed: the same on every run.
* **Calls per second** from a program, sequential, through ``serve``'s ``run_program``
  (the program measures its own window) against the same calls made directly with a
  ``Client``, the two taking turns window by window; behind the echo server
  (``tools/echo_server.py``) and behind mcp-server-time.
* **A one-line program's answer**: ``run_program("print(1)")``, request to answer,
  jailed and not (jailed only where bwrap is).

    python tools/bench.py --serve [--quick]
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ECHO = os.path.join(HERE, "echo_server.py")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

Figures = Dict[str, float]
Entry = Dict[str, Any]
#: Seconds any one answer of serve's may take here (three to six servers' start-up).
ANSWER_TIMEOUT = 180.0

#: A program that makes sequential calls for a window and prints its rate.
RATE_PROGRAM = """
import time as clock
from cap.mcp import s1
for _ in range(50):
    s1.%(call)s
count, start = 0, clock.perf_counter()
while clock.perf_counter() < start + %(seconds)r:
    s1.%(call)s
    count += 1
print(count / (clock.perf_counter() - start))
"""
#: The host's initialize params.
HELLO: Entry = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"},
}
#: The calls measured, behind each server: the program's spelling, the wire name, arguments.
CALLS = {
    "echo": ('echo(query="x")', "echo", {"query": "x"}),
    "time": ('get_current_time(timezone="UTC")', "get_current_time", {"timezone": "UTC"}),
}


class Serve:
    """``python -m mcp_client serve`` on pipes, this checkout's package."""

    def __init__(self, config: str, *flags: str) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        argv = [sys.executable, "-m", "mcp_client", "serve", "--config", config, *flags]
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env,
        )  # fmt: skip
        self.pending, self.last = b"", 0
        self.started = self.request("initialize", HELLO)
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message: Entry) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def request(self, method: str, params: Entry) -> Any:
        self.last += 1
        self.write({"jsonrpc": "2.0", "id": self.last, "method": method, "params": params})
        while True:
            answer = self.read()
            if answer.get("id") == self.last:
                if "error" in answer:
                    raise SystemExit("serve refused %s: %s" % (method, answer["error"]))
                return answer["result"]

    def read(self) -> Entry:
        stdout = self.process.stdout
        assert stdout is not None
        while b"\n" not in self.pending:
            ready, _, _ = select.select([stdout.fileno()], [], [], ANSWER_TIMEOUT)
            chunk = os.read(stdout.fileno(), 1 << 20) if ready else b""
            if not chunk:
                raise SystemExit("serve stopped answering (exit %s)" % self.process.poll())
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        message: Entry = json.loads(line)
        return message

    def run(self, code: str) -> Entry:
        result: Entry = self.request(
            "tools/call", {"name": "run_program", "arguments": {"code": code}}
        )
        if result.get("isError"):
            raise SystemExit("the program failed: %s" % result["content"][0]["text"])
        return result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # EOF: serve retires everything and exits
        self.process.wait(ANSWER_TIMEOUT)
        assert self.process.stdout is not None
        self.process.stdout.close()


def compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def jail_flags() -> List[str]:
    return [] if shutil.which("bwrap") else ["--no-jail"]


# ----------------------------------------------------------------------------- bytes shown


def shown(panel: str) -> Figures:
    """The byte counts for one of ``bench.SHOWN_PANELS``: the surface and the raw
    ``tools/list`` JSON as ``bench --codemode`` counts them, and serve's."""
    import bench  # the panels and the counting, defined once, beside this script

    figures = bench.worker_shown(panel)
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as where:
        servers = bench.shown_servers(panel, where)
        entries = {
            each.name: {
                "command": each.spawn.executable,
                "args": list(each.spawn.args),
                "env": dict(each.spawn.env or {}),
            }
            for each in servers
        }
        path = os.path.join(where, "servers.json")
        with open(path, "w") as out:
            json.dump({"mcpServers": entries}, out)
        serve = Serve(path, *jail_flags())
        try:
            instructions = serve.started.get("instructions", "")
            listing = serve.request("tools/list", {})
        finally:
            serve.close()
    figures["serve"] = float(len(instructions.encode("utf-8")) + compact(listing))
    return figures


# ----------------------------------------------------------------------------- rates


def rates(server: str, repeats: int, duration: float) -> Figures:
    """Calls/s from a program through serve, and direct, taking turns."""
    from mcp_client import Options, ProcessTransport, Spawn, start

    argv = echo_or_time(server)
    if argv is None:
        return {}
    program, wire, arguments = CALLS[server]
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as where:
        path = os.path.join(where, "servers.json")
        with open(path, "w") as out:
            json.dump({"mcpServers": {"s1": {"command": argv[0], "args": argv[1:]}}}, out)
        serve = Serve(path, "--max-calls", "100000000", *jail_flags())
        direct = start(ProcessTransport(Spawn(argv[0], tuple(argv[1:]))), Options())
        code = RATE_PROGRAM % {"call": program, "seconds": duration}
        through, directly = [], []
        try:
            for _ in range(repeats):
                stdout = serve.run(code)["structuredContent"]["stdout"]
                through.append(float(stdout))
                directly.append(direct_rate(lambda: direct.call_tool(wire, arguments), duration))
        finally:
            direct.shutdown()
            serve.close()
    return {"through": statistics.median(through), "direct": statistics.median(directly)}


def echo_or_time(server: str) -> Optional[List[str]]:
    if server == "echo":
        return [sys.executable, ECHO, "--tools", "3", "--pages", "1"]
    if importlib.util.find_spec("mcp_server_time") is None:
        return None
    return [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


def direct_rate(call: Any, seconds: float) -> float:
    for _ in range(50):
        call()
    count, begun = 0, time.perf_counter()
    while time.perf_counter() < begun + seconds:
        call()
        count += 1
    return count / (time.perf_counter() - begun)


def one_line(events: int) -> Figures:
    """``run_program("print(1)")``, request to answer: the median of ``events``."""
    figures: Figures = {}
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as where:
        path = os.path.join(where, "servers.json")
        argv = echo_or_time("echo") or []
        with open(path, "w") as out:
            json.dump({"mcpServers": {"s1": {"command": argv[0], "args": argv[1:]}}}, out)
        kinds: List[Tuple[str, List[str]]] = [("unjailed", ["--no-jail"])]
        if shutil.which("bwrap"):
            kinds.append(("jailed", []))
        for kind, flags in kinds:
            serve = Serve(path, *flags)
            try:
                serve.run("print(1)")  # the first run's imports, off the clock
                times = []
                for _ in range(events):
                    begun = time.perf_counter()
                    serve.run("print(1)")
                    times.append(time.perf_counter() - begun)
            finally:
                serve.close()
            figures[kind] = statistics.median(times)
    return figures


# ----------------------------------------------------------------------------- report


def figures(repeats: int, duration: float, events: int) -> Dict[str, Figures]:
    found: Dict[str, Figures] = {}
    for panel in ("readme", "panel"):
        found["shown_" + panel] = shown(panel)
    for server in CALLS:
        found["rate_" + server] = rates(server, repeats, duration)
    found["one_line"] = one_line(events)
    return found


def lines(found: Dict[str, Figures]) -> List[str]:
    report = ["mcp-client serve (code mode as an MCP server):"]
    for name, what in (("readme", "time, memory and filesystem"),
                       ("panel", "the test panel (time, git, memory, filesystem, "
                                 "everything, sequential-thinking)")):  # fmt: skip
        f = found.get("shown_" + name)
        if not f or not f.get("raw"):
            report.append("  shown before the first call, %s: not installed" % what)
            continue
        report += [
            "  shown before the first call, %s (%d servers, %d tools):" % (what, f["servers"],
                                                                          f["tools"]),
            "    serve's instructions + tools/list %s bytes; the whole surface %s bytes; "
            "the raw tools/list JSON %s bytes" % tuple(
                "{:,.0f}".format(f[key]) for key in ("serve", "surface", "raw")
            ),
            "    serve shows %.1f%% less than the raw listing (the surface alone: %.1f%% less)"
            % (100 * (1 - f["serve"] / f["raw"]), 100 * (1 - f["surface"] / f["raw"])),
        ]  # fmt: skip
    for server, what in (("echo", "tools/echo_server.py"), ("time", "mcp-server-time")):
        f = found.get("rate_" + server) or {}
        if not f:
            report.append("  calls/s behind %s: not installed" % what)
            continue
        report.append(
            "  sequential calls behind %s: %s/s from a program through serve, %s/s direct "
            "with a Client: %.2fx" % (what, "{:,.0f}".format(f["through"]),
                                       "{:,.0f}".format(f["direct"]), f["through"] / f["direct"])
        )  # fmt: skip
    one = found.get("one_line", {})
    report.append(
        "  run_program('print(1)'), request to answer: %s"
        % ", ".join("%s %.0f ms" % (kind, seconds * 1e3) for kind, seconds in one.items())
    )
    return report


def main(argv: Optional[List[str]] = None) -> None:
    quick = "--quick" in (sys.argv[1:] if argv is None else argv)
    print("\n".join(lines(figures(3 if quick else 7, 0.3 if quick else 0.5, 3 if quick else 9))))


if __name__ == "__main__":
    main()
