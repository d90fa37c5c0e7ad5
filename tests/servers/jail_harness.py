"""A harness that starts a jailed server, then waits to be killed.

``python jail_harness.py WORKDIR [seize]`` starts ``jail_probe.py`` in a jail
(WORKDIR writable) from a thread that ends at once -- the start must not be
tied to that thread's life -- has the server fork a ``setsid`` daemon, prints
one JSON line ``{"bwrap": PID, "daemon": PID_IN_JAIL}`` and sleeps. With
``seize``, the server first tries to stop the jail's init (``seize_init``: its
``/proc/1/mem``, ``PTRACE_ATTACH``), and the line carries what it got as ``"seized"``. The
test kills it with SIGKILL (no ``atexit``, no ``finally``) and checks that nothing of the jail
lives on.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, Dict

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.dirname(TESTS), TESTS]  # the repository, and the tests' helpers

from mcp_client import ProcessTransport, start  # noqa: E402

from support import jail_for_tests, server, text_of  # noqa: E402


def main() -> None:
    workdir = sys.argv[1]
    held: Dict[str, Any] = {}
    spawn = server("jail_probe")

    def connect() -> None:
        jail = jail_for_tests(writable=(workdir,))
        held["client"] = start(ProcessTransport(spawn, jail=jail))

    opener = threading.Thread(target=connect)
    opener.start()
    opener.join()  # that thread is gone now; the jail must not have gone with it
    client = held["client"]
    report: Dict[str, Any] = {"bwrap": client.pid}
    if sys.argv[2:] == ["seize"]:
        report["seized"] = json.loads(text_of(client.call_tool("seize_init", {})))
    answer = client.call_tool("daemon", {"pidfile": os.path.join(workdir, "daemon.pid")})
    report["daemon"] = json.loads(text_of(answer))["pid"]
    print(json.dumps(report), flush=True)
    time.sleep(300)


if __name__ == "__main__":
    main()
