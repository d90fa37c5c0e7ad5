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

Memory for a pending line is proportional to its bytes whatever the chunks
are: a chunk of ``KEEP_FROM`` bytes or more is held as it came (no copy), and
smaller ones are copied into one ``bytearray``. Holding each small chunk as its
own ``bytes`` cost far more than its bytes: a server trickling a line one byte
per write made the reader hold one object per byte, each the shrunk remains of
a large ``os.read`` buffer (a memory mapping apiece: ~260 MiB and the kernel's
65k-mapping limit within seconds). :meth:`Buffer.read_size` tells the reader
how much to ask for next, so large reads happen only while a line arrives in bulk.
"""

from __future__ import annotations

from .errors import FramingFault, LineTooLong
from .jsonvalue import encode, encode_checked

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Union

    from .jsonvalue import JsonValue

__all__ = [
    "MAX_LINE_BYTES",
    "READ_SIZE",
    "READ_SIZE_LARGE",
    "KEEP_FROM",
    "Buffer",
    "frame",
    "frame_request",
    "FramingFault",
    "LineTooLong",
]

#: The longest line accepted, terminator excluded (16 MiB).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: What the reader asks ``os.read`` for while lines are small: a 1 MiB read
#: allocates (and page-faults) a 1 MiB buffer every time, ~10 us, more than a
#: small message costs to decode.
READ_SIZE = 64 * 1024
#: What it asks for while a large line arrives in bulk.
READ_SIZE_LARGE = 1024 * 1024
#: Chunks of at least this many bytes are held as they came; shorter ones are
#: copied into one accumulator. So a pending line of N bytes is held in at most
#: 2 * N / KEEP_FROM + 2 objects, each about as large as the bytes it holds.
KEEP_FROM = 16 * 1024

if TYPE_CHECKING:
    _Piece = Union[bytes, bytearray]


class Buffer:
    """Cuts a byte stream into lines; work is linear in the bytes pushed."""

    __slots__ = ("_parts", "_small", "_pending", "_bulk", "_limit", "_keep", "_fault")

    def __init__(self, limit: int = MAX_LINE_BYTES, keep_from: int = KEEP_FROM) -> None:
        self._parts: List[_Piece] = []  # the pending line up to _small: large chunks, small runs
        self._small = bytearray()  # the small chunks since the last large one, copied together
        self._pending = 0
        self._bulk = False  # the last push held a large piece: the line arrives in bulk
        self._limit = limit
        self._keep = keep_from
        self._fault: Optional[LineTooLong] = None

    @property
    def pending_bytes(self) -> int:
        """How many bytes of an unfinished line are held."""
        return self._pending

    def read_size(self) -> int:
        """How many bytes the reader's next ``os.read`` should ask for.

        ``READ_SIZE_LARGE`` only while a pending line arrives in bulk (the last
        push held a large piece of it), ``READ_SIZE`` otherwise: a large read
        that brings back a few bytes costs a large allocation every time.
        """
        return READ_SIZE_LARGE if self._bulk else READ_SIZE

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
        if cut == len(chunk) - 1 and not self._pending:  # one whole line: the common case
            # _finish in line (the reader runs this for every answer)
            line = chunk[: cut - 1] if chunk.endswith(b"\r\n") else chunk[:cut]
            if len(line) > self._limit:
                self._fail(len(line))
            return [] if not line or line.isspace() else [line]
        lines = chunk.split(b"\n")
        tail = lines.pop()
        done = [self._complete(lines[0])]
        done.extend(map(self._finish, lines[1:]))
        self._hold(tail)
        return [line for line in done if line]

    def _complete(self, head: bytes) -> bytes:
        """The pending line finished by ``head``; as :meth:`_finish`."""
        if not self._pending:
            return self._finish(head)
        if self._pending + len(head) > self._limit + 1:  # + 1 leaves room for a "\r"
            self._fail(self._pending + len(head))
        parts = self._parts
        parts.append(self._small)
        parts.append(head)
        self._parts, self._small, self._pending = [], bytearray(), 0
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
        """Keep ``piece`` as the end of the pending line: a large one as it is, a
        small one copied (``os.read``'s few bytes may sit in a large allocation)."""
        size = len(piece)
        self._bulk = size >= self._keep
        if not size:
            return
        if self._pending + size > self._limit + 1:
            self._fail(self._pending + size)
        if self._bulk:
            if self._small:
                self._parts.append(self._small)
                self._small = bytearray()
            self._parts.append(piece)
        else:
            small = self._small
            small += piece
            if len(small) >= self._keep:  # a run as large as a large piece: held as one
                self._parts.append(small)
                self._small = bytearray()
        self._pending += size

    def _fail(self, size: int) -> None:
        self._parts, self._small, self._pending, self._bulk = [], bytearray(), 0, False
        self._fault = LineTooLong(
            "line of at least %d bytes; the limit is %d" % (size, self._limit)
        )
        raise self._fault


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


def _drop_cr(parts: List[_Piece]) -> None:
    # The "\r", if any, ends the last non-empty piece: the head, or when the
    # newline came first in its chunk, the small run, or else the last large piece.
    for index in range(len(parts) - 1, -1, -1):
        if parts[index]:
            if parts[index].endswith(b"\r"):
                parts[index] = parts[index][:-1]
            return


def frame(message: JsonValue, checked: bool = False) -> bytes:
    """The bytes that carry ``message`` on the wire: compact JSON plus ``\\n``.

    ``jsonvalue.encode`` escapes every control character inside strings, so the
    only newline in the result is the terminator. ``checked``: every part of
    ``message`` was checked already (``jsonvalue.check``) or is the package's
    own, so its walk is not made again.
    """
    return (encode_checked(message) if checked else encode(message)) + b"\n"


def frame_request(ident: int, method: str, params: JsonValue) -> bytes:
    """``frame(jsonrpc.request(ident, method, params), checked=True)``, byte for
    byte (a property test holds them equal), for ``params`` already checked
    (``jsonvalue.check``) and the package's own ``method``.

    The envelope is spelled here rather than built as a dict and encoded with
    the params: on a small request that is half the encoding's cost. The
    members come in ``jsonrpc.request``'s order; an int id prints as JSON does.
    """
    head = b'{"jsonrpc":"2.0","id":%d,"method":%s' % (ident, _method_literal(method))
    if params is None:
        return head + b"}\n"
    return head + b',"params":' + encode_checked(params) + b"}\n"


def frame_encoded_request(ident: int, method: str, params: bytes) -> bytes:
    """:func:`frame_request` for ``params`` encoded already (``jsonvalue.encode_checked``),
    so that what cannot be encoded is refused before the request is given an id (a
    listing's next page, asked for by the reader)."""
    return b'{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}\n' % (
        ident,
        _method_literal(method),
        params,
    )


def _method_literal(method: str) -> bytes:
    literal = _METHODS.get(method)
    if literal is None:
        literal = encode_checked(method)
        if len(_METHODS) < 64:  # the package's few method names; never grows past them
            _METHODS[method] = literal
    return literal


_METHODS: Dict[str, bytes] = {}
