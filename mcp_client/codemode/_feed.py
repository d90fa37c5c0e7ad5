"""A code-mode program's stdin: a pipe of the runner's, fed from what the caller gave.

The program never holds the runner's own descriptor: given ``< input.json``, it
could reopen ``/proc/self/fd/0`` read-write through the host's mount and overwrite
the file. :class:`Feed` copies the caller's descriptor into a pipe on a thread of
its own (``mcp-codemode-stdin``), until EOF (then the program reads EOF too), until
the program closes its end (EPIPE), or until :meth:`Feed.stop`; it never blocks
past a stop, whichever side stalls. No source at all is an empty pipe: EOF at once.
"""

from __future__ import annotations

import os
import select
import threading
from typing import Optional

from .._os import threads as _threads

__all__ = ["Feed"]

_CHUNK = 65536


class Feed:
    """``program_end``: the read end to give the program (the runner closes its copy
    once the child has it); ``source`` is read, never closed: it is the caller's."""

    def __init__(self, source: Optional[int]) -> None:
        self.program_end, self._sink = os.pipe()
        self._source = source
        self._wake_read, self._wake_write = os.pipe()
        self._thread: Optional[threading.Thread] = None
        if source is None:
            os.close(self._sink)  # nothing to give: EOF at once
            self._sink = -1
        else:
            os.set_blocking(self._sink, False)
            self._thread = _threads.named(self._copy, "mcp-codemode-stdin")

    def start(self) -> None:
        if self._thread is not None:
            _threads.start(self._thread)

    def stop(self) -> None:
        """End the copy (the program is gone) and close every descriptor of ours."""
        os.write(self._wake_write, b"x")
        if self._thread is not None and self._thread.ident is not None:
            self._thread.join()
        for fd in (self._sink, self._wake_read, self._wake_write):
            if fd >= 0:
                os.close(fd)
        self._sink = self._wake_read = self._wake_write = -1

    def _copy(self) -> None:
        assert self._source is not None
        try:
            while True:
                chunk = self._read(self._source)
                if not chunk or not self._write(chunk):
                    return
        finally:  # the source's EOF is the program's: our end goes now, not at the stop
            os.close(self._sink)
            self._sink = -1

    def _read(self, fd: int) -> bytes:
        """A chunk of the source, ``b""`` at its EOF, its failure or a stop."""
        while True:
            try:
                ready, _, _ = select.select([fd, self._wake_read], [], [])
            except (OSError, ValueError):  # not a descriptor (a closed stdin): nothing to give
                return b""
            if self._wake_read in ready:
                return b""
            try:
                return os.read(fd, _CHUNK)
            except BlockingIOError:  # another reader of the same description took it
                continue
            except OSError:
                return b""

    def _write(self, data: bytes) -> bool:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._sink, view) :]
            except BlockingIOError:
                ready, _, _ = select.select([self._wake_read], [self._sink], [])
                if self._wake_read in ready:
                    return False
            except OSError:  # the program closed its stdin, or is gone
                return False
        return True
