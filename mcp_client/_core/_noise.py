"""Noise: what a server writes to stdout that is not JSON at all, and how it is shown.

Pure: no I/O, no threads, no clocks. The MCP stdio transport says a server
MUST NOT write anything to its stdout that is not a valid MCP message; some do
anyway (a ``console.log`` before an answer, a wrapper's banner). The client
dies on such a line unless ``Options.tolerated_noise_lines`` lets it skip a
bounded number of them.

What counts as noise is decided by :func:`mcp_client.jsonrpc.decode`, not
here: :class:`~mcp_client.errors.MalformedMessage` (the line is not JSON at
all, including a line that is not UTF-8) is noise;
:class:`~mcp_client.errors.BadMessage` (JSON, but not JSON-RPC 2.0) never is,
for that is a server lying in the protocol rather than logging beside it.

This module turns such a line into text fit for a log record, an exception
message and a terminal: :func:`show` is total, and its output is printable and
never longer than its limit, whatever bytes the server sent.
"""

from __future__ import annotations

from ..errors import MalformedMessage
from ..text import escape_code_point  # re-exported: noise named it first

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List

__all__ = ["SHOWN", "QUOTED", "HINT", "show", "looks_like_text", "refusal", "escape_code_point"]

#: Characters of a skipped line shown in its log record (and by the CLI).
SHOWN = 200
#: Characters of the line quoted in the reason of a death.
QUOTED = 100
#: The fix a harness author needs, named where a text line killed a client.
HINT = "a server that logs to stdout can be tolerated with Options(tolerated_noise_lines=N)"

#: A UTF-8 character is at most 4 bytes: this many bytes hold ``limit`` characters.
_BYTES_PER_CHAR = 4
#: ``surrogateescape`` turns an undecodable byte 0xNN into the lone surrogate U+DCNN.
_ESCAPED_BYTES = range(0xDC80, 0xDD00)
#: Of a text line, at most one character in this many may be unprintable
#: (colour escapes in a log line pass; binary garbage does not).
_UNPRINTABLE_RATIO = 10


def show(line: bytes, limit: int = SHOWN) -> str:
    """The start of ``line`` as printable text of at most ``limit`` characters.

    Bytes that are not UTF-8 become ``\\xNN``, unprintable characters (controls,
    ANSI escapes, bidi overrides, line separators) ``\\xNN``/``\\uNNNN``/
    ``\\UNNNNNNNN``, a backslash ``\\\\``; a line cut short ends in ``...``.
    Only the first ``4 * limit`` bytes are read, so a 16 MiB line costs no more
    than a short one.
    """
    limit = max(0, limit)
    window = line[: limit * _BYTES_PER_CHAR]
    text = window.decode("utf-8", "surrogateescape")
    pieces = [_printable(char) for char in text[:limit]]
    shown = "".join(pieces)
    if len(window) == len(line) and len(text) <= limit and len(shown) <= limit:
        return shown
    return _cut(pieces, limit)


def _cut(pieces: List[str], limit: int) -> str:
    """Whole pieces (an escape is never split) up to ``limit`` with ``...``."""
    if limit < 3:
        return "".join(pieces)[:limit]
    kept, size = [], 0
    for piece in pieces:
        size += len(piece)
        if size > limit - 3:
            break
        kept.append(piece)
    return "".join(kept) + "..."


def _printable(char: str) -> str:
    if char == "\\":  # doubled, so that a \x.. in the output is always an escape
        return "\\\\"
    if char.isprintable():
        return char
    code = ord(char)
    if code in _ESCAPED_BYTES:
        return "\\x%02x" % (code - 0xDC00)
    return escape_code_point(code)


def looks_like_text(line: bytes) -> bool:
    """Whether ``line`` reads as text (a log line, a banner) rather than binary
    garbage: judged on its first ``4 * SHOWN`` bytes, of which at most one
    character in ten may be undecodable or unprintable (tabs are text)."""
    head = line[: SHOWN * _BYTES_PER_CHAR].decode("utf-8", "surrogateescape")
    if not head.strip():
        return False
    odd = sum(1 for char in head if not (char.isprintable() or char == "\t"))
    return odd * _UNPRINTABLE_RATIO <= len(head)


def refusal(fault: MalformedMessage, line: bytes, skipped: int) -> str:
    """Why a line that is not JSON kills the client: the parser's reason, the
    start of the line, and either how many such lines were skipped before it
    (the tolerance is spent) or, for a text line, :data:`HINT`."""
    reason = '%s; the line starts "%s"' % (fault.reason, show(line, QUOTED))
    if skipped:
        return "%s; %d such line%s skipped before it, as many as tolerated" % (
            reason,
            skipped,
            " was" if skipped == 1 else "s were",
        )
    if looks_like_text(line):
        return "%s; %s" % (reason, HINT)
    return reason
