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
            # A fresh traceback each time: re-raising the latched instance as is
            # would chain one more traceback onto it per push, without bound.
            raise self._fault.with_traceback(None)
        cut = chunk.find(b"\n")
        if cut < 0:  # the common case for a large message: no rescanning, just keep it
            self._hold(chunk)
            return []
        if cut == len(chunk) - 1 and not self._parts:  # one whole line: the common case
            line = self._finish(chunk[:cut])
            return [line] if line else []
        lines = chunk.split(b"\n")
        tail = lines.pop()
        done = [self._complete(lines[0])]
        done.extend(map(self._finish, lines[1:]))
        self._hold(tail)
        return [line for line in done if line]

    def _complete(self, head: bytes) -> bytes:
        """The pending line finished by ``head``; as :meth:`_finish`."""
        if not self._parts:
            return self._finish(head)
        if self._pending + len(head) > self._limit + 1:  # + 1 leaves room for a "\r"
            self._fail(self._pending + len(head))
        parts = self._parts
        parts.append(head)
        self._parts, self._pending = [], 0
        _drop_cr(parts)  # on the last small piece, so the joined line is never copied again
        return self._check(b"".join(parts))

    def _finish(self, line: bytes) -> bytes:
        """``line`` without its ``\\r``, checked against the cap; ``b""`` when blank."""
        return self._check(_strip_cr(line))

    def _check(self, line: bytes) -> bytes:
        if len(line) > self._limit:
            self._fail(len(line))
        # bytes.isspace stops at the first non-space byte, so a long line costs nothing here.
        return b"" if line.isspace() else line

    def _hold(self, piece: bytes) -> None:
        if not piece:
            return
        if self._pending + len(piece) > self._limit + 1:
            self._fail(self._pending + len(piece))
        self._parts.append(piece)
        self._pending += len(piece)

    def _fail(self, size: int) -> None:
        self._parts = []
        self._pending = 0
        self._fault = LineTooLong("line of at least %d bytes; the limit is %d" % (size, self._limit))
        raise self._fault


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


def _drop_cr(parts: List[bytes]) -> None:
    # Held pieces are never empty, so when the newline came first in its chunk
    # (an empty head) the "\r", if any, ends the piece before it.
    last = len(parts) - 1 if parts[-1] else len(parts) - 2
    parts[last] = _strip_cr(parts[last])


def frame(message: JsonValue) -> bytes:
    """The bytes that carry ``message`` on the wire: compact JSON plus ``\\n``.

    ``jsonvalue.encode`` escapes every control character inside strings, so the
    only newline in the result is the terminator.
    """
    return encode(message) + b"\n"
