#!/usr/bin/env python3
"""Results benchmark (issue 24): what checking and learning a result costs, beside an echo call.

On the panel's typed results, taken live: the census's servers (``demo``, ``time``,
``everything``, ``filesystem``, ``memory``, ``sequential-thinking``;
``tools/surface_census.py``) are started, their sample calls made, and every result
whose tool declares an ``outputSchema`` that reads as a record is kept. Then, per
result:

* ``deliver`` with the check (``GeneratedTool.check``, compiled on the first call)
  and without it (the same tool, ``check=None``): the check's cost is the
  difference;
* learning: ``shapes.learn`` of the value, and ``Store.observe`` (record and merge,
  in memory); a ``Store.flush`` (one file written) is timed per run;
* ``content.parse_data`` of the result's text (``ToolOutput.data``).

The baseline is one ``call_tool("echo")`` round trip of this client against
``tools/echo_server.py`` in the same run (the call the goal is stated against: the
check should cost a few percent of it). Per figure, the best and median of
``--repeat`` samples, the collector off while sampling (``tools/timing.py``).

    python tools/bench_results.py [--repeat N] [--npm-bin DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import platform
import shutil
import sys
import tempfile
from typing import List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import surface_census  # noqa: E402  (tools/ is sys.path[0] when run as a script)
from timing import sample  # noqa: E402

from mcp_client import Options, ProcessTransport, Spawn, codegen, start  # noqa: E402
from mcp_client.codegen import (  # noqa: E402
    GeneratedTool,  # noqa: E402
    content,
    shapes,
)
from mcp_client.protocol import CallToolResult, Text, ToolDescriptor  # noqa: E402

Typed = Tuple[str, GeneratedTool, ToolDescriptor, CallToolResult]


def typed_results(scratch: str, npm_bin: str) -> List[Typed]:
    """Every sample result of the panel whose tool has a compiled check."""
    found: List[Typed] = []
    for target in surface_census.targets(scratch, npm_bin):
        if target.name == "git":  # text only: nothing to check
            continue
        client = start(ProcessTransport(target.spawn), Options(request_timeout=60.0))
        try:
            listing = {tool.name: tool for tool in client.list_tools()}
            generated = codegen.generate(target.name, tuple(listing.values()))
            tools = {tool.wire_name: tool for tool in generated.tools}
            for wire, arguments in target.samples:
                if wire in tools and tools[wire].check is not None:
                    result = client.call_tool(wire, arguments)
                    if not result.is_error:
                        name = "%s.%s" % (target.name, wire)
                        found.append((name, tools[wire], listing[wire], result))
        finally:
            client.shutdown()
    return found


def echo_call(repeat: int) -> float:
    """The median seconds of one echo round trip through this client."""
    server = os.path.join(HERE, "echo_server.py")
    client = start(ProcessTransport(Spawn(sys.executable, (server,))), Options())
    try:
        for _ in range(200):
            client.call_tool("echo", {})
        return sample(functools.partial(client.call_tool, "echo", {}), 500, repeat)[1]
    finally:
        client.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="samples per figure")
    parser.add_argument("--npm-bin", default=surface_census.NPM_BIN, help="the npm servers")
    options = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="bench-results-")
    try:
        results = typed_results(scratch, options.npm_bin)
        echo = echo_call(options.repeat)
        store = shapes.Store(os.path.join(scratch, "shapes"))
        print(
            "Python %s on %s; per call, median of %d samples; echo call %.1f us"
            % (platform.python_version(), platform.machine(), options.repeat, echo * 1e6)
        )
        print(
            "%-40s %8s %8s %8s %7s %8s %8s %8s"
            % (
                "typed result",
                "bare us",
                "check us",
                "cost us",
                "% echo",
                "record",
                "observe",
                "data",
            )
        )
        costs = []
        for name, tool, descriptor, result in results:
            bare = dataclasses.replace(tool, check=None)
            codegen.deliver(tool, result)  # compiled here, once
            with_check = sample(
                functools.partial(codegen.deliver, tool, result), 2000, options.repeat
            )[1]
            without = sample(
                functools.partial(codegen.deliver, bare, result), 2000, options.repeat
            )[1]
            value = result.structured_content
            record = sample(functools.partial(shapes.learn, value), 500, options.repeat)[1]
            observe = functools.partial(store.observe, "bench", "1", descriptor, None, value)
            observed = sample(observe, 500, options.repeat)[1]
            text = "\n".join(block.text for block in result.content if isinstance(block, Text))
            data = sample(functools.partial(content.parse_data, text), 2000, options.repeat)[1]
            cost = with_check - without
            costs.append(cost)
            print(
                "%-40s %8.2f %8.2f %8.2f %6.1f%% %8.2f %8.2f %8.2f"
                % (
                    name[:40],
                    without * 1e6,
                    with_check * 1e6,
                    cost * 1e6,
                    100 * cost / echo,
                    record * 1e6,
                    observed * 1e6,
                    data * 1e6,
                )
            )
        flush = sample(store.flush, 1, options.repeat)[1]
        descriptor = results[0][2]

        def observe_and_flush() -> None:
            store.observe("bench", "1", descriptor, None, {})
            store.flush()

        dirty = sample(observe_and_flush, 1, options.repeat)[1]
        print(
            "check: median %.2f us, max %.2f us a call (%.1f%% / %.1f%% of an echo call)"
            % (
                sorted(costs)[len(costs) // 2] * 1e6,
                max(costs) * 1e6,
                100 * sorted(costs)[len(costs) // 2] / echo,
                100 * max(costs) / echo,
            )
        )
        print(
            "learning: a run's flush of one changed file %.1f us (nothing changed: %.1f us)"
            % (dirty * 1e6, flush * 1e6)
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
