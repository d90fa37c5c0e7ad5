"""A stdio MCP server on the package's own codecs: the loop, not the tools.

The host starts us and speaks JSON-RPC on our stdin and stdout, one message a line
(MCP 2025-06-18, Transports, stdio). This module answers ``initialize``, ``ping``,
``tools/list`` and ``tools/call``; takes ``notifications/initialized`` and
``notifications/cancelled`` (a cancelled call's answer is not sent, as Utilities /
Cancellation asks); answers any other request with -32601 and ignores any other
notification. The tools are values (:class:`Tool`): a descriptor for ``tools/list``
and a function from arguments to a ``CallToolResult`` object. A tool made with
``context=True`` is also given its call's :class:`CallContext`: whether the host
cancelled the call (or went away), the host's capabilities, a way to send the call's
``notifications/progress`` (when the request carried a ``progressToken``), and a way
to put a request of our own to the host (``elicitation/create``) and await its answer.

Hostile input is answered, never fatal (the host is a peer, not a trusted caller):
a line that is not JSON gets -32700, JSON that is not a request -32600 (with the
request's id when one can be read), bad params -32602, a line over
``stdio.MAX_LINE_BYTES`` -32600 and is skipped to its end. A tool that raises gets
-32603 and a log record. Every ``tools/call`` runs on a thread of its own, at most
``max_running`` at once; one past that is answered at once as a failed call (the
model may retry), so the reader is never held up and ``ping`` is always answered.
Every response is written whole under one lock. Logs go to stderr (the ``logging``
tree); the write side carries protocol lines only.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from .. import jsonrpc, protocol
from .._os import threads as _threads
from ..errors import BadMessage, EncodeRefused, LineTooLong, MalformedMessage
from ..jsonvalue import JsonValue, encode, parse
from ..stdio import MAX_LINE_BYTES, Buffer, frame

__all__ = [
    "Refused",
    "Tool",
    "Identity",
    "Server",
    "CallContext",
    "HostFailed",
    "negotiate",
    "MAX_RUNNING",
]

LOGGER = logging.getLogger("mcp_client._mcp_server")  # its name from before the move

#: ``tools/call`` requests handled at once; each holds a thread (and, in code mode, a program).
MAX_RUNNING = 8
_names = itertools.count(1)


@dataclass(frozen=True)
class Refused:
    """A tool's answer to arguments it cannot take: sent as -32602 with ``message``."""

    message: str


Result = Dict[str, JsonValue]
ToolCall = Callable[..., Union[Result, Refused]]


@dataclass(frozen=True)
class Tool:
    """One tool: its ``tools/list`` entry and the function that answers its calls:
    ``call(arguments)``, or ``call(arguments, context)`` when ``context`` is true."""

    descriptor: Dict[str, JsonValue]
    call: ToolCall
    context: bool = False

    @property
    def name(self) -> str:
        return str(self.descriptor["name"])


class HostFailed(Exception):
    """A request we put to the host got no answer we can use: its error, none in time,
    the call cancelled, or the host gone. ``str()`` says which."""


class _Asked:
    """One request of ours awaiting the host's answer (the reader settles it)."""

    __slots__ = ("done", "result", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: JsonValue = None
        self.error: Optional[str] = None


class CallContext:
    """One ``tools/call`` as its tool sees it (a tool made with ``context=True``)."""

    def __init__(self, server: "Server", progress_token: JsonValue) -> None:
        self.cancelled = threading.Event()  # the host cancelled the call, or went away
        self._server = server
        self._token = progress_token if type(progress_token) in (int, str) else None
        self._progress = 0

    @property
    def host_capabilities(self) -> Dict[str, JsonValue]:
        """What the host declared in its ``initialize`` (``{}`` before, or if nothing)."""
        return self._server.host_capabilities

    @property
    def reports_progress(self) -> bool:
        """Whether the request asked for progress (it carried a ``progressToken``)."""
        return self._token is not None

    def progress(self, message: str) -> None:
        """One ``notifications/progress`` for this call (nothing without a token): each
        a step further than the last, as the spec asks, with ``message``."""
        if self._token is None or self.cancelled.is_set():
            return
        self._progress += 1
        params: Dict[str, JsonValue] = {
            "progressToken": self._token,
            "progress": self._progress,
            "message": message,
        }
        self._server.notify(protocol.NOTIFICATIONS_PROGRESS, params)

    def ask(self, method: str, params: Dict[str, JsonValue], timeout: float) -> JsonValue:
        """Put ``method`` to the host and return its result; :class:`HostFailed` for its
        error, no answer within ``timeout`` seconds, this call cancelled, or the host gone."""
        return self._server.ask(method, params, timeout, self.cancelled)


@dataclass(frozen=True)
class Identity:
    """What ``initialize`` tells the host about us."""

    name: str
    version: str
    title: str = ""
    instructions: str = ""


def negotiate(requested: JsonValue) -> str:
    """The revision to answer with: the host's when we speak it, else our newest (Lifecycle)."""
    if isinstance(requested, str) and requested in protocol.SUPPORTED_VERSIONS:
        return requested
    return protocol.REQUESTED_VERSION


class Server:
    """Serves ``tools`` on two descriptors until the read side ends (:meth:`serve`)."""

    def __init__(
        self,
        identity: Identity,
        tools: Sequence[Tool],
        *,
        read_fd: int = 0,
        write_fd: int = 1,
        max_running: int = MAX_RUNNING,
    ) -> None:
        self._identity = identity
        self._tools = {tool.name: tool for tool in tools}
        self._read_fd, self._write_fd = read_fd, write_fd
        self._write_lock = threading.Lock()
        self._state = threading.Lock()  # guards _running and _cancelled
        self._idle = threading.Condition(self._state)  # notified as each call settles
        self._running: Dict[int, jsonrpc.Id] = {}  # each call taken: the request it answers
        self._cancelled: Set[jsonrpc.Id] = set()
        self._slots = threading.BoundedSemaphore(max_running)
        self._max_running = max_running
        self._broken = False  # the write side failed: the host is gone
        self._contexts: Dict[jsonrpc.Id, CallContext] = {}  # each call in flight's
        self._asked: Dict[int, _Asked] = {}  # our requests awaiting the host (by our id)
        self._asked_ids = itertools.count(1)
        self._ended = False  # the read side ended: nothing the host says will come
        self.host_capabilities: Dict[str, JsonValue] = {}

    # ------------------------------------------------------------------ reading

    def serve(self) -> None:
        """Read and answer until EOF (or a read error) on the read side. Then every
        call in flight is told the host is gone (its context's ``cancelled``), and
        every request of ours awaiting the host fails."""
        try:
            self._read()
        finally:
            self._end_reading()

    def _read(self) -> None:
        buffer = Buffer()
        skipping = False  # inside a line over the cap: its bytes are dropped up to its end
        while True:
            try:
                chunk = os.read(self._read_fd, buffer.read_size())
            except OSError as e:
                LOGGER.warning("reading the host's messages failed: %s", e)
                return
            if not chunk:
                return
            buffer, skipping = self._feed(buffer, skipping, chunk)

    def _end_reading(self) -> None:
        with self._state:
            self._ended = True
            contexts, asked = list(self._contexts.values()), list(self._asked.values())
            self._asked.clear()
        for context in contexts:
            context.cancelled.set()
        for each in asked:
            each.error = "the host went away"
            each.done.set()

    def _feed(self, buffer: Buffer, skipping: bool, chunk: bytes) -> Tuple[Buffer, bool]:
        """Push ``chunk`` a line at a time, so a line over the cap costs only itself."""
        for piece in _pieces(chunk):
            if skipping:
                skipping = not piece.endswith(b"\n")
                continue
            try:
                lines = buffer.push(piece)
            except LineTooLong:
                self._send_error(None, jsonrpc.INVALID_REQUEST, _too_long())
                buffer, skipping = Buffer(), not piece.endswith(b"\n")
                continue
            for line in lines:
                self._handle(line)
        return buffer, skipping

    def _handle(self, line: bytes) -> None:
        try:
            message = jsonrpc.decode(line)
        except MalformedMessage as e:
            self._send_error(None, jsonrpc.PARSE_ERROR, "parse error: %s" % e.reason)
            return
        except BadMessage as e:
            self._send_error(_id_of(line), jsonrpc.INVALID_REQUEST, "invalid request: " + e.reason)
            return
        if isinstance(message, jsonrpc.Notification):
            self._notified(message)
        elif isinstance(message, jsonrpc.ServerRequest):  # the envelope's name: a peer's request
            self._request(message)
        else:  # a response: to a request of ours, or to none (dropped)
            self._answered(message)

    def _notified(self, message: jsonrpc.Notification) -> None:
        if message.method == protocol.NOTIFICATIONS_CANCELLED and isinstance(message.params, dict):
            ident = message.params.get("requestId")
            with self._state:  # only a call in flight: a hostile host cannot grow the set
                if ident not in self._running.values():
                    return
                self._cancelled.add(ident)  # type: ignore[arg-type]  # an id, being in flight
                context = self._contexts.get(ident)  # type: ignore[arg-type]
            if context is not None:
                context.cancelled.set()

    def _answered(self, response: jsonrpc.Response) -> None:
        with self._state:
            asked = self._asked.pop(response.id, None) if type(response.id) is int else None
        if asked is None:
            return  # no request of ours has that id (late, or the host's invention)
        if response.error is not None:
            asked.error = "the host answered with error %d: %s" % (
                response.error.code, response.error.message[:200]
            )  # fmt: skip
        else:
            asked.result = response.result
        asked.done.set()

    # ------------------------------------------------------------------ requests

    def _request(self, request: jsonrpc.ServerRequest) -> None:
        method, params = request.method, request.params
        if params is not None and not isinstance(params, dict):
            self._send_error(request.id, jsonrpc.INVALID_PARAMS, "params must be an object")
        elif method == protocol.INITIALIZE:
            self._send_result(request.id, self._initialized(params or {}))
        elif method == protocol.PING:
            self._send_result(request.id, {})
        elif method == protocol.TOOLS_LIST:
            self._send_result(request.id, {"tools": [t.descriptor for t in self._tools.values()]})
        elif method == protocol.TOOLS_CALL:
            self._call(request.id, params or {})
        else:
            self._send_error(request.id, jsonrpc.METHOD_NOT_FOUND, "method not found: " + method)

    def _initialized(self, params: Dict[str, JsonValue]) -> Result:
        capabilities = params.get("capabilities")
        if isinstance(capabilities, dict):  # the host's own words: read, never trusted further
            self.host_capabilities = capabilities
        identity = self._identity
        info: Result = {"name": identity.name, "version": identity.version}
        if identity.title:
            info["title"] = identity.title
        result: Result = {
            "protocolVersion": negotiate(params.get("protocolVersion")),
            "capabilities": {protocol.TOOLS_CAPABILITY: {"listChanged": False}},
            "serverInfo": info,
        }
        if identity.instructions:
            result["instructions"] = identity.instructions
        return result

    def _call(self, ident: jsonrpc.Id, params: Dict[str, JsonValue]) -> None:
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or name not in self._tools:
            known = ", ".join(self._tools)
            self._send_error(
                ident,
                jsonrpc.INVALID_PARAMS,
                "unknown tool %s; the tools: %s" % (repr(name)[:80], known),
            )
        elif not isinstance(arguments, dict):
            self._send_error(ident, jsonrpc.INVALID_PARAMS, "arguments must be an object")
        elif not self._slots.acquire(blocking=False):
            self._send_result(ident, _busy(self._max_running))
        else:
            self._start(ident, self._tools[name], arguments, params.get("_meta"))

    def _start(
        self,
        ident: jsonrpc.Id,
        tool: Tool,
        arguments: Dict[str, JsonValue],
        params_meta: JsonValue = None,
    ) -> None:
        number = next(_names)
        thread = _threads.named(
            self._answer, "mcp-serve-%d" % number, (number, ident, tool, arguments)
        )
        with self._state:
            self._running[number] = ident
            if tool.context:
                self._contexts[ident] = CallContext(self, _progress_token(params_meta))
        try:
            _threads.start(thread)
        except RuntimeError as e:  # no thread to be had: this call fails, the server goes on
            self._slots.release()
            self._send_error(ident, jsonrpc.INTERNAL_ERROR, "cannot start the call: %s" % e)
            self._settled(number)

    def _answer(self, number: int, ident: jsonrpc.Id, tool: Tool, arguments: Result) -> None:
        try:
            try:
                outcome: Union[Result, Refused, None] = self._run_tool(ident, tool, arguments)
            except Exception:  # a bug in a tool is that call's failure, never the server's
                LOGGER.exception("tool %s failed", tool.name)
                outcome = None
            finally:
                self._slots.release()  # before the answer: whoever reads it may call again
            if not self._forget_cancelled(ident):
                self._deliver(ident, tool, outcome)
        finally:
            self._settled(number)  # after the answer: join() means every answer is written

    def _deliver(
        self, ident: jsonrpc.Id, tool: Tool, outcome: Union[Result, Refused, None]
    ) -> None:
        if outcome is None:
            self._send_error(ident, jsonrpc.INTERNAL_ERROR, "internal error in " + tool.name)
        elif isinstance(outcome, Refused):
            self._send_error(ident, jsonrpc.INVALID_PARAMS, outcome.message)
        else:
            self._send_result(ident, outcome)

    def _run_tool(self, ident: jsonrpc.Id, tool: Tool, arguments: Result) -> Union[Result, Refused]:
        if not tool.context:
            return tool.call(arguments)
        with self._state:
            context = self._contexts[ident]
        return tool.call(arguments, context)

    def _settled(self, number: int) -> None:
        with self._idle:
            ident = self._running.pop(number, None)
            if ident is not None and ident not in self._running.values():
                self._contexts.pop(ident, None)
            self._idle.notify_all()

    def _forget_cancelled(self, ident: jsonrpc.Id) -> bool:
        with self._state:
            if ident in self._cancelled:
                self._cancelled.discard(ident)
                return True
            return False

    # ------------------------------------------------------------------ the end

    @property
    def running(self) -> int:
        """How many calls are being answered now."""
        with self._state:
            return len(self._running)

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until every call taken is answered (or dropped,
        cancelled); were they all?"""
        with self._idle:
            return self._idle.wait_for(lambda: not self._running, _threads.until(
                time.monotonic() + timeout))  # fmt: skip

    # ------------------------------------------------------------------ asking the host

    def ask(
        self,
        method: str,
        params: Dict[str, JsonValue],
        timeout: float,
        cancelled: Optional[threading.Event] = None,
    ) -> JsonValue:
        """Send ``method`` to the host and wait for its answer (see :meth:`CallContext.ask`)."""
        asked = _Asked()
        with self._state:
            if self._ended or self._broken:
                raise HostFailed("the host went away")
            ident = next(self._asked_ids)
            self._asked[ident] = asked
        try:
            self._write(frame(jsonrpc.request(ident, method, params)))
            self._await(asked, time.monotonic() + timeout, cancelled)
        finally:
            with self._state:
                self._asked.pop(ident, None)
        if asked.error is not None:
            raise HostFailed(asked.error)
        return asked.result

    def _await(self, asked: _Asked, deadline: float, cancelled: Optional[threading.Event]) -> None:
        """Wait for ``asked`` in short turns, so that a cancellation is seen at once."""
        while not asked.done.wait(_threads.until(min(deadline, time.monotonic() + 0.05))):
            if cancelled is not None and cancelled.is_set():
                raise HostFailed("the call was cancelled")
            if time.monotonic() >= deadline:
                raise HostFailed("no answer from the host in time")

    def notify(self, method: str, params: Dict[str, JsonValue]) -> None:
        """Send the host one notification (dropped if it cannot be encoded: a bug)."""
        try:
            data = frame(jsonrpc.notification(method, params))
        except EncodeRefused as e:
            LOGGER.error("a notification could not be encoded: %s", e.reason)
            return
        self._write(data)

    # ------------------------------------------------------------------ writing

    def _send_result(self, ident: jsonrpc.Id, result: Result) -> None:
        try:
            data = frame(jsonrpc.result_response(ident, result))
        except EncodeRefused as e:  # a tool's value that JSON cannot carry: a bug, answered
            LOGGER.error("a result could not be encoded: %s", e.reason)
            self._send_error(ident, jsonrpc.INTERNAL_ERROR, "the result could not be encoded")
            return
        self._write(data)

    def _send_error(self, ident: Optional[jsonrpc.Id], code: int, message: str) -> None:
        error: JsonValue = {"code": code, "message": message[:1000]}
        try:
            data = frame({"jsonrpc": "2.0", "id": ident, "error": error})
        except EncodeRefused:  # the host's own text came back unencodable (a lone surrogate)
            error = {"code": code, "message": "the request cannot be answered as it was sent"}
            data = frame({"jsonrpc": "2.0", "id": _encodable(ident), "error": error})
        self._write(data)

    def _write(self, data: bytes) -> None:
        with self._write_lock:
            if self._broken:
                return
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self._write_fd, view) :]
            except OSError as e:  # the host stopped reading: its EOF on our stdin ends us
                self._broken = True
                LOGGER.warning("writing to the host failed: %s", e)


def _pieces(chunk: bytes) -> List[bytes]:
    """``chunk`` cut after each newline (the last piece may have none)."""
    pieces = chunk.split(b"\n")
    last = pieces.pop()
    done = [piece + b"\n" for piece in pieces]
    if last:
        done.append(last)
    return done


def _id_of(line: bytes) -> Optional[jsonrpc.Id]:
    """The id of a request that is JSON but not a valid request, when it has a usable one."""
    try:
        message = parse(line)
    except ValueError:
        return None
    ident = message.get("id") if isinstance(message, dict) else None
    return ident if type(ident) in (int, str) else None  # type: ignore[return-value]


def _encodable(ident: Optional[jsonrpc.Id]) -> Optional[jsonrpc.Id]:
    """``ident`` when JSON can carry it back, else ``None`` (JSON-RPC's unknown id)."""
    try:
        encode(ident)
    except EncodeRefused:
        return None
    return ident


def _too_long() -> str:
    return "invalid request: a line over %d bytes (skipped to its end)" % MAX_LINE_BYTES


def _busy(limit: int) -> Result:
    text = "busy: %d calls are running, the most at once; call again when one has ended" % limit
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _progress_token(meta: JsonValue) -> JsonValue:
    """The ``progressToken`` of a request's ``_meta`` (Utilities / Progress), if any."""
    return meta.get("progressToken") if isinstance(meta, dict) else None
