"""A signal handler that stops a client, landing wherever the main thread is.

A harness's SIGTERM handler commonly calls ``client.stop()``. The handler runs
in the main thread between two bytecodes, possibly while that very thread
holds the client's lock; ``stop`` must then neither deadlock nor corrupt the
latch. The case is forced here by raising the signal inside the lock, in a
child interpreter (a deadlock would hang the test runner itself).
"""

from __future__ import annotations

import subprocess
import sys
import unittest

from support import LONG, server

HARNESS = """
import os, signal
from mcp_client import Options, Spawn, start
from mcp_client.errors import ClientClosed

client = start(%r, Options(retire_timeout=%r))
signal.signal(signal.SIGALRM, lambda signum, frame: client.stop())
with client._lock:  # the handler runs as soon as os.kill returns: inside the lock
    os.kill(os.getpid(), signal.SIGALRM)
print(client.state.value)
try:
    client.call_tool("echo", {})
except ClientClosed as e:
    print("ClientClosed:", e)
print(client.shutdown())
""" % (server("good"), LONG)


class StopFromASignalHandler(unittest.TestCase):
    def test_stop_inside_the_clients_own_lock(self) -> None:
        done = subprocess.run(
            [sys.executable, "-c", HARNESS], capture_output=True, text=True, timeout=4 * LONG
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            done.stdout.splitlines(),
            [
                "closed",
                "ClientClosed: client was stopped (server scripted)",
                "Exited(returncode=-9)",
            ],
        )


if __name__ == "__main__":
    unittest.main()
