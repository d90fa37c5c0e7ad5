"""The surface: one line per function for a model to read, and its budget.

Pure: no I/O, no threads, no clocks. ``surface_line`` renders each function's
line in pieces (each variant of its parameters and result rendered when a
rung first asks for it); ``fit`` picks the first rung of ``RUNGS`` at which the whole surface fits
``MAX_SURFACE_BYTES`` (``codegen``'s module doc, "The surface budget", says what
gives first); ``signature_line`` is the doc's first line, the fullest surface
line without its comment.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Tuple

from ..errors import SurfaceTooLarge
from ..text import truncate
from ._model import (
    MAX_NOTE_CHARS,
    STRUCTURED,
    TOOL_OUTPUT,
    Function,
    Names,
    Show,
    signature_default,
    surface_type,
    with_star,
)
from .schema import Nullable, Param, WholeValue

#: UTF-8 bytes of surface: a larger one is cut (see codegen's module doc), and bare
#: signatures past it are refused.
MAX_SURFACE_BYTES = 64 * 1024
#: Characters kept of a tool's description in the surface.
MAX_DESCRIPTION_CHARS = 400
#: UTF-8 bytes of the signature line a doc starts with.
MAX_DOC_SIGNATURE_BYTES = 2 * 1024
#: Characters of a brief line's signature, and of its first sentence.
MAX_BRIEF_SIGNATURE_CHARS, MAX_BRIEF_SENTENCE_CHARS = 240, 160


class Rung(NamedTuple):
    """One cut of the surface budget: what every line still shows."""

    description_chars: int
    result_shapes: bool
    input_shapes: bool
    claims: bool
    defaults: bool
    plain_params: bool
    plain_returns: bool


# What gives first when the surface would pass MAX_SURFACE_BYTES, rung by rung
# (see codegen's module doc).
RUNGS: Tuple[Rung, ...] = (
    Rung(MAX_DESCRIPTION_CHARS, True, True, True, True, False, False),
    Rung(MAX_NOTE_CHARS, True, True, True, True, False, False),
    Rung(MAX_NOTE_CHARS, False, True, True, True, False, False),
    Rung(MAX_NOTE_CHARS, False, False, True, True, False, False),
    Rung(0, False, False, True, True, False, False),
    Rung(0, False, False, False, True, False, False),
    Rung(0, False, False, False, False, True, False),
    Rung(0, False, False, False, False, True, True),
)


class Line:
    """One function's surface line in pieces, so that each rung is a lookup and a join.

    A variant of the parameters or the result is rendered when a rung (or the
    doc's signature line) first asks for it: a real server's surface fits at the
    first rung, and its other variants are never spelt.
    """

    __slots__ = (
        "head",
        "claims",
        "description",
        "long_description",
        "_function",
        "_names",
        "_params",
        "_returns",
        "_input_records",
    )

    def __init__(self, head: str, claims: str, function: Function, names: Names) -> None:
        self.head = head  # "<module>.<function>("
        self.claims = claims  # "[server says: ...]", or ""
        self.description = function.description
        self.long_description = function.long_description
        self._function = function
        self._names = names
        self._params: Dict[Tuple[bool, bool, bool], str] = {}
        self._returns: Dict[Tuple[bool, bool], str] = {}
        # Without an input record, the parameters read the same with shapes or without.
        self._input_records = any(d.is_input for d in function.declarations)

    def params(self, shapes: bool, defaults: bool, plain: bool) -> str:
        key = (shapes or not self._input_records, defaults, plain)
        text = self._params.get(key)
        if text is None:
            text = self._params[key] = _surface_params(self._function, self._names, *key)
        return text

    def returns(self, shapes: bool, plain: bool) -> str:
        key = (shapes, plain)
        text = self._returns.get(key)
        if text is None:
            text = self._returns[key] = _surface_returns(self._function, self._names, *key)
        return text


def fit(lines: List[Line]) -> List[str]:
    """Each function's line, at the first rung where the whole surface fits."""
    size = 0
    for rung in RUNGS:
        rendered = [render(line, rung) for line in lines]
        size = len("\n".join(rendered).encode("utf-8")) + 1 if rendered else 0
        if size <= MAX_SURFACE_BYTES:
            return rendered
    raise SurfaceTooLarge(size, MAX_SURFACE_BYTES)


def render(line: Line, rung: Rung) -> str:
    params = line.params(rung.input_shapes, rung.defaults, rung.plain_params)
    returns = line.returns(rung.result_shapes, rung.plain_returns)
    description = cut_words(line.description, rung.description_chars)
    claim = line.claims if rung.claims else ""
    comment = claim + " " + description if claim and description else claim or description
    text = "%s%s) -> %s" % (line.head, params, returns)
    return "%s  # %s" % (text, comment) if comment else text


def cut_words(text: str, limit: int) -> str:
    """At most ``limit`` characters, a cut made at a word boundary and marked ``…``.

    A word longer than half the room is cut inside (a URL, a path), so a
    long first word cannot empty the note.
    """
    if len(text) <= limit:
        return text
    if limit < 2:
        return ""
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space >= limit // 2 or (space > 0 and text[limit - 1] == " "):
        head = head[:space]
    return head.rstrip(" ,;:") + _ELLIPSIS


_ELLIPSIS = "\u2026"


def surface_line(module_name: str, function: Function, names: Names) -> Line:
    head = "%s.%s(" % (module_name, function.name)
    claims = "[server says: %s]" % function.claims if function.claims else ""
    return Line(head, claims, function, names)


def _surface_params(
    function: Function, names: Names, shapes: bool, defaults: bool, plain: bool
) -> str:
    if isinstance(function.plan, WholeValue):
        return "arguments: dict[str, Any]"
    show = Show(shapes, plain)
    return ", ".join(
        with_star(
            function, lambda param, label: _surface_param(param, label, names, show, defaults)
        )
    )


def _surface_param(param: Param, label: str, names: Names, show: Show, defaults: bool) -> str:
    kind = param.type
    if not param.optional:
        return "%s: %s" % (label, surface_type(kind, names, show))
    default = signature_default(param) if defaults else None
    if default is not None:
        return "%s: %s = %s" % (label, surface_type(kind, names, show), default)
    if isinstance(kind, Nullable) and not show.plain:
        kind = kind.inner  # one "| None" is enough
    return "%s: %s | None = None" % (label, surface_type(kind, names, show))


def _surface_returns(function: Function, names: Names, shapes: bool, plain: bool) -> str:
    if plain:
        return "Any"
    if function.result is not None:
        return surface_type(function.result, names, Show(shapes, False))
    if function.returns == STRUCTURED:
        return "dict[str, Any]"
    # The line alone must say what a ToolOutput holds, as it says a result type's
    # shape: a model reading "-> ToolOutput" could not know to read ["text"].
    return TOOL_OUTPUT + _TOOL_OUTPUT_SHAPE if shapes else TOOL_OUTPUT


#: ``ToolOutput``'s keys as the surface shows them (``ToolOutput`` in the module).
_TOOL_OUTPUT_SHAPE = '{"text": str, "data": dict | list | None, "content": list[Block]}'


def brief_line(line: Line, module: str) -> str:
    """One line a search answer shows: ``<module>.<function>(...) -> <Type>  # <the first
    sentence>``, the types by name (a record's keys are the doc's), the defaults kept
    while the signature is short; the signature cut at a word past
    :data:`MAX_BRIEF_SIGNATURE_CHARS`."""
    head = module + "." + line.head.rsplit(".", 1)[-1]
    returns = line.returns(False, False)
    signature = "%s%s) -> %s" % (head, line.params(False, True, False), returns)
    if len(signature) > MAX_BRIEF_SIGNATURE_CHARS:
        params = cut_words(line.params(False, False, False), MAX_BRIEF_SIGNATURE_CHARS)
        signature = "%s%s) -> %s" % (head, params, returns)
    sentence = first_sentence(line.long_description, MAX_BRIEF_SENTENCE_CHARS)
    return "%s  # %s" % (signature, sentence) if sentence else signature


def first_sentence(text: str, limit: int) -> str:
    """``text`` to the end of its first sentence (or line), cut at a word past ``limit``."""
    end = len(text)
    for mark in (". ", ".\n", "\n"):
        found = text.find(mark)
        if 0 <= found < end:
            end = found + (1 if mark[0] == "." else 0)
    return cut_words(text[:end].strip(), limit)


def signature_line(line: Line) -> str:
    """The doc's first line: the fullest surface line without its comment, within
    ``MAX_DOC_SIGNATURE_BYTES`` (the shapes give way to the types' names, which
    the doc's type sections spell out, then the line is cut)."""
    text = ""
    for shapes in (True, False):
        text = "%s%s) -> %s" % (
            line.head,
            line.params(shapes, True, False),
            line.returns(shapes, False),
        )
        if len(text.encode("utf-8")) <= MAX_DOC_SIGNATURE_BYTES:
            return text
    return truncate(text, MAX_DOC_SIGNATURE_BYTES // 4)  # 4 bytes a character at most
