#!/usr/bin/env python3
"""Benchmark: this client beside the raw floors and the official MCP Python SDK.

Four clients talk to the same stdlib echo server (``tools/echo_server.py``):

* **floor** -- no library: one thread writes a JSON-RPC line to the child's stdin
  (``json.dumps``) and reads a line back (``json.loads``); for 64 in flight, a
  pipelined window of 64 requests;
* **threaded floor** -- the limit of the design card's shape: a reader thread
  hands each ``json.loads`` result to its caller through a lock (a waiter per
  call), callers write their own frames; no validation, no write combining, no
  deadlines, no death paths. What this client pays beyond it is its own doing;
  what the threaded floor pays beyond the floor is the shape's;
* **mcp_client** -- this package (and again with wire capture on, to a file);
* **SDK** -- the official ``mcp`` package's ``ClientSession`` over its stdio
  client (asyncio), when it is importable (``pip install .[bench]``).

Every client is measured in fresh subprocesses of this script (``--worker``), so
one client's imports, garbage and memory peaks never touch another's figures.
Rates are the median of ``repeats`` timed windows; single events (one 8 MiB
result, one listing, one handshake, one import) are the median of ``events``
runs. Ratios are this client's figure divided by the other client's: for rates
higher is better, for times, memory and CPU lower is better.

    python tools/bench.py            # the full run (about a minute and a half)
    python tools/bench.py --quick    # a shorter, noisier run
    python tools/bench.py --json out.json   # also keep the raw figures
    python tools/bench.py --codemode        # only code mode's hop and run() start-up
    python tools/bench.py --serve           # only mcp-client serve's (tools/bench_serve.py)
    python tools/bench.py --context         # only what serve costs a model's context, on
                                            # recorded real servers (tools/bench_context.py)
    python tools/bench.py --goals           # the performance goals against their floors,
                                            # import, codegen, the per-call profile (~2 min)
    python tools/bench.py --profile         # only the per-call profile of both threads
    python tools/bench.py --instructions    # only instructions per call (needs valgrind)
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SERVER = os.path.join(HERE, "echo_server.py")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

MIB = 1024 * 1024
BLOB = 8 * MIB  # measurement 3
BIG = 15 * MIB  # measurement 6
TOOLS, PAGES = 1000, 20
WINDOW = 64  # calls in flight
IDLE = 2.0  # seconds of idleness measured
CLIENTS = ("floor", "threaded", "client", "capture", "sdk")

Figures = Dict[str, float]


def median(values: List[float]) -> float:
    return statistics.median(values)


def server_argv() -> List[str]:
    return [sys.executable, SERVER, "--tools", str(TOOLS), "--pages", str(PAGES)]


def maxrss_mib() -> float:
    """This process's peak RSS. Linux: ``VmHWM``, which -- unlike ``ru_maxrss``, kept
    across ``exec`` -- starts afresh in a new program, whatever its parent's size."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / MIB


# ============================================================================ the floor


class Floor:
    """No library: a child, a line written, a line read, json both ways."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(server_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd = self.proc.stdin.fileno()
        self.readline = self.proc.stdout.readline
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "floor", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def send_request(self, method: str, params: Any) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def receive(self) -> Any:
        return json.loads(self.readline())

    def request(self, method: str, params: Any) -> Any:
        ident = self.send_request(method, params)
        message = self.receive()
        assert message["id"] == ident, message
        return message["result"]

    def echo(self) -> Any:
        return self.request("tools/call", {"name": "echo", "arguments": {}})

    def blob(self, size: int) -> str:
        result = self.request("tools/call", {"name": "blob", "arguments": {"size": size}})
        return str(result["content"][0]["text"])

    def list_tools(self) -> int:
        tools = 0
        params: Dict[str, Any] = {}
        while True:
            page = self.request("tools/list", params)
            tools += len(page["tools"])
            if "nextCursor" not in page:
                return tools
            params = {"cursor": page["nextCursor"]}

    def pipelined(self, seconds: float) -> float:
        """Calls per second with a window of ``WINDOW`` requests always in flight."""
        params = {"name": "echo", "arguments": {}}
        for _ in range(WINDOW):
            self.send_request("tools/call", params)
        done, outstanding = 0, WINDOW
        start = time.perf_counter()
        end = start + seconds
        while outstanding:
            self.receive()
            done, outstanding = done + 1, outstanding - 1
            if time.perf_counter() < end:
                self.send_request("tools/call", params)
                outstanding += 1
        return done / (time.perf_counter() - start)

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait()
        self.proc.stdout.close()


# ============================================================================ the threaded floor


class Waiter:
    """One call's hand-off: a lock held from birth, released once its answer is in."""

    __slots__ = ("lock", "message")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.message: Any = None


class ThreadedFloor(Floor):
    """The design card's shape with nothing else: a reader thread ``json.loads``
    each line and hands it to the caller waiting on that id; a caller writes its
    own frame under a write lock. No validation, no write combiner, no deadlines."""

    def __init__(self) -> None:
        # Not Floor's: its handshake would go through request() before the reader runs.
        self.proc = subprocess.Popen(server_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd = self.proc.stdin.fileno()
        self.next_id = 0
        self.lock = threading.Lock()  # next_id and pending
        self.write_lock = threading.Lock()  # one frame at a time on the pipe
        self.pending: Dict[int, Waiter] = {}
        self.reader = threading.Thread(target=self.read, args=(self.proc.stdout,), daemon=True)
        self.reader.start()
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "threaded", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def read(self, stdout: Any) -> None:
        for line in stdout:  # ends at EOF, after close()
            message = json.loads(line)
            with self.lock:
                waiter = self.pending.pop(message["id"])
            waiter.message = message
            waiter.lock.release()

    def send(self, message: Dict[str, Any]) -> None:
        with self.write_lock:
            super().send(message)

    def request(self, method: str, params: Any) -> Any:
        waiter = Waiter()
        with self.lock:
            self.next_id += 1
            ident = self.next_id
            self.pending[ident] = waiter
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        waiter.lock.acquire()
        return waiter.message["result"]

    def pipelined(self, seconds: float) -> float:
        return threaded_rate(self.echo, seconds)

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait()
        self.reader.join()
        self.proc.stdout.close()


def threaded_rate(call: Callable[[], Any], seconds: float) -> float:
    """Calls per second from ``WINDOW`` threads calling at once."""
    go, counts = threading.Event(), [0] * WINDOW
    end = [0.0]

    def worker(slot: int) -> None:
        go.wait()
        while time.perf_counter() < end[0]:
            call()
            counts[slot] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WINDOW)]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    end[0] = start + seconds
    go.set()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - start)


# ============================================================================ this client


class Ours:
    """This package, optionally with wire capture to a file, optionally jailed."""

    def __init__(
        self,
        capture: Optional[str] = None,
        jail: Any = None,
        server: Optional[List[str]] = None,
        lifeline: bool = False,
    ) -> None:
        from mcp_client import Options, ProcessTransport, Spawn, start

        argv = server or server_argv()
        spawn = Spawn(argv[0], tuple(argv[1:]))
        transport = ProcessTransport(spawn, jail=jail, lifeline=lifeline)
        self.client = start(transport, Options(capture=capture))

    def echo(self) -> Any:
        return self.client.call_tool("echo", {})

    def blob(self, size: int) -> str:
        block = self.client.call_tool("blob", {"size": size}).content[0]
        return str(getattr(block, "text"))

    def list_tools(self) -> int:
        return len(self.client.list_tools())

    def pipelined(self, seconds: float) -> float:
        return threaded_rate(self.echo, seconds)

    def close(self) -> None:
        self.client.shutdown()


#: The synchronous clients by name (the SDK is asyncio; "capture" is ``Ours(path)``).
SYNC: Dict[str, Callable[[], Any]] = {"floor": Floor, "threaded": ThreadedFloor, "client": Ours}


# ============================================================================ measurements


def rate(call: Callable[[], Any], seconds: float) -> float:
    """Sequential calls per second over one window of ``seconds``."""
    count = 0
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        call()
        count += 1
    return count / (time.perf_counter() - start)


def timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def warm(conn: Any) -> None:
    """First calls, the listing, and the server's copy of the blob, off the clock."""
    for _ in range(200):
        conn.echo()
    assert conn.list_tools() == TOOLS
    assert len(conn.blob(BLOB)) == BLOB


def handshake(make: Callable[[], Any]) -> float:
    """Spawn to ready; the connection is closed off the clock."""
    start = time.perf_counter()
    conn = make()
    took = time.perf_counter() - start
    conn.close()
    return took


def sync_command(conn: Any, make: Callable[[], Any], what: str, seconds: float) -> float:
    if what == "seq":
        return rate(conn.echo, seconds)
    if what == "inflight":
        return float(conn.pipelined(seconds))
    if what == "blob":
        return timed(lambda: conn.blob(BLOB))
    if what == "list":
        return timed(conn.list_tools)
    if what == "handshake":
        return handshake(make)
    raise ValueError(what)


def serve_sync(make: Callable[[], Any]) -> None:
    """Answer the driver's measurement commands, one JSON line each, until EOF.

    ``cpu`` answers with the CPU time (every thread of this process) the last
    measurement used, per call for a rate, per event for a time: a figure the
    other processes on the machine disturb far less than the wall clock.
    """
    conn = make()
    used = 0.0
    try:
        warm(conn)
        reply("ready")
        for line in sys.stdin:
            command = json.loads(line)
            if command["what"] == "cpu":
                reply(used)
                continue
            started, wall = time.process_time(), time.perf_counter()
            value = sync_command(conn, make, command["what"], command["seconds"])
            used = time.process_time() - started
            if command["what"] in ("seq", "inflight"):  # a rate: per call
                used /= max(1.0, value * (time.perf_counter() - wall))
            reply(value)
    finally:
        conn.close()


def reply(value: Any) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


# ============================================================================ the official SDK


class Sdk:
    """The official SDK's ClientSession over its stdio client (asyncio)."""

    def __init__(self) -> None:
        from contextlib import AsyncExitStack

        self.stack = AsyncExitStack()

    async def open(self) -> "Sdk":
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        argv = server_argv()
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        read, write = await self.stack.enter_async_context(stdio_client(params))
        self.session = await self.stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        return self

    async def echo(self) -> Any:
        return await self.session.call_tool("echo", {})

    async def blob(self, size: int) -> str:
        result = await self.session.call_tool("blob", {"size": size})
        return str(getattr(result.content[0], "text"))

    async def list_tools(self) -> int:
        from mcp.types import PaginatedRequestParams

        tools, cursor = 0, None
        while True:
            params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
            page = await self.session.list_tools(params=params)
            tools += len(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools

    async def pipelined(self, seconds: float) -> float:
        """Calls per second from ``WINDOW`` tasks calling at once."""
        import asyncio

        end = time.perf_counter() + seconds

        async def worker() -> int:
            count = 0
            while time.perf_counter() < end:
                await self.session.call_tool("echo", {})
                count += 1
            return count

        start = time.perf_counter()
        counts = await asyncio.gather(*(worker() for _ in range(WINDOW)))
        return sum(counts) / (time.perf_counter() - start)

    async def close(self) -> None:
        await self.stack.aclose()


async def arate(call: Callable[[], Any], seconds: float) -> float:
    count = 0
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        await call()
        count += 1
    return count / (time.perf_counter() - start)


async def atimed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    await action()
    return time.perf_counter() - start


async def sdk_command(conn: Sdk, what: str, seconds: float) -> float:
    if what == "seq":
        return await arate(conn.echo, seconds)
    if what == "inflight":
        return await conn.pipelined(seconds)
    if what == "blob":
        return await atimed(lambda: conn.blob(BLOB))
    if what == "list":
        return await atimed(conn.list_tools)
    if what == "handshake":
        start = time.perf_counter()
        fresh = await Sdk().open()
        took = time.perf_counter() - start
        await fresh.close()
        return took
    raise ValueError(what)


async def serve_sdk() -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    conn = await Sdk().open()
    try:
        for _ in range(100):
            await conn.echo()  # its first call also lists page one (output schemas)
        assert await conn.list_tools() == TOOLS
        assert len(await conn.blob(BLOB)) == BLOB
        reply("ready")
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            command = json.loads(line)
            reply(await sdk_command(conn, command["what"], command["seconds"]))
    finally:
        await conn.close()


def serve(name: str) -> None:
    if name == "sdk":
        import asyncio

        asyncio.run(serve_sdk())
    elif name in ("floor", "threaded"):
        serve_sync(SYNC[name])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "wire.jsonl") if name == "capture" else None
            serve_sync(lambda: Ours(path))


# ============================================================================ one-shot workers


def worker_memory(name: str) -> Figures:
    """Peak RSS growth while one ``BIG``-byte result is received (fresh process)."""
    if name == "sdk":
        import asyncio

        async def run() -> Figures:
            conn = await Sdk().open()
            await conn.echo()
            before = maxrss_mib()
            text = await conn.blob(BIG)
            grown = maxrss_mib() - before
            assert len(text) == BIG
            await conn.close()
            return {"rss": grown}

        return asyncio.run(run())
    conn: Any = SYNC[name]()
    conn.echo()
    before = maxrss_mib()
    text = conn.blob(BIG)
    grown = maxrss_mib() - before
    assert len(text) == BIG
    conn.close()
    return {"rss": grown}


def worker_idle(name: str) -> Figures:
    """Process CPU time (every thread) of a connected, idle client over ``IDLE`` s."""
    if name == "sdk":
        import asyncio

        async def run() -> Figures:
            conn = await Sdk().open()
            await conn.echo()
            start = time.process_time()
            await asyncio.sleep(IDLE)
            used = time.process_time() - start
            await conn.close()
            return {"idle": 100.0 * used / IDLE}

        return asyncio.run(run())
    conn: Any = SYNC[name]()
    conn.echo()
    start = time.process_time()
    time.sleep(IDLE)
    used = time.process_time() - start
    conn.close()
    return {"idle": 100.0 * used / IDLE}


def run_worker(args: argparse.Namespace) -> None:
    kind, name = args.worker
    if kind == "serve":
        serve(name)
    elif kind == "jail":
        reply(worker_jail(int(name)))
    elif kind == "shown":
        reply(worker_shown(name))
    elif kind == "calls":  # under callgrind: `count` sequential calls, nothing else timed
        client, count = name.split(":")
        conn: Any = SYNC[client]()
        for _ in range(int(count)):
            conn.echo()
        conn.close()
    elif kind == "codemode":
        server, repeats, duration, events = name.split(":")
        reply(worker_codemode(server, int(repeats), float(duration), int(events)))
    else:
        reply(worker_memory(name) if kind == "memory" else worker_idle(name))


# ============================================================================ the jail


def worker_jail(runs: int) -> Figures:
    """Handshake unjailed, jailed, and jailed with a cgroup, taking turns in one
    process; and what the jail's part is made of: bwrap building the same jail
    around the init's interpreter (``python -I -S -c pass``), and that interpreter
    alone."""
    from mcp_client import Jail

    makers = {
        "hs_plain": lambda: Ours(),
        "hs_lifeline": lambda: Ours(lifeline=True),  # unjailed, with its watchdog
        "hs_jailed": lambda: Ours(jail=Jail()),
        "hs_limited": lambda: Ours(jail=Jail(max_processes=64, memory_bytes=1 << 30)),
    }
    if os.geteuid() != 0:  # a cgroup v1 pids hierarchy is root's
        del makers["hs_limited"]
    probe, interpreter = jail_probe_argv(), [sys.executable, "-I", "-S", "-B", "-c", "pass"]
    samples: Dict[str, List[float]] = {}
    order = list(makers)
    for turn in range(runs):  # each goes first in turn: no order effect lands on one alone
        for key in order[turn % len(order) :] + order[: turn % len(order)]:
            samples.setdefault(key, []).append(handshake(makers[key]))
        samples.setdefault("bwrap_init", []).append(timed(lambda: run_quietly(probe)))
        samples.setdefault("init", []).append(timed(lambda: run_quietly(interpreter)))
    return {key: median(values) for key, values in samples.items()}


def jail_probe_argv() -> List[str]:
    """The argv the jailer reruns to diagnose a jail: the jail of ``Jail()`` for the
    echo server, without descriptors, running only the init's interpreter."""
    from mcp_client import Jail, Spawn, jail
    from mcp_client.jail import spawn as jailer

    argv = server_argv()
    spawn = Spawn(argv[0], tuple(argv[1:]))
    env = dict(os.environ)
    host = jailer.look(Jail(), spawn, env)
    channels = jail.Channels(lifeline=3, status=4, seccomp=5)  # the probe uses none of them
    return list(jail.invocation(Jail(), spawn, env, host, channels).probe)


def run_quietly(argv: List[str], env: Optional[Dict[str, str]] = None) -> None:
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)


def jail_lines(figures: Figures) -> List[str]:
    """The jail's figures, after the table (the SDK has no jail to compare with)."""
    if "hs_jailed" not in figures:
        return ["jail: not measured (bwrap is not installed: apt-get install bubblewrap)"]
    ms = {key: value * 1e3 for key, value in figures.items()}
    lines = [
        "jail (mcp_client, median of %d handshakes each, taking turns in one process):"
        % figures["runs"],
        "  handshake, spawn to ready: %.1f ms unjailed, %.1f ms jailed (Jail()): +%.1f ms"
        % (ms["hs_plain"], ms["hs_jailed"], ms["hs_jailed"] - ms["hs_plain"]),
    ]
    lines.append(
        "  unjailed with a lifeline (ProcessTransport(lifeline=True)): %.1f ms, %.2fx the "
        "handshake without it (+%.1f ms)"
        % (
            ms["hs_lifeline"],
            ms["hs_lifeline"] / ms["hs_plain"],
            ms["hs_lifeline"] - ms["hs_plain"],
        )
    )
    if "hs_limited" in ms:
        lines.append(
            "  jailed with max_processes (a pids cgroup) and memory_bytes:"
            " %.1f ms (+%.1f ms)" % (ms["hs_limited"], ms["hs_limited"] - ms["hs_plain"])
        )
    lines.append(
        "  spent on: bwrap building the jail around the init's interpreter %.1f ms, of "
        "which that interpreter (python -I -S -c pass) %.1f ms" % (ms["bwrap_init"], ms["init"])
    )
    return lines


# ============================================================================ the code-mode runner

#: The program ``run()`` runs: 50 calls to warm, then a window of calls of the given
#: seconds, answered with its rate; one run a window, taking turns with a direct client.
HOP_PROGRAM = """
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
#: What the hop is measured against: the echo server (the brief's), and a real
#: server whose calls cost what real servers' do (mcp-server-time, when installed).
HOP_SERVERS = {
    "echo": ('echo(query="x")', "echo", {"query": "x"}),
    "time": ('get_current_time(timezone="UTC")', "get_current_time", {"timezone": "UTC"}),
}


def hop_server_argv(name: str) -> Optional[List[str]]:
    if name == "echo":  # three tools: a module per server is capped at 256
        return [sys.executable, SERVER, "--tools", "3", "--pages", "1"]
    if importlib.util.find_spec("mcp_server_time") is None:
        return None
    return [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


def worker_codemode(server: str, repeats: int, duration: float, events: int) -> Figures:
    """Through ``mcp_client.codemode``: calls/s from a program beside the same calls made
    directly with a ``Client``, taking turns window by window; ``open`` of three servers
    at once; ``run()`` of a one-line program, jailed and not, beside the bare start of
    the same child (``python -B -c pass``), taking turns."""
    from mcp_client.codemode import CodeMode, Limits
    from mcp_client.config import ConfiguredServer
    from mcp_client.transport import Spawn

    argv = hop_server_argv(server)
    if argv is None:
        return {}
    jailed = shutil.which("bwrap") is not None
    spawn = Spawn(argv[0], tuple(argv[1:]))
    servers = [ConfiguredServer("s%d" % n, spawn) for n in (1, 2, 3)]
    figures: Figures = {"jailed": float(jailed)}
    opens = []
    for _ in range(events):
        start = time.perf_counter()
        CodeMode.open(servers, jail_program=False).close()
        opens.append(time.perf_counter() - start)
    figures["open"] = median(opens)
    unbounded = Limits(max_calls=1 << 40)  # the rate is the figure: no cap on the calls
    with CodeMode.open(servers, jail_program=jailed, limits=unbounded) as code:
        with CodeMode.open(servers, jail_program=False) as bare:
            figures.update(one_line_runs(code, bare, events))
        figures.update(calls_taking_turns(code, argv, HOP_SERVERS[server], repeats, duration))
    return figures


def one_line_runs(jailed: Any, unjailed: Any, events: int) -> Figures:
    """``run("pass")`` jailed and not, and ``python -B -c pass``, in turn."""
    runs: Dict[str, List[float]] = {"run_jailed": [], "run_plain": [], "bare": []}
    for _ in range(events):
        runs["run_jailed"].append(timed(lambda: jailed.run("pass\n")))
        runs["run_plain"].append(timed(lambda: unjailed.run("pass\n")))
        runs["bare"].append(timed(lambda: run_quietly([sys.executable, "-B", "-c", "pass"])))
    return {key: median(values) for key, values in runs.items()}


def calls_taking_turns(
    code: Any, server: List[str], hop: Tuple[Any, ...], repeats: int, duration: float
) -> Figures:
    """Windows of a program's calls through ``run()`` and of a direct client's, in turn."""
    direct = Ours(server=server)
    call = lambda: direct.client.call_tool(hop[1], hop[2])  # noqa: E731
    rate(call, duration)  # warm
    program = HOP_PROGRAM % {"call": hop[0], "seconds": duration}
    hops, directs = [], []
    try:
        for _ in range(repeats):
            result = code.run(program)
            if result.exit_status != 0:
                raise SystemExit("the program failed: %s" % result.stderr)
            hops.append(float(result.stdout))
            directs.append(rate(call, duration))
    finally:
        direct.close()
    return {"hop": median(hops), "direct": median(directs)}


#: A small config (time, memory, filesystem), and the test panel's servers together (a large one).
SHOWN_PANELS = {
    "readme": ("time", "memory", "filesystem"),
    "panel": ("time", "git", "memory", "filesystem", "everything", "sequential-thinking"),
}


def shown_servers(panel: str, where: str) -> List[Any]:
    """The panel's servers that are installed here, as ``ConfiguredServer`` values."""
    from mcp_client.config import ConfiguredServer
    from mcp_client.transport import Spawn

    npm = os.path.join(ROOT, "tests", "npm", "node_modules", ".bin")
    commands = {
        "time": ([sys.executable, "-m", "mcp_server_time"], "mcp_server_time"),
        "git": ([sys.executable, "-m", "mcp_server_git", "--repository", ROOT], "mcp_server_git"),
        "memory": ([os.path.join(npm, "mcp-server-memory")], None),
        "filesystem": ([os.path.join(npm, "mcp-server-filesystem"), where], None),
        "everything": ([os.path.join(npm, "mcp-server-everything")], None),
        "sequential-thinking": ([os.path.join(npm, "mcp-server-sequential-thinking")], None),
    }
    found = []
    for key in SHOWN_PANELS[panel]:
        argv, module = commands[key]
        missing = (
            importlib.util.find_spec(module) is None if module else not os.path.exists(argv[0])
        )
        if not missing:
            env = {"MEMORY_FILE_PATH": os.path.join(where, "memory.jsonl")}
            found.append(ConfiguredServer(key, Spawn(argv[0], tuple(argv[1:]), env=env)))
    return found


def worker_shown(panel: str) -> Figures:
    """Bytes a model is shown before its first call: the whole surface, and the raw
    ``tools/list`` JSON of the same servers (what a host shows without code mode)."""
    from mcp_client.client import start
    from mcp_client.codemode import CodeMode
    from mcp_client.transport import ProcessTransport

    with tempfile.TemporaryDirectory(prefix="bench-shown-") as where:
        servers = shown_servers(panel, where)
        raw = 0
        for each in servers:
            client = start(ProcessTransport(each.spawn))
            try:
                raw += len(tools_list_json(client.list_tools()))
            finally:
                client.shutdown()
        with CodeMode.open(servers, jail_program=False) as code:
            surface = len(code.surface().encode("utf-8"))
            tools = sum(1 for line in code.surface().splitlines() if line.startswith("cap.mcp."))
    return {"servers": float(len(servers)), "tools": float(tools), "raw": raw, "surface": surface}


def tools_list_json(tools: Any) -> bytes:
    """A ``tools/list`` result's JSON, compact, from the listed descriptors."""
    listed = []
    for tool in tools:
        entry: Dict[str, Any] = {"name": tool.name, "inputSchema": tool.input_schema}
        for key, value in (
            ("title", tool.title),
            ("description", tool.description),
            ("outputSchema", tool.output_schema),
            ("annotations", tool.annotations),
        ):
            if value is not None:
                entry[key] = value
        listed.append(entry)
    return json.dumps({"tools": listed}, separators=(",", ":")).encode("utf-8")


def codemode_figures(args: argparse.Namespace) -> Figures:
    figures: Figures = {}
    for panel in SHOWN_PANELS:
        found = spawn_worker("shown", panel)
        figures.update({"shown_%s_%s" % (panel, key): value for key, value in found.items()})
    for server in HOP_SERVERS:
        found = spawn_worker(
            "codemode", "%s:%d:%r:%d" % (server, args.repeats, args.duration, args.events)
        )
        figures.update({"%s_%s" % (server, key): value for key, value in found.items()})
    return figures


def codemode_lines(figures: Figures) -> List[str]:
    """The runner's figures, after the jail's."""
    if "echo_jailed" not in figures:
        return ["code mode: no figures"]
    lines = shown_lines(figures) + [
        "code mode (mcp_client.codemode; the program %s; three servers of a kind, "
        "the program calling one):" % ("jailed" if figures["echo_jailed"] else "unjailed, no bwrap")
    ]
    for server, what in (("echo", "tools/echo_server.py"), ("time", "mcp-server-time")):
        if server + "_hop" not in figures:
            lines.append("  %s: not installed" % what)
            continue
        f = {
            key[len(server) + 1 :]: value
            for key, value in figures.items()
            if key.startswith(server + "_")
        }
        hop_ratio = f["hop"] / f["direct"]
        goal = " (goal >=0.7x: %s)" % ("met" if hop_ratio >= 0.7 else "MISSED")
        lines += [
            "  %s: sequential calls %s/s from a program through run(), %s/s direct "
            "with a Client: %.2fx%s"
            % (
                what,
                "{:,.0f}".format(f["hop"]),
                "{:,.0f}".format(f["direct"]),
                hop_ratio,
                goal if server == "echo" else "",
            ),
            "    run() of a one-line program: %.0f ms jailed (%.1fx), %.0f ms unjailed (%.1fx), "
            "against python -B -c pass: %.0f ms; open(), three servers at once: %.0f ms"
            % (
                f["run_jailed"] * 1e3,
                f["run_jailed"] / f["bare"],
                f["run_plain"] * 1e3,
                f["run_plain"] / f["bare"],
                f["bare"] * 1e3,
                f["open"] * 1e3,
            ),
        ]
    return lines


def shown_lines(figures: Figures) -> List[str]:
    lines = ["what a model is shown before its first call (bytes):"]
    for panel, what in (("readme", "time, memory and filesystem"), ("panel", "the test panel")):
        f = {
            key: figures.get("shown_%s_%s" % (panel, key), 0.0)
            for key in ("servers", "tools", "raw", "surface")
        }
        if not f["raw"]:
            lines.append("  %s: not installed" % what)
            continue
        lines.append(
            "  %s (%d servers, %d tools): the surface %s, the raw tools/list JSON %s: %.0f%% less"
            % (
                what,
                f["servers"],
                f["tools"],
                "{:,.0f}".format(f["surface"]),
                "{:,.0f}".format(f["raw"]),
                100.0 * (1 - f["surface"] / f["raw"]),
            )
        )
    return lines


# ============================================================================ mcp-client serve


def serve_lines(args: argparse.Namespace) -> List[str]:
    """``serve``'s figures (bytes shown, calls/s through it, a one-line run): bench_serve.py."""
    import bench_serve  # beside this script

    progress("mcp-client serve")
    return bench_serve.lines(bench_serve.figures(args.repeats, args.duration, args.events))


# ============================================================================ imports

#: The client's import: what a harness imports to start a server and call it (``import
#: mcp_client`` alone loads only the package's lazy face: PEP 562, each name on first use).
CLIENT_IMPORT = "from mcp_client import Spawn, start"

IMPORTS = {
    "client": CLIENT_IMPORT,
    "sdk": (
        "from mcp import ClientSession, StdioServerParameters\n"
        "from mcp.client.stdio import stdio_client"
    ),
}

#: Runs in a fresh ``python -S`` (no ``site``, so no ``.pth`` file can import
#: modules ahead of the measured import) given the driver's ``sys.path``; only
#: ``sys`` and ``time`` precede the import (its own names underscored: the import
#: may bind ``start``).
IMPORT_PROBE = """
import sys, time
sys.path[1:1] = %r
def peak():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1048576.0
_before = peak()
_began = time.perf_counter()
exec(compile(%r, "<import>", "exec"))
_took = time.perf_counter() - _began
print(_took, peak() - _before)
"""


def import_figures(name: str, runs: int) -> Figures:
    """Import time and RSS growth of ``IMPORTS[name]`` in fresh interpreters."""
    # Bytecode is cached as it would be for an installed package (the first,
    # untimed run writes any stale .pyc), whatever PYTHONDONTWRITEBYTECODE says.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    probe = IMPORT_PROBE % ([ROOT] + [p for p in sys.path if p], IMPORTS[name])
    times, sizes = [], []
    for run in range(runs + 1):
        out = subprocess.run(
            [sys.executable, "-S", "-c", probe],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        took, grown = out.split()
        if run:
            times.append(float(took))
            sizes.append(float(grown))
    return {"import": median(times), "import_mem": median(sizes)}


# ============================================================================ the driver


def spawn_worker(kind: str, name: str) -> Figures:
    """A one-shot measurement in a fresh process of its own."""
    argv = [sys.executable, os.path.abspath(__file__), "--worker", kind, name]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit("worker %s %s failed" % (kind, name))
    figures: Figures = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


class Worker:
    """A long-lived process holding one connected client, measuring on command.

    Every client gets one, all alive at once but only one measuring at a time:
    the driver takes turns between them, so a change in the machine's load
    (other processes, CPU frequency, idle states) lands on every client alike.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        argv = [sys.executable, os.path.abspath(__file__), "--worker", "serve", name]
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def answer(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("worker %s died" % self.name)
        return json.loads(line)

    def ask(self, what: str, seconds: float = 0.0) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"what": what, "seconds": seconds}) + "\n")
        self.proc.stdin.flush()
        return float(self.answer())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


#: what, seconds-per-window?  (rates run for a window; events happen once per ask)
MEASURES = [
    ("seq", True),
    ("inflight", True),
    ("blob", False),
    ("list", False),
    ("handshake", False),
]


def interleaved(args: argparse.Namespace, clients: Tuple[str, ...]) -> Dict[str, Figures]:
    workers = [Worker(name) for name in clients]
    try:
        for worker in workers:
            assert worker.answer() == "ready", worker.name
        samples: Dict[Tuple[str, str], List[float]] = {}
        for what, windowed in MEASURES:
            progress(what)
            rounds = args.repeats if windowed else args.events
            for turn in range(rounds):
                for worker in workers[turn % len(workers) :] + workers[: turn % len(workers)]:
                    value = worker.ask(what, args.duration if windowed else 0.0)
                    samples.setdefault((worker.name, what), []).append(value)
    finally:
        for worker in workers:
            worker.close()
    results: Dict[str, Figures] = {name: {} for name in clients}
    for (name, what), values in samples.items():
        results[name][what] = median(values)
    return results


def sdk_available() -> Optional[str]:
    """The SDK's version when it is installed (not imported here: the driver stays small)."""
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version

    if importlib.util.find_spec("mcp") is None:
        return None
    try:
        return version("mcp")
    except PackageNotFoundError:
        return "?"


def collect(args: argparse.Namespace, clients: Tuple[str, ...]) -> Dict[str, Figures]:
    progress("connecting %s" % ", ".join(clients))
    results = interleaved(args, clients)
    for name in clients:
        if name == "capture":
            continue
        progress("%s: memory, idle" % name)
        results[name].update(spawn_worker("memory", name))
        results[name].update(spawn_worker("idle", name))
        if name in IMPORTS:
            progress("%s: imports" % name)
            results[name].update(import_figures(name, args.imports))
    if shutil.which("bwrap") is not None:
        progress("client: jailed handshakes")
        results["jail"] = spawn_worker("jail", str(args.events * 2))
        results["jail"]["runs"] = args.events * 2
    progress("the code-mode runner's hop and start-up")
    results["codemode"] = codemode_figures(args)
    return results


def progress(text: str) -> None:
    sys.stderr.write("  ... %s\n" % text)
    sys.stderr.flush()


# ============================================================================ the table

#: key, label, unit scale, format, whether ratios mean anything
ROWS = [
    ("seq", "1. sequential tools/call (round trips/s)", 1.0, "{:,.0f}", True),
    ("inflight", "2. 64 calls in flight (calls/s)", 1.0, "{:,.0f}", True),
    ("blob", "3. one 8 MiB text result (ms)", 1e3, "{:,.1f}", True),
    ("list", "4. 1,000 tools over 20 pages (ms)", 1e3, "{:,.1f}", True),
    ("handshake", "5. handshake, spawn to ready (ms)", 1e3, "{:,.1f}", True),
    ("import", "5. import time (ms)", 1e3, "{:,.1f}", True),
    ("import_mem", "5. import memory (MiB RSS)", 1.0, "{:,.1f}", True),
    ("rss", "6. peak RSS growth, 15 MiB result (MiB)", 1.0, "{:,.1f}", True),
    ("idle", "7. idle CPU over 2 s (% of one core)", 1.0, "{:,.2f}", False),
]

#: key -> (description, check(client/floor, client/sdk, client figure))
TargetCheck = Callable[[Optional[float], Optional[float], float], Optional[bool]]
TARGETS: Dict[str, Tuple[str, TargetCheck]] = {
    "seq": (
        ">=0.6x floor, >=1.5x SDK",
        lambda f, s, v: None if f is None else f >= 0.6 and (s is None or s >= 1.5),
    ),
    "inflight": (">=5x SDK", lambda f, s, v: None if s is None else s >= 5.0),
    "blob": ("<=1.5x floor", lambda f, s, v: None if f is None else f <= 1.5),
    "list": ("<=1.2x floor", lambda f, s, v: None if f is None else f <= 1.2),
    "import": ("<0.25x SDK", lambda f, s, v: None if s is None else s < 0.25),
    "idle": ("<1% of a core", lambda f, s, v: v < 1.0),
}


def cell(figures: Dict[str, float], key: str, scale: float, fmt: str) -> str:
    return fmt.format(figures[key] * scale) if key in figures else "-"


def ratio(ours: Dict[str, float], other: Dict[str, float], key: str) -> Optional[float]:
    if key not in ours or key not in other or other[key] == 0:
        return None
    return ours[key] / other[key]


def show_ratio(value: Optional[float]) -> str:
    return "-" if value is None else "{:.2f}x".format(value)


def verdict(
    key: str, ours: Dict[str, float], to_floor: Optional[float], to_sdk: Optional[float]
) -> str:
    if key not in TARGETS or key not in ours:
        return ""
    text, check = TARGETS[key]
    met = check(to_floor, to_sdk, ours[key])
    return text + ("" if met is None else (": met" if met else ": MISSED"))


def table(results: Dict[str, Figures]) -> List[str]:
    empty: Figures = {}
    floor, threaded = results.get("floor", empty), results.get("threaded", empty)
    ours, capture = results.get("client", empty), results.get("capture", empty)
    sdk = results.get("sdk", empty)
    head = [
        "",
        "floor",
        "threaded floor",
        "mcp_client",
        "capture on",
        "SDK",
        "vs floor",
        "vs threaded floor",
        "vs SDK",
        "target",
    ]
    rows = [head]
    for key, label, scale, fmt, compare in ROWS:
        to_floor = ratio(ours, floor, key) if compare else None
        to_threaded = ratio(ours, threaded, key) if compare else None
        to_sdk = ratio(ours, sdk, key) if compare else None
        rows.append(
            [label]
            + [cell(f, key, scale, fmt) for f in (floor, threaded, ours, capture, sdk)]
            + [show_ratio(r) for r in (to_floor, to_threaded, to_sdk)]
            + [verdict(key, ours, to_floor, to_sdk)]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    last = len(head) - 1  # the label is left-aligned, the figures right, the target left
    lines = []
    for n, row in enumerate(rows):
        parts = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, last)]
        lines.append("| " + " | ".join(parts + [row[last].ljust(widths[last])]) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return lines


def header(args: argparse.Namespace, sdk: Optional[str]) -> List[str]:
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return [
        "mcp_client benchmark, %s%s" % (now, " (--quick)" if args.quick else ""),
        "Python %s (%s), %s, nproc %d, %s"
        % (
            platform.python_version(),
            platform.python_implementation(),
            platform.machine(),
            os.cpu_count() or 0,
            cpu_model(),
        ),
        "SDK: %s"
        % (
            "mcp %s, ClientSession over stdio_client (asyncio)" % sdk
            if sdk
            else "not installed (pip install .[bench]); its columns are empty"
        ),
        "server: tools/echo_server.py (%d tools in %d pages); each client in a process of its"
        " own" % (TOOLS, PAGES),
        "threaded floor: a reader thread hands json.loads results to per-call lock waiters;"
        " no validation, no write combining",
        "rows 1-5: median of %d windows of %.1f s (rates) or of %d runs (times), the clients"
        " taking turns" % (args.repeats, args.duration, args.events),
        "imports (%d runs), memory and idle CPU: fresh processes; import = '%s'"
        " vs 'from mcp import ClientSession, StdioServerParameters; from mcp.client.stdio"
        " import stdio_client', under python -S" % (args.imports, CLIENT_IMPORT),
        "ratios: mcp_client / other (rates: higher is better; times, memory: lower)",
        "",
    ]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


# ============================================================================ the goals (--goals)

#: The goals of the performance work, each against a floor of the same run:
#: key, label, baseline client, whether higher is better, the bound.
GOALS = [
    ("seq", "sequential tools/call (calls/s)", "threaded", True, 1.0),
    ("inflight", "64 calls in flight (calls/s)", "threaded", True, 1.2),
    ("blob", "one 8 MiB text result (ms)", "floor", False, 1.0),
    ("list", "1,000 tools over 20 pages (ms)", "threaded", False, 1.0),
]
#: What ``--goals`` imports in fresh interpreters, against each other: nothing, the
#: standard library the client is made of, and the client.
IMPORT_SETS = {
    "pass": "pass",
    "stdlib": "import json, threading, subprocess, selectors",
    "client": CLIENT_IMPORT,
}
IMPORT_GOAL = 2.0  # the client's import within 2x of the stdlib set's
CODEGEN_GOAL = 20.0  # generate within 20x of json.dumps of the same listing
CLIENTS_OF_GOALS = ("floor", "threaded", "client")
BASE_NAMES = {"floor": "bare floor", "threaded": "threaded floor"}


def turn_ratios(samples: Dict[Tuple[str, str], List[float]], what: str, base: str) -> List[float]:
    """This client's sample over the baseline's, turn by turn (each turn is one
    window or event of every client, back to back)."""
    ours, theirs = samples[("client", what)], samples[(base, what)]
    return [a / b for a, b in zip(ours, theirs) if b]


def goal_samples(args: argparse.Namespace) -> Dict[Tuple[str, str], List[float]]:
    """Runs of ``args.repeats`` windows / events of each client, taking turns."""
    workers = [Worker(name) for name in CLIENTS_OF_GOALS]
    samples: Dict[Tuple[str, str], List[float]] = {}
    try:
        for worker in workers:
            assert worker.answer() == "ready", worker.name
        for what, _, _, _, _ in GOALS:
            progress(what)
            windowed = what in ("seq", "inflight")
            for turn in range(args.repeats):
                for worker in workers[turn % 3 :] + workers[: turn % 3]:
                    value = worker.ask(what, args.duration if windowed else 0.0)
                    samples.setdefault((worker.name, what), []).append(value)
                    samples.setdefault((worker.name, what + "_cpu"), []).append(worker.ask("cpu"))
    finally:
        for worker in workers:
            worker.close()
    return samples


#: Prints the standard-library modules the client's import loads beyond the set.
DEPENDENCIES_PROBE = """
import sys
sys.path[1:1] = %r
%s
before = set(sys.modules)
%s
print(" ".join(sorted(m for m in set(sys.modules) - before
                      if not m.startswith("mcp_client") and "." not in m)))
"""


def stdlib_dependencies(paths: List[str]) -> str:
    """An import statement for the set and every other standard-library module
    the client loads at import (logging, dataclasses, typing, ...)."""
    probe = DEPENDENCIES_PROBE % (paths, IMPORT_SETS["stdlib"], CLIENT_IMPORT)
    found = subprocess.run(
        [sys.executable, "-S", "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    return "%s, %s" % (IMPORT_SETS["stdlib"], ", ".join(found))


def import_samples(runs: int) -> Dict[str, List[Tuple[float, float]]]:
    """(in-process import time, whole-process time) of each of ``IMPORT_SETS``, and
    of the standard library the client needs, in fresh ``python -S`` interpreters,
    taking turns."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    paths = [ROOT] + [p for p in sys.path if p]
    sets = dict(IMPORT_SETS, needed=stdlib_dependencies(paths))
    out: Dict[str, List[Tuple[float, float]]] = {name: [] for name in sets}
    names = list(sets)
    for run in range(runs + 1):  # the first, untimed, writes any stale bytecode
        for name in names[run % len(names) :] + names[: run % len(names)]:
            probe = IMPORT_PROBE % (paths, sets[name])
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-S", "-c", probe],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            whole = time.perf_counter() - start
            if run:
                out[name].append((float(done.stdout.split()[0]), whole))
    return out


def codegen_ratios(repeat: int) -> List[Tuple[str, int, float, float]]:
    """(listing, tools, generate / json.dumps median, range low-high as one figure
    pair is not kept: the best ratio) for the 256-tool listings of
    ``tools/bench_codegen.py`` and the golden listings of real servers."""
    import functools

    sys.path.insert(0, HERE)
    import bench_codegen
    from timing import sample

    from mcp_client import codegen, protocol

    listings: List[Tuple[str, Any]] = [
        ("256 tools, " + variant, bench_codegen.listing(variant))
        for variant in ("no @", "@ in descriptions", "@ in a wire name", "output schemas")
    ]
    golden = os.path.join(ROOT, "tests", "golden")
    for name in sorted(os.listdir(golden)):
        if name.endswith(".tools.json"):
            with open(os.path.join(golden, name)) as listing_file:
                listings.append((name[: -len(".tools.json")], json.load(listing_file)))
    rows = []
    for label, raw in listings:
        tools = protocol.decode_tools_page(raw).tools
        codegen.generate("bench", tools)
        dumps = sample(functools.partial(json.dumps, raw), 50, repeat)
        loops = 2 if len(tools) > 50 else 20
        generate = sample(functools.partial(codegen.generate, "bench", tools), loops, repeat)
        rows.append((label, len(tools), generate[1] / dumps[1], generate[0] / dumps[0]))
    return rows


def codegen_instruction_ratios() -> Optional[Dict[str, float]]:
    """Instructions of ``generate`` / of ``json.dumps``, by listing (callgrind, two
    listings at a time); ``None`` without valgrind."""
    import concurrent.futures

    sys.path.insert(0, HERE)
    import bench_codegen

    if shutil.which("valgrind") is None:
        return None
    labels = bench_codegen.labels()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        counts = list(pool.map(bench_codegen.instructions, labels))
    return {label: generate / dumps for label, (generate, dumps) in zip(labels, counts)}


def codegen_lines() -> List[str]:
    """The codegen goal: judged by instructions, the load of the machine changing
    nothing; the wall clock beside it (interpreted code against a C serializer: its
    ratio is the larger, and moves with the caches and the load)."""
    counted = codegen_instruction_ratios()
    lines = [
        "codegen: generate / json.dumps of the same listing, goal <= %.0fx by instructions"
        " (callgrind); by wall clock beside it (median; best):" % CODEGEN_GOAL
    ]
    for label, tools, ratio_median, ratio_best in codegen_ratios(7):
        name = label[len("256 tools, ") :] if label.startswith("256 tools, ") else label
        ratio = None if counted is None else counted[name]
        judged = ratio_median if ratio is None else ratio
        lines.append(
            "  %-32s %4d tools  %s  wall %5.1fx (best %5.1fx)  %s"
            % (
                label,
                tools,
                "instructions   -  " if ratio is None else "instructions %5.1fx" % ratio,
                ratio_median,
                ratio_best,
                ("met" if judged <= CODEGEN_GOAL else "MISSED")
                + (" (by wall clock: valgrind is not installed)" if ratio is None else ""),
            )
        )
    return lines


def spread(values: List[float], fmt: str = "{:.2f}") -> str:
    return (fmt + "-" + fmt).format(min(values), max(values)) if values else "-"


def goal_lines(args: argparse.Namespace) -> List[str]:
    started = time.perf_counter()
    samples = goal_samples(args)
    lines = [
        "goals, each against a floor of the same run: %d windows of %.1f s (rates) or %d"
        " events (times) per client, the three taking turns; ratio = mcp_client / baseline"
        " (median of the turn-by-turn ratios, their range)"
        % (args.repeats, args.duration, args.repeats),
        "",
    ]
    rows = [["", "floor", "threaded floor", "mcp_client", "ratio (median)", "range", "goal"]]
    for what, label, base, higher, bound in GOALS:
        scale = 1.0 if what in ("seq", "inflight") else 1e3
        fmt = "{:,.0f}" if scale == 1.0 else "{:,.1f}"
        ratios = turn_ratios(samples, what, base)
        middle = median(ratios)
        met = middle >= bound if higher else middle <= bound
        rows.append(
            [label]
            + [
                fmt.format(median(samples[(c, what)]) * scale)
                for c in ("floor", "threaded", "client")
            ]
            + [
                "{:.2f}x".format(middle),
                spread(ratios),
                "%s %.1fx the %s: %s"
                % (
                    ">=" if higher else "<=",
                    bound,
                    "threaded floor" if base == "threaded" else "bare floor",
                    "met" if met else "MISSED",
                ),
            ]
        )
    lines += boxed(rows)
    lines += [
        "",
        "the same runs by CPU time (every thread of each client's process; per call for the"
        " rates, per event for the times; lower is better; ratio = mcp_client / baseline):",
        "",
    ]
    rows = [["", "floor", "threaded floor", "mcp_client", "ratio (median)", "range", "baseline"]]
    for what, label, base, _, _ in GOALS:
        key = what + "_cpu"
        scale, unit = (1e6, "us/call") if what in ("seq", "inflight") else (1e3, "ms")
        ratios = turn_ratios(samples, key, base)
        rows.append(
            ["%s, CPU %s" % (label.split(" (")[0], unit)]
            + ["{:,.1f}".format(median(samples[(c, key)]) * scale) for c in CLIENTS_OF_GOALS]
            + ["{:.2f}x".format(median(ratios)), spread(ratios), BASE_NAMES[base]]
        )
    lines += boxed(rows)
    progress("imports")
    imports = import_samples(args.imports)
    own = {name: median([s[0] for s in runs]) for name, runs in imports.items()}
    whole = {name: median([s[1] for s in runs]) for name, runs in imports.items()}
    per_run = [c[0] / s[0] for c, s in zip(imports["client"], imports["stdlib"])]
    lines += [
        "",
        "import, %d fresh `python -S` interpreters each, taking turns (medians):" % args.imports,
        "  in-process: %s %.1f ms, import json, threading, subprocess, selectors"
        " %.1f ms: %.2fx (range %s; goal <= %.1fx: %s)"
        % (
            CLIENT_IMPORT,
            own["client"] * 1e3,
            own["stdlib"] * 1e3,
            median(per_run),
            spread(per_run),
            IMPORT_GOAL,
            "met" if median(per_run) <= IMPORT_GOAL else "MISSED",
        ),
        "  the standard library the client loads at import, alone (the set and %s):"
        " %.1f ms, %.2fx the set: the least the client's import can be"
        % (
            stdlib_dependencies([ROOT] + [p for p in sys.path if p]).split("selectors, ", 1)[1],
            own["needed"] * 1e3,
            median([n[0] / s[0] for n, s in zip(imports["needed"], imports["stdlib"])]),
        ),
        "  whole process: python -c pass %.1f ms, the stdlib set %.1f ms (%.2fx pass),"
        " mcp_client %.1f ms (%.2fx pass, %.2fx the stdlib set)"
        % (
            whole["pass"] * 1e3,
            whole["stdlib"] * 1e3,
            whole["stdlib"] / whole["pass"],
            whole["client"] * 1e3,
            whole["client"] / whole["pass"],
            whole["client"] / whole["stdlib"],
        ),
    ]
    progress("codegen")
    lines += [""] + codegen_lines()
    progress("per-call profile")
    lines += [""] + profile_lines(args)
    progress("instructions per call (callgrind)")
    lines += [""] + instruction_lines()
    lines.append("")
    lines.append(
        "(whole run: %.0f s; rerun: python tools/bench.py --goals)"
        % (time.perf_counter() - started)
    )
    return lines


def boxed(rows: List[List[str]]) -> List[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:-1])]
        lines.append("| " + " | ".join(cells + [row[-1].ljust(widths[-1])]) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return lines


# ============================================================================ the per-call profile


def thread_cpu(thread: threading.Thread) -> float:
    """CPU seconds ``thread`` has used so far (Linux: its own clock)."""
    assert thread.ident is not None
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def call_costs(conn: Any, reader: threading.Thread, seconds: float) -> Tuple[float, float, float]:
    """Wall, caller CPU and reader CPU per sequential call, microseconds."""
    count = 0
    wall, caller, read = time.perf_counter(), time.thread_time(), thread_cpu(reader)
    end = wall + seconds
    while time.perf_counter() < end:
        conn.echo()
        count += 1
    return (
        (time.perf_counter() - wall) / count * 1e6,
        (time.thread_time() - caller) / count * 1e6,
        (thread_cpu(reader) - read) / count * 1e6,
    )


Costs = Tuple[float, float, float]
Steps = List[Tuple[str, str, float]]


def per_call(args: argparse.Namespace) -> Tuple[Dict[str, List[Costs]], List[Steps]]:
    """Both threads of a sequential call, this client and the threaded floor
    taking turns window by window in this one process, and after each pair of
    windows every step of this client's call timed alone: the turns see the
    same machine."""
    floor, ours = ThreadedFloor(), Ours()
    reader = ours.client._session.reader_thread
    assert reader is not None
    steps = StepTimer()
    try:
        for _ in range(300):
            floor.echo()
            ours.echo()
        costs: Dict[str, List[Costs]] = {"threaded": [], "client": []}
        turns: List[Steps] = []
        for turn in range(args.repeats):
            pair = [("threaded", floor, floor.reader), ("client", ours, reader)]
            for name, conn, thread in pair if turn % 2 == 0 else pair[::-1]:
                costs[name].append(call_costs(conn, thread, args.duration))
            turns.append(steps.measure())
    finally:
        floor.close()
        ours.close()
        steps.close()
    return costs, turns


#: Times each step runs in one turn's measurement.
STEP_LOOPS = 5000


def pipe_connection_class() -> Any:
    from mcp_client.transport import Connection, NoResource

    class PipeConnection(Connection):
        """A connection that only writes (into a pipe the step reads back)."""

        read_fd = -1

        def kill(self) -> None:
            pass

        def wait(self, deadline: Optional[float]) -> NoResource:
            return NoResource()

        def close_output(self) -> None:
            pass

    return PipeConnection


class StepTimer:
    """Each step of a call on its own (thread, step, microseconds), on the echo
    call's own values, through the package's own code: what each of the call's
    two threads spends where."""

    LINE = (
        b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}],'
        b'"isError":false}}'
    )

    def __init__(self) -> None:
        import select

        from mcp_client import jsonrpc, jsonvalue, protocol, stdio
        from mcp_client._core._calls import CallTable
        from mcp_client._core._outbox import Outbox

        self.jsonrpc, self.stdio, self.protocol = jsonrpc, stdio, protocol
        self.method = protocol.TOOLS_CALL
        self.check: Any = getattr(jsonvalue, "check", None)
        self.frame_request: Any = getattr(stdio, "frame_request", None)
        response = jsonrpc.decode(self.LINE)
        assert isinstance(response, jsonrpc.Response)
        self.result = response.result
        self.params = protocol.call_tool_params("echo", {})
        self.data = stdio.frame(jsonrpc.request(7, protocol.TOOLS_CALL, self.params))
        self.lock, self.table = threading.RLock(), CallTable()
        self.read_end, self.write_end = os.pipe()
        self.poller = select.poll()
        self.poller.register(self.read_end, select.POLLIN)
        self.conn = pipe_connection_class()(self.write_end)
        self.outbox = Outbox(self.lock, self.table)
        self.sent = self.table.mint(protocol.TOOLS_CALL, 30.0, 1e9)
        self.buffer = stdio.Buffer()
        self.pool: List[int] = []  # the calls minted for settle(), last first
        self.steps: List[Tuple[str, str, Callable[[], Any]]] = [
            ("caller", "params: call_tool_params, the arguments copied", self.params_step),
            ("caller", "a call minted under the session's lock (and taken back)", self.mint),
            ("caller", "the frame: params checked, encoded, enveloped", self.frame),
            ("caller", "the frame written (Outbox.send to a pipe; + its os.read)", self.write),
            ("caller", "the result decoded (protocol.decode_call_tool)", self.decode_result),
            ("reader", "poll + os.read of a ready line (+ its os.write)", self.poll_read),
            ("reader", "the line framed (stdio.Buffer.push)", self.push),
            ("reader", "the line decoded (jsonrpc.decode: parse, envelope)", self.decode_line),
            ("both", "take + settle (reader); wait + outcome (caller)", self.settle),
        ]

    def params_step(self) -> None:
        self.protocol.call_tool_params("echo", dict({}))

    def mint(self) -> None:
        with self.lock:
            call = self.table.mint(self.method, 30.0, 1e9)
        with self.lock:  # the reader's take: the table stays as small as a call's
            self.table.take(call.id)

    def frame(self) -> None:
        # What Requests.start does: the caller's params checked where they sit,
        # the envelope spelled around them (older trees: the whole message).
        if self.frame_request is None or self.check is None:
            self.stdio.frame(self.jsonrpc.request(7, self.method, self.params))
        else:
            self.check(self.params, 1)
            self.frame_request(7, self.method, self.params)

    def write(self) -> None:
        self.outbox.send(self.conn, self.data, self.sent)
        os.read(self.read_end, 65536)

    def decode_result(self) -> None:
        self.protocol.decode_call_tool(self.result)

    def poll_read(self) -> None:
        os.write(self.write_end, self.LINE + b"\n")
        self.poller.poll()
        os.read(self.read_end, 65536)

    def push(self) -> None:
        self.buffer.push(self.LINE + b"\n")

    def decode_line(self) -> None:
        self.jsonrpc.decode(self.LINE)

    def settle(self) -> None:
        ident = self.pool.pop()
        with self.lock:
            call = self.table.take(ident)
        assert call is not None
        call.settle(self.result)
        call.wait(1.0)
        call.outcome()

    def measure(self) -> Steps:
        import gc

        out = []
        for thread, label, step in self.steps:
            if step == self.settle:  # as many calls minted as it settles, beforehand
                with self.lock:
                    minted = [self.table.mint(self.method, 30.0, 1e9) for _ in range(STEP_LOOPS)]
                self.pool = [call.id for call in reversed(minted)]
            gc.disable()  # a collection the pending calls above cause is no step's
            try:
                started = time.perf_counter()
                for _ in range(STEP_LOOPS):
                    step()
                took = (time.perf_counter() - started) / STEP_LOOPS * 1e6
            finally:
                gc.enable()
            out.append((thread, label, took))
        return out

    def close(self) -> None:
        os.close(self.read_end)
        os.close(self.write_end)


#: The two call counts whose difference callgrind measures (start-up cancels out).
INSTRUCTION_CALLS = (300, 1300)


def instructions(client: str) -> Optional[Tuple[float, float]]:
    """Instructions per sequential call of ``client``'s caller and reader threads,
    counted by callgrind (``valgrind``), which the machine's load does not change:
    the difference between two runs of :data:`INSTRUCTION_CALLS` calls."""
    if shutil.which("valgrind") is None:
        return None
    counts = []
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as where:
        for calls in INSTRUCTION_CALLS:
            out = os.path.join(where, "%d.out" % calls)
            argv = ["valgrind", "--tool=callgrind", "--separate-threads=yes"]
            argv += ["--callgrind-out-file=" + out, sys.executable, os.path.abspath(__file__)]
            argv += ["--worker", "calls", "%s:%d" % (client, calls)]
            subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
            counts.append([thread_instructions(out + "-%02d" % n) for n in (1, 2)])
    calls = INSTRUCTION_CALLS[1] - INSTRUCTION_CALLS[0]
    return (
        (counts[1][0] - counts[0][0]) / calls,
        (counts[1][1] - counts[0][1]) / calls,
    )


def thread_instructions(path: str) -> float:
    """The instruction total of one thread's callgrind file (thread 1: the caller,
    thread 2: the first thread started, the reader)."""
    with open(path) as dump:
        for line in dump:
            if line.startswith("summary:") or line.startswith("totals:"):
                return float(line.split()[1])
    raise ValueError("no totals in %s" % path)


def instruction_lines() -> List[str]:
    counted = {name: instructions(name) for name in ("threaded", "client")}
    ours, floor = counted["client"], counted["threaded"]
    if ours is None or floor is None:
        return ["instructions per call: not counted (valgrind is not installed)"]
    rows = [["instructions per call", "threaded floor", "mcp_client", "mcp_client / threaded"]]
    for n, label in enumerate(("caller thread", "reader thread")):
        rows.append(
            [label, "{:,.0f}".format(floor[n]), "{:,.0f}".format(ours[n])]
            + ["%.2fx" % (ours[n] / floor[n])]
        )
    rows.append(
        ["both", "{:,.0f}".format(sum(floor)), "{:,.0f}".format(sum(ours))]
        + ["%.2fx" % (sum(ours) / sum(floor))]
    )
    return [
        "instructions per sequential call, counted by callgrind (the difference between %d"
        " and %d calls; the load of the machine does not change them):" % INSTRUCTION_CALLS,
        "",
    ] + boxed(rows)


def profile_lines(args: argparse.Namespace) -> List[str]:
    costs, turns = per_call(args)
    med = {
        name: [median([row[i] for row in rows]) for i in range(3)] for name, rows in costs.items()
    }
    steps = [
        (thread, label, median([turn[n][2] for turn in turns]))
        for n, (thread, label, _) in enumerate(turns[0])
    ]
    lines = [
        "per sequential call, microseconds (this process: the threaded floor and mcp_client"
        " taking turns, %d windows of %.1f s each, medians; CPU per thread by its own clock):"
        % (args.repeats, args.duration),
        "",
    ]
    rows = [["", "threaded floor", "mcp_client", "mcp_client / threaded floor"]]
    for n, label in enumerate(("round trip (wall)", "caller thread CPU", "reader thread CPU")):
        rows.append(
            [label]
            + ["%.1f" % med[name][n] for name in ("threaded", "client")]
            + ["%.2fx" % (med["client"][n] / med["threaded"][n])]
        )
    lines += boxed(rows)
    lines += [
        "",
        "the steps of mcp_client's call, each timed alone on the echo call's values, %d times"
        " after each pair of windows above (medians):" % STEP_LOOPS,
        "",
    ]
    rows = [["thread", "step", "us"]]
    for thread, label, took in steps:
        rows.append([thread, label, "%.2f" % took])
    total = sum(took for _, _, took in steps)
    cpu = med["client"][1] + med["client"][2]
    rows.append(["both", "sum of the steps", "%.2f" % total])
    rows.append(["both", "CPU of both threads per call, measured above", "%.2f" % cpu])
    rows.append(
        [
            "both",
            "the rest: waking threads, handing the GIL over, the loops",
            "%.2f" % (cpu - total),
        ]
    )
    lines += boxed_left(rows)
    return lines


def boxed_left(rows: List[List[str]]) -> List[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [c.ljust(w) for c, w in zip(row[:-1], widths[:-1])] + [row[-1].rjust(widths[-1])]
        lines.append("| " + " | ".join(cells) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return lines


# ============================================================================ main


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="mcp_client vs the floors (bare, threaded) vs the official SDK"
    )
    parser.add_argument("--quick", action="store_true", help="a shorter, noisier run")
    parser.add_argument("--no-sdk", action="store_true", help="skip the official SDK")
    parser.add_argument("--json", metavar="FILE", help="also write the raw figures here")
    parser.add_argument(
        "--codemode", action="store_true", help="only the code-mode runner's figures"
    )
    parser.add_argument(
        "--serve", action="store_true", help="only mcp-client serve's figures (bench_serve.py)"
    )
    parser.add_argument(
        "--context",
        action="store_true",
        help="only the model's context through serve, recorded servers (bench_context.py)",
    )
    parser.add_argument(
        "--goals",
        action="store_true",
        help="the performance goals against their floors, imports, codegen, the per-call profile",
    )
    parser.add_argument(
        "--profile", action="store_true", help="only the per-call profile of both threads"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="only the instructions per call of both threads (callgrind)",
    )
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "CLIENT"), help=argparse.SUPPRESS)
    parser.add_argument("--duration", type=float, help="seconds per rate window")
    parser.add_argument("--repeats", type=int, help="rate windows per client")
    parser.add_argument("--events", type=int, help="samples per single-event figure")
    args = parser.parse_args(argv)
    quick = args.quick
    goals = args.goals or args.profile  # runs of 5, as the goals are stated
    args.duration = args.duration or (0.3 if quick else 0.5)
    args.repeats = args.repeats or (5 if goals else 3 if quick else 7)
    args.events = args.events or (3 if quick else 9)
    args.imports = 11 if goals else 3 if quick else 7
    return args


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    if args.worker:
        run_worker(args)
        return
    if args.codemode:
        print("\n".join(codemode_lines(codemode_figures(args))))
        return
    if args.serve:
        print("\n".join(serve_lines(args)))
        return
    if args.context:
        import bench_context  # beside this script

        sys.exit(bench_context.main(["--json", args.json] if args.json else []))
    if args.instructions:
        print("\n".join(instruction_lines()))
        return
    if args.goals or args.profile:
        print("\n".join(goal_lines(args) if args.goals else profile_lines(args)))
        return
    sdk = None if args.no_sdk else sdk_available()
    clients = CLIENTS if sdk else tuple(name for name in CLIENTS if name != "sdk")
    started = time.perf_counter()
    results = collect(args, clients)
    lines = header(args, sdk) + table(results)
    lines += [""] + jail_lines(results.get("jail", {})) + [""]
    lines += codemode_lines(results["codemode"]) + [""]
    lines += serve_lines(args) + [""]
    lines.append(
        "(whole run: %.0f s; rerun: python tools/bench.py [--quick])"
        % (time.perf_counter() - started)
    )
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"header": header(args, sdk), "results": results}, out, indent=1)


if __name__ == "__main__":
    main()
