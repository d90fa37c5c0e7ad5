"""The steps of ``Client.connect``: open, take custody, start the reader, handshake.

Functions of the client they serve, in the order ``connect`` runs them; each
leaves the client in a state its retirement can complete from, whatever fails:

1. :func:`open_transport` -- the capture log, then the transport; what it gave
   (or nothing) is adopted under the client's lock, so a ``stop`` that raced
   the open leaves the evidence to the opener instead of reporting
   ``NoResource`` for a server it could not see yet.
2. :func:`start_reader` -- the wake-up pipe and the reader thread. No thread to
   be had: the opener retires the server itself, in its own thread.
3. :func:`handshake` -- ``initialize``, the version and tools checks, then
   ``notifications/initialized``, and the move to ``READY``.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Optional

from . import _threads, protocol
from ._census import ACTIVE
from ._reader import Reader
from ._state import State
from .capture import open_capture
from .errors import (
    ClientBroken,
    ClientError,
    ForeignVersionFault,
    HandshakeFailed,
    ProtocolFault,
    StderrTail,
    SymlinkRefused,
    ToolsNotDeclared,
    TransportFailed,
    VersionUnsupported,
    WriteFailed,
    WriteStalled,
)
from .jsonrpc import notification
from .protocol import InitializeResult
from .stdio import frame
from .text import sanitize
from .transport import Connection, NoResource

if TYPE_CHECKING:  # pragma: no cover - the client, for annotations only
    from .client import Client

__all__ = ["open_transport", "handshake", "SHOWN_NAME"]

#: Characters of the server's name kept in log records and messages.
SHOWN_NAME = 100


def open_transport(client: "Client") -> None:
    """Open the capture log and the transport, and take custody of what was started."""
    try:
        client._capture = open_capture(client.options.capture)
    except SymlinkRefused:  # already a TransportFailed, naming the link
        _adopt(client, None)
        raise
    except OSError as e:
        _adopt(client, None)  # nothing was started: the retirement is NoResource
        raise TransportFailed("cannot open the capture log: %s" % e) from e
    conn: Optional[Connection] = None
    try:
        conn = client._transport.open()
    finally:
        _adopt(client, conn)


def _adopt(client: "Client", conn: Optional[Connection]) -> None:
    with client._lock:
        client._opening = False
        retired = client._reason is not None
        if conn is not None:
            client._conn = conn
            if client._capture is not None:  # before the reader can record a line
                client._capture.event("open", client._transport.describe())
    if conn is not None:
        start_reader(client, conn)  # a reason latched meanwhile: the reader retires it
    elif retired:
        client._record_retirement(NoResource(), None)


def start_reader(client: "Client", conn: Connection) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)  # a wake-up never blocks whoever sends it
    reader = client._reader = Reader(client, conn, wake_r)
    thread = _threads.named(reader.run, "mcp-reader-%s" % (conn.pid or id(client)))
    with client._lock:
        client._wake_w = wake_w
    ACTIVE.add(client)
    try:
        _threads.start(thread)
    except RuntimeError as e:  # out of threads: retire here, in the opener's thread
        client._request_retirement(ClientBroken("cannot start the reader thread: %s" % e))
        reader.finish()
        raise TransportFailed("cannot start the reader thread: %s" % e) from e
    client._reader_thread = thread


def handshake(client: "Client") -> InitializeResult:
    options = client.options
    try:
        raw = client._requests.request("initialize", protocol.initialize_params(
            options.client_info), options.handshake_timeout)
        result = protocol.decode_initialize(raw)
    except ForeignVersionFault as e:
        raise VersionUnsupported(e) from e
    except (ClientError, ProtocolFault) as e:
        text = e.headline() if isinstance(e, StderrTail) else str(e)
        raise HandshakeFailed("initialize failed: %s" % text, e) from e
    # Sanitized once, here, for every log record and message that names the
    # server: an escape or a newline in it could drive a terminal or forge a
    # log line. initialize_result keeps the name raw, as the protocol gave it.
    client._shown_name = sanitize(result.server_info.name, SHOWN_NAME)
    if result.tools is None:
        raise ToolsNotDeclared("server %r declares no tools capability"
                               % client._server_name())
    _notify(client, "notifications/initialized")
    with client._lock:
        if client._state is not State.CONNECTING:
            raise HandshakeFailed("client died during the handshake: %s" % client._reason)
        client._move(State.READY)
    client.initialize_result = result
    return result


def _notify(client: "Client", method: str) -> None:
    conn = client._conn
    assert conn is not None
    data = frame(notification(method))
    if client._capture is not None:
        client._capture.line("send", data[:-1])
    try:
        conn.write(data, time.monotonic() + client.options.handshake_timeout)
    except (WriteStalled, WriteFailed) as e:
        client._request_retirement(ClientBroken("%s failed: %s" % (method, e)))
        raise HandshakeFailed("cannot send %s: %s" % (method, e), e) from e
