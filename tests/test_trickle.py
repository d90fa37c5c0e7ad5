"""A line trickled one byte per write (issue 9, item 6): memory stays proportional.

A real server (``tests/servers/trickle.py``) answers ``initialize`` and then
writes one never-ending line, one byte per ``write`` system call. For a few
seconds this process's resident memory and its count of memory mappings
(``/proc/self/status``, ``/proc/self/maps``) are sampled while the reader
thread takes the bytes in: both must stay bounded (before the fix every tiny
result of a 1 MiB read was held on its own, each keeping a mapping: ~260 MiB
and 65k mappings, the kernel's limit, within 3.5 s of ~100 KB). The server's
own write count (``/proc/<pid>/io``) proves the trickle happened. Then the
client is shut down cleanly (the leak check of ``conftest.py`` applies).
"""

from __future__ import annotations

import os
import time
import unittest
from typing import List

from mcp_client import Exited, State, start

from procs import rss_bytes
from support import OPTIONS, server

#: How long the server trickles while memory is watched.
SECONDS = 3.0
MIB = 1024 * 1024
#: Bounds far above what the fixed client needs (a few hundred KiB, a few
#: mappings) and far below what the old one reached.
RSS_GROWTH_LIMIT = 64 * MIB
MAPPINGS_GROWTH_LIMIT = 2000
#: The least the server must have written for the test to mean anything (the
#: old client took ~100 KB in 3.5 s; the fixed one takes megabytes).
MIN_TRICKLED = 50 * 1000


def mappings() -> int:
    with open("/proc/self/maps") as maps:
        return sum(1 for _ in maps)


def written_by(pid: int) -> int:
    """Bytes ``pid`` has passed to ``write`` (``wchar`` of ``/proc/<pid>/io``)."""
    with open("/proc/%d/io" % pid) as io:
        for line in io:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    raise AssertionError("no wchar in /proc/%d/io" % pid)


@unittest.skipUnless(os.path.exists("/proc/self/maps"), "needs Linux /proc")
class Trickle(unittest.TestCase):
    def test_a_trickled_line_keeps_memory_and_mappings_bounded(self) -> None:
        client = start(server("trickle"), OPTIONS)
        try:
            pid = client.pid
            assert pid is not None
            rss, maps = rss_bytes(), mappings()
            peaks = self.watch(SECONDS)
            trickled = written_by(pid)
            self.assertIs(client.state, State.READY, "a pending line is no fault")
        finally:
            evidence = client.shutdown()
        self.assertEqual(evidence, Exited(-9))
        self.assertGreater(trickled, MIN_TRICKLED)
        self.assertLess(
            peaks[0] - rss,
            RSS_GROWTH_LIMIT,
            "RSS grew %.1f MiB for %d bytes" % ((peaks[0] - rss) / MIB, trickled),
        )
        self.assertLess(peaks[1] - maps, MAPPINGS_GROWTH_LIMIT)

    def watch(self, seconds: float) -> List[int]:
        """The peak RSS and mapping count seen over ``seconds``."""
        peaks = [0, 0]
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            peaks = [max(peaks[0], rss_bytes()), max(peaks[1], mappings())]
            time.sleep(0.05)
        return peaks


if __name__ == "__main__":
    unittest.main()
