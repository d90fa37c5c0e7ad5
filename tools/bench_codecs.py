#!/usr/bin/env python3
"""Codec benchmark: the two hot paths of the reader thread, each beside its bare baseline.

1. Framing: ``stdio.Buffer.push`` of one line just under the 16 MiB cap, fed in
   64 KiB chunks (what ``os.read`` hands the reader), against a bare
   ``bytes.find(b"\\n")`` over the same chunks. A third row, find plus one
   ``b"".join``, is the floor for any framer that must hand back the line as
   one ``bytes`` object: the join is a memcpy of 16 MiB, which moves twice the
   memory a memchr scan reads.
2. Decoding: ``jsonrpc.decode`` of a typical ``tools/call`` response line
   (about 1.5 KB, a few text blocks and some structured content) against bare
   ``json.loads`` of the same bytes.

Not a test: it prints a table and exits 0. Each figure is per operation, the
best and the median of ``--repeat`` samples, with the garbage collector off
while sampling (as timeit does). Ratios are medians over the baseline's median.

    python tools/bench_codecs.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from typing import Callable, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from timing import sample  # noqa: E402  (tools/ is sys.path[0] when run as a script)

from mcp_client import jsonrpc, jsonvalue, protocol, stdio  # noqa: E402

CHUNK = 64 * 1024
TARGET = 2.0


# ----------------------------------------------------------------------------- framing


def big_line_chunks(terminator: bytes) -> List[bytes]:
    """One JSON string line of MAX_LINE_BYTES - 2 bytes (just under the cap), chunked."""
    body = b'"' + b"a" * (stdio.MAX_LINE_BYTES - 4) + b'"'
    wire = body + terminator
    return [wire[i : i + CHUNK] for i in range(0, len(wire), CHUNK)]


def bare_scan(chunks: List[bytes]) -> Callable[[], object]:
    def run() -> object:
        for chunk in chunks:
            chunk.find(b"\n")
        return None

    return run


def scan_and_join(chunks: List[bytes]) -> Callable[[], object]:
    def run() -> object:
        parts = []
        for chunk in chunks:
            cut = chunk.find(b"\n")
            if cut < 0:
                parts.append(chunk)
            else:
                parts.append(chunk[:cut])
        return b"".join(parts)

    return run


def buffer_push(chunks: List[bytes]) -> Callable[[], object]:
    def run() -> object:
        buffer = stdio.Buffer()
        for chunk in chunks:
            lines = buffer.push(chunk)
        assert len(lines) == 1 and len(lines[0]) == stdio.MAX_LINE_BYTES - 2
        return lines

    return run


# ----------------------------------------------------------------------------- decoding


def tools_call_line() -> bytes:
    listing = "\n".join(
        "%-28s %8d  2025-06-%02d" % ("src/pkg/module_%02d.py" % i, 1200 + 37 * i, i + 1)
        for i in range(12)
    )
    snippet = (
        'def handler(request):\n    """Answer one request; never raises."""\n'
        '    return {"status": 200, "body": request.body,'
        ' "note": "r\u00e9sum\u00e9 \u2713"}\n'
    )
    result: jsonvalue.JsonValue = {
        "content": [
            {"type": "text", "text": "Listing of /work/src/pkg (12 entries):\n" + listing},
            {"type": "text", "text": "First match, src/pkg/module_03.py lines 10-13:\n" + snippet},
            {"type": "text", "text": "Search took 42 ms; results truncated: no."},
        ],
        "structuredContent": {
            "files": ["src/pkg/module_%02d.py" % i for i in range(12)],
            "matches": 17,
            "elapsedMs": 42.5,
            "truncated": False,
        },
        "isError": False,
    }
    return jsonvalue.encode(jsonrpc.result_response(42, result))


def full_path(line: bytes) -> object:
    message = jsonrpc.decode(line)
    return protocol.decode_call_tool(message.result)  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- report


Row = Tuple[str, Tuple[float, float], Optional[float]]


def table(title: str, unit: str, scale: float, rows: List[Row], baseline: int) -> None:
    base = rows[baseline][1][1]
    print(title)
    print(
        "  %-40s %10s %10s %9s  %s" % ("case", "best " + unit, "median " + unit, "ratio", "target")
    )
    for name, (best, median), target in rows:
        ratio = median / base
        verdict = (
            ""
            if target is None
            else "<= %.0fx %s" % (target, "met" if ratio <= target else "MISSED")
        )
        print(
            "  %-40s %10.2f %10.2f %8.2fx  %s"
            % (name, best * scale, median * scale, ratio, verdict)
        )
    print()


def bench_framing(repeat: int) -> None:
    lf, crlf = big_line_chunks(b"\n"), big_line_chunks(b"\r\n")
    rows: List[Row] = [
        ("bytes.find scan (baseline)", sample(bare_scan(lf), 1, repeat), None),
        ("bytes.find + one b''.join (floor)", sample(scan_and_join(lf), 1, repeat), None),
        ("Buffer.push, \\n-terminated", sample(buffer_push(lf), 1, repeat), TARGET),
        ("Buffer.push, \\r\\n-terminated", sample(buffer_push(crlf), 1, repeat), TARGET),
    ]
    table(
        "framing: one %d-byte line in %d chunks of %d bytes"
        % (stdio.MAX_LINE_BYTES - 2, len(lf), CHUNK),
        "ms",
        1e3,
        rows,
        0,
    )


def bench_decoding(repeat: int) -> None:
    line = tools_call_line()
    loops = 2000
    rows: List[Row] = [
        ("json.loads (baseline)", sample(lambda: json.loads(line), loops, repeat), None),
        ("jsonvalue.parse", sample(lambda: jsonvalue.parse(line), loops, repeat), None),
        ("jsonrpc.decode", sample(lambda: jsonrpc.decode(line), loops, repeat), TARGET),
        ("jsonrpc.decode + decode_call_tool", sample(lambda: full_path(line), loops, repeat), None),
    ]
    table("decoding: a tools/call response line of %d bytes" % len(line), "us", 1e6, rows, 0)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="samples per case (default 15)")
    args = parser.parse_args(argv)
    print(
        "codec benchmark: %s %s on %s, best and median of %d samples\n"
        % (
            platform.python_implementation(),
            platform.python_version(),
            platform.machine(),
            args.repeat,
        )
    )
    bench_framing(args.repeat)
    bench_decoding(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
