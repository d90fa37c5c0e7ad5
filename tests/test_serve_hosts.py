"""Real hosts judge ``mcp-client serve``: the official Python SDK's client, FastMCP's
``Client`` and the TypeScript SDK's client each start it as a child process, as a host
would, and each one lists the four tools, searches, describes, checks a wrong program
(and gets mypy's message), and runs a program against the real time, memory and
filesystem servers, with the right ``structuredContent``. Each SDK validates every
``structuredContent`` against the tool's ``outputSchema`` itself. When the host closes
the session, nothing ``serve`` started is left running.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set

import pytest

import npm_servers
from serve_support import (
    RUN_TIMEOUT,
    WORK_CALLS,
    WORK_STDOUT,
    WRONG,
    WRONG_MESSAGE,
    ServeCase,
    serve_processes,
)

HOST_SCRIPT = os.path.join(npm_servers.NPM, "serve_host.mjs")
TOOLS = ["search_tools", "describe_tool", "check_program", "run_program"]


@dataclass
class Answer:
    """One ``tools/call`` answer, as any of the hosts gave it."""

    structured: Dict[str, Any]
    is_error: bool
    text: str


@dataclass
class Report:
    """What a host saw: the handshake, the listing, and the answers in call order."""

    server: str
    instructions: str
    tools: List[Dict[str, Any]]
    answers: List[Answer] = field(default_factory=list)
    processes: Set[int] = field(default_factory=set)


class HostCase(ServeCase):
    def setUp(self) -> None:
        super().setUp()
        self.require_time()  # and, for two of the three hosts, the SDKs: both 3.10+

    def calls(self) -> List[Dict[str, Any]]:
        return [
            {"name": "search_tools", "arguments": {"query": "current time zone", "limit": 3}},
            {"name": "describe_tool", "arguments": {"name": "filesystem.read_text_file"}},
            {"name": "check_program", "arguments": {"code": WRONG}},
            {"name": "run_program", "arguments": {"code": self.work(), "timeout_s": 120}},
        ]

    def judge(self, report: Report) -> None:
        self.assertEqual(report.server, "mcp-client-codemode")
        self.assertIn("`from cap.mcp import <server>`", report.instructions)
        self.assertRegex(report.instructions, r"Servers \(functions\): .*\btime \(2\)")
        self.assertEqual([tool["name"] for tool in report.tools], TOOLS)
        for tool in report.tools:
            self.assertEqual(tool["outputSchema"]["type"], "object", tool["name"])
        search, describe, check, run = report.answers
        names = [match["name"] for match in search.structured["matches"]]
        self.assertIn("time.get_current_time", names)
        self.assertLessEqual(len(names), 3)
        self.assertTrue(describe.structured["found"])
        self.assertIn("read_text_file(", describe.structured["doc"])
        self.assertFalse(check.structured["ok"])
        self.assertTrue(
            any(m.startswith(WRONG_MESSAGE) for m in check.structured["messages"]),
            check.structured,
        )
        self.assertIn(WRONG_MESSAGE, check.text)
        self.assertFalse(run.is_error, run.structured)
        value = run.structured
        self.assertEqual(
            (value["exit_status"], value["stdout"], value["error"], value["truncated"]),
            (0, WORK_STDOUT, None, False),
            value,
        )
        self.assertEqual([(c["server"], c["tool"], c["outcome"]) for c in value["calls"]],
                         WORK_CALLS)  # fmt: skip
        self.assertIn("zone UTC", run.text)
        with open(self.path("files/notes.txt")) as written:
            self.assertEqual(written.read(), "alpha\n")
        self.assertGreaterEqual(len(report.processes), 4, "serve and its three servers")
        self.assertAllGone(report.processes)


def _text(content: List[Any]) -> str:
    return "\n".join(block.text for block in content if getattr(block, "type", "") == "text")


class OfficialSdk(HostCase):
    """``mcp.client.stdio.stdio_client`` and ``ClientSession``."""

    def test_the_official_sdk_lists_searches_describes_checks_and_runs(self) -> None:
        self.judge(asyncio.run(self.session()))

    async def session(self) -> Report:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=sys.executable, args=self.serve_args(self.servers()), env=self.env
        )
        async with stdio_client(params) as (reader, writer):
            async with ClientSession(reader, writer) as session:
                started = await session.initialize()
                listed = await session.list_tools()
                report = Report(
                    started.server_info.name,
                    started.instructions or "",
                    [tool.model_dump(by_alias=True) for tool in listed.tools],
                )
                report.processes = serve_processes(self.path("servers.json"))
                for call in self.calls():
                    result = await session.call_tool(
                        call["name"], call["arguments"], read_timeout_seconds=RUN_TIMEOUT
                    )
                    report.answers.append(
                        Answer(result.structured_content or {}, result.is_error,
                               _text(result.content))
                    )  # fmt: skip
        return report


@pytest.mark.slow
class FastMcpClient(HostCase):
    """FastMCP's ``Client`` over its ``StdioTransport``."""

    def test_fastmcp_lists_searches_describes_checks_and_runs(self) -> None:
        self.judge(asyncio.run(self.session()))

    async def session(self) -> Report:
        from fastmcp import Client
        from fastmcp.client.transports import StdioTransport

        transport = StdioTransport(
            command=sys.executable, args=self.serve_args(self.servers()), env=self.env
        )
        async with Client(transport, timeout=RUN_TIMEOUT) as client:
            started = client.initialize_result
            assert started is not None
            listed = await client.list_tools()
            report = Report(
                started.server_info.name,
                started.instructions or "",
                [tool.model_dump(by_alias=True) for tool in listed],
            )
            report.processes = serve_processes(self.path("servers.json"))
            for call in self.calls():
                result = await client.call_tool(
                    call["name"], call["arguments"], raise_on_error=False
                )
                report.answers.append(
                    Answer(result.structured_content or {}, result.is_error,
                           _text(result.content))
                )  # fmt: skip
        return report


@pytest.mark.slow
class TypeScriptSdk(HostCase):
    """``@modelcontextprotocol/sdk``'s ``Client`` and ``StdioClientTransport``, pinned in
    ``tests/npm``, driven by ``tests/npm/serve_host.mjs``."""

    def test_the_typescript_sdk_lists_searches_describes_checks_and_runs(self) -> None:
        npm_servers.argv(npm_servers.MEMORY)  # a missing tests/npm install skips, naming it
        with open(self.path("calls.json"), "w") as calls:
            json.dump(self.calls(), calls)
        # Files, not pipes: the host's report may be larger than a pipe holds while we watch.
        with (
            open(self.path("calls.json"), "rb") as stdin,
            open(self.path("report.json"), "wb") as stdout,
            open(self.path("host.err"), "wb") as stderr,
        ):
            host = subprocess.Popen(
                ["node", HOST_SCRIPT, "--", sys.executable, *self.serve_args(self.servers())],
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                env=self.env,
            )
            self.addCleanup(lambda: host.poll() is not None or host.kill())
            seen = self.watch(host)
            host.wait(RUN_TIMEOUT)
        with open(self.path("host.err")) as err, open(self.path("report.json")) as out:
            self.assertEqual(host.returncode, 0, err.read())
            raw = json.load(out)
        report = Report(raw["server"]["name"], raw["instructions"], raw["tools"])
        report.processes = seen
        for result in raw["results"]:
            text = "\n".join(b["text"] for b in result["content"] if b["type"] == "text")
            report.answers.append(
                Answer(result.get("structuredContent", {}), bool(result.get("isError")), text)
            )
        self.judge(report)

    def watch(self, host: "subprocess.Popen[bytes]") -> Set[int]:
        """Every process ``serve`` made while the host ran (looked at as it goes)."""
        seen: Set[int] = set()
        deadline: Optional[float] = time.monotonic() + RUN_TIMEOUT
        while host.poll() is None and deadline is not None and time.monotonic() < deadline:
            seen |= serve_processes(self.path("servers.json"))
            time.sleep(0.05)
        return seen
