"""``tools/surface_census.py``: its figures mean what its docstring defines.

Four ways: a hand-written module and listing where every rule of the
definitions has a case and the expected figure is worked out by hand
(``CensusDefinitions``, and ``CensusRefusals`` for modules that are not what
they claim); the real generator's modules for the golden listings, counted
against the raw schemas independently (``GoldenCensus``); the real demo
server, started, listed and generated as the census does it, against the
figures its five schemas give (``DemoCensus``); and every real server the
tests start, against issue 19's goals (``RealServersCensus``).
"""

from __future__ import annotations

import json
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, List, Sequence

import pytest

from mcp_client import Spawn, codegen, protocol
from mcp_client.protocol import ToolDescriptor

TOOLS = str(Path(__file__).resolve().parent.parent / "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

import surface_census  # noqa: E402
from surface_census import (  # noqa: E402
    GOALS,
    CensusError,
    Target,
    census,
    figures,
    measure,
    targets,
    total,
)

import npm_servers  # noqa: E402

GOLDEN = Path(__file__).with_name("golden")


def listing(tools: Sequence[Dict[str, Any]]) -> Sequence[ToolDescriptor]:
    """``tools`` decoded as the client decodes a ``tools/list`` result."""
    return protocol.decode_tools_page({"tools": list(tools)}).tools


def tool(name: str, properties: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties, **extra}}


def generated(source: str, surface: str) -> codegen.Generated:
    return codegen.Generated("cap.mcp.s", source, surface)


HEADER = '''
from typing import Any, Dict, List, Literal, Optional, TypedDict, Union
from cap.internal import mcp as internal

Loose = Any
SortBy = Literal["name", "size"]
Edit = TypedDict("Edit", {"oldText": str, "mode": Any})
'''

# One function per rule family; each sends its parameters as today's generator does.
SOURCE = (
    HEADER
    + '''
def list_dir(path: str, *, sortBy: Optional[SortBy] = None) -> Any:
    arguments: Dict[str, Any] = {"path": path}
    if sortBy is not None:
        arguments["sortBy"] = sortBy
    return internal.invoke("s", "list-dir", arguments)


def edit_0123abcd(edits: List[Edit], class_89abcdef: str, dry_run_01234567: bool) -> Any:
    arguments: Dict[str, Any] = {"edits": edits, "class": class_89abcdef,
                                 "dryRun": dry_run_01234567}
    return internal.invoke("s", "edit", arguments)


def type_0123abcd(a: Any, b: Optional[Any], c: List[Any], d: Union[Any, None], e: "Any",
                  f: Loose, g: Optional[Loose]) -> Dict[str, Any]:
    arguments = {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "g": g}
    return internal.invoke("s", "type", arguments)


def enums(mode: Literal["a b", "b"], flag: Literal[1], kinds: List[Literal["x", "y"]],
          level: SortBy, fixed: Literal["only"], either: Union[int, Literal["auto"]],
          maybe: Optional[Literal["on"]], ratio: float) -> Any:
    arguments = {"mode": mode, "flag": flag, "kinds": kinds, "level": level, "fixed": fixed,
                 "either": either, "maybe": maybe, "ratio": ratio}
    return internal.invoke("s", "enums", arguments)


def whole(arguments: Dict[str, Any]) -> Any:
    return internal.invoke("s", "whole", arguments)
'''
)

SURFACE = "\n".join(
    [
        '  cap.mcp.s.list_dir(path: str, *, sortBy: "name" | "size" | None = None) -> Any',
        "  cap.mcp.s.edit_0123abcd(edits: list[Edit], class_89abcdef: str, dry_run_01234567: bool)",
        "  cap.mcp.s.type_0123abcd(a: Any, b: Any | None, ...)",
        # "size" is missing from level's members here: in the source only, so lost.
        '  cap.mcp.s.enums(mode: "a b" | "b", flag: 1, kinds: list["x" | "y"], level: "name", '
        'fixed: "only", either: int | "auto", maybe: "on" | None, ratio: float)',
        "  cap.mcp.s.whole(arguments: dict[str, Any]) -> Any",
    ]
)

TOOLS_LISTED = [
    tool(
        "list-dir",
        {"path": {"type": "string"}, "sortBy": {"type": "string", "enum": ["name", "size"]}},
        required=["path"],
    ),
    tool(
        "edit",
        {
            "edits": {"type": "array", "items": {"type": "object"}},
            "class": {"type": "string"},
            "dryRun": {"type": "boolean"},
        },
    ),
    tool("type", {name: {} for name in "abcdefg"}),
    tool(
        "enums",
        {
            "mode": {"enum": ["a b", "b"]},  # Literal's strings are members, not annotations
            "flag": {"enum": [True]},  # annotated Literal[1]: True is not 1
            "kinds": {"type": "array", "items": {"enum": ["x", "y"]}},
            "level": {"$ref": "#/$defs/Level"},
            "fixed": {"const": "only"},
            "either": {"anyOf": [{"type": "integer"}, {"enum": ["auto"]}]},
            "maybe": {"enum": ["on", None]},
            "ratio": {"enum": [0.5, 1.5]},  # a float: no Literal holds it
        },
        **{"$defs": {"Level": {"enum": ["name", "size"]}}},
    ),
    tool("whole", {"p": {"type": "string"}, "q": {"enum": [1, 2]}}, additionalProperties=True),
]


class CensusDefinitions(unittest.TestCase):
    def setUp(self) -> None:
        self.counted = census("s", listing(TOOLS_LISTED), generated(SOURCE, SURFACE))

    def test_tools_and_their_renames(self) -> None:
        c = self.counted
        self.assertEqual((c.tools, c.tools_renamed, c.tools_renamed_needlessly), (5, 3, 2))
        # list-dir has a hyphen: renaming it is needed. edit and type are legal.
        self.assertEqual(
            c.needless_tool_renames,
            [
                "s: edit -> edit_0123abcd (no rule needs it)",
                "s: type -> type_0123abcd (soft keyword, builtin)",
            ],
        )

    def test_parameters_and_their_renames(self) -> None:
        c = self.counted
        self.assertEqual(c.parameters, 2 + 3 + 7 + 8 + 2)
        # class is a hard keyword (needed); dryRun is legal (needless).
        self.assertEqual((c.parameters_renamed, c.parameters_renamed_needlessly), (2, 1))
        self.assertEqual(
            c.needless_parameter_renames, ["s.edit.dryRun -> dry_run_01234567 (no rule needs it)"]
        )

    def test_any_counts_optional_any_aliases_and_whole_values_not_list_any(self) -> None:
        c = self.counted
        self.assertEqual(c.whole_value_parameters, 2)
        self.assertEqual(c.any_parameters, 6 + 2)  # type's a, b, d, e, f, g; whole's p, q
        self.assertEqual(
            [item.split(":")[0] for item in c.any_list],
            ["s.type." + name for name in "abdefg"] + ["s.whole.p", "s.whole.q"],
        )
        self.assertIn("s.type.g: Optional[Loose]", c.any_list)
        # List[Any] is loose, not Any; a TypedDict's Any field is not looked into.
        self.assertEqual((c.loose_parameters, c.loose_list), (1, ["s.type.c: List[Any]"]))

    def test_enums_kept_only_with_every_member_in_source_and_surface(self) -> None:
        c = self.counted
        # sortBy (alias), mode, kinds (items), fixed (const), either (a branch),
        # maybe (null left out) are kept; flag (True vs 1), level (surface lacks
        # "size"), ratio (floats) and whole's q (untyped) are lost.
        self.assertEqual((c.enum_parameters, c.enums_kept), (10, 6))
        self.assertEqual(
            c.enums_lost,
            [
                "s.enums.flag: True",
                "s.enums.level: 'size'",
                "s.enums.ratio: 0.5, 1.5",
                "s.whole.q: 1, 2",
            ],
        )

    def test_total_adds_every_figure(self) -> None:
        summed = total([self.counted, self.counted])
        self.assertEqual(summed.server, "total")
        for name, value in vars(self.counted).items():
            if name != "server":
                self.assertEqual(getattr(summed, name), value + value, name)

    def test_figures_are_fractions_of_the_right_wholes(self) -> None:
        measured = surface_census.figures(self.counted)
        self.assertEqual(measured["tools renamed needlessly"], 2 / 5)
        self.assertEqual(measured["parameters renamed"], 2 / 22)
        self.assertEqual(measured["Any parameters"], 8 / 22)
        self.assertEqual(measured["enums kept"], 6 / 10)
        self.assertIn("NOT MET", surface_census.render([self.counted]))


SENDS_X = 'internal.invoke("s", "f", {"x": x})'
SENDS_X_AS_Y = 'internal.invoke("s", "f", {"y": x})'


class CensusRefusals(unittest.TestCase):
    """A module that is not what it claims is an error, never a figure."""

    def check_refused(self, sent: str, tools: List[Dict[str, Any]], message: str) -> None:
        """A module of one function ``f(x: str)`` that returns ``sent``, against ``tools``."""
        source = HEADER + "def f(x: str) -> Any:\n    return %s\n" % sent
        with self.assertRaisesRegex(CensusError, message):
            census("s", listing(tools), generated(source, "  cap.mcp.s.f(x: str)"))

    def test_a_label_sent_under_a_key_the_schema_lacks(self) -> None:
        self.check_refused(SENDS_X_AS_Y, [tool("f", {"x": {}})], r"sends \['y'\]")

    def test_a_wire_parameter_no_label_carries(self) -> None:
        self.check_refused(
            SENDS_X, [tool("f", {"x": {}, "z": {}})], "s.f.z reaches the wire under no label"
        )

    def test_a_tool_no_function_invokes(self) -> None:
        self.check_refused(
            SENDS_X, [tool("f", {"x": {}}), tool("g", {})], "1 functions for 2 tools"
        )

    def test_a_function_that_does_not_invoke_once(self) -> None:
        self.check_refused("None", [tool("f", {"x": {}})], "no single internal.invoke")


class GoldenCensus(unittest.TestCase):
    """The census reads the real generator's modules, and counts what the schemas hold."""

    def test_every_golden_listing(self) -> None:
        for path in sorted(GOLDEN.glob("*.tools.json")):
            server = path.name.split(".")[0]
            with self.subTest(server=server):
                raw = json.loads(path.read_text("utf-8"))
                tools = protocol.decode_tools_page(raw).tools
                counted = census(server, tools, codegen.generate(server, tools))
                self.assertEqual(counted.tools, len(raw["tools"]))
                self.assertEqual(
                    counted.parameters,
                    sum(
                        len(
                            set(t["inputSchema"].get("properties", {}))
                            | set(t["inputSchema"].get("required", []))
                        )
                        for t in raw["tools"]
                    ),
                )
                self.assertLessEqual(
                    counted.parameters_renamed_needlessly, counted.parameters_renamed
                )
                self.assertLessEqual(counted.enums_kept, counted.enum_parameters)


class DemoCensus(unittest.TestCase):
    """The demo server, measured as the census measures every server."""

    def test_the_demo_figures(self) -> None:
        demo = str(Path(surface_census.REPO) / "mcp_client" / "cli" / "demo_server.py")
        counted = measure(
            Target("demo", Spawn(sys.executable, (demo,)), surface_census._DEMO_SAMPLES)
        )
        # Five tools; only reverse-text is renamed, for its hyphen (not legal): to
        # reverse_text, with no digest (issue 24).
        self.assertEqual(
            (counted.tools, counted.tools_renamed, counted.tools_renamed_needlessly), (5, 1, 0)
        )
        self.assertEqual(counted.digest_renames, [])
        # The sample calls: add's structuredContent checked against its outputSchema.
        self.assertEqual((counted.sampled_calls, counted.failed_calls), (3, 0))
        self.assertEqual((counted.results_checked, counted.mismatches), (1, []))
        # add a, b; divide a, b; join_words words, separator, limit; reverse-text
        # text, upper; count_by records, key, missing: twelve, all snake case already.
        self.assertEqual(counted.parameters, 12)
        self.assertEqual(
            (
                counted.parameters_renamed,
                counted.parameters_renamed_needlessly,
                counted.whole_value_parameters,
            ),
            (0, 0, 0),
        )
        # No schema of the demo states an enum or a const.
        self.assertEqual((counted.enum_parameters, counted.enums_kept), (0, 0))
        # count_by's records is an array of objects that name no key: a list
        # (Any before issue 19) of objects with Any values, so loose;
        # missing's anyOf [string, null] is Optional[str]; everything else is a
        # primitive or a list of strings.
        self.assertEqual((counted.any_parameters, counted.any_list), (0, []))
        self.assertEqual(
            [item.split(":")[0] for item in counted.loose_list], ["demo.count_by.records"]
        )


@pytest.mark.slow
class RealServersCensus(unittest.TestCase):
    """Issue 19's goals hold over every server the tests start, as the census counts them."""

    def test_the_goals_and_nothing_listed(self) -> None:
        npm_servers.require()  # the census counts the npm servers too
        with tempfile.TemporaryDirectory() as scratch:
            chosen = [
                target
                for target in targets(scratch)
                if sys.version_info >= (3, 10) or target.name not in ("time", "git")
            ]
            censuses = [measure(target) for target in chosen]  # time, git: Python >= 3.10
        summed = total(censuses)
        self.assertEqual(
            (
                summed.needless_tool_renames,
                summed.needless_parameter_renames,
                summed.any_list,
                summed.enums_lost,
                summed.digest_renames,
                summed.mismatches,
            ),
            ([], [], [], [], [], []),
        )
        # Issue 24: the typed results of the panel pass their own schemas, and these
        # tools' text is JSON (ToolOutput.data, or the text beside structuredContent).
        self.assertGreaterEqual(summed.results_checked, 8)
        self.assertLessEqual(
            {"memory.read_graph", "everything.get-structured-content"}, set(summed.text_json)
        )
        self.assertGreaterEqual(summed.enum_parameters, 5)  # everything's 4, filesystem's sortBy
        measured = figures(summed)
        for metric, sense, bound in GOALS:
            value = measured[metric]
            self.assertTrue(
                value <= bound if sense == "<=" else value >= bound,
                "%s: %.3f, goal %s %.2f" % (metric, value, sense, bound),
            )


if __name__ == "__main__":
    unittest.main()
