"""The same job with three MCP clients: this one, the official SDK and FastMCP.

The job: start ``mcp-server-time`` (from PyPI), list its tools, call
``get_current_time``, shut the server down. Each client does it in a fresh
interpreter, so every figure includes what a user's program pays. Measured:

* **end to end**: the whole job, interpreter start included (median of the
  rounds; the clients take turns, round by round, so all see the same machine);
* **import**: the client's import alone, in fresh interpreters taking turns
  (median);
* **error lines**: what the job prints when the server fails at start (a bad
  ``--local-timezone``) and when its command does not exist;
* **group gone at shutdown**: the server is a wrapper that starts a grandchild
  first (as ``npx`` and ``uvx`` do); is every process of it gone when the job's
  interpreter has exited?
* **gone after SIGKILL**: the job is SIGKILLed while the server runs; is every
  process of the server gone within two seconds? (This client is measured
  three ways: a plain start, ``ProcessTransport(spawn, lifeline=True)``, and
  with ``Jail()``.)

Run: ``python tools/compare_sdks.py [--rounds N] [--json FILE]``. Needs
``pip install mcp fastmcp mcp-server-time`` (Python 3.10+); a client that is
not installed is reported as such. Every child is bounded by a timeout, and
every process the script started is killed before it ends.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Dict, List, Optional, Sequence, Tuple

CHILD_TIMEOUT = 60.0
CLIENTS = ("mcp_client", "SDK", "FastMCP")

IMPORTS = {
    "mcp_client": "import mcp_client",
    "SDK": (
        "from mcp import ClientSession, StdioServerParameters\n"
        "from mcp.client.stdio import stdio_client"
    ),
    "FastMCP": "from fastmcp import Client",
}

# Each job reads the server's argv (JSON) and a mode ("run" or "hang") from its
# arguments; it lets any failure propagate, as a user's first program would.
JOBS = {
    "mcp_client": """
import json, sys, time
from mcp_client import Jail, ProcessTransport, Spawn, start
argv, mode, readable = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
spawn = Spawn(argv[0], tuple(argv[1:]))
if mode == "jailed":
    transport = ProcessTransport(spawn, jail=Jail(readable=(readable,)))
elif mode == "lifeline":
    transport = ProcessTransport(spawn, lifeline=True)
else:
    transport = ProcessTransport(spawn)
with start(transport) as client:
    client.list_tools()
    client.call_tool("get_current_time", {"timezone": "UTC"})
    if mode != "run":
        print("ready", flush=True)
        time.sleep(600)
""",
    "SDK": """
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
argv, mode = json.loads(sys.argv[1]), sys.argv[2]
async def job():
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            await session.call_tool("get_current_time", {"timezone": "UTC"})
            if mode != "run":
                print("ready", flush=True)
                await asyncio.sleep(600)
asyncio.run(job())
""",
    "FastMCP": """
import asyncio, json, sys
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
argv, mode = json.loads(sys.argv[1]), sys.argv[2]
async def job():
    async with Client(StdioTransport(argv[0], argv[1:])) as client:
        await client.list_tools()
        await client.call_tool("get_current_time", {"timezone": "UTC"})
        if mode != "run":
            print("ready", flush=True)
            await asyncio.sleep(600)
asyncio.run(job())
""",
}

# The server with a grandchild: it starts a sleeper (its own child) in its
# process group, then runs mcp-server-time in its own process. Both carry the
# marker in their command lines, so they can be found from outside a jail.
WRAPPER = """
import runpy, subprocess, sys
marker = sys.argv[1]
sleeper = [sys.executable, "-c", "import time; time.sleep(600)", marker + "-grandchild"]
quiet = subprocess.DEVNULL
subprocess.Popen(sleeper, stdin=quiet, stdout=quiet, stderr=quiet)
sys.argv = ["mcp-server-time", "--local-timezone", "UTC"]
runpy.run_module("mcp_server_time", run_name="__main__")
"""


def installed(client: str) -> bool:
    """Whether ``client``'s import works in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS[client]], capture_output=True, timeout=CHILD_TIMEOUT
    )
    return done.returncode == 0


def run_job(
    client: str, argv: Sequence[str], mode: str, workdir: str
) -> "subprocess.CompletedProcess[str]":
    """One job in a fresh interpreter, to its exit. Its output goes to a file, not a
    pipe: a process the server left behind could hold a pipe open long after."""
    command = [sys.executable, "-c", JOBS[client], json.dumps(list(argv)), mode, workdir]
    with tempfile.TemporaryFile("w+") as output:
        job = subprocess.Popen(command, stdout=output, stderr=output, cwd=workdir)
        try:
            returncode = job.wait(CHILD_TIMEOUT)
        finally:
            job.kill()
            job.wait()
        output.seek(0)
        return subprocess.CompletedProcess(command, returncode, output.read(), "")


def seconds_of(command: List[str]) -> float:
    """Wall-clock seconds of one child process, to its exit."""
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, timeout=CHILD_TIMEOUT, check=True)
    return time.perf_counter() - started


def end_to_end(clients: Sequence[str], rounds: int, workdir: str) -> Dict[str, float]:
    """Median seconds of the whole job, the clients taking turns round by round."""
    argv = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    times: Dict[str, List[float]] = {client: [] for client in clients}
    for _ in range(rounds):
        for client in clients:
            command = [sys.executable, "-c", JOBS[client], json.dumps(argv), "run", workdir]
            times[client].append(seconds_of(command))
    return {client: statistics.median(values) for client, values in times.items()}


def import_seconds(clients: Sequence[str], rounds: int) -> Dict[str, float]:
    """Median seconds of the import alone, in fresh interpreters taking turns."""
    times: Dict[str, List[float]] = {client: [] for client in clients}
    for _ in range(rounds):
        for client in clients:
            code = (
                "import time\nstarted = time.perf_counter()\n%s\n"
                "print(time.perf_counter() - started)" % IMPORTS[client]
            )
            done = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                timeout=CHILD_TIMEOUT,
                check=True,
            )
            times[client].append(float(done.stdout))
    return {client: statistics.median(values) for client, values in times.items()}


def error_lines(client: str, workdir: str) -> Tuple[int, int]:
    """Lines the job prints for a server that fails at start, and for a missing command."""
    failing = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "Not/AZone"]
    counts = []
    for argv in (failing, ["no-such-mcp-server-command"]):
        done = run_job(client, argv, "run", workdir)
        counts.append(len((done.stdout + done.stderr).splitlines()) if done.returncode else 0)
    return counts[0], counts[1]


def marked(marker: str) -> List[int]:
    """The pids whose command line holds ``marker`` (zombies left out)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as cmdline:
                words = cmdline.read().split(b"\0")
            with open("/proc/%s/stat" % entry, "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and any(word.startswith(marker.encode()) for word in words):
            pids.append(int(entry))
    return pids


def kill_marked(marker: str) -> None:
    """SIGKILL whatever the script's own servers left behind."""
    for pid in marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wrapper_argv(workdir: str, marker: str) -> List[str]:
    path = os.path.join(workdir, "server_with_grandchild.py")
    with open(path, "w") as script:
        script.write(WRAPPER)
    return [sys.executable, path, marker]


def gone_at_shutdown(client: str, workdir: str) -> Optional[bool]:
    """Whether the server and its grandchild are gone once the job has exited."""
    marker = "mcp-compare-" + uuid.uuid4().hex
    try:
        done = run_job(client, wrapper_argv(workdir, marker), "run", workdir)
        if done.returncode != 0:
            return None
        return not marked(marker)
    finally:
        kill_marked(marker)


def gone_after_sigkill(client: str, workdir: str, mode: str) -> Optional[bool]:
    """Whether every process of the server is gone within 2 s of the job's SIGKILL."""
    marker = "mcp-compare-" + uuid.uuid4().hex
    argv = wrapper_argv(workdir, marker)
    command = [sys.executable, "-c", JOBS[client], json.dumps(argv), mode, workdir]
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=workdir)
    try:
        assert job.stdout is not None
        if job.stdout.readline() != b"ready\n":
            return None
        job.kill()
        job.wait(CHILD_TIMEOUT)
        deadline = time.monotonic() + 2.0
        while marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        return not marked(marker)
    finally:
        job.kill()
        job.wait(CHILD_TIMEOUT)
        assert job.stdout is not None
        job.stdout.close()
        kill_marked(marker)


def yes_no(value: Optional[bool]) -> str:
    return "-" if value is None else ("yes" if value else "no")


def measure(rounds: int, clients: Sequence[str]) -> Dict[str, Dict[str, object]]:
    """Every figure, by client."""
    with tempfile.TemporaryDirectory(prefix="mcp-compare-") as workdir:
        figures: Dict[str, Dict[str, object]] = {client: {} for client in clients}
        for client, seconds in end_to_end(clients, rounds, workdir).items():
            figures[client]["end_to_end_s"] = round(seconds, 3)
        for client, seconds in import_seconds(clients, 2 * rounds + 1).items():
            figures[client]["import_s"] = round(seconds, 3)
        for client in clients:
            failing, missing = error_lines(client, workdir)
            figures[client]["error_lines_failing_server"] = failing
            figures[client]["error_lines_missing_command"] = missing
            figures[client]["group_gone_at_shutdown"] = gone_at_shutdown(client, workdir)
            figures[client]["gone_after_sigkill"] = gone_after_sigkill(client, workdir, "hang")
        if "mcp_client" in figures:
            for mode in ("lifeline", "jailed"):
                gone = gone_after_sigkill("mcp_client", workdir, mode)
                figures["mcp_client"]["gone_after_sigkill_" + mode] = gone
    return figures


ROWS = (
    ("end to end, start/list/call/shut down (s, median)", "end_to_end_s"),
    ("import (s, median)", "import_s"),
    ("error lines: the server fails at start", "error_lines_failing_server"),
    ("error lines: no such command", "error_lines_missing_command"),
    ("server's whole group gone at shutdown", "group_gone_at_shutdown"),
    ("server gone after the harness's SIGKILL", "gone_after_sigkill"),
    ("  the same, started with lifeline=True", "gone_after_sigkill_lifeline"),
    ("  the same, the server jailed (Jail())", "gone_after_sigkill_jailed"),
)


def table(figures: Dict[str, Dict[str, object]]) -> str:
    """The figures as a Markdown table, one column a client."""
    clients = list(figures)
    lines = ["| | %s |" % " | ".join(clients), "|---|%s" % ("---|" * len(clients))]
    for label, key in ROWS:
        cells = []
        for client in clients:
            value = figures[client].get(key)
            if isinstance(value, bool) or value is None:
                cells.append(yes_no(value) if key in figures[client] else "n/a")
            elif isinstance(value, float):
                cells.append("%.2f" % value)
            else:
                cells.append(str(value))
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="end-to-end rounds (default 5)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    clients = [client for client in CLIENTS if installed(client)]
    missing = [client for client in CLIENTS if client not in clients]
    if "mcp_client" not in clients or not installed_server():
        print("compare_sdks: needs mcp_client and mcp-server-time importable", file=sys.stderr)
        return 2
    figures = measure(args.rounds, clients)
    print("Python %s; %s" % (sys.version.split()[0], versions(clients)))
    if missing:
        print("not installed, left out: %s" % ", ".join(missing))
    print(table(figures))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)
    return 0


def installed_server() -> bool:
    done = subprocess.run(
        [sys.executable, "-c", "import mcp_server_time"], capture_output=True, timeout=60
    )
    return done.returncode == 0


def versions(clients: Sequence[str]) -> str:
    """The installed versions, as ``name version`` pairs."""
    from importlib import metadata

    names = {"mcp_client": "mcp_client", "SDK": "mcp", "FastMCP": "fastmcp"}
    shown = []
    for client in clients:
        try:
            shown.append("%s %s" % (names[client], metadata.version(names[client])))
        except metadata.PackageNotFoundError:
            shown.append("%s (from the checkout)" % names[client])
    return ", ".join(shown)


if __name__ == "__main__":
    sys.exit(main())
