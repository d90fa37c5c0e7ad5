"""Each tool's doc: the docstring of its function, and ``GeneratedTool.doc``.

Pure: no I/O, no threads, no clocks. ``build`` gives the doc's lines
(generator text and sanitized server text): the description, each parameter
(its type, description, default and allowed values), the keys of its input
objects, the result, the server's claims, and what a failure raises, within a
byte budget. ``literals`` spells those lines as the docstring the source
holds: a parenthesized run of ``"..."`` literals made by ``escape``, one per
line of text, so server text in it stays an inert literal. ``field_note`` is a
key's note, which the source's ``TypedDict`` comments show as well.
"""

from __future__ import annotations

import functools
import json
from typing import Any, List, Optional

from ..text import escape_lines, sanitize, scan_window
from ._model import (
    INDENT,
    MAX_NOTE_CHARS,
    NAMES_ONLY,
    RESULT,
    STRUCTURED,
    Function,
    ModelType,
    Names,
    default_text,
    held,
    literal,
    member_text,
    shape_of,
    signature_default,
    surface_type,
    untyped_reason,
    wrap,
)
from .schema import Choice, Field, Param, WholeValue

#: UTF-8 bytes of one tool's doc (``GeneratedTool.doc``, its docstring).
MAX_DOC_BYTES = 24 * 1024
#: Characters kept of a tool's description in its doc.
MAX_DOC_DESCRIPTION_CHARS = 8000
#: Characters kept of a parameter's or a key's description in a doc.
MAX_DOC_NOTE_CHARS = 1500


def build(function: Function, names: Names, limit: int) -> List[str]:
    """The docstring's lines (generator text, sanitized server text), within ``limit`` bytes."""
    lines = wrap(function.long_description, 72) or ["(The server gives no description.)"]
    if function.name != function.tool:  # the name the description and the server use
        lines += [""] + indented("The server's tool %s." % literal(function.tool), "")
    lines += _doc_params(function, names)
    lines += _doc_types("Input types:", function, names, True)
    lines += _doc_returns(function, names)
    lines += _doc_types("Result types:", function, names, False)
    if function.claims:
        lines += [""] + indented("Server says (claims, not checked): " + function.claims, "")
    lines += _raises(function)
    return _cut(lines, limit)


def _doc_params(function: Function, names: Names) -> List[str]:
    if isinstance(function.plan, WholeValue):
        return ["", "Args:"] + indented(
            "arguments: one dict, sent unchanged as the tool's arguments: "
            + sanitize(function.plan.reason, MAX_NOTE_CHARS),
            "    ",
        )
    if not function.params:
        return []
    lines = ["", "Args:"]
    for param, label in zip(function.params, function.labels):
        lines += indented("%s: %s" % (label, _param_note(param, label, names)), "    ")
    return lines


def _param_note(param: Param, label: str, names: Names) -> str:
    notes = [
        "(%s%s)"
        % (
            surface_type(param.type, names, NAMES_ONLY),
            ", optional" if param.optional else "",
        )
    ]
    if label != param.name:
        notes.append("sent as %s." % literal(param.name))
    described = _description_note(param.description)
    notes.append(described)
    choices = _choices(param.type)
    if choices:
        notes.append("One of: %s." % choices)
    notes.append(_default_note(param, described))
    reason = untyped_reason(param.type)
    if reason is not None:
        notes.append("(untyped: %s)" % sanitize(reason, MAX_NOTE_CHARS))
    return " ".join(note for note in notes if note)


def _default_note(param: Param, description: str) -> str:
    """The default, said once: not again when the description says it already."""
    if not param.has_default or param.default is None:  # "= None" says it already
        return ""
    shown = default_text(param) or sanitize(json.dumps(param.default), MAX_NOTE_CHARS)
    if _says_default(description, param.default, shown):
        return ""
    if signature_default(param) is not None:
        return "Default: %s." % shown
    return "Default: %s (the server applies it when this is left out)." % shown


def _says_default(description: str, value: Any, shown: str) -> bool:
    lowered = description.lower()
    if "default" not in lowered:
        return False
    spelled = value if type(value) is str else json.dumps(value)
    return shown in description or str(spelled).lower() in lowered[lowered.find("default") :]


def _sentence(text: str) -> str:
    """``text`` ending in a full stop (or its own punctuation), so notes after it read apart."""
    return text + "." if text and text[-1] not in ".!?:;)" else text


def _choices(kind: ModelType) -> str:
    kind = held(kind)
    if not isinstance(kind, Choice):
        return ""
    return ", ".join(member_text(member) for member in kind.members)


def _doc_types(title: str, function: Function, names: Names, is_input: bool) -> List[str]:
    declarations = [d for d in function.declarations if d.is_input is is_input]
    if not declarations:
        return []
    lines = ["", title]
    for declaration in reversed(declarations):  # outermost first, as a reader meets them
        shape = shape_of(declaration, names, False)
        lines += indented("%s: %s" % (names.by_site[declaration.site], shape), "    ")
        for field in declaration.fields:
            note = field_note(field)
            if note:
                lines += indented("%s: %s" % (literal(field.name), note), "        ")
    return lines


def _description_note(description: Optional[str]) -> str:
    """A parameter's or key's description as a docstring sentence. One ``$defs``
    entry is every ``$ref`` site's (255 sites, one 200k-character description:
    issue 25), so it is built once: the cache's key is only what ``sanitize``
    reads of the text (its window and one more), which is the same answer and
    holds no more than that."""
    return sanitized_note((description or "")[: scan_window(MAX_DOC_NOTE_CHARS) + 1])


@functools.lru_cache(maxsize=1024)
def sanitized_note(window: str) -> str:
    return _sentence(sanitize(window, MAX_DOC_NOTE_CHARS))


def field_note(field: Field) -> str:
    notes = [_description_note(field.description)]
    choices = _choices(field.type)
    if choices:
        notes.append("One of: %s." % choices)
    reason = untyped_reason(field.type)
    if reason is not None:
        notes.append("(untyped: %s)" % sanitize(reason, MAX_NOTE_CHARS))
    return " ".join(note for note in notes if note)


def _doc_returns(function: Function, names: Names) -> List[str]:
    if function.returns == RESULT and function.result is not None:
        calls = function.seen_calls
        text = (
            "%s: a ToolOutput (text, data, content) whose data is the shape observed in "
            "%d call%s; the server declares no outputSchema (observed, not promised: "
            "nothing checks it)." % (names.of(function.result), calls, "" if calls == 1 else "s")
        )
        return ["", "Returns:"] + indented(text, "    ")
    if function.returns == RESULT:
        return _RETURNS_TOOL_OUTPUT
    if function.result is None:
        text = "dict[str, Any]: the call's structuredContent, untyped: %s." % function.result_reason
    else:
        text = _CHECKED_RESULT % names.of(function.result)
    return ["", "Returns:"] + indented(text, "    ")


#: A typed result's paragraph (the same for every such tool but its name).
_CHECKED_RESULT = (
    "%s: the call's structuredContent, as the server sent it, checked against "
    "the outputSchema when it arrives (a mismatch raises ResultMismatch)."
)


def _raises(function: Function) -> List[str]:
    if function.returns == STRUCTURED and function.output is None:
        return _RAISES_UNCHECKED  # no record to check the result against
    return _RAISES[function.returns]


def indented(text: str, indent: str) -> List[str]:
    """``text`` wrapped to 72 columns, every line after the first indented further."""
    wrapped = wrap(text, 72 - len(indent) - 4)
    return [
        (indent if index == 0 else indent + INDENT) + line for index, line in enumerate(wrapped)
    ]


def _cut(lines: List[str], limit: int) -> List[str]:
    """The lines that fit in ``limit`` UTF-8 bytes (with their breaks), and a mark if cut."""
    room = limit - 64  # for the mark
    if len("\n".join(lines).encode("utf-8")) + 1 <= room:  # the common case: one measure
        return lines
    size = 0
    for index, line in enumerate(lines):
        size += len(line.encode("utf-8")) + 1
        if size > room:
            return lines[:index] + [_cut_mark(lines[index:])]
    return lines


def _cut_mark(rest: List[str]) -> str:
    """What a cut doc says of what it left out: the sections it did not reach."""
    left = [line.rstrip(":") for line in rest if line in _SECTIONS]
    return "(cut here: a tool's doc is at most %d bytes; %d lines not shown%s)" % (
        MAX_DOC_BYTES,
        len(rest),
        ", with " + ", ".join(left) if left else "",
    )


_SECTIONS = ("Args:", "Input types:", "Returns:", "Result types:")


def literals(doc: List[str], indent: str = INDENT) -> List[str]:
    """The doc as one docstring: adjacent ``escape``d literals, one per line of text."""
    bodies = escape_lines(doc)
    if len(bodies) == 1:
        return [indent + '"' + bodies[0] + '"']
    last = len(bodies) - 1
    return (
        [indent + '("' + bodies[0] + '\\n"']
        + [indent + ' "' + body + '\\n"' for body in bodies[1:last]]
        + [indent + ' "' + bodies[last] + '")']
    )


# The doc's fixed paragraphs, wrapped once.
_RETURNS_TOOL_OUTPUT = ["", "Returns:"] + indented(
    "ToolOutput: a dict whose keys read as attributes too: text, the text blocks "
    "joined by newlines; data, that text parsed when it is one JSON object or array, "
    "or a Python literal of one (else None); content, every content block as the "
    'server sent it (images and resources too: test block["type"] before reading its '
    "other keys).",
    "    ",
)
_RAISES_UNCHECKED = ["", "Raises:"] + indented(
    "ToolFailed: the tool reported an error (isError) or brought no structuredContent; "
    "str() is its error text.",
    "    ",
)
_RAISES = {
    STRUCTURED: _RAISES_UNCHECKED
    + indented(
        "ResultMismatch: the structuredContent breaks the declared outputSchema "
        "(.path, .expected, .got).",
        "    ",
    ),
    RESULT: ["", "Raises:"]
    + indented(
        "ToolFailed: the tool reported an error (isError); str() is its error text.", "    "
    ),
}


#: What a doc says that every tool's doc says: the paragraphs a model is told once (in
#: the instructions ``serve`` gives), each with what stands in its place.
_SAID_ONCE = (
    ("\n".join(_RETURNS_TOOL_OUTPUT), "\nReturns:\n    ToolOutput (a dict: see the instructions)"),
    ("\n".join(_RAISES[STRUCTURED]), ""),
    ("\n".join(_RAISES_UNCHECKED), ""),
    ("\n".join(_RAISES[RESULT]), ""),
)


def for_model(doc: str) -> str:
    """``doc`` (``GeneratedTool.doc``) without what every doc says -- the ``Raises``
    block, what a ``ToolOutput`` is, that a typed result is checked -- which a model
    reads once, in the instructions."""
    for said, instead in _SAID_ONCE:
        doc = doc.replace(said, instead)
    head = doc.find(_RETURNS_HEAD)
    if head >= 0:  # "Returns:\n    Name: the call's structuredContent, ..." -> "Name"
        start = head + len(_RETURNS_HEAD)
        name = doc[start : doc.find(":", start)]
        said = "\n".join(indented(_CHECKED_RESULT % name, "    "))
        doc = doc.replace("Returns:\n" + said, "Returns:\n    %s (a dict)" % name, 1)
    return doc.rstrip("\n")


_RETURNS_HEAD = "\nReturns:\n    "
