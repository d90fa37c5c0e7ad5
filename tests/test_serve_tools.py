"""``serve``'s four tools (``mcp_client._serve_tools``) over a stand-in for ``CodeMode``:
their descriptors, the arguments they refuse, and answers whose ``structuredContent``
matches their own ``outputSchema`` (as the SDK clients check it).

The stand-in answers like the runner and records what it was asked; the real runner,
real servers and real hosts are ``tests/test_serve.py``'s.
"""

from __future__ import annotations

import threading
import unittest
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple

import jsonschema

from mcp_client.codemode import Limits, Policy, _serve_tools
from mcp_client.codemode._mcp_server import Refused, Tool
from mcp_client.errors import CodeModeError
from mcp_client.jsonvalue import JsonValue

SURFACE = (
    "cap.mcp.time.convert_time(source_timezone: str, time: str) -> dict  # Convert time\n"
    "cap.mcp.time.get_current_time(timezone: str) -> dict  # Get current time\n"
    "cap.mcp.memory.read_graph() -> dict  # Read the whole graph"
)


@dataclass(frozen=True)
class Match:
    server: str
    function: str
    line: str
    doc: str
    brief: str = ""


@dataclass(frozen=True)
class Found:
    matches: Tuple[Match, ...]
    total: int
    truncated: bool


@dataclass(frozen=True)
class Checked:
    ok: bool
    messages: Tuple[str, ...]


@dataclass(frozen=True)
class Call:
    server: str
    tool: str
    ms: float
    outcome: str


@dataclass(frozen=True)
class Ran:
    exit_status: int
    stdout: str
    stderr: str
    calls: Tuple[Call, ...]
    error: Optional[str]
    truncated: bool
    restarted: Tuple[str, ...] = ()


@dataclass
class StandIn:
    """Answers as ``CodeMode`` does; ``asked`` records each call."""

    surface_text: str = SURFACE
    ran: Ran = Ran(0, "hi\n", "", (Call("time", "get_current_time", 1.5, "ok"),), None, False)
    asked: List[Tuple[str, Any]] = field(default_factory=list)

    def surface(self, brief: bool = False) -> str:
        if brief:  # as CodeMode gives it: module.function(...) -> Type  # sentence
            return self.surface_text.replace("cap.mcp.", "")
        return self.surface_text

    def search(self, query: str, *, limit: int = 10) -> Found:
        self.asked.append(("search", (query, limit)))
        match = Match(
            "time", "get_current_time", "cap.mcp.time.get_current_time(...)", "Doc.",
            "time.get_current_time(timezone: str) -> dict  # Get current time",
        )  # fmt: skip
        return Found((match,), 3, True)

    def describe(self, name: str) -> str:
        self.asked.append(("describe", name))
        if name == "time.get_current_time":
            return "cap.mcp.time.get_current_time(timezone: str)\n\nGet the time."
        return "no tool %s; the closest: time.get_current_time" % name

    def check(self, program: str) -> Checked:
        self.asked.append(("check", program))
        if "wrong" in program:
            return Checked(False, ('line 1: error: "str" has no attribute "wrong"',))
        return Checked(True, ())

    def run(
        self,
        program: str,
        *,
        timeout: Optional[float] = None,
        cancelled: Optional[threading.Event] = None,
    ) -> Ran:
        self.asked.append(("run", (program, timeout)))
        return self.ran


def answered(tool: Tool, arguments: Dict[str, JsonValue]) -> Any:
    """The tool's answer, given a call's context when it takes one (never cancelled)."""
    if tool.context:
        context = SimpleNamespace(
            cancelled=threading.Event(), reports_progress=False, host_capabilities={}
        )
        return tool.call(arguments, context)
    return tool.call(arguments)


class ToolsCase(unittest.TestCase):
    def setUp(self) -> None:
        self.mode = StandIn()
        self.tools = self.make()

    def make(self, policy: Optional[Policy] = None) -> Dict[str, Tool]:
        terms = _serve_tools.Terms(Limits(), policy or Policy())
        made = _serve_tools.tools(self.mode, terms)  # type: ignore[arg-type]
        return {tool.name: tool for tool in made}

    def call(self, tool_name: str, **arguments: JsonValue) -> Dict[str, Any]:
        """A successful answer, checked against the tool's own output schema."""
        tool = self.tools[tool_name]
        answer = answered(tool, arguments)
        assert not isinstance(answer, Refused), answer
        jsonschema.validate(answer["structuredContent"], tool.descriptor["outputSchema"])
        [block] = answer["content"]  # type: ignore[misc]
        self.assertEqual(block["type"], "text")  # type: ignore[index]
        return answer

    def refused(self, tool_name: str, **arguments: JsonValue) -> str:
        answer = answered(self.tools[tool_name], arguments)
        assert isinstance(answer, Refused), answer
        self.assertEqual(self.mode.asked, [], "nothing reached the runner")
        return answer.message


class Descriptors(ToolsCase):
    def test_four_tools_each_with_both_schemas_and_annotations(self) -> None:
        self.assertEqual(
            list(self.tools), ["search_tools", "describe_tool", "check_program", "run_program"]
        )
        validator = jsonschema.Draft202012Validator
        for tool in self.tools.values():
            descriptor = tool.descriptor
            for key in ("inputSchema", "outputSchema"):
                validator.check_schema(descriptor[key])
                self.assertEqual(descriptor[key]["type"], "object")  # type: ignore[index]
            self.assertTrue(descriptor["description"])
            self.assertIn("readOnlyHint", descriptor["annotations"])  # type: ignore[operator]

    def test_the_look_ups_read_only_and_running_is_what_the_policy_lets_through(self) -> None:
        for name in ("search_tools", "describe_tool", "check_program"):
            hints = self.tools[name].descriptor["annotations"]
            self.assertEqual(hints["readOnlyHint"], True, name)  # type: ignore[index]
            self.assertEqual(hints["openWorldHint"], False, name)  # type: ignore[index]
        run = self.tools["run_program"].descriptor["annotations"]
        self.assertEqual(run["readOnlyHint"], False)  # type: ignore[index]
        self.assertEqual(run["destructiveHint"], True)  # type: ignore[index]
        strict = self.make(Policy(allow="read-only"))["run_program"].descriptor["annotations"]
        self.assertEqual(strict["readOnlyHint"], True)  # type: ignore[index]
        self.assertEqual(strict["destructiveHint"], False)  # type: ignore[index]
        gentle = self.make(Policy(allow="non-destructive"))["run_program"].descriptor
        self.assertEqual(gentle["annotations"]["destructiveHint"], False)  # type: ignore[index]

    def test_a_small_surface_is_in_the_run_description_whole(self) -> None:
        description = str(self.tools["run_program"].descriptor["description"])
        self.assertIn(SURFACE.replace("cap.mcp.", ""), description)
        self.mode.surface_text = "\n".join(
            "cap.mcp.big.f%d(x: str) -> dict  # %s" % (n, "y" * 60) for n in range(60)
        )
        description = str(self.make()["run_program"].descriptor["description"])
        self.assertNotIn("big.f0(", description)
        self.assertIn("see the instructions", description)

    def test_the_jail_is_promised_only_where_there_is_one(self) -> None:
        jailed = _serve_tools.instructions(self.mode, _serve_tools.Terms(Limits(), Policy()))  # type: ignore[arg-type]
        self.assertIn("Jailed: no network", jailed)
        bare = _serve_tools.Terms(Limits(), Policy(), jailed=False)
        self.assertNotIn("jail", _serve_tools.run_description(SURFACE, bare).lower())
        self.assertNotIn("jail", _serve_tools.instructions(self.mode, bare).lower())  # type: ignore[arg-type]

    def test_the_instructions_say_how_to_begin(self) -> None:
        terms = _serve_tools.Terms(Limits(), Policy())
        text = _serve_tools.instructions(self.mode, terms)  # type: ignore[arg-type]
        self.assertIn("`from cap.mcp import <server>`", text)
        self.assertIn("Servers (functions): time (2), memory (1).", text)
        for name in ("ToolFailed", "CallFailed", "CallRefused", "search_tools", "run_program"):
            self.assertIn(name, text)
        self.assertIn('ToolOutput: a dict {"text": str', text)
        self.assertIn("whose keys are attributes too (out.text)", text)
        self.assertIn("server error", text)  # a JSON-RPC error is a CallFailed
        self.assertIn("300 s a run", text)

    def test_each_fact_once_within_the_fixed_cost(self) -> None:
        # What a host shows before the first call, the function list aside: at most 2.5 KiB
        # (the instructions and the four tools as JSON), and no sentence said twice.
        import json

        self.mode.surface_text = "\n".join(
            "cap.mcp.big.f%d(x: str) -> dict" % n for n in range(300)
        )
        terms = _serve_tools.Terms(Limits(), Policy())
        made = _serve_tools.tools(self.mode, terms)  # type: ignore[arg-type]
        listing = json.dumps({"tools": [t.descriptor for t in made]}, separators=(",", ":"))
        text = _serve_tools.instructions(self.mode, terms)  # type: ignore[arg-type]
        self.assertLessEqual(len(text.encode()) + len(listing.encode()), 2560)
        descriptions = " ".join(str(t.descriptor["description"]) for t in made)
        for fact in ("ToolFailed", "cap.mcp import", "Limits:", "300 s"):
            self.assertEqual((text + descriptions).count(fact), 1, fact)


class Answers(ToolsCase):
    def test_search(self) -> None:
        answer = self.call("search_tools", query="time", limit=1)
        self.assertEqual(
            answer["structuredContent"],
            {
                "matches": [
                    {
                        "name": "time.get_current_time",
                        "line": "time.get_current_time(timezone: str) -> dict  # Get current time",
                    }
                ],
                "total": 3,
                "truncated": True,
            },
        )
        self.assertEqual(
            answer["content"][0]["text"],
            "1 of 3 matching functions (more with a larger limit):\n"
            "time.get_current_time(timezone: str) -> dict  # Get current time",
        )
        self.assertEqual(self.mode.asked, [("search", ("time", 1))])

    def test_search_in_full_adds_each_doc(self) -> None:
        answer = self.call("search_tools", query="time", limit=1.0, detail="full")
        [match] = answer["structuredContent"]["matches"]
        self.assertEqual(match["doc"], "Doc.")
        self.assertIn("\n\nDoc.", answer["content"][0]["text"])

    def test_describe_a_known_name_and_an_unknown_one(self) -> None:
        known = self.call("describe_tool", name="time.get_current_time")
        self.assertTrue(known["structuredContent"]["found"])
        self.assertNotIn("isError", known)
        unknown = self.call("describe_tool", name="time.now")
        self.assertFalse(unknown["structuredContent"]["found"])
        self.assertTrue(unknown["isError"])
        self.assertIn("the closest: time.get_current_time", unknown["content"][0]["text"])

    def test_check(self) -> None:
        self.assertEqual(self.call("check_program", code="x = 1\n")["structuredContent"],
                         {"ok": True, "messages": []})  # fmt: skip
        wrong = self.call("check_program", code="''.wrong")
        self.assertEqual(wrong["structuredContent"]["ok"], False)
        self.assertIn('has no attribute "wrong"', wrong["content"][0]["text"])

    def test_run(self) -> None:
        answer = self.call("run_program", code="print('hi')", timeout_s=5)
        self.assertEqual(self.mode.asked, [("run", ("print('hi')", 5.0))])
        self.assertEqual(
            answer["structuredContent"],
            {
                "exit_status": 0,
                "stdout": "hi\n",
                "stderr": "",
                "calls": [
                    {"server": "time", "tool": "get_current_time", "ms": 1.5, "outcome": "ok"}
                ],
                "error": None,
                "truncated": False,
                "restarted": [],
            },
        )
        self.assertNotIn("isError", answer)
        text = answer["content"][0]["text"]
        self.assertIn("exit status 0", text)
        self.assertIn("time.get_current_time ok 2 ms", text)

    def test_a_failed_run_is_an_error_with_its_whole_result(self) -> None:
        self.mode.ran = Ran(124, "", "late\n", (), "wall-clock limit (1 s)", False)
        answer = self.call("run_program", code="while True: pass")
        self.assertTrue(answer["isError"])
        self.assertEqual(answer["structuredContent"]["exit_status"], 124)
        self.assertIn("exit status 124; wall-clock limit (1 s)", answer["content"][0]["text"])


class Closed(ToolsCase):
    def test_a_runner_that_cannot_run_is_a_failed_call_not_a_crash(self) -> None:
        def closed(program: str, **options: Any) -> Ran:
            raise CodeModeError("this CodeMode is closed")

        self.mode.run = closed  # type: ignore[method-assign]
        answer = answered(self.tools["run_program"], {"code": "print(1)"})
        self.assertEqual(answer, {"content": [{"type": "text",
                                               "text": "not run: this CodeMode is closed"}],
                                  "isError": True})  # fmt: skip

    def test_a_check_cut_short_by_the_end_is_a_failed_call_not_an_internal_error(self) -> None:
        def closed(program: str) -> Checked:
            raise CodeModeError("this CodeMode is closed")

        self.mode.check = closed  # type: ignore[method-assign]
        answer = answered(self.tools["check_program"], {"code": "x = 1\n"})
        self.assertEqual(answer, {"content": [{"type": "text",
                                               "text": "not checked: this CodeMode is closed"}],
                                  "isError": True})  # fmt: skip


class Refusals(ToolsCase):
    def test_wrong_arguments_never_reach_the_runner(self) -> None:
        self.assertIn("query must be a string", self.refused("search_tools"))
        self.assertIn("limit must be", self.refused("search_tools", query="x", limit=0))
        self.assertIn("limit must be", self.refused("search_tools", query="x", limit=True))
        self.assertIn("limit must be", self.refused("search_tools", query="x", limit=51))
        self.assertIn("limit must be", self.refused("search_tools", query="x", limit=2.5))
        self.assertIn("detail must be", self.refused("search_tools", query="x", detail="all"))
        self.assertIn("unknown argument 'limt'", self.refused("search_tools", query="x", limt=3))
        self.assertIn(
            "unknown argument 'timeout'; this tool takes code, timeout_s",
            self.refused("run_program", code="", timeout=1),
        )
        self.assertIn("UTF-8", self.refused("describe_tool", name="a.\ud800"))
        self.assertIn("name must be", self.refused("describe_tool", name=3))
        self.assertIn("code must be", self.refused("check_program", code=None))
        self.assertIn("code is over", self.refused("run_program", code="x" * (1 << 20 + 1)))
        for bad in (0, -1, True, "5", 301, float("nan"), float("inf")):
            self.assertIn("timeout_s must be", self.refused("run_program", code="", timeout_s=bad))


if __name__ == "__main__":
    unittest.main()
