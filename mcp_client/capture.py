"""Wire capture: every line sent and received, byte-exact and in order, as JSON lines.

One entry a line, numbered by ``seq`` in the order the client saw them::

    {"seq": 1, "event": "open", "detail": "python -m mcp_server_time"}
    {"seq": 2, "dir": "send", "text": "{\\"jsonrpc\\":\\"2.0\\",...}"}
    {"seq": 3, "dir": "recv", "text": "..."}
    {"seq": 4, "dir": "recv", "base64": "/w=="}          (a line that is not UTF-8)
    {"seq": 5, "event": "retired", "detail": "Exited(returncode=-9)"}

A line is its content without the ``\\n`` (or ``\\r\\n``) terminator; the bytes
are exact otherwise: ``text`` when they are valid UTF-8, ``base64`` when not.
Sent lines are recorded just before they are written. ``tools/replay.py``
reads these logs. Capturing changes nothing the client does.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from typing import IO, Dict, Iterator, Optional, Union

__all__ = ["Capture", "CaptureTarget", "open_capture", "read_log", "line_bytes"]

CaptureTarget = Union[None, str, "os.PathLike[str]", IO[str]]


class Capture:
    """A thread-safe writer of capture entries."""

    def __init__(self, stream: IO[str], owned: bool) -> None:
        self._stream = stream
        self._owned = owned
        self._lock = threading.Lock()
        self._seq = 0

    def line(self, direction: str, data: bytes) -> None:
        """Record one wire line (``direction`` is ``"send"`` or ``"recv"``)."""
        entry: Dict[str, object] = {"dir": direction}
        try:
            entry["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            entry["base64"] = base64.b64encode(data).decode("ascii")
        self._write(entry)

    def event(self, kind: str, detail: str) -> None:
        """Record something that is not a line (open, framing fault, retirement)."""
        self._write({"event": kind, "detail": detail})

    def _write(self, entry: Dict[str, object]) -> None:
        with self._lock:
            if self._stream.closed:
                return
            self._seq += 1
            entry["seq"] = self._seq
            self._stream.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
            self._stream.flush()

    def close(self) -> None:
        """Close the log if the capture opened it (a caller's file stays open)."""
        with self._lock:
            if self._owned and not self._stream.closed:
                self._stream.close()


def open_capture(target: CaptureTarget) -> Optional[Capture]:
    """A :class:`Capture` for a path (created, truncated) or a writable text file."""
    if target is None:
        return None
    if isinstance(target, (str, os.PathLike)):
        return Capture(open(target, "w", encoding="utf-8"), owned=True)
    return Capture(target, owned=False)


def read_log(path: Union[str, "os.PathLike[str]"]) -> Iterator[Dict[str, object]]:
    """The entries of a capture log, in order."""
    with open(path, encoding="utf-8") as stream:
        for raw in stream:
            if raw.strip():
                yield json.loads(raw)


def line_bytes(entry: Dict[str, object]) -> bytes:
    """The exact bytes of a ``send``/``recv`` entry."""
    if "base64" in entry:
        return base64.b64decode(str(entry["base64"]))
    return str(entry["text"]).encode("utf-8")
