"""One run's pipes, served: the program's calls answered, its stdout and stderr kept.

A :class:`Serving` owns the runner's ends of one child's pipes (calls in, answers
out, stdout, stderr) and a wake pipe, and runs on one thread of its own
(``mcp-codemode-run``): a selector loop that reads what the program writes, hands
each complete call line to ``answer`` (the runner's routing, policy and limits;
it may block for the call's timeout) and writes the answer back. Output is kept
up to a byte budget per stream (:class:`Kept`), the rest counted and dropped,
never blocking the program. A call line past ``MAX_LINE_BYTES`` ends the serving
of calls (the wire's own bound). :meth:`Serving.finish` ends it once the program is
gone: the call in flight, if any, is given up (``abandon``: the broker's), the pipes
get ``linger`` seconds to close, and :meth:`Serving.stop` ends the loop from outside
(for a program whose pipes outlive it: something unjailed that escaped its group).
No wait of these is unbounded: a thread still busy past :data:`STOP_GRACE` is left
to close the descriptors itself as it ends, never closed under it.

The protocol, one JSON line each way: ``{"server", "tool", "arguments"}`` in;
``{"value": ...}`` or ``{"failure": KIND, "message": TEXT}`` out, KIND one of
``_program.FAILURE_KINDS``.
"""

from __future__ import annotations

import json
import os
import select
import selectors
import threading
from typing import Any, Callable, Dict, List, Optional

from .._os import threads as _threads
from ..stdio import MAX_LINE_BYTES

#: What the runner answers a call line with (a dict that ``json.dumps`` takes).
Answer = Callable[[bytes], Dict[str, Any]]
#: Called with ("stdout" | "stderr", bytes kept) as they arrive.
Tee = Callable[[str, bytes], None]

#: Seconds :meth:`Serving.stop` waits for the loop to end once woken.
STOP_GRACE = 5.0

_CHUNK = 65536
_CALLS, _STDOUT, _STDERR, _WAKE = "calls", "stdout", "stderr", "wake"


class Kept:
    """One stream's bytes, kept up to ``limit``; the rest counted, not held."""

    def __init__(self, name: str, limit: int, tee: Optional[Tee]) -> None:
        self.name = name
        self.limit = limit
        self.tee = tee
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = max(self.limit - len(self.data), 0)
        kept = chunk[:room]
        self.data += kept
        self.dropped += len(chunk) - len(kept)
        if kept and self.tee is not None:
            self.tee(self.name, kept)

    def note(self, text: str) -> None:
        """A line of the runner's own, after the program's output: always kept."""
        line = text.encode("utf-8", "backslashreplace") + b"\n"
        if self.data and not self.data.endswith(b"\n"):
            line = b"\n" + line
        self.data += line
        if self.tee is not None:
            self.tee(self.name, line)

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


class Serving:
    """The runner's side of one program's pipes; :meth:`start` runs it on its thread."""

    def __init__(
        self,
        calls: int,
        answers: int,
        stdout: int,
        stderr: int,
        answer: Answer,
        output_limit: int,
        tee: Optional[Tee] = None,
        abandon: Optional[Callable[[], None]] = None,
    ) -> None:
        self.answer = answer
        self.abandon = abandon  # gives up the call in flight (the program is gone)
        self.stdout = Kept(_STDOUT, output_limit, tee)
        self.stderr = Kept(_STDERR, output_limit, tee)
        self.notes: List[str] = []
        self._answers = answers
        os.set_blocking(answers, False)
        self._wake_read, self._wake_write = os.pipe()
        self._fds = {_CALLS: calls, _STDOUT: stdout, _STDERR: stderr}
        self._pending = bytearray()
        self._thread = _threads.named(self._run, "mcp-codemode-run")
        # Who closes the descriptors: stop(), or the loop itself when stop() could not
        # wait for it to end (``_left``). ``_done``: the loop has ended.
        self._closing = threading.Lock()
        self._started = self._done = self._left = False

    def start(self) -> None:
        _threads.start(self._thread)
        self._started = True

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the program's pipes to close; whether they did."""
        if not self._started:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def finish(self, linger: float) -> bool:
        """The program is gone: give up the call in flight, give its pipes ``linger``
        seconds to close, then stop; whether they closed by themselves."""
        if self.abandon is not None:
            self.abandon()
        closed = self.join(linger)
        self.stop()
        return closed

    def stop(self, grace: float = STOP_GRACE) -> None:
        """End the loop now (once the program is gone), then close every descriptor --
        or, when the loop is still busy after ``grace`` seconds (an answer being made),
        leave them for it to close as it ends."""
        if self._started and self._thread.is_alive():
            try:
                os.write(self._wake_write, b"x")
            except OSError:  # woken already (the pipe is full)
                pass
            self._thread.join(grace)
        with self._closing:
            if self._started and not self._done:
                self._left = True
                return
        self._close_all()

    def _run(self) -> None:
        try:
            self._serve()
        finally:
            with self._closing:
                self._done = True
                left = self._left
            if left:
                self._close_all()

    def _close_all(self) -> None:
        for fd in [self._answers, self._wake_read, self._wake_write, *self._fds.values()]:
            _close(fd)
        self._fds.clear()
        self._answers = self._wake_read = self._wake_write = -1

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._wake_read, selectors.EVENT_READ, _WAKE)
            for name, fd in self._fds.items():
                selector.register(fd, selectors.EVENT_READ, name)
            while len(selector.get_map()) > 1:
                for key, _ in selector.select():
                    if key.data == _WAKE:
                        return
                    if not self._read(key.data, key.fd):
                        selector.unregister(key.fd)
                        _close(self._fds.pop(key.data))  # a writer still there gets EPIPE

    def _read(self, name: str, fd: int) -> bool:
        """Take what ``fd`` has; whether to keep reading it."""
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            return False
        if name == _CALLS:
            return self._calls(chunk)
        (self.stdout if name == _STDOUT else self.stderr).add(chunk)
        return True

    def _calls(self, chunk: bytes) -> bool:
        self._pending += chunk
        while True:
            end = self._pending.find(b"\n")
            if end < 0 or end > MAX_LINE_BYTES:
                break
            line = bytes(self._pending[: end + 1])
            del self._pending[: end + 1]
            if not self._reply(line):
                return False
        if len(self._pending) > MAX_LINE_BYTES:  # bounded, as the wire is: no more calls
            self.notes.append(
                "the program sent a call over %d bytes; no more are served" % MAX_LINE_BYTES
            )
            self._pending = bytearray()
            _close(self._answers)  # the program's next read sees EOF: CallFailed
            self._answers = -1
            return False
        return True

    def _reply(self, line: bytes) -> bool:
        try:
            reply = json.dumps(self.answer(line)).encode("utf-8") + b"\n"
        except Exception as e:  # a bug of ours: the program hears of it
            message = "the runner failed: %r" % (e,)
            reply = json.dumps({"failure": "call_failed", "message": message}).encode() + b"\n"
        return self._write(reply)

    def _write(self, data: bytes) -> bool:
        """Write the answer whole, unless the program is gone or :meth:`stop` is called
        (a program that never reads its answers cannot hold this thread)."""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._answers, view) :]
            except BlockingIOError:
                ready, _, _ = select.select([self._wake_read], [self._answers], [])
                if ready:
                    return False
            except OSError:  # the program is gone (EPIPE), or we closed it
                return False
        return True


def _close(fd: int) -> None:
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass
