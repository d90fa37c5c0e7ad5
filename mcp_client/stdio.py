"""Newline-delimited framing, both ways (MCP 2025-06-18, Transports, stdio).

Pure: the reader thread feeds :meth:`Buffer.push` whatever ``os.read`` gave it
and gets back the completed lines. Framing is on bytes, and each completed line
is decoded as UTF-8 on its own later, so a character the pipe cut in half is
never a problem here.

Bounds hold on both sides of the newline: a pending line that grows past
``MAX_LINE_BYTES`` and a completed line longer than it are both
:class:`LineTooLong`, raised *before* the offending bytes are stored, so memory
stays at one cap plus one chunk however long the hostile line is. After the
first fault the buffer is broken for good (h11's permanent error state).
"""

from __future__ import annotations

from typing import List, Optional

from .errors import FramingFault, LineTooLong
from .jsonvalue import JsonValue, encode

__all__ = ["MAX_LINE_BYTES", "Buffer", "frame", "FramingFault", "LineTooLong"]

#: The longest line accepted, terminator excluded (16 MiB).
MAX_LINE_BYTES = 16 * 1024 * 1024


class Buffer:
    """Cuts a byte stream into lines; work is linear in the bytes pushed."""

    __slots__ = ("_parts", "_pending", "_limit", "_fault")

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._parts: List[bytes] = []  # the pending line, in the chunks it came in
        self._pending = 0
        self._limit = limit
        self._fault: Optional[LineTooLong] = None

    @property
    def pending_bytes(self) -> int:
        """How many bytes of an unfinished line are held."""
        return self._pending

    def push(self, chunk: bytes) -> List[bytes]:
        """Feed ``chunk``; return every line it completed (``\\n``/``\\r\\n`` stripped,
        blank lines skipped). Raises :class:`LineTooLong`, then always again."""
        if self._fault is not None:
            raise self._fault
        cut = chunk.find(b"\n")
        if cut < 0:  # the common case for a large message: no rescanning, just keep it
            self._hold(chunk)
            return []
        lines = chunk.split(b"\n")
        tail = lines.pop()
        lines[0] = self._complete(lines[0])
        self._hold(tail)
        return [_strip_cr(line) for line in lines if self._fits(line) and not _blank(line)]

    def _complete(self, head: bytes) -> bytes:
        if self._pending + len(head) > self._limit + 1:  # + 1 leaves room for a "\r"
            self._fail(self._pending + len(head))
        if self._parts:
            self._parts.append(head)
            head = b"".join(self._parts)
            self._parts = []
            self._pending = 0
        return head

    def _hold(self, piece: bytes) -> None:
        if not piece:
            return
        if self._pending + len(piece) > self._limit + 1:
            self._fail(self._pending + len(piece))
        self._parts.append(piece)
        self._pending += len(piece)

    def _fits(self, line: bytes) -> bool:
        if len(_strip_cr(line)) > self._limit:
            self._fail(len(line))
        return True

    def _fail(self, size: int) -> None:
        self._parts = []
        self._pending = 0
        self._fault = LineTooLong("line of at least %d bytes; the limit is %d" % (size, self._limit))
        raise self._fault


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


def _blank(line: bytes) -> bool:
    # bytes.isspace stops at the first non-space byte, so a long line costs nothing here.
    return not line or line.isspace()


def frame(message: JsonValue) -> bytes:
    """The bytes that carry ``message`` on the wire: compact JSON plus ``\\n``.

    ``jsonvalue.encode`` escapes every control character inside strings, so the
    only newline in the result is the terminator.
    """
    return encode(message) + b"\n"
