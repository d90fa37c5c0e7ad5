#!/usr/bin/env python3
"""Record the wire captures shipped under ``tests/captures`` (run from anywhere).

    python tools/make_captures.py [--only NAME ...] [--out DIR]

Each capture is one real session of this package's client, recorded with
``Options(capture=...)``; ``tests/test_replay.py`` replays them (offline and
with ``tools/replay.py --serve``) and pins their outcomes. Regenerate them
after a change to what the client sends: a replay then reports the change as a
divergence until the captures are recorded again. The real server needs
``mcp-server-time`` (installed by the ``test`` extra on Python 3.10+); its
answers depend on the clock, which does not matter, since a replay serves the
recorded ones.

Captures (name -- server -- session):

* ``time``           -- ``python -m mcp_server_time --local-timezone UTC`` (real, from PyPI)
  -- handshake, list, ``get_current_time``, ``convert_time`` (ok, then a bad
  zone: ``isError``), ``ping``;
* ``demo``           -- the bundled demo server, 2 tools per page -- handshake, 3 list
  pages, ``add``, ``divide`` by zero (``isError``), an unknown tool (-32602), ``ping``;
* ``invalid_utf8``   -- hostile (``tests/servers`` ``invalid_utf8``) -- handshake,
  list, ``ping``, a call answered with bytes that are not UTF-8: the client dies;
* ``line_too_long``  -- hostile (``huge_line``, 17 MiB) -- a call answered with a
  line past the 16 MiB cap: a framing fault (the log records the event, not the line);
* ``exit_mid_call``  -- hostile (``exit_mid_call``) -- the server exits during a call;
* ``server_requests`` -- hostile-ish (``server_requests``): during a call the server
  pings the client and asks it for sampling; the client's answers (``{}`` and
  -32601) are in the log, and a replay checks them;
* ``early_ping``     -- ``notify_before_init``: a notification and a ping arrive
  before the ``initialize`` answer.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Dict, List, Optional, Sequence, Tuple

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from mcp_client import Client, McpClientError, Options, Spawn, prepare  # noqa: E402
from mcp_client.cli import demo_server  # noqa: E402

SCRIPTED = os.path.join(_REPO, "tests", "servers", "scripted.py")
OUT = os.path.join(_REPO, "tests", "captures")
TIMEOUT = 15.0


def _scripted(behaviour: str, *args: str) -> Spawn:
    return Spawn(sys.executable, (SCRIPTED, behaviour) + args)


def _time(client: Client) -> None:
    client.list_tools()
    client.call_tool("get_current_time", {"timezone": "Europe/Warsaw"})
    client.call_tool(
        "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    )
    client.call_tool(
        "convert_time",
        {"source_timezone": "Nowhere/Atlantis", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    )
    client.ping()


def _demo(client: Client) -> None:
    client.list_tools()
    client.call_tool("add", {"a": 2, "b": 3})
    client.call_tool("divide", {"a": 1, "b": 0})
    _expect_failure(lambda: client.call_tool("no_such_tool", {}))
    client.ping()


def _hostile_call(client: Client) -> None:
    client.list_tools()
    client.ping()
    _expect_failure(lambda: client.call_tool("echo", {"message": "hello"}))


def _one_call(client: Client) -> None:
    client.call_tool("echo", {"n": 1})


def _expect_failure(work: Callable[[], object]) -> None:
    try:
        work()
    except McpClientError:
        return
    raise AssertionError("the call was expected to fail")


Session = Callable[[Client], None]

SESSIONS: Dict[str, Tuple[Spawn, Session]] = {
    "time": (Spawn(sys.executable, ("-m", "mcp_server_time", "--local-timezone", "UTC")), _time),
    "demo": (Spawn(sys.executable, (demo_server.__file__, "--page-size", "2")), _demo),
    "invalid_utf8": (_scripted("invalid_utf8"), _hostile_call),
    "line_too_long": (_scripted("huge_line", str(17 * 1024 * 1024)), _hostile_call),
    "exit_mid_call": (_scripted("exit_mid_call"), _hostile_call),
    "server_requests": (_scripted("server_requests"), _one_call),
    "early_ping": (_scripted("notify_before_init"), _one_call),
}


def record(name: str, out: str) -> str:
    spawn, session = SESSIONS[name]
    path = os.path.join(out, name + ".jsonl")
    options = Options(handshake_timeout=TIMEOUT, request_timeout=TIMEOUT, capture=path)
    client = prepare(spawn, options)
    try:
        client.connect()
        session(client)
    finally:
        client.shutdown()
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/make_captures.py", description="Record the captures of tests/captures."
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=sorted(SESSIONS),
        metavar="NAME",
        help="record only these (default: all): %s" % ", ".join(SESSIONS),
    )
    parser.add_argument("--out", default=OUT, help="directory (default: tests/captures)")
    options = parser.parse_args(argv)
    os.makedirs(options.out, exist_ok=True)
    names: List[str] = options.only or list(SESSIONS)
    for name in names:
        print(record(name, options.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
