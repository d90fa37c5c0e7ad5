"""The surface budget after issue 19: each new rung in its order, and no server refused
that the generator before it accepted.

The generator before issue 19 (commit 9f49cc8, the last before it) is read out
of this checkout's git history into a package of its own, so the comparison is
with the code itself, not with a description of it. Every listing it accepted
must still generate now, and the last rung of each line must be no longer than
its bare line was then.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client import codegen
from mcp_client.codegen import MAX_SURFACE_BYTES, MAX_TOOLS, generate
from mcp_client.errors import GenerateError, SurfaceTooLarge
from mcp_client.protocol import ToolDescriptor

sys.path.insert(0, str(Path(__file__).parent))
from strategies import property_settings  # noqa: E402

BEFORE = "9f49cc8"  # the last commit before issue 19
MODULES = ("__init__", "codegen", "errors", "jsonvalue", "name", "noise", "protocol", "schema")
ROOT = Path(__file__).resolve().parent.parent


def load_before() -> Optional[types.ModuleType]:
    """The old ``mcp_client`` as a package ``mcp_client_before19``, or None without history."""
    target = Path(tempfile.mkdtemp(prefix="before19-")) / "mcp_client_before19"
    target.mkdir()
    for module in MODULES:
        done = subprocess.run(
            ["git", "show", "%s:mcp_client/%s.py" % (BEFORE, module)], cwd=ROOT, capture_output=True
        )
        if done.returncode != 0:
            return None
        text = done.stdout if module != "__init__" else b""
        (target / (module + ".py")).write_bytes(text)
    sys.path.insert(0, str(target.parent))
    return importlib.import_module("mcp_client_before19.codegen")


OLD = load_before()


def tool(
    name: str, schema: Dict[str, Any], description: str = "", output: Any = None
) -> Dict[str, Any]:
    raw: Dict[str, Any] = {"name": name, "inputSchema": schema, "description": description}
    if output is not None:
        raw["outputSchema"] = output
    return raw


def obj(properties: Dict[str, Any], *required: str) -> Dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def new_tools(raw: List[Dict[str, Any]]) -> List[ToolDescriptor]:
    return [
        ToolDescriptor(
            t["name"], t["inputSchema"], None, t.get("description"), t.get("outputSchema")
        )
        for t in raw
    ]


def old_surface(raw: List[Dict[str, Any]]) -> Optional[str]:
    assert OLD is not None
    protocol = importlib.import_module("mcp_client_before19.protocol")
    make = protocol.ToolDescriptor
    try:
        return str(
            OLD.generate(
                "s",
                [
                    make(
                        t["name"],
                        t["inputSchema"],
                        None,
                        t.get("description"),
                        t.get("outputSchema"),
                    )
                    for t in raw
                ],
            ).surface
        )
    except Exception as error:  # the old GenerateError is the old package's class
        assert type(error).__name__ in ("SurfaceTooLarge", "ToolNameCollision", "TooManyTools"), (
            error
        )
        return None


# Parameters in every shape the new surface spells longer than the old one did:
# records, enums with defaults, unions, nullable and camelCase names.
WIDE = {
    "sortBy": {"type": "string", "enum": ["name", "size", "modified"], "default": "name"},
    "edits": {
        "type": "array",
        "items": obj({"oldText": {"type": "string"}, "newText": {"type": "string"}}, "oldText"),
    },
    "when": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
    "dryRun": {"type": "boolean", "default": False},
    "filter": obj({"query": {"type": "string"}, "limit": {"type": "integer"}}),
}


def listing(count: int, params: int, description: str = "d" * 200) -> List[Dict[str, Any]]:
    names = list(WIDE)[:params]
    return [
        tool(
            "tool_%03d" % index,
            obj({name: WIDE[name] for name in names}, *names[:1]),
            description,
            obj({"ok": {"type": "boolean"}}) if index % 2 else None,
        )
        for index in range(count)
    ]


@unittest.skipIf(OLD is None, "needs this checkout's git history (commit %s)" % BEFORE)
class NeverRefusedWhatFittedBefore(unittest.TestCase):
    def check(self, raw: List[Dict[str, Any]]) -> None:
        before = old_surface(raw)
        if before is None:
            return
        after = generate("s", new_tools(raw))  # must not raise
        self.assertLessEqual(len(after.surface.encode("utf-8")), MAX_SURFACE_BYTES)

    @pytest.mark.slow
    def test_wide_listings_at_every_size(self) -> None:
        for count in (64, 128, 200, 256):
            for params in range(1, len(WIDE) + 1):
                with self.subTest(count=count, params=params):
                    self.check(listing(count, params))

    def test_the_last_rung_is_never_longer_than_the_old_bare_line(self) -> None:
        for params in range(1, len(WIDE) + 1):
            raw = listing(MAX_TOOLS, params)
            new = codegen._read  # the pieces: read, name, then render the last rung
            functions = sorted(
                (
                    new(
                        t,
                        codegen.mangle(t.name, codegen.sha256_digest),
                        codegen.sha256_digest,
                        None,
                    )
                    for t in new_tools(raw)
                ),
                key=lambda f: f.name,
            )
            names = codegen._name_types(functions, codegen.sha256_digest)
            last = [
                codegen._render(codegen._surface_line("cap.mcp.s", f, names), codegen._RUNGS[-1])
                for f in functions
            ]
            raw_bare = [dict(t, description="") for t in raw]
            old = old_surface(raw_bare)
            assert old is not None
            for mine, theirs in zip(last, old.splitlines()):
                self.assertLessEqual(len(mine), len(theirs), (mine, theirs))

    @pytest.mark.slow
    @property_settings(60)
    @given(st.integers(1, MAX_TOOLS), st.integers(1, len(WIDE)), st.integers(0, 400))
    def test_any_size_and_description(self, count: int, params: int, chars: int) -> None:
        self.check(listing(count, params, "w " * (chars // 2)))


class RungOrder(unittest.TestCase):
    """Each rung is taken only when the ones before it do not fit."""

    def lines(self, raw: List[Dict[str, Any]]) -> List[str]:
        generated = generate("s", new_tools(raw))
        self.assertLessEqual(len(generated.surface.encode("utf-8")), MAX_SURFACE_BYTES)
        self.assertEqual([t.line for t in generated.tools], generated.surface.splitlines())
        return generated.surface.splitlines()

    def test_input_shapes_give_way_after_result_shapes(self) -> None:
        # Two record parameters: with their shapes 300-odd bytes a line, without 190.
        raw = [
            tool(
                "tool_%03d" % index,
                obj({"edits": WIDE["edits"], "filter": WIDE["filter"]}),
                "d" * 400,
            )
            for index in range(MAX_TOOLS)
        ]
        line = self.lines(raw)[0]
        self.assertIn("edits: list[Tool000Edits] | None = None", line)
        self.assertIn("filter: Tool000Filter | None = None", line)
        self.assertTrue(line.endswith("  # " + "d" * 119 + "\u2026"), line)

    def test_then_the_descriptions_keeping_the_defaults(self) -> None:
        raw = [
            tool("tool_%03d" % index, obj({name: WIDE[name] for name in WIDE}), "d" * 50)
            for index in range(MAX_TOOLS)
        ]
        line = self.lines(raw)[0]
        self.assertNotIn("#", line)
        self.assertIn('sortBy: Literal["name", "size", "modified"] = "name"', line)
        self.assertIn("dryRun: bool = False", line)

    def test_then_the_plain_types_then_any_results(self) -> None:
        choices = {"type": "string", "enum": ["c%02d" % n for n in range(12)]}
        props = {"p%d" % n: choices for n in range(3)}
        raw = [
            tool("tool_%03d" % index, obj(props), output=obj({"ok": {"type": "boolean"}}))
            for index in range(MAX_TOOLS)
        ]
        line = self.lines(raw)[0]
        self.assertEqual(
            line,
            "cap.mcp.s.tool_000(*, p0: str | None = None, p1: str | None = "
            "None, p2: str | None = None) -> Tool000Result",
        )
        # Six 16-character names: 256 bytes a line with Tool000Result, 246 with Any.
        props = {("p%d" % n).ljust(16, "x"): choices for n in range(6)}
        raw = [
            tool("tool_%03d" % index, obj(props), output=obj({"ok": {"type": "boolean"}}))
            for index in range(MAX_TOOLS)
        ]
        self.assertTrue(self.lines(raw)[0].endswith("p5xxxxxxxxxxxxxx: str | None = None) -> Any"))

    def test_only_what_no_rung_can_fit_is_refused(self) -> None:
        props = {"p%02d" % n: {"type": "string"} for n in range(30)}
        with self.assertRaises(SurfaceTooLarge):
            generate("s", new_tools([tool("tool_%03d" % i, obj(props)) for i in range(MAX_TOOLS)]))
        self.assertTrue(issubclass(SurfaceTooLarge, GenerateError))


if __name__ == "__main__":
    unittest.main()
