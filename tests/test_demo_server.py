"""The demo server, driven as a child process over raw pipes (no client code involved),
plus the pure parts it is built from (argument validation, cursors) in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest
from typing import Any, Dict, List, Optional

from mcp_client.cli import demo_server

from servers.pipes import Pipe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
Message = Dict[str, Any]


class DemoCase(unittest.TestCase):
    """Starts ``python -m mcp_client.demo_server`` per test and always kills it."""

    options: List[str] = []

    def setUp(self) -> None:
        self.server = self.start(*self.options)

    def start(self, *options: str, stderr: Optional[int] = subprocess.DEVNULL) -> Pipe:
        pipe = Pipe(
            [sys.executable, "-m", "mcp_client.demo_server", *options], stderr=stderr, cwd=ROOT
        )
        self.addCleanup(pipe.kill)
        return pipe

    def call_tool(self, name: str, arguments: Any) -> Message:
        return self.server.call("tools/call", {"name": name, "arguments": arguments})

    def tool_result(self, name: str, arguments: Any) -> Message:
        response = self.call_tool(name, arguments)
        self.assertIn("result", response, response)
        result: Message = response["result"]
        return result

    def tool_text(self, name: str, arguments: Any) -> str:
        result = self.tool_result(name, arguments)
        self.assertFalse(result.get("isError", False), result)
        [block] = result["content"]
        self.assertEqual(block["type"], "text")
        text: str = block["text"]
        return text

    def assertErrorCode(self, response: Message, code: int) -> None:
        self.assertNotIn("result", response)
        self.assertEqual(response["error"]["code"], code, response)
        self.assertIsInstance(response["error"]["message"], str)

    def list_all(self) -> List[Message]:
        tools: List[Message] = []
        params: Message = {}
        for _ in range(20):  # the demo has 5 tools: a loop here would be a bug
            page = self.server.call("tools/list", params)["result"]
            tools.extend(page["tools"])
            if "nextCursor" not in page:
                return tools
            params = {"cursor": page["nextCursor"]}
        self.fail("pagination did not end")


class Handshake(DemoCase):
    def test_answers_initialize_with_the_requested_version(self) -> None:
        result = self.server.handshake("2025-06-18")["result"]
        self.assertEqual(result["protocolVersion"], "2025-06-18")
        self.assertEqual(result["capabilities"], {"tools": {"listChanged": False}})
        self.assertEqual(result["serverInfo"]["name"], "mcp-client-demo")
        self.assertIsInstance(result["serverInfo"]["version"], str)
        self.assertIsInstance(result["instructions"], str)

    def test_echoes_each_older_supported_version(self) -> None:
        for version in ("2025-03-26", "2024-11-05"):
            with self.subTest(version=version):
                response = self.server.handshake(version)
                self.assertEqual(response["result"]["protocolVersion"], version)

    def test_answers_the_latest_version_to_an_unknown_one(self) -> None:
        response = self.server.handshake("2099-01-01")
        self.assertEqual(response["result"]["protocolVersion"], "2025-06-18")

    def test_a_notification_gets_no_answer(self) -> None:
        self.server.handshake()
        self.server.notify("notifications/cancelled")
        # The ping's answer being the very next line proves nothing was said in between.
        self.assertEqual(self.server.call("ping")["result"], {})

    def test_answers_ping_with_an_empty_result(self) -> None:
        self.assertEqual(self.server.call("ping")["result"], {})

    def test_unknown_method_is_method_not_found(self) -> None:
        self.server.handshake()
        self.assertErrorCode(self.server.call("resources/list"), -32601)

    def test_keeps_string_ids(self) -> None:
        self.server.send({"jsonrpc": "2.0", "id": "abc", "method": "ping"})
        self.assertEqual(self.server.read_message(), {"jsonrpc": "2.0", "id": "abc", "result": {}})

    def test_malformed_lines_are_answered_with_null_ids(self) -> None:
        cases = [
            (b"not json", -32700),
            (b'{"jsonrpc":"2.0","id":1,"method":"ping"', -32700),
            (b"\xff\xfe", -32700),
            (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600),
            (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
            (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600),
        ]
        for line, code in cases:
            with self.subTest(line=line):
                self.server.send_raw(line)
                response = self.server.read_message()
                self.assertIsNone(response["id"])
                self.assertErrorCode(response, code)
        self.assertEqual(self.server.call("ping")["result"], {})  # and it is still serving

    def test_wrong_jsonrpc_version_is_invalid_request(self) -> None:
        self.server.send({"jsonrpc": "1.0", "id": 4, "method": "ping"})
        response = self.server.read_message()
        self.assertEqual(response["id"], 4)
        self.assertErrorCode(response, -32600)

    def test_non_object_params_are_invalid_params(self) -> None:
        self.server.send({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": [1]})
        self.assertErrorCode(self.server.read_message(), -32602)


class Lifecycle(DemoCase):
    def test_exits_cleanly_at_eof(self) -> None:
        self.server.handshake()
        self.server.close_stdin()
        self.assertEqual(self.server.wait(), 0)
        with self.assertRaises(EOFError):
            self.server.read_line()

    def test_says_nothing_on_stderr_by_default(self) -> None:
        quiet = self.start(stderr=subprocess.PIPE)
        quiet.handshake()
        quiet.call("tools/list")
        quiet.close_stdin()
        self.assertEqual(quiet.wait(), 0)
        self.assertEqual(quiet.process.stderr.read(), b"")  # type: ignore[union-attr]
        quiet.process.stderr.close()  # type: ignore[union-attr]

    def test_verbose_logs_to_stderr_only(self) -> None:
        chatty = self.start("--verbose", stderr=subprocess.PIPE)
        self.assertEqual(chatty.call("ping")["result"], {})
        chatty.close_stdin()
        self.assertEqual(chatty.wait(), 0)
        self.assertIn(b"mcp-client-demo", chatty.process.stderr.read())  # type: ignore[union-attr]
        chatty.process.stderr.close()  # type: ignore[union-attr]

    def test_rejects_a_bad_page_size(self) -> None:
        completed = subprocess.run(
            [sys.executable, "-m", "mcp_client.demo_server", "--page-size", "0"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
        )
        self.assertEqual(completed.returncode, 2)
        self.assertIn(b"page-size", completed.stderr)


class Listing(DemoCase):
    def test_lists_every_tool_in_one_page_by_default(self) -> None:
        self.server.handshake()
        page = self.server.call("tools/list")["result"]
        self.assertNotIn("nextCursor", page)
        names = [tool["name"] for tool in page["tools"]]
        self.assertEqual(names, ["add", "divide", "join_words", "reverse-text", "count_by"])
        for tool in page["tools"]:
            self.assertEqual(tool["inputSchema"]["type"], "object")
            self.assertIsInstance(tool["description"], str)

    def test_add_declares_an_output_schema(self) -> None:
        [add] = [tool for tool in self.list_all() if tool["name"] == "add"]
        self.assertEqual(add["outputSchema"]["properties"], {"sum": {"type": "integer"}})

    def test_partly_typed_schema_keeps_its_structured_parameters(self) -> None:
        [count_by] = [tool for tool in self.list_all() if tool["name"] == "count_by"]
        properties = count_by["inputSchema"]["properties"]
        self.assertEqual(properties["records"]["items"]["type"], "object")
        self.assertIn("anyOf", properties["missing"])
        self.assertEqual(properties["key"]["type"], "string")

    def test_an_invalid_cursor_is_invalid_params(self) -> None:
        for cursor in ("bogus", "", 7, demo_server._cursor(0), demo_server._cursor(99)):
            with self.subTest(cursor=cursor):
                self.assertErrorCode(self.server.call("tools/list", {"cursor": cursor}), -32602)


class Pagination(DemoCase):
    options = ["--page-size", "2"]

    def test_pages_hold_every_tool_once_in_order(self) -> None:
        self.server.handshake()
        first = self.server.call("tools/list")["result"]
        self.assertEqual(len(first["tools"]), 2)
        self.assertIsInstance(first["nextCursor"], str)
        names = [tool["name"] for tool in self.list_all()]
        self.assertEqual(names, [tool.name for tool in demo_server.TOOLS])

    def test_the_last_page_has_no_cursor(self) -> None:
        pages = []
        params: Message = {}
        while True:
            page = self.server.call("tools/list", params)["result"]
            pages.append(len(page["tools"]))
            if "nextCursor" not in page:
                break
            params = {"cursor": page["nextCursor"]}
        self.assertEqual(pages, [2, 2, 1])


class Tools(DemoCase):
    def setUp(self) -> None:
        super().setUp()
        self.server.handshake()

    def test_add(self) -> None:
        result = self.tool_result("add", {"a": 2, "b": 40})
        self.assertEqual(result["content"], [{"type": "text", "text": "42"}])
        self.assertEqual(result["structuredContent"], {"sum": 42})

    def test_add_handles_big_integers_exactly(self) -> None:
        self.assertEqual(self.tool_text("add", {"a": 2**70, "b": 1}), str(2**70 + 1))

    def test_divide(self) -> None:
        result = self.tool_result("divide", {"a": 7, "b": 2})
        self.assertEqual(result["content"][0]["text"], "3.5")
        self.assertEqual(result["structuredContent"], {"quotient": 3.5})

    def test_divide_by_zero_is_a_tool_error(self) -> None:
        result = self.tool_result("divide", {"a": 1, "b": 0})
        self.assertIs(result["isError"], True)
        self.assertIn("zero", result["content"][0]["text"])
        self.assertNotIn("structuredContent", result)

    def test_divide_overflow_is_a_tool_error(self) -> None:
        result = self.tool_result("divide", {"a": 1e308, "b": 1e-308})
        self.assertIs(result["isError"], True)

    def test_join_words(self) -> None:
        self.assertEqual(self.tool_text("join_words", {"words": ["a", "b", "c"]}), "a b c")
        self.assertEqual(
            self.tool_text("join_words", {"words": ["a", "b"], "separator": "-"}), "a-b"
        )
        self.assertEqual(
            self.tool_text("join_words", {"words": ["a", "b", "c"], "limit": 2}), "a b"
        )
        self.assertEqual(self.tool_text("join_words", {"words": []}), "")

    def test_reverse_text(self) -> None:
        self.assertEqual(self.tool_text("reverse-text", {"text": "héllo ☃"}), "☃ olléh")
        self.assertEqual(self.tool_text("reverse-text", {"text": "abc", "upper": True}), "CBA")

    def test_count_by(self) -> None:
        records = [{"kind": "bug"}, {"kind": "idea"}, {"kind": "bug"}, {"other": 1}, {"kind": 3}]
        result = self.tool_result("count_by", {"records": records, "key": "kind"})
        self.assertEqual(result["content"][0]["text"], "bug: 2\n(missing): 1\n3: 1\nidea: 1")
        self.assertEqual(
            result["structuredContent"]["counts"], {"bug": 2, "(missing)": 1, "3": 1, "idea": 1}
        )

    def test_count_by_with_null_missing_skips_records(self) -> None:
        arguments = {"records": [{"k": "x"}, {}], "key": "k", "missing": None}
        self.assertEqual(self.tool_text("count_by", arguments), "x: 1")
        self.assertEqual(self.tool_text("count_by", {"records": [], "key": "k"}), "(no records)")

    def test_results_are_deterministic(self) -> None:
        arguments = {"records": [{"k": "b"}, {"k": "a"}], "key": "k"}
        self.assertEqual(
            self.call_tool("count_by", arguments)["result"],
            self.call_tool("count_by", arguments)["result"],
        )

    def test_unknown_tool_is_invalid_params(self) -> None:
        for name in ("nope", "reverse_text", None, 3):
            with self.subTest(name=name):
                self.assertErrorCode(self.call_tool(name, {}), -32602)  # type: ignore[arg-type]

    def test_bad_arguments_are_invalid_params(self) -> None:
        cases = [
            ("add", {"a": 1}),
            ("add", {"a": 1, "b": "2"}),
            ("add", {"a": 1, "b": 2.5}),
            ("add", {"a": True, "b": 1}),
            ("add", {"a": 1, "b": 2, "c": 3}),
            ("add", [1, 2]),
            ("join_words", {"words": ["a", 1]}),
            ("join_words", {"words": "a b"}),
            ("join_words", {"words": [], "limit": -1}),
            ("reverse-text", {"text": None}),
            ("count_by", {"records": [1], "key": "k"}),
            ("count_by", {"records": [], "key": "k", "missing": 5}),
        ]
        for name, arguments in cases:
            with self.subTest(name=name, arguments=arguments):
                response = self.call_tool(name, arguments)
                self.assertErrorCode(response, -32602)
                self.assertIn(name, response["error"]["message"])

    def test_missing_arguments_mean_an_empty_object(self) -> None:
        response = self.server.call("tools/call", {"name": "count_by"})
        self.assertErrorCode(response, -32602)
        self.assertIn("records", response["error"]["message"])


class Validation(unittest.TestCase):
    """The schema subset checker, in-process."""

    def test_names_the_path_of_the_first_violation(self) -> None:
        schema = demo_server.TOOLS[2].input_schema  # join_words
        self.assertEqual(
            demo_server.violation({"words": ["a", 2]}, schema, "arguments"),
            "arguments.words[1] must be of type string",
        )
        self.assertIsNone(demo_server.violation({"words": ["a"], "limit": 0}, schema, "arguments"))

    def test_every_tool_schema_accepts_its_own_example(self) -> None:
        examples = {
            "add": {"a": 1, "b": 2},
            "divide": {"a": 1.5, "b": 3},
            "join_words": {"words": ["x"], "separator": ",", "limit": 1},
            "reverse-text": {"text": "x", "upper": False},
            "count_by": {"records": [{"a": [1]}], "key": "a", "missing": "?"},
        }
        self.assertEqual(sorted(examples), sorted(tool.name for tool in demo_server.TOOLS))
        for tool in demo_server.TOOLS:
            with self.subTest(tool=tool.name):
                self.assertIsNone(
                    demo_server.violation(examples[tool.name], tool.input_schema, "a")
                )
                json.dumps(tool.descriptor())  # every descriptor is plain JSON

    def test_in_process_server_matches_the_wire(self) -> None:
        server = demo_server.Server(page_size=4)
        reply = server.handle_line(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
        assert reply is not None
        self.assertEqual(len(reply["result"]["tools"]), 4)
        self.assertIsNone(server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        self.assertIsNone(server.handle({"jsonrpc": "2.0", "id": 5, "result": {}}))


if __name__ == "__main__":
    unittest.main()
