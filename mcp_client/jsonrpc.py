"""The JSON-RPC 2.0 envelope: inbound messages as small frozen values.

Pure. Strict envelope, tolerant content: the discriminators (``jsonrpc``,
``id``, ``method``, ``result``/``error``) are refused when wrong; ``params``,
``result`` and error ``data`` cross raw and uninterpreted, and unknown extra
members are ignored (JSON-RPC 2.0 section 4; MCP 2025-06-18, Base Protocol).

A message is discriminated the way JSON-RPC discriminates it: with ``method``
and ``id`` it is a :class:`ServerRequest`, with ``method`` alone a
:class:`Notification`, without ``method`` a :class:`Response`.

The messages are frozen values, not dataclasses (``dataclasses.replace``,
``fields`` and ``asdict`` still work on them).
"""

from __future__ import annotations

from ._frozen import Frozen, setters
from ._lazy import lazy_aliases
from .errors import BadMessage, CorruptionReport, MalformedMessage, MessageFault
from .jsonvalue import parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Union

    from .jsonvalue import JsonValue

__all__ = [
    "Id",
    "RpcError",
    "Response",
    "ServerRequest",
    "Notification",
    "Inbound",
    "decode",
    "request",
    "notification",
    "result_response",
    "error_response",
    "MessageFault",
    "MalformedMessage",
    "BadMessage",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
]

if TYPE_CHECKING:
    Id = Union[int, str]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


# The values below are frozen, but not dataclasses (see mcp_client._frozen): they
# compare, hash, print, pickle and work with dataclasses.replace/fields as before.


class RpcError(Frozen):
    """A JSON-RPC error object; a value, not an exception."""

    __slots__ = ("code", "message", "data")
    code: int
    message: str
    data: JsonValue

    def __init__(self, code: int, message: str, data: JsonValue = None) -> None:
        self._assign(code, message, data)


class Response(Frozen):
    """An answer to one of our requests: ``error is None`` means success."""

    __slots__ = ("id", "result", "error")
    id: Id
    result: JsonValue
    error: Optional[RpcError]

    def __init__(self, id: Id, result: JsonValue, error: Optional[RpcError] = None) -> None:
        # One per answer the reader settles: one setter a field, no loop. Still frozen.
        _set_id(self, id)
        _set_result(self, result)
        _set_error(self, error)


_set_id, _set_result, _set_error = setters(Response)


class ServerRequest(Frozen):
    """A request the server sends us (we answer ``ping``; anything else gets -32601)."""

    __slots__ = ("id", "method", "params")
    id: Id
    method: str
    params: JsonValue

    def __init__(self, id: Id, method: str, params: JsonValue = None) -> None:
        self._assign(id, method, params)


class Notification(Frozen):
    """A message with a method and no id: nothing is owed in return."""

    __slots__ = ("method", "params")
    method: str
    params: JsonValue

    def __init__(self, method: str, params: JsonValue = None) -> None:
        self._assign(method, params)


if TYPE_CHECKING:
    Inbound = Union[Response, ServerRequest, Notification]
else:  # made on first use: typing is not imported with the client
    __getattr__ = lazy_aliases(
        globals(),
        Id=lambda t: t.Union[int, str],
        Inbound=lambda t: t.Union[Response, ServerRequest, Notification],
    )


def decode(line: bytes | str) -> Inbound:
    """One wire line to an :data:`Inbound`, or :class:`MessageFault`; total."""
    try:
        message = parse(line)
    except CorruptionReport as report:
        raise MalformedMessage(report) from None
    if type(message) is not dict:
        raise BadMessage(_not_an_object(message))
    if message.get("jsonrpc") != "2.0":
        raise BadMessage("jsonrpc member is %s, not '2.0'" % _show(message.get("jsonrpc")))
    if "method" in message:
        return _decode_call(message)
    ident = message.get("id")
    if "result" in message and "error" not in message and type(ident) is int:
        return Response(ident, message["result"])  # the common answer, checked in line
    return _decode_response(message)


def _not_an_object(message: object) -> str:
    if isinstance(message, list):
        return "a batch array (MCP 2025-06-18 removed batching)"
    return "message is a JSON %s, not an object" % type(message).__name__


def _decode_call(message: Dict[str, Any]) -> Inbound:
    method = message["method"]
    if type(method) is not str:
        raise BadMessage("method is not a string")
    if "result" in message or "error" in message:
        raise BadMessage("message has both a method and a result or error")
    params = message.get("params")
    if "id" not in message:
        return Notification(method, params)
    return ServerRequest(_decode_id(message["id"]), method, params)


def _decode_response(message: Dict[str, Any]) -> Response:
    if "id" not in message:
        raise BadMessage("message has neither a method nor an id")
    ident = _decode_id(message["id"])
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error:
        raise BadMessage("response has %s result and error" % ("both" if has_result else "neither"))
    if has_result:
        return Response(ident, message["result"])
    return Response(ident, None, _decode_error(message["error"]))


def _decode_id(ident: object) -> Id:
    # bool is an int subclass in Python; JSON true is not an id.
    if type(ident) is int or type(ident) is str:
        return ident
    raise BadMessage("id %s is not an integer or a string" % _show(ident))


def _decode_error(error: object) -> RpcError:
    if type(error) is not dict:
        raise BadMessage("error is not an object")
    code, message = error.get("code"), error.get("message")
    if type(code) is not int:
        raise BadMessage("error code %s is not an integer" % _show(code))
    if type(message) is not str:
        raise BadMessage("error message is not a string")
    return RpcError(code, message, error.get("data"))


def _show(value: object) -> str:
    return repr(value)[:60]


# ----------------------------------------------------------------------------- encoders


def request(id: Id, method: str, params: JsonValue = None) -> JsonValue:
    """A request message; ``params`` is left out when ``None``."""
    message: Dict[str, JsonValue] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: JsonValue = None) -> JsonValue:
    """A notification message (no id); ``params`` is left out when ``None``."""
    message: Dict[str, JsonValue] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def result_response(id: Id, result: JsonValue) -> JsonValue:
    """A success response to a server's request."""
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_response(id: Id, code: int, message: str) -> JsonValue:
    """An error response to a server's request."""
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}
