"""Every exception the package raises, under one root.

The hierarchy (urllib3's shape: one root, leaves that carry their context)::

    McpClientError
    +-- Fault                      a pure codec refused its input (.reason)
    |   +-- CorruptionReport       jsonvalue.parse: not JSON (also a ValueError)
    |   +-- LiteralRefused         pyrepr.parse: not a Python literal read here (a ValueError)
    |   +-- EncodeRefused          jsonvalue.dump: not a JSON value (also a ValueError)
    |   +-- MessageFault           jsonrpc.decode
    |   |   +-- MalformedMessage       the line is not JSON (.report)
    |   |   +-- BadMessage             JSON, but not JSON-RPC 2.0
    |   +-- ProtocolFault          protocol.decode_*: the MCP shape is wrong
    |   |   +-- ForeignVersionFault    (.server_version, .supported)
    |   +-- FramingFault           stdio.Buffer
    |   |   +-- LineTooLong
    |   +-- InterchangeFault       interchange (.path)
    |   +-- LogError               capture.read_log: not a capture log (also a ValueError)
    +-- GenerateError              codegen.generate refused the listing
    |   +-- TooManyTools, ToolNameCollision, SurfaceTooLarge, SanitizerBreach
    +-- ToolFailed                 a tool answered with a failure (codegen.deliver: .tool, .result)
    +-- ResultMismatch             a result broke its tool's outputSchema (codegen.deliver: .path)
    +-- ClientError                a call on a client failed
    |   +-- Unavailable            the client cannot serve calls (.reason)
    |   |   +-- ClientClosed           ... because *you* retired it (trio's "closed")
    |   |   +-- ClientBroken           ... because it failed under you ("broken")
    |   |   +-- ClientInherited        ... because it is another process's (fork)
    |   +-- CallTimedOut, ServerError, ResultMalformed, TooManyPages
    +-- StartError                 connect() failed; what it spawned is retired (.reason)
    |   +-- TransportFailed        the server could not be started
    |   |   +-- SymlinkRefused         a file to write is a symbolic link (.path)
    |   +-- HandshakeFailed, VersionUnsupported,
    |       ToolsNotDeclared, CleanupUnconfirmed
    +-- RetirementError            shutdown() could not establish retirement
    |   +-- RetirementTimedOut, RetirementUnconfirmed
    +-- ChannelError               transport-internal, translated by the client (.reason)
    |   +-- WriteStalled, WriteFailed
    +-- ConfigError                config.load: a servers file that cannot be used (.path, .entry)
    +-- CodeModeError              code mode (mcp_client.codemode) cannot go on
        +-- NoServerStarted            CodeMode.open: every server failed (str() names each)
        +-- JailUnavailable            the program (or a server) cannot be had jailed
        +-- UnknownServer              a server key asked for is not in the config
        +-- TokenRefused               CodeMode.run: an approval token that cannot be used

``tests/test_errors.py`` derives the tree from the classes and holds this
drawing to it, edge by edge: a class added, moved or renamed is drawn here too.
Mixins are not drawn (``_Reason``: the one ``reason`` constructor; ``StderrTail``).

Two names differ on purpose: ``ForeignVersionFault`` is the codec's finding
(``protocol.decode_initialize``), ``VersionUnsupported`` the start error
``connect`` raises from it. The fault was once ``UnsupportedVersion``, an
anagram of the other; that name still works (``PORT.md`` gives it) and warns.

Each module re-exports the leaves it raises under the names ``../shared/PORT.md``
gives them (``jsonrpc.MessageFault``, ``client.Unavailable``, ...), so callers
reach them from where they happen; this module is where they are defined.
"""

from __future__ import annotations

import warnings

from .text import sanitize

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - imports for annotations only
    from typing import Any, Dict, Optional, Tuple

    from .jsonrpc import RpcError
    from .protocol import CallToolResult


class McpClientError(Exception):
    """Root of every exception this package raises on purpose."""


class _Reason(Exception):
    """Mixin: the one constructor for the bases whose message is a ``reason``.

    Listed before the ``McpClientError`` base, so its ``__init__`` is the one
    found; an ``Exception`` (not a bare mixin) so ``super().__init__(reason)``
    type-checks. ``args == (reason,)``, so pickling rebuilds the error.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --------------------------------------------------------------------------- faults


class Fault(_Reason, McpClientError):
    """A pure decoder or encoder refused its input; ``reason`` says where and why."""


class CorruptionReport(Fault, ValueError):
    """``jsonvalue.parse`` met text that is not strict RFC 8259 JSON within our bounds."""


class LiteralRefused(Fault, ValueError):
    """``codegen.pyrepr.parse`` met text that is not a Python literal it reads (a ``repr``
    of JSON kinds, within the bounds)."""


class EncodeRefused(Fault, ValueError):
    """``jsonvalue.dump`` met something that is not a JSON value (NaN, a tuple, a non-str key)."""


class MessageFault(Fault):
    """A line that is not a JSON-RPC 2.0 message."""


class MalformedMessage(MessageFault):
    """The line is not JSON at all; ``report`` is the parser's refusal."""

    def __init__(self, report: CorruptionReport) -> None:
        super().__init__("not JSON: " + report.reason)
        self.report = report


class BadMessage(MessageFault):
    """The line is JSON but not a JSON-RPC 2.0 message we accept."""


class ProtocolFault(Fault):
    """A JSON-RPC result whose MCP shape is wrong; the reason names the path."""


class ForeignVersionFault(ProtocolFault):
    """The server negotiated a protocol revision outside ``SUPPORTED_VERSIONS``.

    ``connect`` turns it into :class:`VersionUnsupported`; the old name of this
    one, ``UnsupportedVersion``, still works but warns (see the module docstring).
    """

    def __init__(self, server_version: object, supported: Tuple[str, ...]) -> None:
        super().__init__(
            "server chose protocol version %s; this client speaks %s"
            % (repr(server_version)[:60], ", ".join(supported))
        )
        self.server_version = server_version
        self.supported = supported


class FramingFault(Fault):
    """The byte stream cannot be cut into lines."""


class LineTooLong(FramingFault):
    """A line (pending or complete) grew past ``stdio.MAX_LINE_BYTES``."""


class InterchangeFault(Fault):
    """A value cannot cross between the capability wire and JSON; ``path`` says where."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__("%s: %s" % (path, reason))
        self.path = path
        self.detail = reason


class LogError(Fault, ValueError):
    """A capture log that cannot be read as one; ``reason`` names the first bad line."""


# --------------------------------------------------------------------------- codegen


class GenerateError(McpClientError):
    """``codegen.generate`` refused the whole listing."""


class TooManyTools(GenerateError):
    """The listing has more tools than ``codegen.MAX_TOOLS``."""

    def __init__(self, count: int, limit: int) -> None:
        super().__init__("%d tools listed; at most %d are generated" % (count, limit))
        self.count = count
        self.limit = limit


class ToolNameCollision(GenerateError):
    """Two tools mangle to one Python name; both originals are named."""

    def __init__(self, first: str, second: str, mangled: str) -> None:
        super().__init__("tools %r and %r both become %r" % (first, second, mangled))
        self.first = first
        self.second = second
        self.mangled = mangled


class SurfaceTooLarge(GenerateError):
    """The surface passed ``codegen.MAX_SURFACE_BYTES`` even after truncation."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__("surface is %d bytes; the limit is %d" % (size, limit))
        self.size = size
        self.limit = limit


class SanitizerBreach(GenerateError):
    """The generated source holds an ``@`` outside a comment or string: the cage failed."""


class ToolFailed(McpClientError):
    """A tool's answer was a failure: ``isError``, or no ``structuredContent`` object
    from a tool that declares an ``outputSchema`` (``codegen.deliver``).

    ``str()`` is the tool's own error text, sanitized and capped (or the
    generator's sentence when it said nothing); ``result`` is the whole
    ``CallToolResult``, raw and untrusted; ``tool`` the wire name.
    """

    def __init__(self, tool: str, result: "CallToolResult", message: str) -> None:
        super().__init__(tool, result, message)
        self.tool = tool
        self.result = result
        self.message = message

    def __str__(self) -> str:
        return self.message


class ResultMismatch(McpClientError):
    """A tool's ``structuredContent`` broke the ``outputSchema`` the tool declared
    (``codegen.deliver``, through ``checker``): the server broke its own promise.

    ``tool`` is the wire name, ``path`` where the value left its shape
    (``$["items"][3]["id"]``), ``expected`` what the schema said there and
    ``got`` what came (its JSON kind, a scalar's short text): all sanitized.
    Not a ``ToolFailed``: the tool did not say it failed. A code-mode program
    meets it as ``cap.mcp.ResultMismatch``, a ``CallFailed``.
    """

    def __init__(self, tool: str, path: str, expected: str, got: str) -> None:
        super().__init__(tool, path, expected, got)
        self.tool = tool
        self.path = path
        self.expected = expected
        self.got = got

    def __str__(self) -> str:
        return sanitize(
            "tool %s broke its outputSchema at %s: expected %s, got %s"
            % (self.tool, self.path, self.expected, self.got),
            600,
        )


# --------------------------------------------------------------------------- client calls


class ClientError(McpClientError):
    """A call on a connected client failed."""


class StderrTail:
    """Mixed into the errors a server's death explains: ``stderr_tail`` is the
    last of what it wrote to its stderr, when the transport captured it
    (``ProcessTransport(spawn, stderr="capture")``; ``""`` otherwise). ``str()``
    ends with its last few lines, so the explanation travels with the error."""

    stderr_tail: str = ""
    #: How many of the tail's last lines ``str()`` shows.
    shown_lines = 5

    def headline(self) -> str:
        """The error's own text, without the tail."""
        return super().__str__()

    def __str__(self) -> str:
        text = self.headline()
        if not self.stderr_tail:
            return text
        lines = self.stderr_tail.split("\n")[-self.shown_lines :]
        return "%s\nserver stderr, last %d lines:\n  %s" % (text, len(lines), "\n  ".join(lines))


class Unavailable(StderrTail, _Reason, ClientError):
    """The client cannot serve calls; ``reason`` is the latched cause.

    ``server`` is the server's own name (``serverInfo.name``, sanitized) once
    the handshake told it, ``None`` before; ``str()`` then ends its first line
    with ``(server NAME)``: a harness with several servers knows which one died.
    """

    server: Optional[str] = None

    def headline(self) -> str:
        text = super().headline()
        return text if self.server is None else "%s (server %s)" % (text, self.server)


class ClientClosed(Unavailable):
    """You retired the client (``stop``, ``shutdown``, a failed ``connect``, a gone owner)."""


class ClientBroken(Unavailable):
    """The server or the channel failed under the client (death, garbage, EOF...)."""


class ClientInherited(Unavailable):
    """The client belongs to another process: this one got a copy of it through ``fork``."""


class CallTimedOut(ClientError):
    """The call's deadline passed before its answer; the client stays usable."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__("%s got no answer within %.3gs" % (method, timeout))
        self.method = method
        self.timeout = timeout


#: Characters of a server's error message shown in ``str(ServerError)``.
SHOWN_SERVER_MESSAGE = 1000


class ServerError(ClientError):
    """The server answered with a JSON-RPC error object (``rpc_error``)."""

    def __init__(self, rpc_error: RpcError) -> None:
        # The message is server text: sanitized for the error's str(), which
        # reaches logs and terminals; rpc_error keeps it as the server sent it.
        shown = sanitize(rpc_error.message, SHOWN_SERVER_MESSAGE)
        super().__init__("server error %d: %s" % (rpc_error.code, shown))
        self.rpc_error = rpc_error


class ResultMalformed(ClientError):
    """The server answered, but the result's MCP shape is wrong (``fault``)."""

    def __init__(self, fault: ProtocolFault) -> None:
        super().__init__("malformed result: " + fault.reason)
        self.fault = fault


class TooManyPages(ClientError):
    """A listing (``method``: ``tools/list``) still had a ``nextCursor`` after
    ``max_tool_pages`` pages."""

    def __init__(self, pages: int, method: str = "tools/list") -> None:
        super().__init__("%s still paginating after %d pages" % (method, pages))
        self.pages = pages
        self.method = method


# --------------------------------------------------------------------------- start


class StartError(_Reason, McpClientError):
    """``connect`` failed. Whatever it spawned was retired before this was raised."""


class TransportFailed(StartError):
    """The server could not be started (no such executable, bad cwd, ...)."""


class SymlinkRefused(TransportFailed):
    """A file the package was to write (the stderr file, the capture log, the
    CLI's ``--capture``) is a symbolic link: refused, never followed (``O_NOFOLLOW``).

    A server that can write a directory could plant a link where the next
    session's log goes, and the harness would write through it, with its own
    rights, wherever the link points. ``path`` is the link; ``role`` what it was for.
    A ``TransportFailed``: it is raised where the server would have been started.
    """

    def __init__(self, path: str, role: str) -> None:
        super().__init__(
            "refusing to write %s to %r: it is a symbolic link (a planted link "
            "would send the writes wherever it points)" % (role, path)
        )
        self.path = path
        self.role = role


class HandshakeFailed(StderrTail, StartError):
    """``initialize`` timed out, was refused, came back malformed, or the server died."""

    def __init__(self, reason: str, cause: McpClientError | None = None) -> None:
        super().__init__(reason)
        self.cause = cause


class VersionUnsupported(StartError):
    """The server chose a protocol revision this client does not speak."""

    def __init__(self, fault: ForeignVersionFault) -> None:
        super().__init__(fault.reason)
        self.server_version = fault.server_version
        self.supported = fault.supported


class ToolsNotDeclared(StartError):
    """The server's capabilities have no ``tools`` entry: nothing to list or call."""


class CleanupUnconfirmed(StartError):
    """``connect`` failed *and* retiring what it spawned could not be confirmed.

    ``client`` is handed back so the caller can try ``shutdown`` again.
    """

    def __init__(self, reason: str, client: Any) -> None:
        super().__init__(reason)
        self.client = client


# --------------------------------------------------------------------------- retirement


class RetirementError(McpClientError):
    """``shutdown`` could not establish that the server is gone."""


class RetirementTimedOut(RetirementError):
    """The child was signalled but had not been reaped when the deadline passed."""


class RetirementUnconfirmed(RetirementError):
    """Reaping failed in a way that leaves the child's fate unknown."""


# --------------------------------------------------------------------------- transport


class ChannelError(_Reason, McpClientError):
    """The transport's own report of a failed write; the client translates it."""


class WriteStalled(ChannelError):
    """The deadline passed before the whole frame was written (``written`` bytes were)."""

    def __init__(self, written: int) -> None:
        super().__init__("write stalled after %d bytes" % written)
        self.written = written


class WriteFailed(ChannelError):
    """The write side is closed or broken (EPIPE: the server stopped reading for good)."""


# --------------------------------------------------------------------------- configuration


class ConfigError(McpClientError):
    """``config.load`` cannot use the file: unreadable, not JSON, a field of the
    wrong type, an unset ``${VAR}``, no stdio server. ``path`` is the file,
    ``entry`` the server's key (``None`` for the file as a whole), ``reason``
    what is wrong; ``str()`` is one line naming the file and the entry."""

    def __init__(self, path: str, entry: Optional[str], reason: str) -> None:
        where = path if entry is None else '%s: server "%s"' % (path, entry)
        super().__init__(_one_line("%s: %s" % (where, reason)))
        self.path = path
        self.entry = entry
        self.reason = reason

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.path, self.entry, self.reason))


# --------------------------------------------------------------------------- code mode


class CodeModeError(_Reason, McpClientError):
    """Code mode cannot go on: the reason says why (``mcp_client.codemode``)."""


class NoServerStarted(CodeModeError):
    """``CodeMode.open``: no server started; the reason names each one's failure, with
    the last lines of its stderr (the operator's to read). ``brief``: the same without
    them (what a host may show its model and its user)."""

    brief: str = ""


class JailUnavailable(CodeModeError):
    """A jail was asked for and cannot be had; nothing runs unjailed instead."""


class UnknownServer(CodeModeError):
    """A server key asked for (``--server NAME``) is not in the config file."""


class TokenRefused(CodeModeError):
    """``CodeMode.run(program, approve=[token])``: the token is not one this runner
    issued for this program (forged or altered), or it is spent or expired. Nothing
    ran; the reason says which."""


def _one_line(text: str) -> str:
    """``text`` on one line: line breaks and every other unprintable character
    escaped (a file's name or a server's key may hold anything)."""
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )


# --------------------------------------------------------------------------- old names

#: Names that were renamed, each with its successor. They still resolve (here
#: and in the modules that re-export them), with a ``DeprecationWarning``.
DEPRECATED: Dict[str, str] = {"UnsupportedVersion": "ForeignVersionFault"}


def deprecated(module: str, name: str) -> type:
    """The class an old ``name`` of ``module`` stands for; warns at the caller's caller.

    For a module's ``__getattr__`` (PEP 562), which is only asked for names the
    module lacks; anything not in ``DEPRECATED`` is the usual ``AttributeError``.
    """
    new = DEPRECATED.get(name)
    if new is None:
        raise AttributeError("module %r has no attribute %r" % (module, name))
    # stacklevel 3: past this function and the module's __getattr__, to the import.
    warnings.warn(
        "%s.%s is deprecated; use %s" % (module, name, new), DeprecationWarning, stacklevel=3
    )
    found: type = globals()[new]
    return found


if TYPE_CHECKING:  # the checker sees a plain alias; at run time it warns
    UnsupportedVersion = ForeignVersionFault
else:

    def __getattr__(name: str) -> type:
        return deprecated(__name__, name)
