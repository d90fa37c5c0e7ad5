"""Sanity checks for the scripted servers in ``tests/servers``: each behaviour does
exactly the odd thing its catalogue line promises, seen through raw pipes.

No client code is involved, so a broken client can never hide a broken fixture.
Every read has a deadline; every child's process group is killed and the child
reaped in cleanup.
"""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import unittest
from typing import Any, Dict

import hostile
import servers
from servers import alive, scripted
from servers.pipes import Pipe
from support import server_argv, text_of, wait_until

Message = Dict[str, Any]

MIB = 1024 * 1024


class ScriptedCase(unittest.TestCase):
    def start(self, behaviour: str, *args: str, **options: Any) -> Pipe:
        pipe = Pipe(server_argv(behaviour, *args), **options)
        self.addCleanup(pipe.kill)
        return pipe

    def handshaken(self, behaviour: str, *args: str) -> Pipe:
        pipe = self.start(behaviour, *args)
        response = pipe.handshake()
        self.assertEqual(response["result"]["protocolVersion"], "2025-06-18", response)
        return pipe

    def send_call(self, pipe: Pipe, arguments: Any = None, name: str = "echo") -> Any:
        return pipe.request("tools/call", {"name": name, "arguments": arguments or {}})

    def assertStillServing(self, pipe: Pipe) -> None:
        self.assertEqual(pipe.call("ping")["result"], {})

    def assertExits(self, pipe: Pipe, status: int) -> None:
        with self.assertRaises(EOFError):
            pipe.read_line()
        self.assertEqual(pipe.wait(), status)


class Catalogue(unittest.TestCase):
    def test_every_behaviour_is_documented_once(self) -> None:
        documented = re.findall(r"^``(\w+)", servers.__doc__ or "", re.MULTILINE)
        self.assertEqual(sorted(documented), sorted(scripted.BEHAVIOURS))

    def test_an_unknown_behaviour_is_a_usage_error(self) -> None:
        for argv in ([], ["no_such_behaviour"]):
            with self.subTest(argv=argv):
                self.assertEqual(scripted.main(argv), 2)

    def test_sized_line_is_exact(self) -> None:
        for size in (0, 100, 12345):
            with self.subTest(size=size):
                line = scripted.sized_line(7, size)
                self.assertEqual(len(line), max(size, len(scripted.sized_line(7, 0))))
                self.assertEqual(json.loads(line)["id"], 7)


class Good(ScriptedCase):
    def test_handshake(self) -> None:
        pipe = self.start("good")
        result = pipe.handshake("2025-03-26")["result"]
        self.assertEqual(result["protocolVersion"], "2025-03-26")
        self.assertEqual(result["capabilities"], {"tools": {"listChanged": False}})
        self.assertIsInstance(result["serverInfo"]["name"], str)

    def test_lists_and_echoes(self) -> None:
        pipe = self.handshaken("good")
        page = pipe.call("tools/list")["result"]
        self.assertEqual([tool["name"] for tool in page["tools"]], ["echo", "echo_1"])
        self.assertNotIn("nextCursor", page)
        ident = self.send_call(pipe, {"b": [1, "é"], "a": None}, name="echo_1")
        response = pipe.read_message()
        self.assertEqual(response["id"], ident)
        self.assertEqual(text_of(response), '{"a":null,"b":[1,"\\u00e9"]}')

    def test_errors(self) -> None:
        pipe = self.handshaken("good")
        self.send_call(pipe, name="missing")
        self.assertEqual(pipe.read_message()["error"]["code"], -32602)
        self.assertEqual(pipe.call("resources/list")["error"]["code"], -32601)
        self.assertEqual(pipe.call("tools/list", {"cursor": "page-9"})["error"]["code"], -32602)
        self.assertStillServing(pipe)

    def test_pages(self) -> None:
        pipe = self.handshaken("good", "--tools", "5", "--pages", "3")
        sizes, names, params = [], [], {}  # type: List[int], List[str], Message
        while True:
            page = pipe.call("tools/list", params)["result"]
            sizes.append(len(page["tools"]))
            names.extend(tool["name"] for tool in page["tools"])
            if "nextCursor" not in page:
                break
            params = {"cursor": page["nextCursor"]}
        self.assertEqual(sizes, [1, 2, 2])
        self.assertEqual(names, ["echo", "echo_1", "echo_2", "echo_3", "echo_4"])

    def test_more_pages_than_tools_still_gives_every_page(self) -> None:
        pipe = self.handshaken("good", "--tools", "0", "--pages", "3")
        first = pipe.call("tools/list")["result"]
        second = pipe.call("tools/list", {"cursor": first["nextCursor"]})["result"]
        third = pipe.call("tools/list", {"cursor": second["nextCursor"]})["result"]
        self.assertEqual((first["tools"], second["tools"], third), ([], [], {"tools": []}))

    def test_exits_at_eof(self) -> None:
        pipe = self.handshaken("good")
        pipe.close_stdin()
        self.assertExits(pipe, 0)


class HandshakeOddities(ScriptedCase):
    def test_garbage_before_handshake(self) -> None:
        pipe = self.start("garbage_before_handshake")
        pipe.request("initialize", {"protocolVersion": "2025-06-18"})
        with self.assertRaises(ValueError):
            json.loads(pipe.read_line())
        self.assertIn("protocolVersion", pipe.read_message()["result"])

    def test_notify_before_init(self) -> None:
        pipe = self.start("notify_before_init")
        ident = pipe.request("initialize", {"protocolVersion": "2025-06-18"})
        self.assertEqual(
            pipe.read_message(), {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        )
        ping = pipe.read_message()
        self.assertEqual((ping["method"], ping["id"]), ("ping", "early-ping"))
        self.assertEqual(pipe.read_message()["id"], ident)
        pipe.send({"jsonrpc": "2.0", "id": ping["id"], "result": {}})
        pipe.notify("notifications/initialized")
        self.send_call(pipe)
        self.assertEqual(json.loads(text_of(pipe.read_message())), {"ping": {"result": {}}})

    def test_wrong_version(self) -> None:
        result = self.start("wrong_version").handshake()["result"]
        self.assertEqual(result["protocolVersion"], "1999-01-01")

    def test_no_tools_capability(self) -> None:
        result = self.start("no_tools_capability").handshake()["result"]
        self.assertEqual(result["capabilities"], {})

    def test_handshake_error(self) -> None:
        response = self.start("handshake_error").handshake()
        self.assertNotIn("result", response)
        self.assertEqual(response["error"]["code"], -32603)

    def test_handshake_silent(self) -> None:
        pipe = self.start("handshake_silent")
        pipe.request("initialize", {"protocolVersion": "2025-06-18"})
        # The ping's answer being the very next line proves initialize got none.
        self.assertStillServing(pipe)

    def test_exit_immediately(self) -> None:
        self.assertExits(self.start("exit_immediately"), 7)


@hostile.each("_writes", scripted=True)
class BadLines(ScriptedCase):
    def _writes(self, line: hostile.Hostile) -> None:
        """The behaviour answers a call with exactly the hostile ``line`` (``tests/hostile.py``)."""
        pipe = self.handshaken(*line.behaviour)
        ident = self.send_call(pipe)
        self.assertEqual(pipe.read_line(), line.answer(ident))

    def test_huge_line_of_another_size(self) -> None:
        pipe = self.handshaken("huge_line", "1000000")
        ident = self.send_call(pipe)
        line = pipe.read_line()
        self.assertEqual(len(line), 1000000)
        self.assertEqual(json.loads(line)["id"], ident)

    def test_the_lines_are_what_their_names_say(self) -> None:
        with self.assertRaises(UnicodeDecodeError):
            hostile.INVALID_UTF8.line.decode("utf-8")
        self.assertIsInstance(json.loads(hostile.BATCH.line), list)
        self.assertIsNone(json.loads(hostile.NULL_ID.line)["id"])
        self.assertIsInstance(json.loads(hostile.FLOAT_ID.line)["id"], float)
        self.assertEqual(hostile.DEEP_NESTING.line.count(b"["), 100000 + 1)  # + the content array
        self.assertEqual(len(hostile.HUGE_LINE.line), 17 * MIB)


class OddResponses(ScriptedCase):
    def test_duplicate_response(self) -> None:
        pipe = self.handshaken("duplicate_response")
        ident = self.send_call(pipe)
        first, second = pipe.read_message(), pipe.read_message()
        self.assertEqual((first["id"], second["id"]), (ident, ident))
        self.assertEqual((text_of(first), text_of(second)), ("first", "second"))
        self.assertStillServing(pipe)

    def test_unknown_ids(self) -> None:
        pipe = self.handshaken("unknown_ids")
        ident = self.send_call(pipe, {"n": 1})
        ids = [pipe.read_message()["id"] for _ in range(2)]
        self.assertEqual(ids, [scripted.UNKNOWN_INT_ID, scripted.UNKNOWN_STR_ID])
        response = pipe.read_message()
        self.assertEqual((response["id"], text_of(response)), (ident, '{"n":1}'))

    def test_out_of_order(self) -> None:
        pipe = self.handshaken("out_of_order", "3")
        idents = [self.send_call(pipe, {"n": n}) for n in range(3)]
        answers = [pipe.read_message() for _ in range(3)]
        self.assertEqual([answer["id"] for answer in answers], idents[::-1])
        self.assertEqual([text_of(answer) for answer in answers], ['{"n":2}', '{"n":1}', '{"n":0}'])

    def test_slow_answers_fast_calls_first(self) -> None:
        pipe = self.handshaken("slow", "60")
        self.send_call(pipe, {"tag": "slow"})  # the default delay: far past this test
        fast = self.send_call(pipe, {"tag": "fast", "delay": 0})
        response = pipe.read_message()
        self.assertEqual((response["id"], text_of(response)), (fast, '{"delay":0,"tag":"fast"}'))
        self.assertStillServing(pipe)

    def test_slow_default_delay(self) -> None:
        pipe = self.handshaken("slow", "0")
        ident = self.send_call(pipe, {"k": "v"})
        self.assertEqual(pipe.read_message()["id"], ident)

    def test_server_requests(self) -> None:
        pipe = self.handshaken("server_requests")
        ident = self.send_call(pipe)
        ping, sampling = pipe.read_message(), pipe.read_message()
        self.assertEqual((ping["method"], sampling["method"]), ("ping", "sampling/createMessage"))
        self.assertIsInstance(ping["id"], int)
        self.assertIsInstance(sampling["id"], str)
        error = {"code": -32601, "message": "Method not found"}
        pipe.send({"jsonrpc": "2.0", "id": sampling["id"], "error": error})
        pipe.send({"jsonrpc": "2.0", "id": ping["id"], "result": {}})
        response = pipe.read_message()
        self.assertEqual(response["id"], ident)
        self.assertEqual(
            json.loads(text_of(response)),
            {"ping": {"result": {}}, "sampling/createMessage": {"error": error}},
        )

    def test_loop_cursor(self) -> None:
        pipe = self.handshaken("loop_cursor")
        first = pipe.call("tools/list")["result"]
        again = pipe.call("tools/list", {"cursor": first["nextCursor"]})["result"]
        self.assertEqual(first, again)
        self.assertEqual(again["nextCursor"], "same-cursor")

    def test_lying_tools(self) -> None:
        pipe = self.handshaken("lying_tools")
        tools = pipe.call("tools/list")["result"]["tools"]
        self.assertIn("inputSchema", tools[0])
        self.assertNotIn("inputSchema", tools[1])

    def test_stderr_noise(self) -> None:
        with tempfile.TemporaryFile() as stderr:
            pipe = self.start("stderr_noise", stderr=stderr)
            pipe.handshake()
            self.send_call(pipe, {"q": 1})
            self.assertEqual(text_of(pipe.read_message()), '{"q":1}')
            pipe.close_stdin()
            self.assertExits(pipe, 0)
            self.assertGreaterEqual(os.fstat(stderr.fileno()).st_size, MIB)


class Silence(ScriptedCase):
    def test_never_answer(self) -> None:
        pipe = self.handshaken("never_answer")
        self.send_call(pipe)
        self.assertStillServing(pipe)  # the ping's answer comes first: the call got none
        pipe.close_stdin()
        self.assertExits(pipe, 0)

    def test_never_read_fills_the_pipe(self) -> None:
        pipe = self.handshaken("never_read")
        fd = pipe.process.stdin.fileno()  # type: ignore[union-attr]
        os.set_blocking(fd, False)
        written, chunk = 0, b"x" * 65536
        with self.assertRaises(BlockingIOError):
            while written < 64 * MIB:  # far past any pipe buffer
                written += os.write(fd, chunk)
        self.assertLess(written, 64 * MIB)
        self.assertIsNone(pipe.process.poll())


class Deaths(ScriptedCase):
    def test_exit_mid_call(self) -> None:
        pipe = self.handshaken("exit_mid_call")
        self.send_call(pipe)
        self.assertExits(pipe, 3)

    def test_close_stdout(self) -> None:
        pipe = self.handshaken("close_stdout")
        self.send_call(pipe)
        with self.assertRaises(EOFError):
            pipe.read_line()
        self.assertIsNone(pipe.process.poll())  # it sleeps on: only a kill ends it
        pipe.kill()
        self.assertEqual(pipe.process.returncode, -signal.SIGKILL)

    def test_fork_grandchild(self) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            pidfile = os.path.join(scratch, "grandchild.pid")
            pipe = self.handshaken("fork_grandchild", pidfile)
            with open(pidfile) as handle:  # written before the handshake answer
                pid = int(handle.read())
        self.send_call(pipe)
        self.assertEqual(text_of(pipe.read_message()), str(pid))
        self.assertNotEqual(pid, pipe.process.pid)
        self.assertTrue(alive(pid))
        self.assertEqual(os.getpgid(pid), pipe.process.pid)
        pipe.kill()
        # SIGKILL is asynchronous: the grandchild is gone soon after killpg, not at once.
        self.assertTrue(wait_until(lambda: not alive(pid)), "grandchild %d survived" % pid)


if __name__ == "__main__":
    unittest.main()
