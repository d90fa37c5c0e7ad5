"""Generated modules type-check, and so does a right program written against them.

Issue 19, item 6: a harness can run ``mypy --strict`` over a model's program
and the generated modules before running anything. This test does exactly
that, as a subprocess over a temporary directory holding a stub ``cap``
package (``cap.internal.mcp.invoke`` returns ``Any``, as a harness's would:
a generated module needs nothing else of it),
every golden module, a module whose parameters are named like what a body
could use (``str``, ``cast``, ``Dict``, ``Any``...), one right program, and
one wrong program per mistake a model makes: a keyword the server does not
spell, an enum member that does not exist, a missing and an extra key in an
input dict, and a result key that is not there. Each wrong program must fail
with mypy's own message (``did you mean "sortBy"?``), the rest must be clean.

One mypy run covers every file (mypy is slow to start); the wall clock is not
asserted, only the findings.
"""

from __future__ import annotations

import json
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Dict, List

from mcp_client import codegen, protocol
from mcp_client.codegen import shapes

from typecheck import mypy_strict

GOLDEN = Path(__file__).with_name("golden")

STUB = '''from typing import Any, Dict

def invoke(server: str, tool: str, arguments: Dict[str, Any]) -> Any: ...
'''

# A parameter may take any name but a hard keyword and what a body uses: these
# must neither break the body nor the module (their types stay typing's).
SHADOWS = [
    "str",
    "cast",
    "Dict",
    "Any",
    "List",
    "Optional",
    "Literal",
    "Union",
    "TypedDict",
    "type",
    "id",
    "format",
    "dict",
    "int",
    "bool",
    "float",
    "typing",
    "internal_",
    "Shadow",
    "ShadowResult",
]
SHADOW_TOOLS = [
    protocol.ToolDescriptor(
        "shadow",
        {
            "type": "object",
            "properties": dict(
                {name: {"type": "string"} for name in SHADOWS},
                edits={
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                        "required": ["a"],
                    },
                },
            ),
            "required": ["str", "cast"],
        },
        output_schema={
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
        },
    ),
    protocol.ToolDescriptor(
        "Shadow",
        {
            "type": "object",
            "properties": {
                "x": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}
            },
        },
    ),
]

# Tools named like builtins keep their names; their module still means the builtins.
NAMED_LIKE_BUILTINS = [
    protocol.ToolDescriptor(
        name,
        {
            "type": "object",
            "properties": {
                "x": {"type": "string"},
                "n": {"type": "integer"},
                "f": {"type": "number"},
                "b": {"type": "boolean"},
                "m": {"type": "object", "properties": {"k": {"type": "string"}}},
            },
            "required": ["x"],
        },
    )
    for name in ("list", "set", "type", "str", "int", "float", "bool", "dict")
]

RIGHT = '''from typing import List
from cap.mcp import builtin_names, calendar, filesystem, orders, shadow

def main() -> None:
    out = filesystem.list_directory_with_sizes("/tmp", sortBy="size")
    text: str = out["text"]
    blocks = out["content"]
    for block in blocks:  # a block narrowed by its type (issue 24)
        if block["type"] == "image":
            mime: str = block["mimeType"]
            print(mime, block["data"][:8])
        elif block["type"] == "resource":
            print(block["resource"]["uri"])
    data = out["data"]  # JSON text parsed, or None
    if isinstance(data, dict):
        print(data.get("entries"))
    when = calendar.resolve_time("2026-12-02", "Europe/Paris")
    local: str = when["data"]["resolved_local"]  # a shape learned: observed{...}
    adjusted = when["data"].get("adjusted_local")
    print(local, adjusted)
    filesystem.edit_file("/tmp/a", [{"oldText": "a", "newText": "b"}], dryRun=True)
    order = orders.get_order("o-1")
    city: str = order["customer"]["address"]["city"]
    status = order["status"]
    if status == "paid":
        pass
    page = orders.listOrders(status="shipped")
    first = page["orders"][0]["total"]["amount"] + 1.0
    cursor = page.get("nextCursor")
    result = shadow.shadow("s", "c", Dict="d", edits=[{"a": "x"}, {"a": "y", "b": 2}])
    ok: bool = result["ok"]
    shadow.Shadow(x=3)
    shadow.Shadow(x="three")
    listed = builtin_names.list("a", n=1, f=1.5, b=True, m={"k": "v"})
    print(listed["text"], builtin_names.str(x="s")["data"], builtin_names.type("t"))
    print(text, blocks, city, first, cursor, ok)
'''

WRONG: Dict[str, str] = {
    "keyword": 'filesystem.list_directory_with_sizes("/tmp", sort_by="size")',
    "member": 'filesystem.list_directory_with_sizes("/tmp", sortBy="date")',
    "missing_key": 'filesystem.edit_file("/tmp/a", [{"oldText": "a"}])',
    "extra_key": 'filesystem.edit_file("/tmp/a", [{"oldText": "a", "newText": "b", "x": 1}])',
    "result_key": 'print(orders.get_order("o-1")["customer"]["adress"])',
    "union": 'shadow.Shadow(x=1.5)',
    "seen_key": 'print(calendar.resolve_time("d", "z")["data"]["resolved"])',
    "builtin_named": 'builtin_names.int("x", n="one")',
    "output_attribute": 'print(filesystem.list_allowed_directories().txet)',
    "output_key": 'print(filesystem.list_allowed_directories()["txet"])',
    "unnarrowed_block": 'print(filesystem.list_allowed_directories()["content"][0]["mimeType"])',
    "data_unchecked": 'print(filesystem.list_allowed_directories()["data"]["x"])',
}
EXPECTED: Dict[str, str] = {
    "keyword": 'Unexpected keyword argument "sort_by" for "list_directory_with_sizes"; '
    'did you mean "sortBy"?',
    "member": 'Argument "sortBy" to "list_directory_with_sizes" has incompatible type '
    '"Literal[\'date\']"',
    "missing_key": 'Missing key "newText" for TypedDict "EditFileEdits"',
    "extra_key": 'Extra key "x" for TypedDict "EditFileEdits"',
    "result_key": 'TypedDict "GetOrderResultCustomer" has no key "adress"',
    "union": 'Argument "x" to "Shadow" has incompatible type "float"',
    "seen_key": 'TypedDict "ResolveTimeData" has no key "resolved"',
    "builtin_named": 'Argument "n" to "int" has incompatible type "str"',
    "output_attribute": 'has no attribute "txet"',
    "output_key": 'TypedDict "ToolOutput" has no key "txet"',
    "unnarrowed_block": 'TypedDict "TextContent" has no key "mimeType"',
    "data_unchecked": "Value of type",
}


def learned_calendar() -> codegen.Generated:
    """The calendar server's module, generated after its tools were seen (shapes)."""
    sys.path.insert(0, str(Path(__file__).with_name("servers")))
    try:
        import calendar_server
    finally:
        sys.path.pop(0)
    tools = protocol.decode_tools_page({"tools": calendar_server.TOOLS}).tools
    seen = shapes.merge(
        shapes.record({"resolved_local": "x", "zone": "UTC"}),
        shapes.record({"resolved_local": "y", "zone": "Asia/Tokyo", "adjusted_local": "z"}),
    )
    learned = {"resolve_time": shapes.Learned(2, seen, shapes.record(None))}
    return codegen.generate("calendar", tools, learned=learned)


def golden(server: str) -> codegen.Generated:
    raw = json.loads((GOLDEN / (server + ".tools.json")).read_text("utf-8"))
    return codegen.generate(server, protocol.decode_tools_page(raw).tools)


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


class TypeChecked(unittest.TestCase):
    findings: Dict[str, List[str]] = {}
    returncode = 0

    @classmethod
    def setUpClass(cls) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            write(root, "cap/__init__.py", "")
            write(root, "cap/internal/__init__.py", "")
            write(root, "cap/internal/mcp.pyi", STUB)
            write(root, "cap/mcp/__init__.py", "")
            files = []
            for server in ("filesystem", "orders", "issue-tracker", "git", "time"):
                name = server.replace("-", "_")
                write(root, "cap/mcp/%s.py" % name, golden(server).source)
                files.append("cap/mcp/%s.py" % name)
            write(root, "cap/mcp/shadow.py", codegen.generate("shadow", SHADOW_TOOLS).source)
            files.append("cap/mcp/shadow.py")
            write(root, "cap/mcp/calendar.py", learned_calendar().source)
            files.append("cap/mcp/calendar.py")
            named = codegen.generate("builtin_names", NAMED_LIKE_BUILTINS).source
            write(root, "cap/mcp/builtin_names.py", named)
            files.append("cap/mcp/builtin_names.py")
            write(root, "right.py", RIGHT)
            files.append("right.py")
            for key, line in WRONG.items():
                write(
                    root,
                    "wrong_%s.py" % key,
                    "from cap.mcp import builtin_names, calendar, filesystem, orders, shadow\n%s\n"
                    % line,
                )
                files.append("wrong_%s.py" % key)
            cls.returncode, cls.findings = mypy_strict(root, files)

    def test_the_generated_modules_pass_strict(self) -> None:
        modules = {
            path: errors for path, errors in self.findings.items() if path.startswith("cap/")
        }
        self.assertEqual(modules, {})

    def test_a_right_program_passes(self) -> None:
        self.assertNotIn("right.py", self.findings)

    def test_each_wrong_program_fails_with_mypys_message(self) -> None:
        for key, expected in EXPECTED.items():
            with self.subTest(key):
                said = self.findings.get("wrong_%s.py" % key, [])
                self.assertTrue(any(expected in finding for finding in said), said)
        self.assertEqual(self.returncode, 1)


if __name__ == "__main__":
    unittest.main()
