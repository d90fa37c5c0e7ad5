"""A raw-pipe peer for driving a server process in tests, with no client code involved.

Every read has a deadline (``selectors`` on the child's stdout), so a server
that misbehaves fails the test instead of hanging it. The child runs in its own
session, so :meth:`Pipe.kill` takes its whole process group, grandchildren
included, and then reaps the direct child.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from typing import IO, Any, Dict, List, Optional, Sequence, Union

Message = Dict[str, Any]

DEFAULT_TIMEOUT = 10.0  # generous: a bound against hangs, never a performance assertion
CHUNK = 1 << 16


class Pipe:
    """One server child on raw pipes: write lines, read lines with deadlines."""

    def __init__(
        self,
        argv: Sequence[str],
        stderr: Union[int, IO[Any], None] = subprocess.DEVNULL,
        cwd: Optional[str] = None,
    ) -> None:
        self.process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            start_new_session=True,
        )
        self._stdin: IO[bytes] = self.process.stdin  # type: ignore[assignment]
        self._stdout_fd = self.process.stdout.fileno()  # type: ignore[union-attr]
        self._parts: List[bytes] = []  # the unfinished line
        self._lines: List[bytes] = []  # complete lines not yet handed out
        self._eof = False
        self._next_id = 0

    # --------------------------------------------------------------------- writing

    def send_raw(self, data: bytes) -> None:
        self._stdin.write(data + b"\n")
        self._stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message, separators=(",", ":")).encode("utf-8"))

    def request(self, method: str, params: Optional[Message] = None) -> Any:
        """Send a request with a fresh integer id; returns the id."""
        self._next_id += 1
        message: Message = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next_id

    def notify(self, method: str) -> None:
        self.send({"jsonrpc": "2.0", "method": method})

    def close_stdin(self) -> None:
        self._stdin.close()

    # --------------------------------------------------------------------- reading

    def read_line(self, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        """The next stdout line without its newline.

        EOFError at EOF, TimeoutError past the deadline."""
        deadline = time.monotonic() + timeout
        while not self._lines:
            if self._eof:
                raise EOFError("server closed its stdout")
            self._fill(deadline - time.monotonic())
        return self._lines.pop(0)

    def read_message(self, timeout: float = DEFAULT_TIMEOUT) -> Message:
        message = json.loads(self.read_line(timeout))
        assert isinstance(message, dict), message
        return message

    def call(
        self, method: str, params: Optional[Message] = None, timeout: float = DEFAULT_TIMEOUT
    ) -> Message:
        """Send a request and return the response that carries its id."""
        ident = self.request(method, params)
        message = self.read_message(timeout)
        assert message.get("id") == ident, "expected the answer to %r, got %r" % (ident, message)
        return message

    def handshake(self, version: str = "2025-06-18") -> Message:
        """``initialize`` plus ``notifications/initialized``; returns the initialize response."""
        client_info = {"name": "raw-pipe-test", "version": "0"}
        response = self.call(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": client_info},
        )
        self.notify("notifications/initialized")
        return response

    def _fill(self, timeout: float) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._stdout_fd, selectors.EVENT_READ)
            if timeout <= 0 or not selector.select(timeout):
                raise TimeoutError("no complete line from the server in time")
        chunk = os.read(self._stdout_fd, CHUNK)
        if not chunk:
            self._eof = True
            return
        pieces = chunk.split(b"\n")
        if len(pieces) > 1:
            self._lines.append(b"".join(self._parts + [pieces[0]]))
            self._lines.extend(pieces[1:-1])
            self._parts = []
        if pieces[-1]:
            self._parts.append(pieces[-1])

    # ------------------------------------------------------------------ lifecycle

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        return self.process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the whole process group, then reap the direct child. Idempotent."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the group is already empty
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except BrokenPipeError:
                    pass
