"""The steps of ``Client.connect``: open, take custody, start the reader, handshake.

Functions of the client's session (and its requests), in the order ``connect`` runs them; each
leaves the client in a state its retirement can complete from, whatever fails:

1. :func:`open_transport` -- the capture log, then the transport; what it gave
   (or nothing) is adopted under the session's lock, so a ``stop`` that raced
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

from .. import protocol
from .._os import threads as _threads
from ..errors import (
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
from ..jsonrpc import notification
from ..protocol import InitializeResult
from ..transport import Connection, NoResource
from ._reader import Reader
from ._requests import Requests
from ._session import SHOWN_NAME, Session

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

__all__ = ["open_transport", "handshake", "SHOWN_NAME"]


def open_transport(session: Session, requests: Requests) -> None:
    """Open the capture log and the transport, and take custody of what was started."""
    try:
        session.open_capture()
    except SymlinkRefused:  # already a TransportFailed, naming the link
        _adopt(session, requests, None)
        raise
    except OSError as e:
        _adopt(session, requests, None)  # nothing was started: the retirement is NoResource
        raise TransportFailed("cannot open the capture log: %s" % e) from e
    conn: Optional[Connection] = None
    try:
        conn = session.transport.open()
    finally:
        _adopt(session, requests, conn)


def _adopt(session: Session, requests: Requests, conn: Optional[Connection]) -> None:
    retired = session.adopt(conn)
    if conn is not None:
        start_reader(session, requests, conn)  # a reason latched meanwhile: the reader retires it
    elif retired:
        session.record_retirement(NoResource(), None)


def start_reader(session: Session, requests: Requests, conn: Connection) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)  # a wake-up never blocks whoever sends it
    reader = Reader(session, requests, conn, wake_r)
    thread = _threads.named(reader.run, "mcp-reader-%s" % (conn.pid or id(session)))
    session.started(reader, None)
    session.arm_wake(wake_w)
    try:
        _threads.start(thread)
    except RuntimeError as e:  # out of threads: retire here, in the opener's thread
        session.request_retirement(ClientBroken("cannot start the reader thread: %s" % e))
        reader.finish()
        raise TransportFailed("cannot start the reader thread: %s" % e) from e
    session.started(reader, thread)


def handshake(session: Session, requests: Requests) -> InitializeResult:
    options = session.options
    try:
        raw = requests.request(
            protocol.INITIALIZE,
            protocol.initialize_params(options.client_info),
            options.handshake_timeout,
        )
        result = protocol.decode_initialize(raw)
    except ForeignVersionFault as e:
        raise VersionUnsupported(e) from e
    except (ClientError, ProtocolFault) as e:
        text = e.headline() if isinstance(e, StderrTail) else str(e)
        raise HandshakeFailed("initialize failed: %s" % text, e) from e
    session.name_server(result.server_info.name)
    if result.tools is None:
        raise ToolsNotDeclared(
            "server %r declares no %s capability (needed for %s)"
            % (session.server_name(), protocol.TOOLS_CAPABILITY, protocol.TOOLS_LIST)
        )
    _notify(session, protocol.NOTIFICATIONS_INITIALIZED)
    session.become_ready()
    return result


def _notify(session: Session, method: str) -> None:
    conn = session.conn
    assert conn is not None
    data = session.outgoing(notification(method))
    try:
        conn.write(data, time.monotonic() + session.options.handshake_timeout)
    except (WriteStalled, WriteFailed) as e:
        session.request_retirement(ClientBroken("%s failed: %s" % (method, e)))
        raise HandshakeFailed("cannot send %s: %s" % (method, e), e) from e
