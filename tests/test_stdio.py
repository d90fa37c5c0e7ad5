"""stdio: line framing both ways.

What is proved here:
- ``frame`` is compact JSON plus exactly one ``\\n``, the only newline (and no
  ``\\r``) in it, for any JSON value; what it refuses never reaches the wire.
- ``Buffer`` agrees with a one-line reference model on any byte stream cut at
  any points: lines split on ``\\n``, one ``\\r`` before it stripped, blank
  lines skipped, the unfinished tail held (and reported by ``pending_bytes``).
- A line cut at every byte boundary, inside multi-byte UTF-8 characters too,
  comes out whole and decodes.
- The cap: a line of exactly the limit is accepted and one byte more is
  ``LineTooLong``, pending or completed, ``\\r`` not counted; after a fault the
  buffer refuses everything; memory stays at one cap plus one chunk while a
  17 MiB hostile line is refused (measured with tracemalloc, not only taken
  from ``pending_bytes``). Boundaries are tested cheaply with ``limit=`` and
  once for real at 16 MiB.
- Whatever the chunk sizes, a pending line is held in memory proportional to
  its bytes (200k one-byte chunks hold ~200 KB, not an object each: issue 9),
  large chunks are held without a copy, and every split between held-as-is and
  copied pieces (``keep_from=``) reassembles exactly. ``read_size`` asks for
  large reads only while a line arrives in bulk.
"""

from __future__ import annotations

import math
import time
import tracemalloc
import unittest
from typing import Any, Iterable, List, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client.errors import EncodeRefused, FramingFault, LineTooLong
from mcp_client.jsonrpc import request
from mcp_client.jsonvalue import encode, encode_checked, parse
from mcp_client.stdio import (
    KEEP_FROM,
    MAX_LINE_BYTES,
    READ_SIZE,
    READ_SIZE_LARGE,
    Buffer,
    frame,
    frame_encoded_request,
    frame_request,
)

from strategies import json_values, property_settings

PROPERTY = property_settings(300)
CHUNK = 64 * 1024
MIB = 1024 * 1024

JSON_VALUES = json_values(20)


def reference(stream: bytes) -> List[bytes]:
    """What a framer must return for ``stream``: complete lines only, one
    terminating ``\\r`` removed, blank (empty or all-whitespace) lines dropped."""
    out = []
    for line in stream.split(b"\n")[:-1]:
        line = line[:-1] if line.endswith(b"\r") else line
        if line.strip():
            out.append(line)
    return out


def feed(buffer: Buffer, stream: bytes, cuts: Iterable[int]) -> List[bytes]:
    points = [0] + sorted(set(cuts)) + [len(stream)]
    lines: List[bytes] = []
    for start, end in zip(points, points[1:]):
        lines.extend(buffer.push(stream[start:end]))
    return lines


def chunks_of(data: bytes, size: int = CHUNK) -> List[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def refuses(
    test: unittest.TestCase, buffer: Buffer, chunks: Iterable[bytes], limit: int
) -> LineTooLong:
    """Push ``chunks`` and insist on LineTooLong naming ``limit``."""
    with test.assertRaises(LineTooLong) as caught:
        for chunk in chunks:
            buffer.push(chunk)
    test.assertIsInstance(caught.exception, FramingFault)
    test.assertIn("the limit is %d" % limit, caught.exception.reason)
    return caught.exception


def traceback_length(error: BaseException) -> int:
    count, tb = 0, error.__traceback__
    while tb is not None:
        count, tb = count + 1, tb.tb_next
    return count


def against_the_reference(
    case: unittest.TestCase, buffer: Buffer, chunks: List[bytes], limit: int = 8
) -> None:
    """Push ``chunks``; after each, every completed line (its ``\\r`` off) must
    fit the cap, and the unfinished tail may hold one byte of slack."""
    pending = b""
    for chunk in chunks:
        pieces = (pending + chunk).split(b"\n")
        pending = pieces.pop()
        lines = [piece[:-1] if piece.endswith(b"\r") else piece for piece in pieces]
        if any(len(line) > limit for line in lines) or len(pending) > limit + 1:
            refuses(case, buffer, [chunk], limit)
            return
        case.assertEqual(buffer.push(chunk), [line for line in lines if line.strip()])
        case.assertEqual(buffer.pending_bytes, len(pending))


class Frame(unittest.TestCase):
    def test_compact_json_and_one_newline(self) -> None:
        self.assertEqual(
            frame({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        )

    def test_newlines_inside_strings_are_escaped(self) -> None:
        out = frame({"a\nb": "c\r\nd\u2028e"})
        self.assertEqual(out.count(b"\n"), 1)
        self.assertNotIn(b"\r", out)
        self.assertEqual(parse(out), {"a\nb": "c\r\nd\u2028e"})

    def test_refusals_never_reach_the_wire(self) -> None:
        for value in (math.nan, "\ud800", (1,), {1: 2}):
            with self.subTest(value=repr(value)), self.assertRaises(EncodeRefused):
                frame(value)  # type: ignore[arg-type]

    @pytest.mark.slow
    @PROPERTY
    @given(JSON_VALUES)
    def test_any_value_is_one_line(self, value: Any) -> None:
        out = frame(value)
        self.assertEqual(out, encode(value) + b"\n")
        self.assertEqual(out.index(b"\n"), len(out) - 1)
        self.assertNotIn(b"\r", out)
        self.assertEqual(Buffer().push(out), [out[:-1]])  # JSON text is never blank


class FrameRequest(unittest.TestCase):
    """``frame_request`` spells the envelope that ``jsonrpc.request`` builds: the
    bytes must be those ``frame`` gives for the built message."""

    def test_a_call_and_a_request_without_params(self) -> None:
        self.assertEqual(
            frame_request(7, "tools/call", {"name": "echo", "arguments": {}}),
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call",'
            b'"params":{"name":"echo","arguments":{}}}\n',
        )
        self.assertEqual(frame_request(1, "ping", None), frame(request(1, "ping")))

    @PROPERTY
    @given(
        st.integers(min_value=0, max_value=2**63),
        st.text(max_size=20),
        st.one_of(st.none(), JSON_VALUES),
    )
    def test_the_same_bytes_as_the_built_message(
        self, ident: int, method: str, params: Any
    ) -> None:
        try:
            built = frame(request(ident, method, params))
        except EncodeRefused:  # a lone surrogate: refused both ways
            with self.assertRaises(EncodeRefused):
                frame_request(ident, method, params)
            return
        self.assertEqual(frame_request(ident, method, params), built)

    @pytest.mark.slow
    @PROPERTY
    @given(
        st.integers(min_value=0, max_value=2**63),
        st.text(max_size=20),
        JSON_VALUES.filter(lambda value: value is not None),  # None: no params member at all
    )
    def test_params_encoded_first_give_the_same_bytes(
        self, ident: int, method: str, params: Any
    ) -> None:
        try:
            encoded = encode_checked(params)
        except EncodeRefused:  # refused before any frame, as frame_request refuses it
            return
        self.assertEqual(
            frame_encoded_request(ident, method, encoded), frame_request(ident, method, params)
        )


class Reassembly(unittest.TestCase):
    LINE = '{"text":"a\u00e9\u4e2d\U0001f600z"}'.encode("utf-8")  # 2-, 3- and 4-byte characters

    def test_every_two_way_cut(self) -> None:
        stream = self.LINE + b"\n"
        for cut in range(len(stream) + 1):
            with self.subTest(cut=cut):
                buffer = Buffer()
                self.assertEqual(feed(buffer, stream, [cut]), [self.LINE])
                self.assertEqual(buffer.pending_bytes, 0)

    def test_every_three_way_cut_of_a_crlf_line(self) -> None:
        stream = self.LINE + b"\r\n"
        for first in range(len(stream) + 1):
            for second in range(first, len(stream) + 1):
                lines = feed(Buffer(), stream, [first, second])
                self.assertEqual(lines, [self.LINE], (first, second))
        self.assertEqual(parse(lines[0]), {"text": "a\u00e9\u4e2d\U0001f600z"})

    def test_one_byte_at_a_time(self) -> None:
        stream = self.LINE + b"\n" + self.LINE + b"\r\n"
        self.assertEqual(feed(Buffer(), stream, range(len(stream))), [self.LINE, self.LINE])

    def test_several_lines_in_one_chunk_and_a_held_tail(self) -> None:
        buffer = Buffer()
        self.assertEqual(buffer.push(b"one\ntwo\r\nthr"), [b"one", b"two"])
        self.assertEqual(buffer.pending_bytes, 3)
        self.assertEqual(buffer.push(b"ee\n"), [b"three"])
        self.assertEqual(buffer.pending_bytes, 0)

    def test_blank_lines_are_skipped(self) -> None:
        self.assertEqual(Buffer().push(b"\n\n  \n\r\n\t \r\n{}\n\n"), [b"{}"])

    def test_only_the_terminators_cr_is_stripped(self) -> None:
        # A "\r" inside a line is content (JSON whitespace); only the one right
        # before "\n" belongs to the terminator, wherever the chunks were cut.
        stream = b"a\rb\r\r\n"
        for cut in range(len(stream) + 1):
            with self.subTest(cut=cut):
                self.assertEqual(feed(Buffer(), stream, [cut]), [b"a\rb\r"])

    def test_a_lone_cr_is_not_a_terminator(self) -> None:
        buffer = Buffer()
        self.assertEqual(buffer.push(b"{}\r{}"), [])
        self.assertEqual(buffer.pending_bytes, 5)

    @PROPERTY
    @given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=8))
    def test_any_stream_any_cuts_matches_the_reference(
        self, stream: bytes, cuts: List[int]
    ) -> None:
        buffer = Buffer()
        self.assertEqual(
            feed(buffer, stream, [c for c in cuts if c <= len(stream)]), reference(stream)
        )
        self.assertEqual(buffer.pending_bytes, len(stream) - (stream.rfind(b"\n") + 1))

    @pytest.mark.slow
    @PROPERTY
    @given(
        st.lists(
            st.tuples(
                JSON_VALUES,
                st.sampled_from([b"\n", b"\r\n"]),
                st.sampled_from([b"", b"\n", b" \r\n"]),
            ),
            max_size=6,
        ),
        st.data(),
    )
    def test_a_stream_of_frames_comes_back_line_for_line(
        self, messages: List[Any], data: st.DataObject
    ) -> None:
        stream = b"".join(encode(value) + end + blank for value, end, blank in messages)
        cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=10))
        lines = feed(Buffer(), stream, cuts)
        self.assertEqual(lines, [encode(value) for value, _, _ in messages])


class Cap(unittest.TestCase):
    LIMIT = 64

    def _refuses(self, buffer: Buffer, chunks: Sequence[bytes]) -> LineTooLong:
        return refuses(self, buffer, chunks, self.LIMIT)

    def test_exactly_the_limit_is_accepted_however_it_arrives(self) -> None:
        line = b"x" * self.LIMIT
        for end in (b"\n", b"\r\n"):
            for cut in range(len(line) + len(end) + 1):
                with self.subTest(end=end, cut=cut):
                    self.assertEqual(feed(Buffer(self.LIMIT), line + end, [cut]), [line])

    def test_one_more_completed_is_refused_however_it_arrives(self) -> None:
        line = b"x" * (self.LIMIT + 1)
        for end in (b"\n", b"\r\n"):
            for cut in range(len(line) + len(end) + 1):
                with self.subTest(end=end, cut=cut):
                    self._refuses(Buffer(self.LIMIT), [(line + end)[:cut], (line + end)[cut:]])

    def test_a_pending_line_past_the_limit_is_refused_before_any_newline(self) -> None:
        buffer = Buffer(self.LIMIT)
        # One byte of slack is held for a possible "\r" before the newline ...
        self.assertEqual(buffer.push(b"y" * (self.LIMIT + 1)), [])
        # ... and the next byte, whatever it is, proves the line too long.
        self._refuses(buffer, [b"y"])

    def test_the_slack_byte_is_only_good_for_a_cr(self) -> None:
        buffer = Buffer(self.LIMIT)
        buffer.push(b"z" * self.LIMIT + b"\r")
        self.assertEqual(buffer.push(b"\n"), [b"z" * self.LIMIT])
        buffer = Buffer(self.LIMIT)
        buffer.push(b"z" * (self.LIMIT + 1))
        self._refuses(buffer, [b"\n"])

    def test_a_long_line_among_good_ones_in_one_chunk(self) -> None:
        self._refuses(Buffer(self.LIMIT), [b"{}\n" + b"w" * (self.LIMIT + 1) + b"\n{}\n"])

    def test_blank_is_no_excuse(self) -> None:
        self._refuses(Buffer(self.LIMIT), [b" " * (self.LIMIT + 1) + b"\n"])

    def test_after_a_fault_every_push_is_refused_and_nothing_is_held(self) -> None:
        buffer = Buffer(self.LIMIT)
        first = self._refuses(buffer, [b"v" * (self.LIMIT + 2)])
        self.assertEqual(buffer.pending_bytes, 0)
        for chunk in (b"{}\n", b"", b"\n"):
            with self.subTest(chunk=chunk), self.assertRaises(LineTooLong) as caught:
                buffer.push(chunk)
            self.assertEqual(caught.exception.reason, first.reason)
        self.assertEqual(buffer.pending_bytes, 0)

    @PROPERTY
    @given(
        st.lists(
            st.binary(max_size=12).map(lambda b: bytes(b"ab \r\n"[x % 5] for x in b)), max_size=10
        )
    )
    def test_any_chunks_against_a_capped_reference(self, chunks: List[bytes]) -> None:
        # The reference: after each chunk, every completed line (its "\r" off)
        # must fit the cap, and the unfinished tail may hold one byte of slack.
        against_the_reference(self, Buffer(8), chunks)

    def test_refusing_again_does_not_grow_the_traceback(self) -> None:
        buffer = Buffer(self.LIMIT)
        self._refuses(buffer, [b"v" * (self.LIMIT + 2)])
        lengths = []
        for _ in range(5):
            try:
                buffer.push(b"{}\n")
            except LineTooLong as fault:
                lengths.append(traceback_length(fault))
        self.assertEqual(len(lengths), 5)
        self.assertEqual(len(set(lengths)), 1, lengths)


class Pieces(unittest.TestCase):
    """How a pending line is held: proportional to its bytes, whatever the chunks."""

    LINE = b'{"a":"\xc3\xa9\r' + b"xy" * 20 + b'"}'  # a lone "\r" inside is content

    def test_every_keep_threshold_every_three_way_cut(self) -> None:
        # keep_from=1 holds every piece as it came, a large one copies every
        # piece; between, runs of small pieces meet large ones at every point.
        stream = self.LINE + b"\r\n" + self.LINE + b"\n"
        expected = reference(stream)
        for keep in (1, 2, 3, 7, 1000):
            for first in range(0, len(stream) + 1, 3):
                for second in range(first, len(stream) + 1):
                    self.assertEqual(
                        feed(Buffer(keep_from=keep), stream, [first, second]),
                        expected,
                        (keep, first, second),
                    )

    @PROPERTY
    @given(
        st.binary(max_size=120).map(lambda b: bytes(b"ab \r\n"[x % 5] for x in b)),
        st.lists(st.integers(0, 120), max_size=30),
        st.integers(1, 9),
    )
    def test_any_keep_threshold_matches_the_reference(
        self, stream: bytes, cuts: List[int], keep: int
    ) -> None:
        buffer = Buffer(keep_from=keep)
        self.assertEqual(
            feed(buffer, stream, [c for c in cuts if c <= len(stream)]), reference(stream)
        )
        self.assertEqual(buffer.pending_bytes, len(stream) - (stream.rfind(b"\n") + 1))

    @pytest.mark.slow
    @PROPERTY
    @given(
        st.lists(
            st.binary(max_size=12).map(lambda b: bytes(b"ab \r\n"[x % 5] for x in b)), max_size=10
        ),
        st.integers(1, 9),
    )
    def test_the_cap_holds_for_any_keep_threshold(self, chunks: List[bytes], keep: int) -> None:
        against_the_reference(self, Buffer(8, keep_from=keep), chunks)

    def held_while_pushing(self, chunks: List[bytes]) -> int:
        """Bytes Python allocated, and still holds, while ``chunks`` were pushed
        into a fresh buffer (the chunks themselves exist before and after)."""
        buffer = Buffer()
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            for chunk in chunks:
                buffer.push(chunk)
            after, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        self.assertEqual(buffer.pending_bytes, sum(map(len, chunks)))
        return after - before

    @pytest.mark.slow
    def test_200k_one_byte_chunks_hold_about_200k_bytes(self) -> None:
        # One object (or list slot) a chunk was 8 to 50 bytes a byte; and an
        # object from a large os.read kept a memory mapping of its own.
        count = 200 * 1000
        self.assertLess(self.held_while_pushing([b"x"] * count), count * 5 // 4 + 4096)

    def test_fresh_small_chunks_are_not_held_one_by_one(self) -> None:
        count = 100 * 1000
        chunks = [b"%03d" % (n % 1000) for n in range(count)]  # 100k distinct objects
        self.assertLess(self.held_while_pushing(chunks), 3 * count * 5 // 4 + 4096)

    def test_large_chunks_are_held_without_a_copy(self) -> None:
        chunks = [bytes(CHUNK) for _ in range(32)]  # 2 MiB in chunks as os.read gives them
        self.assertLess(self.held_while_pushing(chunks), 4096)

    def test_reads_are_large_only_while_a_line_arrives_in_bulk(self) -> None:
        self.assertLess(READ_SIZE, READ_SIZE_LARGE)
        buffer = Buffer()
        self.assertEqual(buffer.read_size(), READ_SIZE)
        buffer.push(b"{" * CHUNK)  # a large line, arriving in bulk
        self.assertEqual(buffer.read_size(), READ_SIZE_LARGE)
        buffer.push(b"x")  # now trickling: a large read would bring back a byte
        self.assertEqual(buffer.read_size(), READ_SIZE)
        buffer.push(b"x" * KEEP_FROM)
        self.assertEqual(buffer.read_size(), READ_SIZE_LARGE)
        self.assertEqual(len(buffer.push(b"}\n{}\n")), 2)
        self.assertEqual(buffer.read_size(), READ_SIZE)  # nothing pending
        buffer.push(b"\n" + b"y" * KEEP_FROM)  # a large tail after a newline
        self.assertEqual(buffer.read_size(), READ_SIZE_LARGE)


class RealCap(unittest.TestCase):
    """The real 16 MiB cap, fed the way the reader thread feeds it."""

    def test_a_line_of_exactly_max_line_bytes_is_accepted(self) -> None:
        line = b"a" * MAX_LINE_BYTES
        buffer = Buffer()
        lines: List[bytes] = []
        for chunk in chunks_of(line + b"\r\n"):
            lines.extend(buffer.push(chunk))
        self.assertEqual(len(lines), 1)
        self.assertEqual(len(lines[0]), MAX_LINE_BYTES)
        self.assertTrue(lines[0] == line)

    def test_the_cap_is_16_mib(self) -> None:
        self.assertEqual(MAX_LINE_BYTES, 16 * MIB)

    def test_one_byte_more_completed_is_refused(self) -> None:
        refuses(self, Buffer(), chunks_of(b"a" * (MAX_LINE_BYTES + 1) + b"\n"), MAX_LINE_BYTES)

    def test_17_mib_without_newline_is_refused_in_bounded_memory(self) -> None:
        buffer = Buffer()
        total, refused_at, peak_pending = 17 * MIB, None, 0
        tracemalloc.start()
        try:
            for offset in range(0, total, CHUNK):
                chunk = bytes(CHUNK)  # a fresh object per read, as os.read gives
                try:
                    buffer.push(chunk)
                except LineTooLong:
                    refused_at = offset + CHUNK
                    break
                finally:
                    del chunk
                peak_pending = max(peak_pending, buffer.pending_bytes)
            _, peak_memory = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        self.assertIsNotNone(refused_at)
        self.assertLessEqual(peak_pending, MAX_LINE_BYTES + CHUNK)
        self.assertLessEqual(refused_at, MAX_LINE_BYTES + CHUNK)  # type: ignore[arg-type]
        # Everything Python allocated meanwhile: the held line plus a few chunks.
        self.assertLess(peak_memory, MAX_LINE_BYTES + 4 * CHUNK)
        self.assertEqual(buffer.pending_bytes, 0)
        with self.assertRaises(LineTooLong):
            buffer.push(b"{}\n")

    def test_work_is_linear_not_quadratic(self) -> None:
        # A coarse guard, not a benchmark: 16 MiB in 512-byte pushes is 32768
        # pushes. Linear framing takes tens of milliseconds; rescanning or
        # re-joining the pending line per push would move ~256 GiB (minutes).
        piece = b"b" * 512
        buffer = Buffer()
        started = time.perf_counter()
        for _ in range((MAX_LINE_BYTES - 1024) // len(piece)):
            buffer.push(piece)
        self.assertEqual(len(buffer.push(b"\n")), 1)
        self.assertLess(time.perf_counter() - started, 5.0)


if __name__ == "__main__":
    unittest.main()
