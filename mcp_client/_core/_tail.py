"""The last lines a server wrote to its stderr, kept within a fixed budget.

Pure: the reader thread feeds :meth:`Tail.push` whatever ``os.read`` gave it
from the server's stderr pipe (and, when the ``mcp_client.server`` logger
wants them, gets back the lines that chunk completed); :meth:`Tail.text` is
what a death carries as ``stderr_tail``.

Bounds, whatever the server writes (a 100 MB flood, one endless line):

* only the stream's last ``TAIL_BYTES + LINE_BYTES`` bytes are kept (twice
  that between trims), as raw bytes: a flood costs a copy per chunk, not a
  Python step per line; and of the line those bytes begin inside, its first
  :data:`LINE_BYTES` and how long it is, so a 300 KB line that starts
  ``FATAL: ...`` is shown by that start, not by a fragment of its middle;
* a line is shown cut at :data:`LINE_BYTES`, the rest counted, not kept
  (``... [299000 more bytes]``: its true length), the same text its log
  record has;
* :meth:`Tail.text` gives the most recent lines whose shown text adds up to
  at most :data:`TAIL_BYTES`.

Lines are shown with :func:`mcp_client._core._noise.show`: printable, every control
and bidi character escaped, so a tail is safe in an exception's text, a log
record and a terminal.
"""

from __future__ import annotations

from ._noise import show

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Tuple, Union

__all__ = ["TAIL_BYTES", "LINE_BYTES", "SHOWN_LINES", "Tail"]

#: The most of the server's last stderr text kept (the issue's 8 KiB).
TAIL_BYTES = 8 * 1024
#: The longest single line kept; the rest of a longer one is dropped.
LINE_BYTES = 1024
#: How many of the last lines an error's ``str()`` ends with.
SHOWN_LINES = 5


class Tail:
    """The end of a server's stderr: raw bytes kept cheaply, lines made on demand.

    A flood costs a copy of each chunk's last few KiB, not a Python step per
    line: lines are cut and shown only by :meth:`text`, and by :meth:`push`
    only when the caller wants each line (to log it).
    """

    __slots__ = ("_recent", "_cut", "_pending", "_overflow")

    def __init__(self) -> None:
        self._recent = bytearray()  # the stream's last _KEEP bytes at most
        # The line _recent begins inside: how many of its bytes were dropped, and
        # the first of those (LINE_BYTES at most), so that a long line is shown
        # by its start and its true length -- as its log record is -- not by a
        # fragment of its middle. One tuple, replaced whole: text() may run in
        # another thread (client.stderr_tail) and must never see half of it.
        self._cut: Tuple[int, bytes] = (0, b"")
        self._pending = bytearray()  # the unfinished line, for push(lines=True)
        self._overflow = 0  # bytes of that line that were not kept

    def push(self, chunk: bytes, lines: bool = False) -> List[str]:
        """Feed ``chunk``; with ``lines``, return the lines it completed, as
        shown (blank ones skipped); without, return ``[]`` at no cost per line."""
        self._remember(chunk)
        if not lines:
            return []
        done: List[str] = []
        start = 0
        while True:
            cut = chunk.find(b"\n", start)
            if cut < 0:
                self._hold(chunk[start:])
                return done
            self._hold(chunk[start:cut])
            line = self._complete()
            if line:
                done.append(line)
            start = cut + 1

    def close(self) -> List[str]:
        """The stream ended: an unfinished last line (as :meth:`push` with ``lines``)."""
        line = self._complete()
        return [line] if line else []

    def unfinished(self) -> bytes:
        """The start of the line :meth:`push` (with ``lines``) holds unfinished, taken:
        for whoever reads the rest of the stream without cutting it into lines."""
        raw = bytes(self._pending)
        self._pending, self._overflow = bytearray(), 0
        return raw

    def text(self) -> str:
        """The last lines, oldest first, one per line, within :data:`TAIL_BYTES`
        (``""`` when none)."""
        dropped, head = self._cut
        raw = bytes(self._recent).split(b"\n")
        # Each line cut as push() cuts it, so a tail line is its log record's text;
        # the first continues the line whose start was dropped: made whole.
        lengths = [len(piece) for piece in raw]
        lengths[0] += dropped
        raw[0] = head + raw[0][:LINE_BYTES]
        raw = [piece[:LINE_BYTES] for piece in raw]
        overflows = [length - len(piece) for length, piece in zip(lengths, raw)]
        kept: List[str] = []
        size = 0
        for piece, overflow in zip(reversed(raw), reversed(overflows)):
            line = _shown(piece, overflow)
            if not line:
                continue
            size += len(line.encode("utf-8")) + 1
            if size > TAIL_BYTES and kept:
                break
            kept.append(line)
        return "\n".join(reversed(kept))

    def last(self, count: int = SHOWN_LINES) -> List[str]:
        """The last ``count`` lines kept, oldest first."""
        lines = self.text().split("\n") if self._recent else []
        return lines[-count:] if count > 0 else []

    def _remember(self, chunk: bytes) -> None:
        if len(chunk) >= _KEEP:  # only its end is kept
            self._forget(self._recent, len(self._recent))
            self._forget(chunk, len(chunk) - _KEEP)
            self._recent = bytearray(chunk[-_KEEP:])
            return
        self._recent += chunk
        if len(self._recent) > 2 * _KEEP:  # trim now and then: amortised, bounded
            count = len(self._recent) - _KEEP
            self._forget(self._recent, count)
            del self._recent[:count]

    def _forget(self, data: Union[bytes, bytearray], end: int) -> None:
        """``data[:end]`` is dropped from the front: keep what the line the cut
        falls in needs (a search and a copy of at most LINE_BYTES, in C)."""
        cut = data.rfind(b"\n", 0, end)
        if cut >= 0:  # the line began in what is dropped
            self._cut = (end - cut - 1, bytes(data[cut + 1 : min(end, cut + 1 + LINE_BYTES)]))
            return
        dropped, head = self._cut  # the same line goes on
        room = LINE_BYTES - len(head)
        self._cut = (dropped + end, head + bytes(data[: min(end, room)]) if room > 0 else head)

    def _hold(self, piece: bytes) -> None:
        room = LINE_BYTES - len(self._pending)
        self._pending += piece[:room]
        self._overflow += max(0, len(piece) - room)

    def _complete(self) -> str:
        raw, overflow = bytes(self._pending), self._overflow
        self._pending, self._overflow = bytearray(), 0
        return _shown(raw, overflow)


#: Raw bytes kept: enough for TAIL_BYTES of shown lines whatever their length.
_KEEP = TAIL_BYTES + LINE_BYTES


def _shown(raw: bytes, overflow: int) -> str:
    """One line as shown: printable, at most LINE_BYTES characters (``""`` if blank).

    ``raw`` is the line's start, ``overflow`` how many more bytes it had: a line
    blank at its start but not at its end is shown (``[N more bytes]``)."""
    raw = raw.rstrip(b"\r")
    if not raw.strip() and not overflow:
        return ""
    if len(raw) > LINE_BYTES:
        raw, overflow = raw[:LINE_BYTES], overflow + len(raw) - LINE_BYTES
    line = show(raw, LINE_BYTES)
    return line + " [%d more bytes]" % overflow if overflow else line
