"""What this process holds, read from ``/proc``: for the leak check and the tests of bounds."""

from __future__ import annotations

import os
import threading
from typing import Iterator, List, Set, Tuple

#: Whether ``/proc`` can tell (Linux); elsewhere the checks that need it are skipped.
PROC = os.path.isdir("/proc/self/fd")


def open_fds() -> Set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")} if PROC else set()


def client_threads() -> List[threading.Thread]:
    """Every live thread the client named ``mcp-...``."""
    return [t for t in threading.enumerate() if t.name.startswith("mcp-") and t.is_alive()]


def process_stats() -> Iterator[Tuple[int, List[str]]]:
    """``(pid, fields)`` of every process, fields after the command name:
    ``[state, ppid, pgrp, ...]`` (``man 5 proc``)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as stat:
                # The state follows the parenthesised command name, which may hold ") ".
                yield int(entry), stat.read().rsplit(")", 1)[1].split()
        except OSError:  # it ended while we looked
            continue


def rss_bytes() -> int:
    """This process's resident memory (``VmRSS``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024  # reported in kB
    raise AssertionError("no VmRSS in /proc/self/status")
