#!/usr/bin/env python3
"""Code mode in one command: a reference harness, small enough to copy.

    python tools/codemode.py --config FILE [--surface] [--no-jail] [--timeout S]
                             [--wall-clock S] [PROGRAM.py]

Every server of FILE is started (prepared, then connected at once; one that fails
is named with its stderr tail and left out) and gets a module ``cap.mcp.<key>``,
written with a ``cap`` package into a temporary directory. ``--surface`` prints the
surface. Otherwise PROGRAM, the model's code, runs in a child Python, jailed unless
``--no-jail``; its ``cap.internal.mcp.invoke`` sends each call over a pipe, and the
harness answers with ``codegen.deliver``'s value or a failure, raised in the program
as ``cap.mcp.ToolFailed`` (the tool said so) or ``cap.mcp.CallFailed``. Its stdio
and exit status are ours; every server is retired at the end, whatever happened.
The README ("Code mode in one command") says what a production harness adds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

from mcp_client import codegen, config, jailer
from mcp_client.client import Client, Options, prepare
from mcp_client.errors import ConfigError, McpClientError, StderrTail, ToolFailed, TransportFailed
from mcp_client.jail import INSTALL_HINT, Jail
from mcp_client.stdio import MAX_LINE_BYTES
from mcp_client.transport import CAPTURE, SAFE_ENV_KEYS, ProcessTransport

#: Exit statuses of the runner's own: a usage or config error, no server, the wall clock.
USAGE, NO_SERVER, WALL_CLOCK, INTERRUPTED = 2, 3, 124, 130
DEFAULT_WALL_CLOCK = 300.0
#: Seconds a server may take to shake hands, and then to list its tools.
START_TIMEOUT = 30.0
#: How much of a failed server's stderr is shown: lines, and characters a line.
TAIL_LINES, TAIL_CHARS = 10, 300
#: Seconds the call server may take to see the pipe close after the program's end.
LINGER = 5.0

#: cap/internal/mcp.py, in the program: the seam every generated function calls.
RUNTIME = '''"""The seam of the generated modules: each call goes to the harness over a pipe."""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict


class ToolFailed(Exception):
    """The tool reported a failure; str() is its text."""


class CallFailed(Exception):
    """The call did not complete: a timeout, a dead server, an unknown tool."""


_lock = threading.Lock()  # one call on the pipe at a time, whichever thread makes it
_calls, _answers = (int(fd) for fd in os.environ["CAP_MCP_FDS"].split(","))
_out = os.fdopen(_calls, "wb")  # buffered: a flush writes it all, a raw write may not
_in = os.fdopen(_answers, "rb")


def invoke(server: str, tool: str, arguments: Dict[str, Any]) -> Any:
    line = json.dumps({"server": server, "tool": tool, "arguments": arguments})
    with _lock:
        _out.write(line.encode("utf-8") + b"\\n")
        _out.flush()
        reply = _in.readline()
    if not reply:
        raise CallFailed("the harness is gone")
    answer = json.loads(reply)
    if "value" in answer:
        return answer["value"]
    if "tool_failed" in answer:
        raise ToolFailed(answer["tool_failed"])
    raise CallFailed(answer["error"])
'''
CAP_MCP = (
    '"""The generated modules, one per server; the two failures a call can raise."""\n\n'
    'from cap.internal.mcp import CallFailed, ToolFailed\n\n'
    '__all__ = ["CallFailed", "ToolFailed"]\n'
)


@dataclass
class Server:
    """One configured server: its client, and once generated, its module and tools."""

    name: str
    client: Client
    generated: Optional[codegen.Generated] = None
    tools: Dict[str, codegen.GeneratedTool] = field(default_factory=dict)
    failure: str = ""


def say(text: str) -> None:
    print("codemode: " + text, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- servers


def start_all(servers: Sequence[Server]) -> List[Server]:
    """Connect, list and generate for every server at once; the ones that worked."""
    threads = [
        threading.Thread(
            target=open_one, args=(server,), daemon=True, name="codemode-start-" + server.name
        )
        for server in servers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for server in servers:
        if server.generated is None:
            tail = server.client.stderr_tail.strip().splitlines()[-TAIL_LINES:]
            # The server's words, capped a line (the tail has escaped its control characters).
            said = "".join("\n  | " + codegen.sanitize(line, TAIL_CHARS) for line in tail)
            say("server %s left out: %s%s" % (server.name, server.failure, said))
    return [server for server in servers if server.generated is not None]


def open_one(server: Server) -> None:
    try:
        server.client.connect()
        generated = codegen.generate(server.name, server.client.list_tools(START_TIMEOUT))
    except McpClientError as e:  # the tail is shown apart, whole: not str()'s last lines
        server.failure = e.headline() if isinstance(e, StderrTail) else str(e)
        server.client.stop()
        return
    server.tools = {tool.wire_name: tool for tool in generated.tools}
    server.generated = generated


def retire(servers: Sequence[Server]) -> None:
    for server in servers:
        server.client.stop()  # every kill requested first: they die together
    for server in servers:
        try:
            server.client.shutdown()
        except McpClientError as e:
            say("server %s not confirmed gone: %s" % (server.name, e))


def write_cap(root: str, servers: Sequence[Server]) -> str:
    """The ``cap`` package under ``root``; returns the directory to put on sys.path."""
    files = {
        "cap/__init__.py": '"""Capabilities."""\n',
        "cap/internal/__init__.py": "",
        "cap/internal/mcp.py": RUNTIME,
        "cap/mcp/__init__.py": CAP_MCP,
    }
    for server in servers:
        assert server.generated is not None
        module = server.generated.module_name.rsplit(".", 1)[-1]
        files["cap/mcp/%s.py" % module] = server.generated.source
    top = os.path.join(root, "lib")
    for path, text in files.items():
        target = os.path.join(top, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as out:
            out.write(text)
    return top


# ----------------------------------------------------------------------------- calls


def serve(calls: IO[bytes], answers: IO[bytes], servers: Dict[str, Server], timeout: float) -> None:
    """Answer the program's calls until it closes its end of the pipe."""
    try:
        with calls, answers:
            for line in iter(lambda: calls.readline(MAX_LINE_BYTES + 1), b""):
                if len(line) > MAX_LINE_BYTES:  # bounded, as the wire is: no more calls
                    say(
                        "the program sent a call over %d bytes; no more are served" % MAX_LINE_BYTES
                    )
                    return
                try:
                    reply = json.dumps(answer(line, servers, timeout)).encode("utf-8")
                except Exception as e:  # a bug of ours: the program hears of it
                    reply = json.dumps({"error": "the harness failed: %r" % (e,)}).encode()
                answers.write(reply + b"\n")
                answers.flush()
    except BrokenPipeError:  # the program is gone
        pass


def answer(line: bytes, servers: Dict[str, Server], timeout: float) -> Dict[str, Any]:
    try:  # the program is untrusted: only a generated function's call is served
        request = json.loads(line)
        server = servers[request["server"]]
        tool = server.tools[request["tool"]]
        arguments = request["arguments"]
        if type(arguments) is not dict:
            raise TypeError("arguments is not an object")
    except (ValueError, KeyError, TypeError) as e:
        return {"error": "not a call of a generated function: %r" % (e,)}
    try:
        result = server.client.call_tool(tool.wire_name, arguments, timeout=timeout)
        return {"value": codegen.deliver(tool, result)}
    except ToolFailed as e:
        return {"tool_failed": str(e)}
    except McpClientError as e:
        return {"error": "%s.%s: %s" % (server.name, tool.function, e)}


# ----------------------------------------------------------------------------- the program


def run_program(
    program: str,
    lib: str,
    scratch: Optional[str],
    servers: Dict[str, Server],
    timeout: float,
    wall_clock: float,
) -> int:
    """PROGRAM's exit status (``128 + N`` for a signal), once it and its jail are gone."""
    calls_in, calls_out = os.pipe()
    answers_in, answers_out = os.pipe()
    theirs = (calls_out, answers_in)
    env = {key: os.environ[key] for key in SAFE_ENV_KEYS if key in os.environ}
    env.update(PYTHONPATH=lib, PYTHONDONTWRITEBYTECODE="1", CAP_MCP_FDS="%d,%d" % theirs)
    argv = [sys.executable, "-B", program]
    try:
        child = launch(argv, env, program, lib, scratch, theirs)
    except BaseException:
        for fd in (calls_in, answers_out):
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    server_thread = threading.Thread(
        target=serve,
        daemon=True,
        name="codemode-serve",
        args=(os.fdopen(calls_in, "rb"), os.fdopen(answers_out, "wb"), servers, timeout),
    )
    server_thread.start()
    try:
        code = child.wait(wall_clock)
    except subprocess.TimeoutExpired:
        say("the program ran past its wall-clock limit (%g s) and was killed" % wall_clock)
        code = WALL_CLOCK
    finally:
        end(child)
        # EOF once every copy of the program's end is closed: at once, unless something
        # unjailed escaped the program's process group with a copy (the thread is a daemon).
        server_thread.join(LINGER)
    return 128 - code if code < 0 else code


def launch(
    argv: List[str],
    env: Dict[str, str],
    program: str,
    lib: str,
    scratch: Optional[str],
    fds: Tuple[int, int],
) -> "subprocess.Popen[bytes]":
    if scratch is None:
        return subprocess.Popen(argv, env=env, pass_fds=fds, start_new_session=True)
    # Only the program's file is shown, not its directory (under /tmp nothing else
    # is but this interpreter, when a virtualenv lives there: the program needs it).
    jail = Jail(readable=(program, lib) + _interpreter_under_tmp(), writable=(scratch,))
    return jailer.spawn_command(jail, argv, env, cwd=scratch, pass_fds=fds)


def _interpreter_under_tmp() -> Tuple[str, ...]:
    """This interpreter's directories that the jail's private ``/tmp`` would hide."""
    places = (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable))
    found = dict.fromkeys(os.path.realpath(place) for place in places)
    return tuple(place for place in found if place == "/tmp" or place.startswith("/tmp/"))


def end(child: "subprocess.Popen[bytes]") -> None:
    """Kill the program's process group (its jail, or what it started) and reap it."""
    if child.returncode is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:  # the group is gone already
            pass
    child.wait()


# ----------------------------------------------------------------------------- main


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="codemode", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="mcpServers / servers JSON file")
    parser.add_argument("--surface", action="store_true", help="print the surface and exit")
    parser.add_argument("--no-jail", action="store_true", help="run PROGRAM unjailed")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per call (60)")
    parser.add_argument(
        "--wall-clock",
        type=float,
        default=DEFAULT_WALL_CLOCK,
        help="seconds the whole program may run (%g)" % DEFAULT_WALL_CLOCK,
    )
    parser.add_argument("program", nargs="?", help="the Python program to run")
    args = parser.parse_args(argv)
    if args.program is None and not args.surface:
        parser.error("give a PROGRAM to run, or --surface")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    jailed = not (args.no_jail or args.surface)
    if jailed and shutil.which("bwrap") is None:
        say(
            "the program runs in a jail, and bubblewrap (bwrap) is not on PATH: %s; "
            "or pass --no-jail to run it unjailed" % INSTALL_HINT
        )
        return USAGE
    program = None if args.program is None else os.path.realpath(args.program)
    if program is not None and not os.path.isfile(program):
        say("no program file %s" % args.program)
        return USAGE
    try:
        loaded = config.load(args.config)
    except ConfigError as e:
        say(str(e))
        return USAGE
    for warning in loaded.skipped:
        say(warning)
    # SIGTERM unwinds like Ctrl-C does, through the finally that retires the servers.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    options = Options(handshake_timeout=START_TIMEOUT, request_timeout=args.timeout)
    servers = [
        Server(entry.name, prepare(ProcessTransport(entry.spawn, stderr=CAPTURE), options))
        for entry in loaded.servers
    ]  # every one published before any starts
    try:
        return run(args, program, jailed, start_all(servers))
    except TransportFailed as e:  # the jail could not be had: never an unjailed run
        say("the program cannot run jailed: %s" % e)
        return USAGE
    except KeyboardInterrupt:
        say("interrupted")
        return INTERRUPTED
    finally:
        retire(servers)


def run(args: argparse.Namespace, program: Optional[str], jailed: bool, live: List[Server]) -> int:
    if not live:
        say("no server started")
        return NO_SERVER
    # Jailed, under /tmp: the jail covers it, so only what it is given to see shows.
    with tempfile.TemporaryDirectory(prefix="codemode-", dir="/tmp" if jailed else None) as root:
        lib = write_cap(root, live)
        if program is None:
            print("\n".join(s.generated.surface.rstrip("\n") for s in live if s.generated))
            return 0
        scratch = os.path.join(root, "scratch") if jailed else None
        if scratch is not None:
            os.mkdir(scratch)
        by_name = {server.name: server for server in live}
        return run_program(program, lib, scratch, by_name, args.timeout, args.wall_clock)


if __name__ == "__main__":
    sys.exit(main())
