"""What a tool without an ``outputSchema`` returns: ``ToolOutput``, and its content blocks typed.

Pure: no I/O, no threads, no clocks. The five block kinds of MCP 2025-06-18
(``schema.ts``: ``TextContent``, ``ImageContent``, ``AudioContent``,
``ResourceLink``, ``EmbeddedResource`` holding ``TextResourceContents`` or
``BlobResourceContents``), each with its optional ``annotations``, are
``TypedDict``s keyed by their ``type``, so a program that tests
``block["type"] == "image"`` may read ``block["mimeType"]`` under
``mypy --strict``. They describe the dict the server sent; nothing converts
it, and a block of a kind this revision does not know reaches the program as
it was sent (a program tests ``block["type"]`` before reading other keys).

``ToolOutput`` is ``{"text": ..., "data": ..., "content": [...]}``:

* ``text``: the text blocks' text joined by ``"\\n"``;
* ``data``: ``text`` parsed as JSON when the whole of it, stripped, is one
  JSON object or array (``jsonvalue.parse``: bounded like every line the
  client reads, so a hostile text costs no more than its result line did), or
  else as a Python literal of a dict, a list or a tuple (a server that sent a
  ``repr``: ``pyrepr.parse``, bounded the same, evaluating nothing); else
  ``None``. A scalar is not parsed: ``"42"`` stays text;
* ``content``: every block, as the server sent it.

Every generated module declares the same types (``DECLARATIONS``, its
source text, checked against the classes here by ``tests/test_content.py``),
so ``cap.mcp.<server>.ToolOutput`` and this one describe one dict.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union

from ..errors import CorruptionReport, LiteralRefused
from ..jsonvalue import JsonValue, parse
from ..protocol import CallToolResult, ContentBlock, Text
from . import pyrepr

__all__ = [
    "Annotations",
    "TextContent",
    "ImageContent",
    "AudioContent",
    "ResourceLink",
    "TextResourceContents",
    "BlobResourceContents",
    "EmbeddedResource",
    "Block",
    "ToolOutput",
    "NAMES",
    "DECLARATIONS",
    "parse_data",
    "text_of",
    "tool_output",
]


class Annotations(TypedDict, total=False):
    audience: List[Literal["user", "assistant"]]
    priority: float
    lastModified: str


class _Common(TypedDict, total=False):
    annotations: Annotations
    _meta: Dict[str, Any]


class _TextContent(TypedDict):
    type: Literal["text"]
    text: str


class _ImageContent(TypedDict):
    type: Literal["image"]
    data: str
    mimeType: str


class _AudioContent(TypedDict):
    type: Literal["audio"]
    data: str
    mimeType: str


class _ResourceLinkBase(TypedDict):
    type: Literal["resource_link"]
    uri: str
    name: str


class _ResourceLinkExtras(TypedDict, total=False):
    title: str
    description: str
    mimeType: str
    size: int


class _TextResourceContents(TypedDict):
    uri: str
    text: str


class _BlobResourceContents(TypedDict):
    uri: str
    blob: str


class _ResourceExtras(TypedDict, total=False):
    mimeType: str
    _meta: Dict[str, Any]


class TextContent(_TextContent, _Common):
    pass


class ImageContent(_ImageContent, _Common):
    pass


class AudioContent(_AudioContent, _Common):
    pass


class ResourceLink(_ResourceLinkBase, _ResourceLinkExtras, _Common):
    pass


class TextResourceContents(_TextResourceContents, _ResourceExtras):
    pass


class BlobResourceContents(_BlobResourceContents, _ResourceExtras):
    pass


class _EmbeddedResource(TypedDict):
    type: Literal["resource"]
    resource: Union[TextResourceContents, BlobResourceContents]


class EmbeddedResource(_EmbeddedResource, _Common):
    pass


Block = Union[TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource]


class ToolOutput(TypedDict):
    text: str
    data: Optional[Union[Dict[str, Any], List[Any]]]
    content: List[Block]


#: The names ``DECLARATIONS`` binds in a generated module (none may be a tool's or a type's).
NAMES: Tuple[str, ...] = (
    "Annotations",
    "TextContent",
    "ImageContent",
    "AudioContent",
    "ResourceLink",
    "TextResourceContents",
    "BlobResourceContents",
    "EmbeddedResource",
    "Block",
    "ToolOutput",
)

# The source of the declarations above as a generated module spells them: the
# same keys and types, with only the typing names TYPING_NAMES holds, each
# private half named after its type (no generated type name starts with "_").
_DECLARATIONS = '''
Annotations = TypedDict("Annotations", {
    "audience": List[Literal["user", "assistant"]], "priority": float, "lastModified": str,
}, total=False)
_BlockCommon = TypedDict("_BlockCommon", {
    "annotations": Annotations, "_meta": Dict[str, Any],
}, total=False)
_TextContent = TypedDict("_TextContent", {"type": Literal["text"], "text": str})
class TextContent(_TextContent, _BlockCommon):
    pass
_ImageContent = TypedDict("_ImageContent", {
    "type": Literal["image"], "data": str, "mimeType": str,
})
class ImageContent(_ImageContent, _BlockCommon):
    pass
_AudioContent = TypedDict("_AudioContent", {
    "type": Literal["audio"], "data": str, "mimeType": str,
})
class AudioContent(_AudioContent, _BlockCommon):
    pass
_ResourceLinkBase = TypedDict("_ResourceLinkBase", {
    "type": Literal["resource_link"], "uri": str, "name": str,
})
_ResourceLinkExtras = TypedDict("_ResourceLinkExtras", {
    "title": str, "description": str, "mimeType": str, "size": int,
}, total=False)
class ResourceLink(_ResourceLinkBase, _ResourceLinkExtras, _BlockCommon):
    pass
_ResourceExtras = TypedDict("_ResourceExtras", {
    "mimeType": str, "_meta": Dict[str, Any],
}, total=False)
_TextResourceContents = TypedDict("_TextResourceContents", {"uri": str, "text": str})
class TextResourceContents(_TextResourceContents, _ResourceExtras):
    pass
_BlobResourceContents = TypedDict("_BlobResourceContents", {"uri": str, "blob": str})
class BlobResourceContents(_BlobResourceContents, _ResourceExtras):
    pass
_EmbeddedResource = TypedDict("_EmbeddedResource", {
    "type": Literal["resource"],
    "resource": Union[TextResourceContents, BlobResourceContents],
})
class EmbeddedResource(_EmbeddedResource, _BlockCommon):
    pass
Block = Union[TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource]
'''

#: The generated module's lines for the block types (``ToolOutput`` is codegen's).
DECLARATIONS: Tuple[str, ...] = tuple(_DECLARATIONS.strip("\n").split("\n"))
#: ``typing`` names ``DECLARATIONS`` spells.
DECLARATION_TYPING: Tuple[str, ...] = ("Any", "Dict", "List", "Literal", "TypedDict", "Union")

_OPENERS = ("{", "[", "(")
_CLOSERS = ("}", "]", ")")


def parse_data(text: str) -> Optional[JsonValue]:
    """``text``'s data when, stripped, it is one JSON object or array, or else one Python
    literal of a dict, list or tuple (a ``repr``: ``pyrepr``, which evaluates nothing);
    else ``None``; total."""
    stripped = text.strip()
    # The cheap test first: most text is prose, and a parse that fails costs a scan.
    if not stripped.startswith(_OPENERS) or not stripped.endswith(_CLOSERS):
        return None
    try:
        value = parse(stripped)
    except CorruptionReport:
        try:
            value = pyrepr.parse(stripped)
        except LiteralRefused:
            return None
    return value if type(value) in (dict, list) else None


def text_of(result: CallToolResult) -> str:
    """The text blocks of ``result`` joined by ``"\\n"``: a ``ToolOutput``'s ``text``."""
    return "\n".join(block.text for block in result.content if isinstance(block, Text))


def tool_output(result: CallToolResult) -> Dict[str, Any]:
    """The ``ToolOutput`` dict for ``result``: text, data, every block as sent; total."""
    text = text_of(result)
    return {
        "text": text,
        "data": parse_data(text),
        "content": [_raw_block(block) for block in result.content],
    }


def _raw_block(block: ContentBlock) -> Any:
    if isinstance(block, Text):
        return block.raw if block.raw is not None else {"type": "text", "text": block.text}
    return block.raw


# What help() shows for each type (a TypedDict's body holds its keys only).
_DOCS = {
    "Annotations": "A block's optional annotations: audience, priority, lastModified.",
    "TextContent": 'A text block: ``{"type": "text", "text": ...}``.',
    "ImageContent": 'An image block: ``{"type": "image", "data": <base64>, "mimeType": ...}``.',
    "AudioContent": 'An audio block: ``{"type": "audio", "data": <base64>, "mimeType": ...}``.',
    "ResourceLink": 'A link to a resource: ``{"type": "resource_link", "uri": ..., "name": ...}``.',
    "TextResourceContents": "An embedded resource's text contents: ``uri``, ``text``.",
    "BlobResourceContents": "An embedded resource's binary contents: ``uri``, ``blob`` (base64).",
    "EmbeddedResource": 'An embedded resource: ``{"type": "resource", "resource": ...}``.',
    "ToolOutput": (
        "What a tool without an outputSchema returns to a program: ``text`` (the text "
        "blocks joined), ``data`` (that text as JSON, or as a Python literal, when it is one "
        "object or array, else None), ``content`` (every block as sent)."
    ),
}
for _name, _doc in _DOCS.items():
    globals()[_name].__doc__ = _doc
