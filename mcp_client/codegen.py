"""From a server's ``tools/list`` to Python source text and a surface.

Pure: no I/O, no threads, no clocks. **The generator never compiles, imports,
execs or writes anything** (SEED.md, Purpose): ``generate`` returns text, and
compiling it is somebody else's verb in somebody else's place.

The generated module ``cap.mcp.<segment>`` (``segment`` is the mangled
server name) imports ``cap.internal.mcp as internal`` and the ``typing`` names
its annotations use, and holds one function per tool, sorted by function name
(so a server that lists its tools in a different order each boot still gives
the same text), each after the result types it returns, if any. Every function
ends in exactly one call of the seam::

    return internal.invoke("<server>", "<wire tool name>", arguments)

where ``arguments`` is a ``dict`` keyed by the **wire** parameter names. A
``Typed`` plan's parameters are taken by label, required ones first, optional
ones keyword-only with a default of ``None`` and left out of ``arguments``
when ``None``; a ``WholeValue`` plan (or a tool whose labels collide) takes
one ``dict`` named ``arguments`` and sends it as it is.

The cage (SEED.md, "The sanitizer cage plus the @ backstop"): server text
reaches the source only

* inside ``#`` comment lines that the generator starts, after ``sanitize``
  (control and direction-changing codepoints gone, length capped), with every
  line break coming from the generator's own wrap; and
* inside ``"..."`` literals made by the total ``escape`` (pure printable ASCII
  out, whatever goes in).

The first two lines are fixed text that pins the encoding, so a server name
can never become a PEP 263 coding declaration. ``scan_for_at`` then proves
that no ``@`` token is left outside comments and strings: generated code
needs no decorator, so one would mean the cage failed, and ``generate``
refuses rather than hand a compiler an ``@`` it did not write.

**Results and the seam's contract.** A function returns what
``internal.invoke`` returns, and the header of every module states what that
is: for a tool that declares an ``outputSchema`` (any value but ``null``), the
call's ``structuredContent`` as the server sent it, while a failed call
(``isError``, or no ``structuredContent``) raises instead of returning; for a
tool without one, the whole ``tools/call`` result, typed ``Any``. When
``schema.plan_output`` reads the schema as a ``Record``, the module declares a
result type and the function is annotated with it; otherwise it returns
``Any`` and its comment says why.

A result type is a ``TypedDict`` in its functional form::

    GetCurrentTimeResult = TypedDict("GetCurrentTimeResult", {"is_dst": bool})

Why a ``TypedDict``: ``structuredContent`` arrives as a JSON object, and a
``TypedDict`` describes that very ``dict`` without converting it, so the value
passes on unchanged into the next tool's arguments or into ``json.dumps``, and
the module keeps no code but its functions (a dataclass or ``NamedTuple``
would need a constructor and a conversion per call). Why the functional form:
its keys are string literals, so the keys are the wire keys verbatim and
escaped (a ``class`` body would need identifiers, and a mangled key would be a
key the ``dict`` does not have), and it needs no ``class`` statement. Since
``NotRequired`` only exists from Python 3.11, a record with any optional key
is declared ``total=False``: the type then claims less than the schema (any
key may be absent), never more, and a comment names the keys always present.
The names are the generator's: ``<FunctionInPascalCase>Result`` for a tool,
``<Parent>_<KeyLabelInPascalCase>`` for a nested object (the key through
``mangle_label``). ``_`` is followed only by a digit inside a converted name,
and by a capital only where a nested name begins, so the names are distinct
from each other; the ``Result`` ending or a ``_`` before a capital keeps them
apart from every function (lower case), ``typing`` import and keyword. Two
sibling keys whose labels still meet (an engineered digest) leave the second
one's nested object ``Any``.

The surface is one line per function, in the same order, for a model to read::

    cap.mcp.git.git_reset(repo_path: str) -> Any  # Unstages all staged changes
    cap.mcp.time.now(zone: str) -> NowResult{"is_dst": bool}  # [server says: read-only] Now

Types there use the modern spelling (``list[str]``, ``int | None``), since
nobody runs them; the source spells them with ``typing`` so that it also runs
on Python 3.9. ``Any`` marks a value passed
through untyped. A result shows its type's name and its shape: keys as
escaped literals, ``"key"?:`` for a key that may be absent, ``...`` for an
object that admits other keys; a shape longer than ``MAX_SHAPE_CHARS`` shows
only its top-level keys, and then only the name. The tool's annotations and
its title (when it differs from the name) are shown as what they are, the
server's claims: ``[server says: title "..."; read-only, idempotent]``.

**The surface budget.** When the surface would pass ``MAX_SURFACE_BYTES``,
it is cut rung by rung, the same cut on every line, until it fits: the
descriptions to ``MAX_NOTE_CHARS`` characters; then the result shapes, down
to their types' names; then the descriptions; then the claims. Only bare
signatures that still do not fit refuse the server (``SurfaceTooLarge``). The
order is a model's: what a tool does in a sentence, then what it returns,
then the rest of the prose. The source is never cut.
"""

from __future__ import annotations

import io
import re
import token
import tokenize
import unicodedata
from dataclasses import dataclass
from typing import (
    Callable, FrozenSet, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple,
)

from .errors import (
    GenerateError, SanitizerBreach, SurfaceTooLarge, ToolNameCollision, TooManyTools,
)
from .jsonvalue import JsonValue
from .name import Digest, first_collision, mangle, mangle_label, sha256_digest
from .noise import escape_code_point
from .protocol import ToolDescriptor
from .schema import (
    Array, Field, ListOf, Nullable, Param, ParamType, Plan, Record, ResultType, Simple,
    Structured, WholeValue, plan, plan_output,
)

__all__ = [
    "Generated", "generate", "describe", "sanitize", "truncate", "escape", "scan_for_at",
    "MAX_TOOLS", "MAX_SURFACE_BYTES", "MAX_DESCRIPTION_CHARS", "MAX_NOTE_CHARS",
    "MAX_SHAPE_CHARS",
    "GenerateError", "TooManyTools", "ToolNameCollision", "SurfaceTooLarge", "SanitizerBreach",
]

#: A listing with more tools than this is refused (SEED.md, listing size is capped).
MAX_TOOLS = 256
#: UTF-8 bytes of surface: a larger one is cut (see the module doc), and bare
#: signatures past it are refused.
MAX_SURFACE_BYTES = 64 * 1024
#: Characters kept of a tool's description.
MAX_DESCRIPTION_CHARS = 400
#: Characters kept of a note: a parameter description, a reason, the server name.
MAX_NOTE_CHARS = 120
#: Characters of a result's shape in the surface before it shows less.
MAX_SHAPE_CHARS = 1000
#: Longest comment and code line the generator wraps to (longer words stay whole).
LINE_WIDTH = 79

_INDENT = "    "
#: Renders one parameter with its label, for the surface or for the source.
_Render = Callable[[Param, str], str]
_PYTHON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


@dataclass(frozen=True)
class Generated:
    """One server's generated module: its dotted name, its source, its surface."""

    module_name: str
    source: str
    surface: str


@dataclass(frozen=True)
class _Declaration:
    """One result type: its name, its record as declared, each field's type as source."""

    name: str
    about: str  # what the type describes, for its comment (generator text and escapes)
    record: Record
    types: Tuple[str, ...]  # one per field, same order


@dataclass(frozen=True)
class _Result:
    """A tool's typed result: its record as declared, and the types, nested ones first."""

    name: str
    record: Record
    declarations: Tuple[_Declaration, ...]


@dataclass(frozen=True)
class _Function:
    """One tool, read and named; everything the source and surface are made from."""

    name: str  # mangled: a display artifact only
    tool: str  # the wire name, verbatim
    description: str  # sanitized and truncated
    plan: Plan  # a label collision has already degraded it to WholeValue
    params: Tuple[Param, ...]  # Typed only: required first, then optional
    labels: Tuple[str, ...]  # one per param, same order
    claims: str  # sanitized: the title and the annotations, "" when the server claims none
    returns: str  # sanitized: what it returns, "" for a tool without an outputSchema
    result: Optional[_Result]  # None: it returns Any


# ----------------------------------------------------------------------------- generate


def generate(
    server: str, tools: Sequence[ToolDescriptor], digest: Digest = sha256_digest
) -> Generated:
    """Source and surface for ``server``'s ``tools``, or a :class:`GenerateError`."""
    if len(tools) > MAX_TOOLS:
        raise TooManyTools(len(tools), MAX_TOOLS)
    collision = first_collision((tool.name for tool in tools), digest)
    if collision is not None:
        raise ToolNameCollision(collision.first, collision.second, collision.mangled)
    module_name = "cap.mcp." + mangle(server, digest)
    functions = sorted((_read(tool, digest) for tool in tools), key=lambda f: f.name)
    surface = _surface(module_name, functions)
    source = _module(server, module_name, functions)
    scan_for_at(source)
    return Generated(module_name, source, surface)


def _read(tool: ToolDescriptor, digest: Digest) -> _Function:
    name = mangle(tool.name, digest)
    text = tool.description if tool.description is not None else tool.title
    description = sanitize(text or "", MAX_DESCRIPTION_CHARS)
    claims = _claims(tool, description)
    result, returns = _read_result(name, tool.output_schema, digest)
    tool_plan = _degrade_on_label_collision(plan(tool.input_schema), digest)
    if isinstance(tool_plan, WholeValue):
        return _Function(name, tool.name, description, tool_plan, (), (), claims, returns, result)
    params = tuple(sorted(tool_plan.params, key=lambda param: param.optional))  # stable
    labels = tuple(mangle_label(param.name, digest) for param in params)
    return _Function(name, tool.name, description, tool_plan, params, labels, claims, returns,
                     result)


def _degrade_on_label_collision(tool_plan: Plan, digest: Digest) -> Plan:
    # SEED.md: a label collision inside one tool degrades that one function to
    # its whole-value form; the rest of the module is unaffected.
    if isinstance(tool_plan, WholeValue):
        return tool_plan
    names = (param.name for param in tool_plan.params)
    collision = first_collision(names, digest, mangle_label)
    if collision is None:
        return tool_plan
    return WholeValue("parameters %r and %r both become %s"
                      % (collision.first, collision.second, collision.mangled))


# Annotation hints (MCP 2025-06-18, ToolAnnotations) and how each answer reads.
_HINTS = (
    ("readOnlyHint", "read-only", "not read-only"),
    ("destructiveHint", "destructive", "non-destructive"),
    ("idempotentHint", "idempotent", "not idempotent"),
    ("openWorldHint", "open-world", "closed-world"),
)


def _claims(tool: ToolDescriptor, description: str) -> str:
    """The title and every boolean hint the server set, in a fixed order."""
    hints = tool.annotations or {}
    said = ", ".join(yes if hints[key] else no
                     for key, yes, no in _HINTS if type(hints.get(key)) is bool)
    title = _title(tool, description)
    return "; ".join(part for part in ('title "%s"' % title if title else "", said) if part)


def _title(tool: ToolDescriptor, description: str) -> str:
    # 2025-06-18 moved the title out of the annotations; older servers keep it there.
    raw = tool.title if tool.title is not None else (tool.annotations or {}).get("title")
    if type(raw) is not str:
        return ""
    title = sanitize(raw, MAX_NOTE_CHARS)
    # Only when it tells something: a description that fell back to it shows it already.
    return "" if title in (tool.name, description) else title


def _read_result(function: str, output_schema: JsonValue,
                 digest: Digest) -> Tuple[Optional[_Result], str]:
    """The result type of a tool, if it has one, and the note on what it returns."""
    if output_schema is None:
        return None, ""
    output = plan_output(output_schema)
    if isinstance(output, WholeValue):
        note = "Returns the call's structuredContent, untyped: " + output.reason
        return None, sanitize(note, MAX_NOTE_CHARS)
    name = _pascal(function) + "Result"
    declarations: List[_Declaration] = []
    about = "what %s returns: the call's structuredContent." % function
    record = _declare(name, about, output, digest, declarations)
    returns = "Returns %s, the call's structuredContent." % name
    return _Result(name, record, tuple(declarations)), returns


def _pascal(snake: str) -> str:
    """``get_current_time`` -> ``GetCurrentTime``; ``_`` stays before a digit: ``a_1`` -> ``A_1``.

    One-to-one on what ``mangle`` and ``mangle_label`` produce (lower-case
    words joined by single underscores), since a capital marks each word that
    starts with a letter and ``_`` each word that starts with a digit.
    """
    return "".join(word.capitalize() if word[:1].isalpha() else "_" + word
                   for word in snake.split("_"))


def _declare(name: str, about: str, record: Record, digest: Digest,
             out: List[_Declaration]) -> Record:
    """Append ``record``'s declaration to ``out`` after its nested ones; the record declared."""
    taken: Set[str] = set()
    fields: List[Field] = []
    types: List[str] = []
    for field in record.fields:
        kind, text = _declare_type(field.name, field.type, name, taken, digest, out)
        fields.append(field if kind is field.type else Field(field.name, kind, field.optional,
                                                             field.description))
        types.append(text)
    declared = Record(tuple(fields), record.open)
    out.append(_Declaration(name, about, declared, tuple(types)))
    return declared


def _declare_type(key: str, kind: ResultType, parent: str, taken: Set[str], digest: Digest,
                  out: List[_Declaration], within: str = "") -> Tuple[ResultType, str]:
    """The type of ``parent``'s ``key`` as declared, and as source text.

    ``within`` says where a nested record sits, for its comment: ``""`` for
    the key's own value, ``"each item of "`` inside a list.
    """
    if isinstance(kind, Simple):
        return kind, _PYTHON_TYPES[kind.kind]
    if isinstance(kind, Array):
        item, text = _declare_type(key, kind.item, parent, taken, digest, out, "each item of ")
        return Array(item), "List[%s]" % text
    if isinstance(kind, Nullable):
        inner, text = _declare_type(key, kind.inner, parent, taken, digest, out, within)
        if isinstance(inner, Structured):
            return inner, text
        return Nullable(inner), "Optional[%s]" % text
    if isinstance(kind, Record):
        # Array and Nullable hold one type each, so a key leads to one record at most.
        name = parent + "_" + _pascal(mangle_label(key, digest))
        if name in taken:  # two sibling labels met: an engineered digest
            return Structured("its type name %s is another key's" % name), "Any"
        taken.add(name)
        about = "%sthe value under the key %s of %s." % (within, _literal(key), parent)
        return _declare(name, about, kind, digest, out), name
    return kind, "Any"


# ----------------------------------------------------------------------------- surface

# What gives first when the surface would pass MAX_SURFACE_BYTES, rung by rung
# (see the module doc): characters of each description, shapes shown, claims shown.
_Rung = Tuple[int, bool, bool]
_RUNGS: Tuple[_Rung, ...] = (
    (MAX_DESCRIPTION_CHARS, True, True),
    (MAX_NOTE_CHARS, True, True),
    (MAX_NOTE_CHARS, False, True),
    (0, False, True),
    (0, False, False),
)


class _Line(NamedTuple):  # a tuple: 256 of them are made per listing, cheaply
    """One function's surface line in pieces, so that each rung is only a join."""

    call: str  # "<module>.<function>(<params>) -> "
    name: str  # the result type's name, or "Any"
    shape: str  # the result's shape, "" when it has none or it is too long
    claims: str  # "[server says: ...]", or ""
    description: str


def _surface(module_name: str, functions: List[_Function]) -> str:
    lines = [_surface_line(module_name, function) for function in functions]
    size = 0
    for rung in _RUNGS:
        surface = "".join(_render(line, rung) for line in lines)
        size = len(surface.encode("utf-8"))
        if size <= MAX_SURFACE_BYTES:
            return surface
    raise SurfaceTooLarge(size, MAX_SURFACE_BYTES)


def _render(line: _Line, rung: _Rung) -> str:
    description_chars, shapes, claims = rung
    text = line.call + line.name + line.shape if shapes else line.call + line.name
    description = line.description
    if len(description) > description_chars:  # a cut may end in a space
        description = truncate(description, description_chars).rstrip()
    claim = line.claims if claims else ""
    comment = claim + " " + description if claim and description else claim or description
    return "%s  # %s\n" % (text, comment) if comment else text + "\n"


def _surface_line(module_name: str, function: _Function) -> _Line:
    call = "%s.%s(%s) -> " % (module_name, function.name, _surface_params(function))
    claims = "[server says: %s]" % function.claims if function.claims else ""
    if function.result is None:
        return _Line(call, "Any", "", claims, function.description)
    shape = _result_shape(function.result.record)
    return _Line(call, function.result.name, shape, claims, function.description)


def _surface_params(function: _Function) -> str:
    if isinstance(function.plan, WholeValue):
        return "arguments: dict[str, Any]"
    return ", ".join(_with_star(function, _surface_param))


def _surface_param(param: Param, label: str) -> str:
    kind = _surface_type(param.type)
    if param.optional:
        return "%s: %s | None = None" % (label, kind)
    return "%s: %s" % (label, kind)


def _surface_type(param_type: ParamType) -> str:
    if isinstance(param_type, Simple):
        return _PYTHON_TYPES[param_type.kind]
    if isinstance(param_type, ListOf):
        return "list[%s]" % _PYTHON_TYPES[param_type.kind]
    return "Any"


def _result_shape(record: Record) -> str:
    """The whole shape if it is short enough, else its top-level keys, else nothing."""
    for deep in (True, False):
        shape = _shape(record, deep)
        if len(shape) <= MAX_SHAPE_CHARS:
            return shape
    return ""


def _shape(record: Record, deep: bool) -> str:
    entries = ["%s%s: %s" % (_literal(field.name), "?" if field.optional else "",
                             _shape_type(field.type, deep)) for field in record.fields]
    return "{%s}" % ", ".join(entries + ["..."] if record.open else entries)


def _shape_type(kind: ResultType, deep: bool) -> str:
    if isinstance(kind, Simple):
        return _PYTHON_TYPES[kind.kind]
    if isinstance(kind, Array):
        return "list[%s]" % _shape_type(kind.item, deep)
    if isinstance(kind, Nullable):
        return "%s | None" % _shape_type(kind.inner, deep)
    if isinstance(kind, Record):
        return _shape(kind, deep) if deep else "{...}"
    return "Any"


def _with_star(function: _Function, render: _Render) -> Iterator[str]:
    """Rendered parameters, with the bare ``*`` before the first optional one."""
    starred = False
    for param, label in zip(function.params, function.labels):
        if param.optional and not starred:
            starred = True
            yield "*"
        yield render(param, label)


# ----------------------------------------------------------------------------- source

# The contract with the seam, stated in every module (and in CLAUDE.md).
_CONTRACT = (
    "Each function returns what internal.invoke returns. For a tool that declares "
    "an outputSchema, that is the call's structuredContent as the server sent it, "
    "typed by the TypedDict the function names (the server's claim; nothing checks "
    "it) or Any when the schema could not be read; a failed call (isError, or no "
    "structuredContent) raises instead. For a tool without one, it is the whole "
    "tools/call result, Any."
)


def _module(server: str, module_name: str, functions: List[_Function]) -> str:
    lines = _header(server, module_name) + _imports(functions)
    for function in functions:
        lines += ["", ""] + _function(server, function)
    return "\n".join(lines) + "\n"


def _header(server: str, module_name: str) -> List[str]:
    # Line 1 pins the encoding and line 2 is fixed, so no server text can sit
    # where PEP 263 looks for a coding declaration.
    return [
        "# -*- coding: utf-8 -*-",
        "# Generated by mcp_client.codegen; do not edit: regenerate it instead.",
        "#",
        *_comment("Module %s: the tools of MCP server %s."
                  % (module_name, sanitize(server, MAX_NOTE_CHARS))),
        "# Server text appears in this module only in comment lines like these",
        "# and in escaped string literals; each function ends in internal.invoke.",
        "#",
        *_comment(_CONTRACT),
        "",
    ]


def _imports(functions: List[_Function]) -> List[str]:
    names = _typing_names(functions)
    typing_line = ["from typing import " + ", ".join(sorted(names)), ""] if names else []
    return typing_line + ["from cap.internal import mcp as internal"]


def _typing_names(functions: List[_Function]) -> FrozenSet[str]:
    names = {"Any", "Dict"} if functions else set()
    for function in functions:
        for param in function.params:
            if isinstance(param.type, ListOf):
                names.add("List")
            if param.optional:
                names.add("Optional")
        if function.result is not None:
            names.add("TypedDict")
            names.update(_result_typing_names(function.result.record))
    return frozenset(names)


def _result_typing_names(record: Record) -> Set[str]:
    """``List`` and ``Optional`` if a record (nested ones included) uses them."""
    names: Set[str] = set()
    kinds: List[ResultType] = [field.type for field in record.fields]
    while kinds:
        kind = kinds.pop()
        if isinstance(kind, Array):
            names.add("List")
            kinds.append(kind.item)
        elif isinstance(kind, Nullable):
            names.add("Optional")
            kinds.append(kind.inner)
        elif isinstance(kind, Record):
            kinds += [field.type for field in kind.fields]
    return names


def _function(server: str, function: _Function) -> List[str]:
    lines: List[str] = []
    for declaration in function.result.declarations if function.result else ():
        lines += _declaration(declaration) + ["", ""]
    return lines + _doc_comment(function) + _signature(function) + _body(server, function)


def _declaration(declaration: _Declaration) -> List[str]:
    """``Name = TypedDict("Name", {"key": type, ...})``, after its comment."""
    record, name = declaration.record, declaration.name
    entries = ["%s: %s" % (_literal(field.name), text)
               for field, text in zip(record.fields, declaration.types)]
    always = [_literal(field.name) for field in record.fields if not field.optional]
    tail = "})" if len(always) == len(entries) else "}, total=False)"
    head = '%s = TypedDict("%s", {' % (name, name)
    return _declaration_comment(declaration, always) + _fit(head, entries, tail, "")


def _declaration_comment(declaration: _Declaration, always: List[str]) -> List[str]:
    record = declaration.record
    lines = _comment("%s: %s" % (declaration.name, declaration.about))
    for field in record.fields:
        note = _field_note(field)
        if note:
            lines += _comment("%s: %s" % (_literal(field.name), note), first="# - ", rest="#   ")
    if always and len(always) < len(record.fields):  # total=False says the rest
        lines += _comment("Keys always present: %s; any other may be absent."
                          % ", ".join(always))
    if record.open:
        lines += _comment("Other keys may appear too (additionalProperties).")
    return lines


def _field_note(field: Field) -> str:
    notes = [sanitize(field.description or "", MAX_NOTE_CHARS)]
    reason = _untyped_reason(field.type)
    if reason is not None:
        notes.append("(untyped: %s)" % sanitize(reason, MAX_NOTE_CHARS))
    return " ".join(note for note in notes if note)


def _untyped_reason(kind: ResultType) -> Optional[str]:
    """Why the value, or what a list or a nullable holds, is ``Any``, if it is."""
    while isinstance(kind, (Array, Nullable)):
        kind = kind.item if isinstance(kind, Array) else kind.inner
    return kind.reason if isinstance(kind, Structured) else None


def _doc_comment(function: _Function) -> List[str]:
    lines = _comment(function.description)
    if function.claims:
        lines += _comment("server says: " + function.claims)
    if function.returns:
        lines += _comment(function.returns)
    if isinstance(function.plan, WholeValue):
        note = "Takes one dict, sent unchanged as the arguments: " + function.plan.reason
        return lines + _comment(sanitize(note, MAX_NOTE_CHARS))
    for param, label in zip(function.params, function.labels):
        note = _param_note(param)
        if note:  # the signature already says everything else
            lines += _comment("%s: %s" % (label, note), first="# - ", rest="#   ")
    return lines


def _param_note(param: Param) -> str:
    notes = [sanitize(param.description or "", MAX_NOTE_CHARS)]
    if not isinstance(param.type, (Simple, ListOf)):
        notes.append("(untyped: %s)" % sanitize(param.type.reason, MAX_NOTE_CHARS))
    return " ".join(note for note in notes if note)


def _signature(function: _Function) -> List[str]:
    if isinstance(function.plan, WholeValue):
        params = ["arguments: Dict[str, Any]"]
    else:
        params = list(_with_star(function, _source_param))
    returns = function.result.name if function.result is not None else "Any"
    return _fit("def %s(" % function.name, params, ") -> %s:" % returns, "")


def _source_param(param: Param, label: str) -> str:
    kind = _source_type(param.type)
    if param.optional:
        return "%s: Optional[%s] = None" % (label, kind)
    return "%s: %s" % (label, kind)


def _source_type(param_type: ParamType) -> str:
    if isinstance(param_type, Simple):
        return _PYTHON_TYPES[param_type.kind]
    if isinstance(param_type, ListOf):
        return "List[%s]" % _PYTHON_TYPES[param_type.kind]
    return "Any"


def _body(server: str, function: _Function) -> List[str]:
    call = "%sreturn internal.invoke(%s, %s, arguments)" % (
        _INDENT, _literal(server), _literal(function.tool))
    if isinstance(function.plan, WholeValue):
        return [call]
    return _arguments(function) + [call]


def _arguments(function: _Function) -> List[str]:
    """The ``arguments`` dict: required wire names at once, optional ones when given."""
    pairs = list(zip(function.params, function.labels))
    entries = ["%s: %s" % (_literal(p.name), label) for p, label in pairs if not p.optional]
    lines = _fit(_INDENT + "arguments: Dict[str, Any] = {", entries, "}", _INDENT)
    for param, label in pairs:
        if param.optional:
            lines.append("%sif %s is not None:" % (_INDENT, label))
            lines.append("%sarguments[%s] = %s" % (_INDENT * 2, _literal(param.name), label))
    return lines


def _fit(head: str, items: List[str], tail: str, indent: str) -> List[str]:
    """``head item, item tail`` on one line if it fits, else one item per line."""
    line = head + ", ".join(items) + tail
    if len(line) <= LINE_WIDTH or not items:
        return [line]
    return [head] + ["%s%s%s," % (indent, _INDENT, item) for item in items] + [indent + tail]


def _comment(text: str, first: str = "# ", rest: str = "# ") -> List[str]:
    """``text`` (already sanitized) as comment lines; every break is made here."""
    wrapped = _wrap(text, LINE_WIDTH - len(rest))
    return [(first if index == 0 else rest) + line for index, line in enumerate(wrapped)]


def _wrap(text: str, width: int) -> List[str]:
    # Most notes fit on one line; the loop below would return them unchanged.
    if len(text) <= width and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return [text] if text else []
    lines: List[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        elif word:
            lines.append(word)
    return lines


# ----------------------------------------------------------------------------- helpers


def describe(error: GenerateError) -> str:
    """One sanitized line for a refusal, fit for a log or a model's eyes."""
    return "%s: %s" % (type(error).__name__, sanitize(str(error), MAX_DESCRIPTION_CHARS))


# Direction-changing codepoints (Unicode TR9; "Trojan Source", CVE-2021-42574),
# listed by codepoint so that their removal does not depend on the Unicode
# database of the interpreter: ALM, LRM, RLM, LRE..RLO, LRI..PDI.
_BIDI_CONTROLS = frozenset(
    [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)
# Control (Cc), format (Cf), surrogate (Cs: not encodable as UTF-8), line and
# paragraph separators (Zl, Zp: U+2028 and U+2029 end a line in many readers).
_REMOVED_CATEGORIES = frozenset(["Cc", "Cf", "Cs", "Zl", "Zp"])
# Everything but printable ASCII goes through _clean_char; plain text costs a
# C-speed scan only.
_NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e]")


def sanitize(text: str, limit: int) -> str:
    """``text`` fit for a comment: controls gone, whitespace one space, ``limit`` chars.

    A removed character that is whitespace (``\\n``, ``\\t``, U+2028...) turns
    into a space so that words stay apart; any other is dropped. Runs of
    whitespace then become one space and the ends are stripped.
    """
    cleaned = _NOT_PRINTABLE_ASCII.sub(_clean_char, text)
    return truncate(" ".join(cleaned.split()), limit).rstrip()  # a cut may end in a space


def _clean_char(match: "re.Match[str]") -> str:
    char = match.group()
    if ord(char) in _BIDI_CONTROLS or unicodedata.category(char) in _REMOVED_CATEGORIES:
        return " " if char.isspace() else ""
    return char


def truncate(text: str, limit: int) -> str:
    """At most ``limit`` characters; a cut ends in ``...`` (within the limit)."""
    if len(text) <= limit:
        return text
    if limit < 3:
        return text[:limit]
    return text[: limit - 3].rstrip() + "..."


# Printable ASCII stands for itself, except the backslash, the double quote
# and the at sign (0x5C, 0x22, 0x40).
_NEEDS_ESCAPE = re.compile(r'[^\x20\x21\x23-\x3f\x41-\x5b\x5d-\x7e]')


def escape(text: str) -> str:
    """The body of a ``"..."`` Python literal that evaluates to exactly ``text``.

    Total: ``\\`` and ``"`` are backslashed, and every codepoint outside
    printable ASCII becomes ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` (lone
    surrogates included), so the output is printable ASCII whatever the input.
    ``@`` becomes ``\\x40`` as well: then the generated source holds no ``@``
    outside its comment lines, and ``scan_for_at`` proves that without a
    tokenizer.
    """
    return _NEEDS_ESCAPE.sub(_escape_char, text)


def _escape_char(match: "re.Match[str]") -> str:
    code = ord(match.group())
    if code in (0x22, 0x5C):
        return "\\" + match.group()
    return escape_code_point(code)


def _literal(text: str) -> str:
    return '"' + escape(text) + '"'


def scan_for_at(source: str) -> None:
    """Raise :class:`SanitizerBreach` unless ``source`` provably holds no ``@`` token.

    The backstop behind the cage: generated code needs no decorator and no
    matrix product, so an ``@`` or ``@=`` operator means the cage failed.
    Lines are cut as ``compile`` cuts them (``\\r`` and ``\\r\\n`` end a line
    too). The proof is ``_inert_by_lines`` when it applies (it always does
    for what ``generate`` emits: ``escape`` leaves no ``@`` in a literal), else
    the stdlib tokenizer, far slower before Python 3.12: then an ``@`` token,
    an error token, an f-string (before Python 3.12 its fields, which are code,
    hide inside one string token) or a failure to tokenize is a breach.
    """
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    if _inert_by_lines(text):
        return
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            _check_token(tok)
    except (tokenize.TokenError, SyntaxError, ValueError) as error:
        raise SanitizerBreach("generated source does not tokenize: %s" % error) from None


def _inert_by_lines(text: str) -> bool:
    """No ``@`` can be a token: a proof by induction over lines, no tokenizer.

    The first line starts in code. A line that starts in code and begins with
    ``#`` is a comment to its end, whatever it holds, so the next line starts
    in code. Any other line must hold no ``@`` and nothing that could carry a
    string onto the next line: a final backslash, a triple-quoted string, or a
    string with a prefix (an f- or t-string's fields may span lines, PEP 701);
    then the next line starts in code too. ``False`` only means "unproven":
    the tokenizer decides.
    """
    code = "\n".join(line for line in text.split("\n") if not line.startswith("#")) + "\n"
    if "@" in code or "\\\n" in code:
        return False
    return not any(_may_span_lines(code, match) for match in _LEXEMES.finditer(code))


# In code, the first quote or "#" met opens a string (closed on its line, or
# left open to the line's end) or a comment; past either, the scan is in code
# again. So every match below starts a real string or comment, a triple quote
# is matched only where it opens a string, and the letters right before a
# string's opening quote are its prefix.
_LEXEMES = re.compile(r'"""|\'\'\'|"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\.)*\'?|#[^\n]*')
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _may_span_lines(code: str, lexeme: "re.Match[str]") -> bool:
    # Any prefix letter at all counts (b"", r"" too): generated code uses no
    # prefix, and declining only costs a tokenizer run.
    start = lexeme.start()
    if lexeme.group() in ('"""', "'''"):
        return True
    return code[start] != "#" and start > 0 and code[start - 1] in _LETTERS


def _check_token(tok: tokenize.TokenInfo) -> None:
    where = "line %d, column %d" % tok.start
    if tok.type == token.ERRORTOKEN:
        raise SanitizerBreach("error token at " + where)
    if tok.exact_type in (token.AT, token.ATEQUAL):
        raise SanitizerBreach("%s at %s" % (tok.string, where))
    if _is_f_string(tok):
        raise SanitizerBreach("f-string at " + where)


def _is_f_string(tok: tokenize.TokenInfo) -> bool:
    if token.tok_name.get(tok.type) in ("FSTRING_START", "TSTRING_START"):  # 3.12+, 3.14+
        return True
    prefix = _STRING_PREFIX.match(tok.string)
    return tok.type == token.STRING and prefix is not None and "f" in prefix.group().lower()


_STRING_PREFIX = re.compile(r"[A-Za-z]*")
