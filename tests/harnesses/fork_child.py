"""A harness that forks while its client is active; prints one JSON report.

``python fork_child.py`` starts the scripted ``good`` server, forks, and lets
the child try the inherited client and then leave through ``sys.exit`` (so
its ``atexit`` hooks run), while the parent times the child and then uses its
own client. The test reads the report (see ``tests/test_reliability.py``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Dict

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)

from mcp_client import Options, start  # noqa: E402
from mcp_client.errors import ClientInherited  # noqa: E402

from support import server, text_of  # noqa: E402


def child_report(client: object) -> Dict[str, object]:
    report: Dict[str, object] = {}
    try:
        client.call_tool("echo", {"from": "child"})  # type: ignore[attr-defined]
        report["call"] = "answered"
    except ClientInherited as e:
        report["call"] = "ClientInherited: %s" % e
    begun = time.monotonic()
    client.stop()  # type: ignore[attr-defined]
    report["stop_seconds"] = time.monotonic() - begun
    try:
        client.shutdown()  # type: ignore[attr-defined]
        report["shutdown"] = "returned"
    except ClientInherited:
        report["shutdown"] = "ClientInherited"
    return report


def main() -> None:
    client = start(server("good"), Options(retire_timeout=30.0))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.write(write_end, json.dumps(child_report(client)).encode())
        os.close(write_end)
        sys.exit(0)  # the atexit hooks run here, in the child
    os.close(write_end)
    begun = time.monotonic()
    _, status = os.waitpid(pid, 0)
    child_seconds = time.monotonic() - begun
    with os.fdopen(read_end, "rb") as pipe:
        child = json.loads(pipe.read() or b"{}")
    state_after_child = client.state.value
    answer = client.call_tool("echo", {"from": "parent"})
    evidence = client.shutdown()
    print(
        json.dumps(
            {
                "child": child,
                "child_status": status,
                "child_seconds": child_seconds,
                "parent_state_after_child": state_after_child,
                "parent_answer": text_of(answer),
                "parent_evidence": repr(evidence),
            }
        )
    )


if __name__ == "__main__":
    main()
