"""Unjailed servers die with their harness: ProcessTransport(lifeline=True), for real."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import unittest
from typing import Any, Dict, List

import pytest

from mcp_client import ProcessTransport, prepare, start
from mcp_client.errors import HandshakeFailed, TransportFailed, Unavailable
from mcp_client.transport import Exited, Spawn

from procs import process_stats
from support import LONG, OPTIONS, server, server_argv, text_of, wait_until


def live_in_group(pgid: int) -> List[int]:
    return [pid for pid, fields in process_stats() if int(fields[2]) == pgid and fields[0] != "Z"]


def alive(pid: int) -> bool:
    return any(p == pid and fields[0] != "Z" for p, fields in process_stats())


class Supervised(unittest.TestCase):
    """The server is the Popen's own process: the evidence is what it was."""

    def test_retirement_is_sigkill_and_the_watchdog_goes_with_it(self) -> None:
        client = start(ProcessTransport(server("good"), lifeline=True), OPTIONS)
        pgid = client.pid or 0
        self.assertEqual(len(live_in_group(pgid)), 2, "the server and its watchdog")
        self.assertIn("hi", text_of(client.call_tool("echo", {"text": "hi"})))
        self.assertEqual(client.shutdown(), Exited(-9))
        self.assertTrue(wait_until(lambda: not live_in_group(pgid)))

    def test_a_servers_own_exit_is_the_evidence(self) -> None:
        client = start(ProcessTransport(server("exit_mid_call"), lifeline=True), OPTIONS)
        with self.assertRaises(Unavailable):
            client.call_tool("echo", {"text": "x"})
        self.assertEqual(client.shutdown(), Exited(3))

    def test_ignored_signals_are_the_defaults_again_for_the_server(self) -> None:
        # Python ignores SIGPIPE and SIGXFSZ, and an exec keeps what is ignored: a server
        # must meet a closed pipe as one started by a shell does.
        status = Spawn("sh", ("-c", "grep SigIgn /proc/self/status >&2"))
        client = prepare(ProcessTransport(status, stderr="capture", lifeline=True), OPTIONS)
        with self.assertRaises(HandshakeFailed):
            client.connect()
        client.shutdown()
        ignored = int(client.stderr_tail.strip().rsplit("\\x09", 1)[-1], 16)
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):
            self.assertFalse(ignored & 1 << (signum - 1), client.stderr_tail)

    def test_a_missing_executable_is_transport_failed(self) -> None:
        client = prepare(ProcessTransport(Spawn("/no/such/server", ()), lifeline=True), OPTIONS)
        with self.assertRaisesRegex(TransportFailed, "cannot start /no/such/server: exec"):
            client.connect()
        client.shutdown()


class HarnessKilled(unittest.TestCase):
    """A SIGKILLed harness: no atexit, no finally, only the kernel closes the lifeline."""

    def test_with_a_lifeline_nothing_of_its_servers_is_left(self) -> None:
        report = self.kill_a_harness("lifeline")
        for pgid in report["groups"]:
            self.assertTrue(
                wait_until(lambda: not live_in_group(pgid)),  # noqa: B023
                "left running: %s" % live_in_group(pgid),
            )
        self.assertFalse(alive(report["grandchild"]))

    @pytest.mark.slow
    def test_without_one_a_server_that_ignores_eof_lives_on(self) -> None:
        # The item 13, as it was: what the lifeline is for.
        report = self.kill_a_harness("bare")
        never_read = report["groups"][0]
        try:
            self.assertFalse(wait_until(lambda: not live_in_group(never_read), timeout=1.0))
            self.assertTrue(alive(report["grandchild"]), "EOF ended its server, not it")
        finally:
            for pgid in report["groups"]:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for pgid in report["groups"]:
            self.assertTrue(wait_until(lambda: not live_in_group(pgid)))  # noqa: B023

    def kill_a_harness(self, how: str) -> Dict[str, Any]:
        harness = subprocess.Popen(
            server_argv("lifeline_harness", how), stdout=subprocess.PIPE, text=True
        )
        try:
            assert harness.stdout is not None
            report: Dict[str, Any] = json.loads(harness.stdout.readline())
            for pgid in report["groups"]:
                self.assertTrue(live_in_group(pgid))
            harness.send_signal(signal.SIGKILL)
            self.assertEqual(harness.wait(LONG), -signal.SIGKILL)
            return report
        finally:
            if harness.poll() is None:
                harness.kill()
                harness.wait()
            if harness.stdout is not None:
                harness.stdout.close()
