"""MCP messages on top of the envelope: the handshake, tool listings, tool results.

Pure. Each ``decode_*`` takes the raw ``result`` of a JSON-RPC response and
returns a frozen value or raises :class:`ProtocolFault` whose reason names
the path (``tools[3].inputSchema``). Strict envelope, tolerant content: fields
this client reads are checked, unknown fields are ignored, schemas and
``structuredContent`` cross raw. One lying tool fails the whole page: a server
that lies about one tool is not a server to half-trust.

The values are frozen (compared, hashed, printed and pickled by their fields) but
not dataclasses, so that importing the client stays cheap; ``dataclasses.replace``,
``fields`` and ``asdict`` still work on them.

Revision: MCP 2025-06-18 (Lifecycle; Server Features / Tools).
"""

from __future__ import annotations

from . import errors
from ._frozen import Frozen, setters
from ._lazy import lazy_aliases
from .errors import ForeignVersionFault, ProtocolFault

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple, Union

    from .jsonvalue import JsonValue

__all__ = [
    "INITIALIZE",
    "NOTIFICATIONS_INITIALIZED",
    "TOOLS_LIST",
    "TOOLS_CALL",
    "PING",
    "NOTIFICATIONS_CANCELLED",
    "NOTIFICATIONS_PROGRESS",
    "ELICITATION_CREATE",
    "ELICITATION_CAPABILITY",
    "TOOLS_CAPABILITY",
    "Listing",
    "LISTINGS",
    "TOOLS_LISTING",
    "REQUESTED_VERSION",
    "SUPPORTED_VERSIONS",
    "ClientInfo",
    "initialize_params",
    "ServerInfo",
    "ToolsCapability",
    "InitializeResult",
    "decode_initialize",
    "ToolDescriptor",
    "ToolsPage",
    "decode_tools_page",
    "page_cursor",
    "tools_list_params",
    "Text",
    "Other",
    "ContentBlock",
    "CallToolResult",
    "decode_call_tool",
    "call_tool_params",
    "ProtocolFault",
    "ForeignVersionFault",
]

if TYPE_CHECKING:  # PORT.md's name for the fault, renamed; at run time it warns
    UnsupportedVersion = ForeignVersionFault


# The method names this client speaks, and the one place that spells them
# (MCP 2025-06-18: Lifecycle, Server Features / Tools, Utilities / Ping).
INITIALIZE = "initialize"
NOTIFICATIONS_INITIALIZED = "notifications/initialized"
TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"
PING = "ping"
#: A peer gave up on one of its requests (Utilities / Cancellation); ``serve`` heeds it.
NOTIFICATIONS_CANCELLED = "notifications/cancelled"
#: The server capability (``InitializeResult.capabilities``) the tool methods need.
TOOLS_CAPABILITY = "tools"
#: What ``serve`` (a server) sends its host: a request's progress (Utilities / Progress),
#: and a question for the person behind it (Client Features / Elicitation), which a
#: host that declares the ``elicitation`` capability answers.
NOTIFICATIONS_PROGRESS = "notifications/progress"
ELICITATION_CREATE = "elicitation/create"
ELICITATION_CAPABILITY = "elicitation"

REQUESTED_VERSION = "2025-06-18"
#: Every revision this client can speak, newest first; nothing else is accepted.
SUPPORTED_VERSIONS: Tuple[str, ...] = ("2025-06-18", "2025-03-26", "2024-11-05")

# The values below are frozen, but not dataclasses: see mcp_client._frozen. They
# compare, hash, print, pickle, copy and work with dataclasses.replace/fields/asdict
# as the frozen dataclasses they were.


class ClientInfo(Frozen):
    """How this client names itself in ``initialize`` (a frozen value)."""

    __slots__ = ("name", "version")
    name: str
    version: str

    def __init__(self, name: str = "mcp_client", version: str = "0") -> None:
        self._assign(name, version)


def initialize_params(info: ClientInfo) -> JsonValue:
    """The ``initialize`` params.

    The declared capabilities are an empty object, and that is a security
    decision: no ``sampling`` (a server must not spend our model), no ``roots``
    (it learns nothing about our filesystem), no ``elicitation`` (it must not put
    questions to a human through us). A test pins the emptiness.
    """
    return {
        "protocolVersion": REQUESTED_VERSION,
        "capabilities": {},
        "clientInfo": {"name": info.name, "version": info.version},
    }


class ServerInfo(Frozen):
    """The server's ``serverInfo``; ``version`` is ``""`` when the server gave none."""

    __slots__ = ("name", "version", "title")
    name: str
    version: str
    title: Optional[str]

    def __init__(self, name: str, version: str, title: Optional[str] = None) -> None:
        self._assign(name, version, title)


class ToolsCapability(Frozen):
    """The server's ``capabilities.tools``."""

    __slots__ = ("list_changed",)
    list_changed: bool

    def __init__(self, list_changed: bool = False) -> None:
        self._assign(list_changed)


class InitializeResult(Frozen):
    """The decoded handshake; ``protocol_version`` is in ``SUPPORTED_VERSIONS``."""

    __slots__ = ("protocol_version", "server_info", "capabilities", "tools", "instructions")
    protocol_version: str
    server_info: ServerInfo
    capabilities: Dict[str, JsonValue]
    tools: Optional[ToolsCapability]
    instructions: Optional[str]

    def __init__(
        self,
        protocol_version: str,
        server_info: ServerInfo,
        capabilities: Dict[str, JsonValue],
        tools: Optional[ToolsCapability],
        instructions: Optional[str] = None,
    ) -> None:
        self._assign(protocol_version, server_info, capabilities, tools, instructions)


def decode_initialize(result: JsonValue) -> InitializeResult:
    """Decode an ``initialize`` result; a foreign version is :class:`ForeignVersionFault`."""
    body = _object(result, "result")
    version = _version(body.get("protocolVersion"))
    capabilities = _object(body.get("capabilities"), "capabilities")
    return InitializeResult(
        protocol_version=version,
        server_info=_server_info(body.get("serverInfo")),
        capabilities=capabilities,
        tools=_tools_capability(capabilities),
        instructions=_optional_str(body, "instructions", "instructions"),
    )


def _version(version: JsonValue) -> str:
    # A non-string is a malformed result, not a version: checked first, so the
    # fault never has to render an arbitrary value (a 5,000-digit int or a
    # 10,000-deep list would make repr raise instead of the fault).
    if type(version) is not str:
        raise ProtocolFault("protocolVersion is %s, not a string" % _kind(version))
    if version not in SUPPORTED_VERSIONS:
        raise ForeignVersionFault(version, SUPPORTED_VERSIONS)
    return version


def _kind(value: JsonValue) -> str:
    return _KINDS.get(type(value), "not JSON")


_KINDS = {
    type(None): "missing or null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    dict: "an object",
}


def _server_info(raw: JsonValue) -> ServerInfo:
    info = _object(raw, "serverInfo")
    name = info.get("name")
    if type(name) is not str:
        raise ProtocolFault("serverInfo.name is not a string")
    version = _optional_str(info, "version", "serverInfo.version")
    return ServerInfo(name, version or "", _optional_str(info, "title", "serverInfo.title"))


def _tools_capability(capabilities: Dict[str, JsonValue]) -> Optional[ToolsCapability]:
    if TOOLS_CAPABILITY not in capabilities or capabilities[TOOLS_CAPABILITY] is None:
        return None
    tools = _object(capabilities[TOOLS_CAPABILITY], "capabilities.tools")
    changed = tools.get("listChanged", False)
    if type(changed) is not bool:
        raise ProtocolFault("capabilities.tools.listChanged is not a boolean")
    return ToolsCapability(changed)


# ----------------------------------------------------------------------------- tools/list


class ToolDescriptor(Frozen):
    """One listed tool. ``input_schema`` and ``output_schema`` are raw, untrusted JSON."""

    __slots__ = (
        "name",
        "input_schema",
        "title",
        "description",
        "output_schema",
        "annotations",
    )
    name: str
    input_schema: JsonValue
    title: Optional[str]
    description: Optional[str]
    output_schema: JsonValue
    annotations: Optional[Dict[str, JsonValue]]

    def __init__(
        self,
        name: str,
        input_schema: JsonValue,
        title: Optional[str] = None,
        description: Optional[str] = None,
        output_schema: JsonValue = None,
        annotations: Optional[Dict[str, JsonValue]] = None,
    ) -> None:
        # A listing builds a thousand of these: each slot is set by its own setter
        # (no Python call per field, as _assign's loop would make). Still frozen.
        _set_name(self, name)
        _set_input_schema(self, input_schema)
        _set_title(self, title)
        _set_description(self, description)
        _set_output_schema(self, output_schema)
        _set_annotations(self, annotations)


(
    _set_name,
    _set_input_schema,
    _set_title,
    _set_description,
    _set_output_schema,
    _set_annotations,
) = setters(ToolDescriptor)


class ToolsPage(Frozen):
    """One ``tools/list`` page; ``next_cursor`` is ``None`` on the last page."""

    __slots__ = ("tools", "next_cursor")
    tools: Tuple[ToolDescriptor, ...]
    next_cursor: Optional[str]

    def __init__(
        self, tools: Tuple[ToolDescriptor, ...], next_cursor: Optional[str] = None
    ) -> None:
        self._assign(tools, next_cursor)


def tools_list_params(cursor: Optional[str]) -> JsonValue:
    """``tools/list`` params: ``None`` (no params member) for the first page."""
    return None if cursor is None else {"cursor": cursor}


def decode_tools_page(result: JsonValue) -> ToolsPage:
    """Decode a ``tools/list`` result. An empty-string ``nextCursor`` ends the listing."""
    body = _object(result, "result")
    raw_tools = body.get("tools")
    if type(raw_tools) is not list:
        raise ProtocolFault("tools is not an array")
    return ToolsPage(_tools(raw_tools), page_cursor(body))


def page_cursor(result: JsonValue) -> Optional[str]:
    """Only the ``nextCursor`` of a ``tools/list`` result, checked as
    :func:`decode_tools_page` checks it: the next page can be asked for before
    this one is decoded."""
    return _optional_str(_object(result, "result"), "nextCursor", "nextCursor") or None


class Listing(Frozen):
    """A paginated list method (the spec's Pagination utility): its name, the
    params of a page (``None`` asks for the first), and the decoder of a page's
    items. The client's listing and replay's pagination are both driven by
    :data:`LISTINGS`; a new list method (``resources/list``) is one entry."""

    __slots__ = ("method", "params", "items")
    method: str
    params: Callable[[Optional[str]], JsonValue]
    items: Callable[[JsonValue], Tuple[Any, ...]]

    def __init__(
        self,
        method: str,
        params: Callable[[Optional[str]], JsonValue],
        items: Callable[[JsonValue], Tuple[Any, ...]],
    ) -> None:
        self._assign(method, params, items)


def _tools_of_page(result: JsonValue) -> Tuple[ToolDescriptor, ...]:
    return decode_tools_page(result).tools


TOOLS_LISTING = Listing(TOOLS_LIST, tools_list_params, _tools_of_page)
#: Every paginated method this client asks for, by name.
LISTINGS: Dict[str, Listing] = {TOOLS_LIST: TOOLS_LISTING}


def _tools(raw_tools: List[JsonValue]) -> Tuple[ToolDescriptor, ...]:
    # The hot path of a listing, one loop for the page: plain checks in line, each
    # descriptor made and filled by its slots' setters (no call of __init__ or of
    # a function per tool), and the fault's path only spelled out (by _tool_fault,
    # in the same order) when there is one.
    tools: List[ToolDescriptor] = []
    append = tools.append
    for entry in raw_tools:
        if type(entry) is not dict:
            raise _tool_fault(entry, len(tools))
        get = entry.get
        name, title, description, annotations = (
            get("name"),
            get("title"),
            get("description"),
            get("annotations"),
        )
        if (
            type(name) is not str
            or not name
            or "inputSchema" not in entry
            or (title is not None and type(title) is not str)
            or (description is not None and type(description) is not str)
            or (annotations is not None and type(annotations) is not dict)
        ):
            raise _tool_fault(entry, len(tools))
        tool = _new(ToolDescriptor)
        _set_name(tool, name)
        _set_input_schema(tool, entry["inputSchema"])
        _set_title(tool, title)
        _set_description(tool, description)
        _set_output_schema(tool, get("outputSchema"))
        _set_annotations(tool, annotations)
        append(tool)
    return tuple(tools)


_new = object.__new__


def _tool_fault(tool: JsonValue, index: int) -> ProtocolFault:
    where = "tools[%d]" % index
    if type(tool) is not dict:
        return ProtocolFault(where + " is not an object")
    name = tool.get("name")
    if type(name) is not str or not name:
        return ProtocolFault(where + ".name is not a non-empty string")
    if "inputSchema" not in tool:
        return ProtocolFault(where + ".inputSchema is missing")
    for key in ("title", "description"):
        if type(tool.get(key)) not in (str, type(None)):
            return ProtocolFault("%s.%s is not a string" % (where, key))
    return ProtocolFault(where + ".annotations is not an object")


# ----------------------------------------------------------------------------- tools/call


class Text(Frozen):
    """A ``text`` content block; ``raw`` is the block as the server sent it.

    ``raw`` is not compared: two blocks with the same text are the same text,
    whatever annotations the server hung on them.
    """

    __slots__ = ("text", "raw")
    _uncompared = _unshown = ("raw",)
    text: str
    raw: Optional[Dict[str, JsonValue]]

    def __init__(self, text: str, raw: Optional[Dict[str, JsonValue]] = None) -> None:
        # Every call result builds these: one setter a field, no loop. Still frozen.
        _set_text(self, text)
        _set_text_raw(self, raw)


_set_text, _set_text_raw = setters(Text)


class Other(Frozen):
    """Any other content block (``image``, ``audio``, ``resource``, ...): its kind, and
    the block's JSON as the server sent it, raw and untrusted (SEED.md, "tolerant
    content": like ``structuredContent``), so an image can reach the program."""

    __slots__ = ("kind", "raw")
    kind: str
    raw: Dict[str, JsonValue]

    def __init__(self, kind: str, raw: Dict[str, JsonValue]) -> None:
        _set_kind(self, kind)  # as Text's
        _set_other_raw(self, raw)


_set_kind, _set_other_raw = setters(Other)

if TYPE_CHECKING:
    ContentBlock = Union[Text, Other]
else:  # made on first use: typing is not imported with the client
    __getattr__ = lazy_aliases(
        globals(), errors.deprecated, ContentBlock=lambda t: t.Union[Text, Other]
    )


class CallToolResult(Frozen):
    """A ``tools/call`` result. ``is_error`` is the tool's own failure, not ours."""

    __slots__ = ("content", "is_error", "structured_content")
    content: Tuple[ContentBlock, ...]
    is_error: bool
    structured_content: JsonValue

    def __init__(
        self,
        content: Tuple[ContentBlock, ...],
        is_error: bool = False,
        structured_content: JsonValue = None,
    ) -> None:
        _set_content(self, content)  # as Text's
        _set_is_error(self, is_error)
        _set_structured_content(self, structured_content)


_set_content, _set_is_error, _set_structured_content = setters(CallToolResult)


def call_tool_params(name: str, arguments: JsonValue) -> JsonValue:
    """``tools/call`` params for the wire name ``name``."""
    return {"name": name, "arguments": arguments}


def decode_call_tool(result: JsonValue) -> CallToolResult:
    """Decode a ``tools/call`` result."""
    if type(result) is not dict:
        raise ProtocolFault("result is not an object")
    body: Dict[str, Any] = result
    raw_content = body.get("content")
    if type(raw_content) is not list:
        raise ProtocolFault("content is not an array")
    is_error = body.get("isError", False)
    if type(is_error) is not bool:
        raise ProtocolFault("isError is not a boolean")
    if len(raw_content) == 1:  # the common shape: one block, no map() or range() to set up
        content: Tuple[ContentBlock, ...] = (_block(raw_content[0], 0),)
    else:
        content = tuple(map(_block, raw_content, range(len(raw_content))))
    return CallToolResult(content, is_error, body.get("structuredContent"))


def _block(raw: JsonValue, index: int) -> ContentBlock:
    if type(raw) is not dict:
        raise ProtocolFault("content[%d] is not an object" % index)
    kind = raw.get("type")
    if type(kind) is not str:
        raise ProtocolFault("content[%d].type is not a string" % index)
    if kind == "text":
        text = raw.get("text")
        if type(text) is not str:
            raise ProtocolFault("content[%d].text is not a string" % index)
        return Text(text, raw)
    return Other(kind, raw)


# ----------------------------------------------------------------------------- helpers


def _object(value: JsonValue, where: str) -> Dict[str, Any]:
    if type(value) is not dict:
        raise ProtocolFault(where + " is not an object")
    return value


def _optional_str(body: Dict[str, Any], key: str, where: str) -> Optional[str]:
    value = body.get(key)
    if value is None or type(value) is str:
        return value
    raise ProtocolFault(where + " is not a string")
