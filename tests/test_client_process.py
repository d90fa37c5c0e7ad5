"""The client against real hostile child processes (``tests/servers/scripted.py``).

Every test here ends with the shared leak check of ``conftest.py``: the child
reaped, its process group empty, no client thread and no descriptor left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Dict, List

import pytest

from mcp_client import Exited, Options, State, prepare, start
from mcp_client.errors import (
    CallTimedOut,
    ClientBroken,
    HandshakeFailed,
    ResultMalformed,
    StartError,
    ToolsNotDeclared,
    TooManyPages,
    VersionUnsupported,
)

import hostile
from servers import alive
from support import LONG, OPTIONS, SHORT, server, server_argv, text_of, wait_until

MIB = 1024 * 1024


class Handshakes(unittest.TestCase):
    def _refused(self, behaviour: str, options: Options = OPTIONS) -> StartError:
        client = prepare(server(behaviour), options)
        with self.assertRaises(StartError) as caught:
            client.connect()
        self.assertIs(client.state, State.BROKEN)
        evidence = client.shutdown()
        self.assertIsInstance(evidence, Exited, "what was spawned was reaped")
        return caught.exception

    def test_garbage_before_handshake(self) -> None:
        self.assertIsInstance(self._refused("garbage_before_handshake"), HandshakeFailed)

    def test_wrong_version(self) -> None:
        error = self._refused("wrong_version")
        assert isinstance(error, VersionUnsupported)
        self.assertEqual(error.server_version, "1999-01-01")

    def test_no_tools_capability(self) -> None:
        self.assertIsInstance(self._refused("no_tools_capability"), ToolsNotDeclared)

    def test_handshake_error(self) -> None:
        self.assertIsInstance(self._refused("handshake_error"), HandshakeFailed)

    def test_handshake_silent(self) -> None:
        options = Options(handshake_timeout=SHORT, retire_timeout=LONG)
        self.assertIsInstance(self._refused("handshake_silent", options), HandshakeFailed)

    def test_exit_immediately(self) -> None:
        client = prepare(server("exit_immediately"), OPTIONS)
        with self.assertRaises(HandshakeFailed):
            client.connect()
        self.assertEqual(client.shutdown(), Exited(7))

    def test_notifications_and_ping_before_the_answer(self) -> None:
        with start(server("notify_before_init"), OPTIONS) as client:
            answer = json.loads(text_of(client.call_tool("probe", {})))
        self.assertEqual(answer, {"ping": {"result": {}}})

    def test_stderr_noise_is_not_protocol(self) -> None:
        with start(server("stderr_noise", str(MIB)), OPTIONS) as client:
            self.assertEqual(text_of(client.call_tool("echo", {"a": 1})), '{"a":1}')


@hostile.each("_dies", scripted=True)
class Lines(unittest.TestCase):
    """Each hostile line (``tests/hostile.py``) from its scripted server is a death."""

    def _dies(self, line: hostile.Hostile) -> None:
        client = start(server(*line.behaviour), OPTIONS)
        with self.assertRaises(ClientBroken) as caught:
            client.call_tool("echo", {})
        with self.assertRaises(ClientBroken):
            client.ping()
        self.assertEqual(client.shutdown(), Exited(-9))
        self.assertTrue(caught.exception.reason.startswith(line.death), caught.exception.reason)
        self.assertIn(line.reason, caught.exception.reason)

    def test_fifteen_mib_line_succeeds(self) -> None:
        with start(server("huge_line", str(15 * MIB)), OPTIONS) as client:
            self.assertGreater(len(text_of(client.call_tool("echo", {}))), 15 * MIB - 200)
            client.ping()


class Ids(unittest.TestCase):
    def test_duplicate_response_is_dropped(self) -> None:
        with start(server("duplicate_response"), OPTIONS) as client:
            self.assertEqual(text_of(client.call_tool("echo", {})), "first")
            self.assertEqual(text_of(client.call_tool("echo", {})), "first")
            self.assertIs(client.state, State.READY)

    def test_unknown_ids_are_dropped(self) -> None:
        with start(server("unknown_ids"), OPTIONS) as client:
            self.assertEqual(text_of(client.call_tool("echo", {"n": 1})), '{"n":1}')
            client.ping()

    def test_out_of_order_answers_reach_their_callers(self) -> None:
        results: Dict[int, str] = {}
        with start(server("out_of_order", "4"), OPTIONS) as client:

            def call(n: int) -> None:
                results[n] = text_of(client.call_tool("echo", {"n": n}))

            threads = [threading.Thread(target=call, args=(n,)) for n in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(LONG)
        self.assertEqual(results, {n: '{"n":%d}' % n for n in range(4)})

    def test_server_requests_are_answered(self) -> None:
        with start(server("server_requests"), OPTIONS) as client:
            answers = json.loads(text_of(client.call_tool("echo", {})))
        self.assertEqual(answers["ping"], {"result": {}})
        self.assertEqual(answers["sampling/createMessage"]["error"]["code"], -32601)


class Deaths(unittest.TestCase):
    def test_exit_mid_call(self) -> None:
        client = start(server("exit_mid_call"), OPTIONS)
        with self.assertRaises(ClientBroken):
            client.call_tool("echo", {})
        self.assertEqual(client.shutdown(), Exited(3))

    def test_close_stdout_but_keep_running(self) -> None:
        client = start(server("close_stdout"), OPTIONS)
        with self.assertRaises(ClientBroken) as caught:
            client.call_tool("echo", {})
        self.assertIn("closed its stdout", caught.exception.reason)
        self.assertEqual(client.shutdown(), Exited(-9))

    def test_grandchild_is_gone_after_shutdown(self) -> None:
        with tempfile.TemporaryDirectory() as where:
            pidfile = os.path.join(where, "grandchild")
            client = start(server("fork_grandchild", pidfile), OPTIONS)
            with open(pidfile) as handle:
                grandchild = int(handle.read())
        self.assertTrue(alive(grandchild))
        self.assertEqual(client.shutdown(), Exited(-9))
        self.assertTrue(wait_until(lambda: not alive(grandchild)))

    def test_stop_while_calls_are_in_flight(self) -> None:
        client = start(server("never_answer"), OPTIONS)
        errors: List[BaseException] = []

        def call() -> None:
            try:
                client.call_tool("echo", {})
            except BaseException as e:  # noqa: B902 - asserted below
                errors.append(e)

        threads = [threading.Thread(target=call) for _ in range(5)]
        for thread in threads:
            thread.start()
        self.assertTrue(wait_until(lambda: client.in_flight == 5))
        client.stop()
        for thread in threads:
            thread.join(LONG)
        self.assertEqual([type(e).__name__ for e in errors], ["ClientClosed"] * 5)
        self.assertEqual(client.shutdown(), Exited(-9))


class Deadlines(unittest.TestCase):
    def test_never_answer_times_out_and_the_client_lives(self) -> None:
        with start(server("never_answer"), OPTIONS) as client:
            with self.assertRaises(CallTimedOut):
                client.call_tool("echo", {}, timeout=SHORT)
            client.ping()

    def test_never_read_bounds_a_multi_megabyte_write(self) -> None:
        client = start(server("never_read"), OPTIONS)
        started = time.monotonic()
        with self.assertRaises(CallTimedOut):
            client.call_tool("echo", {"blob": "x" * (8 * MIB)}, timeout=SHORT)
        self.assertLess(time.monotonic() - started, LONG)
        self.assertIs(client.state, State.BROKEN, "the half-written frame poisoned the stream")
        self.assertEqual(client.shutdown(), Exited(-9))

    @pytest.mark.slow
    def test_sixty_threads_with_mixed_timeouts(self) -> None:
        outcomes: Dict[int, List[str]] = {n: [] for n in range(60)}
        with start(server("slow", "0"), OPTIONS) as client:

            def call(n: int) -> None:
                slow = n % 3 == 0  # these answer after their deadline
                timeout = SHORT * (1 + n % 4)
                delay = timeout + 1.0 if slow else 0.0
                try:
                    client.call_tool("echo", {"delay": delay, "n": n}, timeout=timeout)
                    outcomes[n].append("result")
                except CallTimedOut:
                    outcomes[n].append("timeout")

            threads = [threading.Thread(target=call, args=(n,)) for n in range(60)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(LONG)
            client.ping()
        for n, seen in outcomes.items():
            self.assertEqual(seen, ["timeout" if n % 3 == 0 else "result"], "caller %d" % n)


class Listings(unittest.TestCase):
    def test_pages(self) -> None:
        with start(server("good", "--tools", "12", "--pages", "4"), OPTIONS) as client:
            self.assertEqual(len(client.list_tools()), 12)

    def test_looping_cursor(self) -> None:
        with start(server("loop_cursor"), OPTIONS) as client:
            with self.assertRaises(TooManyPages):
                client.list_tools()

    def test_lying_tools(self) -> None:
        with start(server("lying_tools"), OPTIONS) as client:
            with self.assertRaises(ResultMalformed) as caught:
                client.list_tools()
            self.assertIn("tools[1]", caught.exception.fault.reason)


_EXIT_WITHOUT_SHUTDOWN = """
import sys
from mcp_client import Spawn, start
client = start(Spawn(sys.argv[1], tuple(sys.argv[2:])))
print(client.pid, flush=True)
"""  # ... and the interpreter exits with the client still active


class InterpreterExit(unittest.TestCase):
    def test_active_clients_are_retired_at_exit(self) -> None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        with tempfile.TemporaryDirectory() as where:
            pidfile = os.path.join(where, "grandchild")
            argv = server_argv("fork_grandchild", pidfile)
            done = subprocess.run(
                [sys.executable, "-c", _EXIT_WITHOUT_SHUTDOWN] + argv,
                cwd=root,
                capture_output=True,
                text=True,
                timeout=LONG,
            )
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(pidfile) as handle:
                grandchild = int(handle.read())
        pid = int(done.stdout)
        wait_until(lambda: not alive(pid) and not alive(grandchild))
        self.assertFalse(alive(pid), "the server outlived the interpreter that started it")
        self.assertFalse(alive(grandchild), "its process group was not retired")

    @pytest.mark.slow
    def test_a_call_in_a_non_daemon_thread_holds_back_exit_until_its_deadline(self) -> None:
        # Python joins non-daemon threads before it runs atexit hooks (the README,
        # "Threads and interpreter exit"): the hook cannot retire the client under
        # such a call, which ends at its deadline; under a daemon thread's, it does.
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # CallTimedOut: the call ran to its deadline before the hook could run;
        # ClientClosed: the hook retired the client under it.
        for daemon, expected in (
            (False, ["main done", "CallTimedOut", "atexit"]),
            (True, ["main done", "ClientClosed", "atexit"]),
        ):
            with self.subTest(daemon=daemon):
                done = subprocess.run(
                    [sys.executable, "-c", _CALL_AT_EXIT, str(daemon)]
                    + server_argv("never_answer"),
                    cwd=root,
                    capture_output=True,
                    text=True,
                    timeout=LONG,
                )
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertEqual(
                    [line.split(":")[0] for line in done.stdout.splitlines()],
                    expected,
                    done.stdout + done.stderr,
                )


_CALL_AT_EXIT = """
import atexit, sys, threading
calls = []

def last():  # registered before mcp_client's hook, so it runs after it (LIFO)
    for thread in calls:
        thread.join(5.0)
    print("atexit: after the exit hook", flush=True)

atexit.register(last)
from mcp_client import Options, Spawn, start
from mcp_client.errors import CallTimedOut, ClientClosed
client = start(Spawn(sys.argv[2], tuple(sys.argv[3:])), Options(request_timeout=1.0))

def call():
    try:
        client.call_tool("echo", {})
    except (CallTimedOut, ClientClosed) as e:
        print("%s: the call ended" % type(e).__name__, flush=True)

calls.append(threading.Thread(target=call, daemon=sys.argv[1] == "True"))
calls[0].start()
print("main done: the main thread returns", flush=True)
"""


if __name__ == "__main__":
    unittest.main()
