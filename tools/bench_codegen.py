#!/usr/bin/env python3
"""Generator benchmark: ``codegen.generate`` for 256 realistic tools beside ``json.dumps``.

The listing is built here, deterministically, in the shapes real servers send:
descriptions of one to three sentences (the surface of all 256 must fit in
64 KiB), one to six parameters mixing strings, integers, booleans, string
arrays, pydantic's ``anyOf [X, null]``, enums, ``$ref`` and arrays of objects
(typed inputs since issue 19: records, ``Literal`` enums, defaults), camelCase
names on a sixth of the tools (kept verbatim) and hyphenated ones on another
sixth (so the digest path runs), and one tool in eight with an open
``additionalProperties`` (the whole-value path). The baseline is ``json.dumps`` of the same raw
``tools/list`` result: serializing the listing once, the least any consumer of
it does. Target: ``generate`` within 20x of that.

``scan_for_at`` decides the cost: an ``@`` only on quote-free comment lines is
proven inert by a line scan, any other ``@`` needs the stdlib tokenizer (pure
Python before 3.12). So the listing is timed three ways: with no ``@`` at all,
with e-mail addresses in a quarter of the descriptions, and with one JSON-LD
style ``@context`` parameter (an ``@`` in a string literal: the tokenizer runs).
A fourth way gives every tool an ``outputSchema`` (flat, pydantic's ``$defs`` with
arrays of objects and nullable keys, fastmcp's wrapped result, a nested object
that admits other keys), so result types are declared and shown; their shapes
push the surface past 64 KiB, so the descriptions are cut as well.

Not a test: it prints the figures and exits 0. Each figure is per call, the best
and the median of ``--repeat`` samples, with the garbage collector off while
sampling. ``--instructions`` counts instructions instead (callgrind, when
``valgrind`` is installed): the difference between a run that generates a listing
``n`` times and one that generates it once more than none, beside the same for
``json.dumps``, so start-up cancels out and the machine's load changes nothing.

    python tools/bench_codegen.py [--repeat N] [--instructions]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from timing import sample  # noqa: E402  (tools/ is sys.path[0] when run as a script)

from mcp_client import codegen, protocol  # noqa: E402

TOOLS = 256
TARGET = 20.0

VERBS = ["get", "list", "create", "update", "delete", "search", "move", "read", "write", "sync"]
NOUNS = ["issue", "file", "branch", "comment", "label", "project", "user", "commit", "page"]
SENTENCES = [
    "Returns the matching items with their identifiers and a short summary of each.",
    "Only works within the directories the server was started with.",
    "Fails with a clear message when the target does not exist or is not readable.",
    "Results are paginated; pass the cursor from the previous call to continue.",
    "Use with care: the change is applied immediately and cannot be undone.",
]
PARAMS: List[Tuple[str, Dict[str, Any]]] = [
    ("path", {"type": "string", "description": "Absolute or workspace-relative path"}),
    ("limit", {"type": "integer", "default": 30, "minimum": 1, "maximum": 100}),
    ("dryRun", {"type": "boolean", "default": False, "description": "Preview only"}),
    ("labels", {"type": "array", "items": {"type": "string"}}),
    (
        "since",
        {
            "anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}],
            "default": None,
            "description": "Only items changed after this instant",
        },
    ),
    ("state", {"type": "string", "enum": ["open", "closed", "all"], "default": "open"}),
    ("author", {"$ref": "#/$defs/User"}),
    (
        "edits",
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
            },
        },
    ),
]
USER = {
    "type": "object",
    "properties": {"login": {"type": "string"}, "id": {"type": "integer"}},
    "required": ["login"],
}
OUTPUTS: List[Dict[str, Any]] = [
    {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "url": {"type": "string"}},
        "required": ["id", "url"],
    },
    {
        "type": "object",
        "title": "Page",
        "required": ["items"],
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "nextCursor": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "$defs": {
            "Item": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "size": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                    "labels": {"type": "array", "items": {"type": "string"}},
                },
            }
        },
    },
    {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "string"}}},
        "required": ["result"],
        "x-fastmcp-wrap-result": True,
    },
    {
        "type": "object",
        "required": ["author", "state"],
        "properties": {
            "author": dict(USER, additionalProperties=True),
            "state": {"type": "string", "enum": ["open", "closed"]},
        },
    },
]


def raw_tool(index: int) -> Dict[str, Any]:
    """The ``index``-th tool of the listing, as a server would send it."""
    verb, noun = VERBS[index % len(VERBS)], NOUNS[index % len(NOUNS)]
    if index % 6 == 0:
        name = "%s%s%d" % (verb, noun.capitalize(), index)  # camelCase: kept verbatim
    elif index % 6 == 3:
        name = "%s-%s-%d" % (verb, noun, index)  # hyphenated: mangled, with its digest
    else:
        name = "%s_%s_%d" % (verb, noun, index)
    description = " ".join(SENTENCES[: index % 3])
    chosen = [PARAMS[(index + step) % len(PARAMS)] for step in range(1 + index % 6)]
    schema: Dict[str, Any] = {
        "type": "object",
        "title": name + "Arguments",
        "properties": dict(chosen),
        "required": [chosen[0][0]],
        "$defs": {"User": USER},
    }
    if index % 8 == 7:
        schema["additionalProperties"] = {"type": "string"}
    return {
        "name": name,
        "description": "%s the %s. %s" % (verb.capitalize(), noun, description),
        "inputSchema": schema,
        "annotations": {"readOnlyHint": verb in ("get", "list")},
    }


def listing(variant: str) -> Dict[str, Any]:
    """The raw ``tools/list`` result for one of the four variants."""
    tools = [raw_tool(index) for index in range(TOOLS)]
    if variant == "output schemas":
        for index, tool in enumerate(tools):
            tool["outputSchema"] = OUTPUTS[index % len(OUTPUTS)]
    if variant == "@ in descriptions":
        for tool in tools[::4]:
            tool["description"] += " Questions: tools@example.com."
    if variant == "@ in a wire name":
        tools[0]["inputSchema"]["properties"]["@context"] = {"type": "string"}
    return {"tools": tools}


VARIANTS = ("no @", "@ in descriptions", "@ in a wire name", "output schemas")
GOLDEN = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "golden"
)


def raw_listing(label: str) -> Dict[str, Any]:
    """A 256-tool variant by name, or a real server's listing in ``tests/golden``."""
    if label in VARIANTS:
        return listing(label)
    with open(os.path.join(GOLDEN, label + ".tools.json")) as listing_file:
        return dict(json.load(listing_file))


def labels() -> List[str]:
    names = sorted(
        n[: -len(".tools.json")] for n in os.listdir(GOLDEN) if n.endswith(".tools.json")
    )
    return list(VARIANTS) + names


def worker(label: str, what: str, times: int) -> None:
    """Under callgrind: one listing read and generated once (both runs pay that), then
    ``what`` done ``times`` times more."""
    raw = raw_listing(label)
    tools = protocol.decode_tools_page(raw).tools
    codegen.generate("bench", tools)
    json.dumps(raw)
    for _ in range(times):
        if what == "generate":
            codegen.generate("bench", tools)
        else:
            json.dumps(raw)


def counted(label: str, what: str, times: int, where: str) -> int:
    out = os.path.join(where, "%s-%d.out" % (what, times))
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, sys.executable]
    argv += [os.path.abspath(__file__), "--worker", label, what, str(times)]
    subprocess.run(argv, check=True, capture_output=True)
    with open(out) as dump:
        for line in dump:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise ValueError("no totals in %s" % out)


def instructions(label: str) -> Tuple[float, float]:
    """Instructions of one ``generate`` and of one ``json.dumps`` of ``label``'s listing."""
    many = 2 if label in VARIANTS else 20
    with tempfile.TemporaryDirectory(prefix="bench-codegen-") as where:
        none = counted(label, "generate", 0, where)
        generate = (counted(label, "generate", many, where) - none) / many
        dumps = (counted(label, "dumps", 10 * many, where) - none) / (10 * many)
    return generate, dumps


def instruction_table() -> int:
    if shutil.which("valgrind") is None:
        print("instructions: not counted (valgrind is not installed)")
        return 0
    print("instructions per call, counted by callgrind (a minute or two)")
    print("%-20s %14s %12s %7s" % ("listing", "generate", "json.dumps", "ratio"))
    for label in labels():
        generate, dumps = instructions(label)
        print(
            "%-20s %14s %12s %6.1fx"
            % (label, "{:,.0f}".format(generate), "{:,.0f}".format(dumps), generate / dumps)
        )
    print("ratio: instructions of generate / of json.dumps; target within %.0fx" % TARGET)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="samples per figure")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions (callgrind) instead"
    )
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker:
        worker(options.worker[0], options.worker[1], int(options.worker[2]))
        return 0
    if options.instructions:
        return instruction_table()
    print(
        "Python %s on %s; %d tools; per call, best and median of %d samples"
        % (platform.python_version(), platform.machine(), TOOLS, options.repeat)
    )
    print(
        "%-20s %9s %9s %9s %9s %7s"
        % ("listing", "JSON B", "dumps ms", "gen best", "gen med", "ratio")
    )
    for variant in VARIANTS:
        raw = listing(variant)
        tools = protocol.decode_tools_page(raw).tools
        codegen.generate("bench", tools)  # refusals surface here, before timing
        dumps = sample(functools.partial(json.dumps, raw), 20, options.repeat)
        generate = sample(functools.partial(codegen.generate, "bench", tools), 2, options.repeat)
        print(
            "%-20s %9d %9.3f %9.3f %9.3f %6.1fx"
            % (
                variant,
                len(json.dumps(raw)),
                dumps[1] * 1e3,
                generate[0] * 1e3,
                generate[1] * 1e3,
                generate[1] / dumps[1],
            )
        )
    print("ratio: generate median / json.dumps median; target within %.0fx" % TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
