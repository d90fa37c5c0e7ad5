"""A harness that starts unjailed servers, then waits to be killed.

``python lifeline_harness.py lifeline|bare`` starts two servers from a thread that
ends at once (``PR_SET_PDEATHSIG`` would fire there): ``never_read``, which ignores
its stdin's EOF (it never reads again), and ``fork_grandchild``, whose grandchild
sleeps in its group holding the pipes. With ``lifeline`` they are started with
``ProcessTransport(lifeline=True)``. It prints one JSON line ``{"groups": [PID,
...], "grandchild": PID}`` and sleeps; the test SIGKILLs it (no ``atexit``, no
``finally``) and looks at what is left.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, Dict, List

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.dirname(TESTS), TESTS]  # the repository, and the tests' helpers

from mcp_client import ProcessTransport, start  # noqa: E402

from support import server, text_of  # noqa: E402


def main() -> None:
    lifeline = sys.argv[1] == "lifeline"
    clients: List[Any] = []

    def connect() -> None:
        for spawn in (server("never_read"), server("fork_grandchild")):
            clients.append(start(ProcessTransport(spawn, lifeline=lifeline)))

    opener = threading.Thread(target=connect)
    opener.start()
    opener.join()  # that thread is gone now; the servers must not have gone with it
    grandchild = int(text_of(clients[1].call_tool("echo", {"text": "pid"})))
    report: Dict[str, Any] = {"groups": [c.pid for c in clients], "grandchild": grandchild}
    print(json.dumps(report), flush=True)
    time.sleep(300)


if __name__ == "__main__":
    main()
