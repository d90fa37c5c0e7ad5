"""From a server's ``tools/list`` to Python source text, a surface, and each tool's detail.

Pure: no I/O, no threads, no clocks. **The generator never compiles, imports,
execs or writes anything** (SEED.md, Purpose): ``generate`` returns text, and
compiling it is somebody else's verb in somebody else's place.

The generated module ``cap.mcp.<segment>`` (``segment`` is the mangled
server name) imports the ``typing`` names its annotations use, ``typing``
itself as ``_typing`` (for its bodies), and ``cap.internal.mcp as internal``,
and holds one function per tool, sorted by function name (so a server that
lists its tools in a different order each boot still gives the same text),
each after the types it takes and returns. Every function ends in exactly one
call of the seam::

    return _typing.cast(<return type>, internal.invoke("<server>", "<wire tool name>", arguments))

where ``arguments`` is a ``dict`` keyed by the **wire** parameter names. A
``Typed`` plan's parameters are taken by label (``name.mangle_label``: the
wire name itself wherever Python allows it), required ones first, optional
ones keyword-only with a default of ``None`` and left out of ``arguments``
when ``None``; a ``WholeValue`` plan (or a tool whose labels collide) takes
one ``dict`` named ``arguments`` and sends it as it is. A body depends on no
name a label can take: it uses its labels, ``arguments``, ``internal``,
``_typing`` and its return type, and the type names are kept apart from every
label.

**The seam's contract** is ``deliver(tool, result)``: what the harness's
``invoke`` returns for a ``tools/call`` result. For a tool that declares an
``outputSchema`` (``returns == "structured"``), the call's
``structuredContent`` as the server sent it; for any other (``"result"``), a
``ToolOutput`` dict ``{"text": <the text blocks joined by "\\n">, "content":
[<every block as the server sent it>]}``. A failed call raises
``errors.ToolFailed``: ``isError``, or a ``"structured"`` tool that brought no
``structuredContent`` object. Every module's header says so.

**Types.** Parameters and results are read by ``schema`` into one type
language, and spelled with ``typing``: ``str``, ``int``, ``float``, ``bool``,
``List[...]``, ``Dict[str, ...]`` (an object that names no keys),
``Optional[...]``, ``Literal[...]`` (enums), ``Union[...]``
(a few readable ``anyOf`` branches), ``Any`` (whatever cannot be read, with
its reason in the docstring), and a ``TypedDict`` for every object with named
keys, declared at module level before the function that uses it, so that
``typing.get_type_hints`` resolves every function. Why a ``TypedDict``: a JSON
object arrives as a ``dict``, and a ``TypedDict`` describes that very
``dict`` without converting it, so a result passes on unchanged into the next
tool's arguments or into ``json.dumps``. It is declared in its functional form,
whose keys are string literals, so the keys are the wire keys verbatim and
escaped::

    GetCurrentTimeResult = TypedDict("GetCurrentTimeResult", {"is_dst": bool})

An object whose keys are all required is ``total``, one whose keys are all
optional ``total=False``. One that mixes both (``NotRequired`` only exists
from Python 3.11) is two functional halves and a class that joins them, which
keeps each key's own requiredness on Python 3.9::

    _EditFileEditsRequired = TypedDict("_EditFileEditsRequired", {"oldText": str})
    _EditFileEditsOptional = TypedDict("_EditFileEditsOptional", {"note": str}, total=False)
    class EditFileEdits(_EditFileEditsRequired, _EditFileEditsOptional):
        pass

**Type names** are the generator's: ``<Function>Result`` for a result,
``<Function><Param>`` for a parameter's object, ``<Parent><Key>`` for an
object under a key (``<Parent><Key><n>`` for the n-th branch of a union), each
part in PascalCase (the ASCII letters and digits of the name, each word
capitalized). A name carries ``_`` and eight hex characters of the digest of
where it sits only when it must: when two types would share it, or it would
be a function's name, a label, or a name the module binds. Natural names have
no ``_``, so a digested name never meets a natural one; anything that still
meets (an engineered digest) refuses the server as a ``ToolNameCollision``.

**Docstrings and detail.** Every function has a docstring: the description,
each parameter (its type, description, default and allowed values), the keys
of its input objects, the result, the server's claims, and what a failure
raises. It is a parenthesized run of ``"..."`` literals made by ``escape``
(one per line of text), so server text in it stays an inert literal. The same
text, after the signature, is ``GeneratedTool.doc`` (at most ``MAX_DOC_BYTES``),
for a harness that shows the lines and hands a model one tool's detail on
request.

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

The surface is one line per function, in the same order, for a model to read::

    cap.mcp.fs.edit_file(path: str, edits: list[EditFileEdits{"oldText": str, "newText": str}], *,
        dryRun: bool = False) -> EditFileResult{"content": str}  # Make line-based edits...
    cap.mcp.time.now(zone: str) -> NowResult{"is_dst": bool}  # [server says: read-only] Now

Types there use the modern spelling (``list[str]``, ``int | None``), since
nobody runs them; the source spells them with ``typing`` so that it also runs
on Python 3.9. An optional parameter shows the server's default (``= "name"``)
when it has one: leaving it out sends nothing, and the server applies it. An
object shows its type's name and its shape: keys as escaped literals,
``"key"?:`` for a key that may be absent, ``...`` for an object that admits
other keys; a shape longer than ``MAX_SHAPE_CHARS`` shows only its top-level
keys, and then only the name. The tool's annotations and its title (when it
differs from the name) are shown as what they are, the server's claims:
``[server says: title "..."; read-only, idempotent]``.

**The surface budget.** When the surface would pass ``MAX_SURFACE_BYTES``,
it is cut rung by rung, the same cut on every line, until it fits:

1. the descriptions to ``MAX_NOTE_CHARS`` characters;
2. the result shapes, down to their types' names (``ToolOutput``'s keys too);
3. the input shapes, down to their types' names;
4. the descriptions;
5. the claims;
6. the parameters to the plain ones of the first surface: no defaults
   (``| None = None``), objects and unions ``Any``, enums their kind,
   nullability dropped;
7. the result types to ``Any``.

(A default is at most ``MAX_DEFAULT_CHARS`` long and usually shorter than the
``| None = None`` it replaces, so it gives way only with the plain types.)

The last rung is never longer than the bare signature with every name
mangled (a name kept verbatim is never longer than its mangled form), so a
listing whose mangled signatures fit always fits. Only what still does not fit refuses the server
(``SurfaceTooLarge``). The order is a model's: what a tool does in a sentence,
then what it returns, then what it takes, then the rest of the prose. The
source and the docs are never cut by the surface budget.
"""

from __future__ import annotations

import io
import json
import re
import token
import tokenize
from dataclasses import dataclass
from dataclasses import field as _field
from typing import (
    Any,
    Dict,
    FrozenSet,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
)

from ..errors import (
    GenerateError,
    ResultMismatch,
    SanitizerBreach,
    SurfaceTooLarge,
    ToolFailed,
    ToolNameCollision,
    TooManyTools,
)
from ..protocol import CallToolResult, InitializeResult, Text, ToolDescriptor

# Re-exported: PORT.md names these helpers codegen's; they live in .text so that what shows
# server text (the CLI, replay, the errors) does not load the generator.
from ..text import escape, sanitize, truncate
from . import _docstring, _surface, content, shapes

# Each limit lives in the module that applies it; the "NAME as NAME" ones are not used here,
# only still read as codegen's, as they were before the split.
from ._docstring import MAX_DOC_BYTES, MAX_DOC_DESCRIPTION_CHARS
from ._docstring import MAX_DOC_NOTE_CHARS as MAX_DOC_NOTE_CHARS
from ._model import (
    BLOCKS,
    BUILTIN_TYPES,
    BUILTINS_MODULE,
    INDENT,
    MAX_NOTE_CHARS,
    MAX_SHAPE_CHARS,
    RESULT,
    STRUCTURED,
    TOOL_OUTPUT,
    Blocks,
    Declaration,
    Function,
    ModelType,
    Names,
    Ref,
    Site,
    builtin,
    literal,
    signature_default,
    source_type,
    with_star,
    wrap,
)
from ._model import MAX_DEFAULT_CHARS as MAX_DEFAULT_CHARS
from ._surface import MAX_DESCRIPTION_CHARS, MAX_SURFACE_BYTES
from ._surface import MAX_DOC_SIGNATURE_BYTES as MAX_DOC_SIGNATURE_BYTES
from .name import (
    BODY_NAMES,
    CONTENT_NAMES,
    TYPING_NAMES,
    Digest,
    digest_suffix,
    first_meeting,
    mangle,
    mangle_all,
    mangle_label,
    sha256_digest,
)
from .schema import (
    AnyOf,
    Array,
    Choice,
    Field,
    Map,
    Nullable,
    Param,
    Plan,
    Record,
    Simple,
    Structured,
    ValueType,
    WholeValue,
    plan,
    plan_output,
)
from .shapes import Learned, Path, json_paths, json_text, json_texts, to_type
from .validate import Check, Deferred

__all__ = [
    "Generated",
    "GeneratedTool",
    "generate",
    "deliver",
    "described",
    "describe",
    "sanitize",
    "truncate",
    "escape",
    "scan_for_at",
    "MAX_TOOLS",
    "MAX_SURFACE_BYTES",
    "MAX_DESCRIPTION_CHARS",
    "MAX_NOTE_CHARS",
    "MAX_SHAPE_CHARS",
    "MAX_DOC_BYTES",
    "MAX_DOC_DESCRIPTION_CHARS",
    "TOOL_OUTPUT",
    "GenerateError",
    "TooManyTools",
    "ToolNameCollision",
    "SurfaceTooLarge",
    "SanitizerBreach",
    "ToolFailed",
    "ResultMismatch",
]

#: A listing with more tools than this is refused (SEED.md, listing size is capped).
MAX_TOOLS = 256
#: Characters of error text a ToolFailed carries.
MAX_ERROR_CHARS = 2000
#: Longest comment and code line the generator wraps to (longer words stay whole).
LINE_WIDTH = 79
#: Characters kept of the server's ``instructions`` in the module docstring.
MAX_INSTRUCTIONS_CHARS = 4000

# The names tests reach here from before the generator was split (the budget's
# pieces, the wrap, the note cache): the same objects as in their new homes.
_RUNGS = _surface.RUNGS
_render = _surface.render
_surface_line = _surface.surface_line
_sanitized_note = _docstring.sanitized_note
_wrap = wrap


@dataclass(frozen=True)
class GeneratedTool:
    """One tool as generated: what a harness shows, and how ``deliver`` answers for it.

    ``returns`` is ``"structured"`` when the function returns the call's
    ``structuredContent`` (the tool declares an ``outputSchema``), ``"result"``
    when it returns a ``ToolOutput``. ``line`` is its surface line as it finally
    appears (after any budget cut, without the newline); ``doc`` its full
    detail, at most ``MAX_DOC_BYTES``. ``check`` is the run-time check of a
    ``"structured"`` tool's result against its declared record (``checker``,
    compiled on first use), ``None`` when its schema reads as no record. ``brief``
    is the one line a search shows: the signature with its types named, and the
    description's first sentence.
    """

    function: str
    wire_name: str
    returns: str
    line: str
    doc: str
    check: Optional[Check] = _field(default=None, compare=False, repr=False)
    brief: str = _field(default="", compare=False, repr=False)
    #: Where ``deliver`` parses a string that held JSON text in every call seen
    #: (``shapes.json_paths``; in ``data``, or in the ``structuredContent``).
    parsed: Tuple[Path, ...] = _field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Generated:
    """One server's generated module: its dotted name, its source, its surface, its tools;
    ``outputs``, the names of its ``ToolOutput`` types (``ToolOutput``, and each learned
    one's), ``TypedDict``s of their keys whose values code mode's runtime also gives as
    attributes (its check lets a program read them so)."""

    module_name: str
    source: str
    surface: str
    tools: Tuple[GeneratedTool, ...] = ()
    outputs: Tuple[str, ...] = _field(default=(), compare=False)


# ----------------------------------------------------------------------------- generate


def generate(
    server: str,
    tools: Sequence[ToolDescriptor],
    digest: Digest = sha256_digest,
    *,
    info: Optional[InitializeResult] = None,
    learned: Optional[Mapping[str, Learned]] = None,
) -> Generated:
    """Source, surface and tools for ``server``'s ``tools``, or a :class:`GenerateError`.

    ``info``, the server's handshake, names it in the module docstring (its
    name, version, title and ``instructions``, sanitized); ``learned``, by
    wire name, types what a tool without an ``outputSchema`` was seen to
    return (``shapes.Store.learned``).
    """
    if len(tools) > MAX_TOOLS:
        raise TooManyTools(len(tools), MAX_TOOLS)
    wire_names = [tool.name for tool in tools]
    function_names = mangle_all(wire_names, digest)  # once: the collision check reads them
    collision = first_meeting(wire_names, function_names)
    if collision is not None:
        raise ToolNameCollision(collision.first, collision.second, collision.mangled)
    module_name = "cap.mcp." + mangle(server, digest)
    seen = learned or {}
    functions = sorted(
        (
            _read(tool, name, digest, seen.get(tool.name))
            for tool, name in zip(tools, function_names)
        ),
        key=lambda f: f.name,
    )
    names = _name_types(functions, digest)
    pieces = [_surface.surface_line(module_name, function, names) for function in functions]
    lines = _surface.fit(pieces)
    signatures = [_surface.signature_line(line) for line in pieces]
    segment = module_name.rsplit(".", 1)[-1]
    docs = [
        _docstring.build(function, names, MAX_DOC_BYTES - len(signature.encode("utf-8")) - 2)
        for function, signature in zip(functions, signatures)
    ]
    source = _module(server, module_name, functions, names, docs, info)
    scan_for_at(source)
    generated = tuple(
        GeneratedTool(
            function.name,
            function.tool,
            function.returns,
            line,
            signature + "\n\n" + "\n".join(doc),
            Deferred(function.output) if function.output is not None else None,
            _surface.brief_line(piece, segment),
            function.parsed,
        )
        for function, line, signature, doc, piece in zip(functions, lines, signatures, docs, pieces)
    )
    surface = "".join(line + "\n" for line in lines)
    return Generated(module_name, source, surface, generated, _outputs(functions, names))


def _outputs(functions: Sequence[Function], names: Names) -> Tuple[str, ...]:
    """The module's ``ToolOutput`` types: its own, and each learned one."""
    learned = [names.by_site[site] for site, made in names.declarations.items() if made.output]
    return ((TOOL_OUTPUT,) if any(f.returns == RESULT for f in functions) else ()) + tuple(learned)


def described(tool: GeneratedTool) -> str:
    """The doc a model reads of ``tool``: ``GeneratedTool.doc``, its signature once, without
    what every tool's doc says (what a ``ToolOutput`` is, what a failure raises), which
    the model is told once, where it is told how to call (``serve``'s instructions)."""
    return _docstring.for_model(tool.doc)


def deliver(tool: GeneratedTool, result: CallToolResult) -> Any:
    """What the generated function for ``tool`` returns for ``result``; total.

    ``structuredContent`` for a ``"structured"`` tool, a ``ToolOutput`` dict
    for a ``"result"`` one; :class:`ToolFailed` when the tool answered
    ``isError``, or a ``"structured"`` tool brought no ``structuredContent``
    object; :class:`ResultMismatch` when the ``structuredContent`` breaks the
    record the tool declared (``GeneratedTool.check``). The values are the
    server's, raw: checked against the declared shape, never trusted further.
    """
    if result.is_error:
        raise ToolFailed(tool.wire_name, result, _error_text(tool, result))
    if tool.returns == STRUCTURED:
        if type(result.structured_content) is not dict:
            raise ToolFailed(
                tool.wire_name,
                result,
                sanitize(
                    "tool %s declares an outputSchema but brought no structuredContent object"
                    % tool.wire_name,
                    MAX_ERROR_CHARS,
                ),
            )
        if tool.check is not None:
            mismatch = tool.check(result.structured_content)
            if mismatch is not None:
                raise ResultMismatch(sanitize(tool.wire_name, MAX_NOTE_CHARS), *mismatch)
        return _parse_at(result.structured_content, tool.parsed)
    output = content.tool_output(result)
    if tool.parsed:
        output["data"] = _parse_at(output["data"], tool.parsed)
    return output


def _parse_at(value: Any, paths: Tuple[Path, ...]) -> Any:
    """``value`` with the strings at ``paths`` that hold a JSON object or array parsed
    (``shapes.json_text``, bounded), each container on the way copied, never changed:
    what the server sent stays as it came (the shapes are learned from it)."""
    for path in paths:
        value = _parsed(value, path)
    return value


def _parsed(value: Any, path: Path) -> Any:
    if not path:
        held = json_text(value) if type(value) is str else None
        return value if held is None else held
    step, rest = path[0], path[1:]
    if step[0] == "key" and type(value) is dict and step[1] in value:
        inner = _parsed(value[step[1]], rest)
        return value if inner is value[step[1]] else dict(value, **{step[1]: inner})
    if step[0] == "item" and type(value) is list:
        items = [_parsed(item, rest) for item in value]
        return items if any(a is not b for a, b in zip(items, value)) else value
    if step[0] == "value" and type(value) is dict:
        entries = {key: _parsed(item, rest) for key, item in value.items()}
        return entries if any(entries[k] is not value[k] for k in value) else value
    return value


def _error_text(tool: GeneratedTool, result: CallToolResult) -> str:
    text = " ".join(block.text for block in result.content if isinstance(block, Text))
    said = sanitize(text, MAX_ERROR_CHARS)
    return said or sanitize(
        "tool %s reported an error (isError) with no text" % tool.wire_name, MAX_ERROR_CHARS
    )


def _read(tool: ToolDescriptor, name: str, digest: Digest, seen: Optional[Learned]) -> Function:
    text = tool.description if tool.description is not None else tool.title
    long_description = sanitize(text or "", MAX_DOC_DESCRIPTION_CHARS)
    # The same as sanitizing to the shorter limit: the first characters are the same.
    description = _surface.cut_words(long_description, MAX_DESCRIPTION_CHARS)
    claims = _claims(tool, description)
    declarations: List[Declaration] = []
    tool_plan, label_of = _labels(plan(tool.input_schema), digest)
    params: Tuple[Param, ...] = ()
    if not isinstance(tool_plan, WholeValue):
        params = tuple(
            _declare_param(name, tool.name, param, declarations)
            for param in sorted(tool_plan.params, key=lambda p: p.optional)
        )
    labels = tuple(label_of[param.name] for param in params)
    returns, result, reason, output, parsed = _read_result(name, tool, declarations, seen)
    seen_calls = 0
    if returns == RESULT and seen is not None and seen.data is not None:
        result = _declare_seen(name, tool.name, seen, declarations)
        seen_calls = seen.calls if result is not None else 0
        parsed = json_paths(seen.data) if result is not None else ()
    return Function(
        name,
        tool.name,
        description,
        long_description,
        tool_plan,
        params,
        labels,
        claims,
        returns,
        result,
        reason,
        tuple(declarations),
        output,
        seen_calls,
        parsed,
    )


def _labels(tool_plan: Plan, digest: Digest) -> Tuple[Plan, Dict[str, str]]:
    """The plan and each parameter's label by its wire name, mangled once for both."""
    # SEED.md: a label collision inside one tool degrades that one function to
    # its whole-value form; the rest of the module is unaffected.
    if isinstance(tool_plan, WholeValue):
        return tool_plan, {}
    names = [param.name for param in tool_plan.params]
    labels = mangle_all(names, digest, mangle_label)  # each name's label: order does not matter
    collision = first_meeting(names, labels)
    if collision is None:
        return tool_plan, dict(zip(names, labels))
    return WholeValue(
        "parameters %r and %r both become %s"
        % (collision.first, collision.second, collision.mangled)
    ), {}


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
    said = ", ".join(
        yes if hints[key] else no for key, yes, no in _HINTS if type(hints.get(key)) is bool
    )
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


def _read_result(
    function: str, tool: ToolDescriptor, out: List[Declaration], seen: Optional[Learned]
) -> Tuple[str, Optional[Ref], str, Optional[Record], Tuple[Path, ...]]:
    """What the tool returns, its record if it has one, why not if it has none, the
    record as read (for the run-time check, which holds the server to its schema), and
    the places of its strings ``deliver`` parses."""
    if tool.output_schema is None:
        return RESULT, None, "", None, ()
    output = plan_output(tool.output_schema)
    if isinstance(output, WholeValue):
        return STRUCTURED, None, sanitize(output.reason, MAX_NOTE_CHARS), None, ()
    site = (function, "result")
    about = "what %s returns: the call's structuredContent." % function
    typed, taken = _json_fields(output, seen)
    first = len(out)
    ref = _declare_record(site, _pascal(function) + "Result", tool.name, about, typed, False, out)
    places = [_site_steps(path) for path in taken]
    for index in range(first, len(out)):  # what a parsed string held: observed, not declared
        if any(out[index].site[: len(site) + len(place)] == site + place for place in places):
            out[index] = out[index].as_seen()
    texts = json_paths(seen.structured if seen is not None else None)
    parsed = tuple(path for path in texts if any(path[: len(t)] == t for t in taken))
    return STRUCTURED, ref, "", output, parsed


def _json_fields(output: Record, seen: Optional[Learned]) -> Tuple[Record, List[Path]]:
    """``output`` with each declared string that held JSON text in every call seen typed
    as what it held (``deliver`` parses it there), and those strings' paths."""
    if seen is None or seen.structured is None:
        return output, []
    taken: List[Path] = []
    typed: ValueType = output
    for path, text in json_texts(seen.structured):  # outer places first
        if any(path[: len(done)] == done for done in taken):
            continue  # inside one typed already: its type says what it held
        changed = _typed_at(typed, path, to_type(text.shape))
        if changed is not None:
            typed = changed
            taken.append(path)
    assert isinstance(typed, Record)
    return typed, taken


def _site_steps(path: Path) -> Tuple[str, ...]:
    """A path's steps as ``_declare`` spells sites: ``.key``, ``[]``, ``{}``."""
    return tuple("." + step[1] if step[0] == "key" else _SITE_STEP[step[0]] for step in path)


_SITE_STEP = {"item": "[]", "value": "{}"}


def _typed_at(kind: ValueType, path: Path, held: ValueType) -> Optional[ValueType]:
    """``kind`` with the declared string at ``path`` typed ``held``; ``None`` when the
    schema has no string there (then nothing is parsed: the schema is the server's word)."""
    if isinstance(kind, Nullable):
        inner = _typed_at(kind.inner, path, held)
        return None if inner is None else Nullable(inner)
    if not path:
        return held if kind == Simple("string") and not isinstance(held, Structured) else None
    step, rest = path[0], path[1:]
    if step[0] == "key" and isinstance(kind, Record):
        for index, field in enumerate(kind.fields):
            if field.name == step[1]:
                inner = _typed_at(field.type, rest, held)
                if inner is None:
                    return None
                note = shapes.JSON_TEXT_NOTE + (
                    " " + field.description if field.description else ""
                )
                fields = list(kind.fields)
                fields[index] = Field(field.name, inner, field.optional, note)
                return Record(tuple(fields), kind.open)
        return None
    if step[0] == "item" and isinstance(kind, Array):
        inner = _typed_at(kind.item, rest, held)
        return None if inner is None else Array(inner)
    if step[0] == "value" and isinstance(kind, Map):
        inner = _typed_at(kind.value, rest, held)
        return None if inner is None else Map(inner)
    return None


def _declare_seen(function: str, tool: str, seen: Learned, out: List[Declaration]) -> Optional[Ref]:
    """The per-tool ToolOutput whose ``data`` is the shape learned, or ``None`` when
    what was seen types nothing (only null, or nothing readable)."""
    assert seen.data is not None
    kind = to_type(seen.data)
    if isinstance(kind, Structured):
        return None
    about = "the data of %s's ToolOutput, as observed in %d call%s; the server declares no " % (
        function,
        seen.calls,
        "" if seen.calls == 1 else "s",
    )
    natural = _pascal(function)
    first = len(out)
    data = _declare(
        kind, (function, "data"), natural + "Data", tool, about + "outputSchema.", False, out
    )
    for index in range(first, len(out)):  # shown as observed{...}: learned, not declared
        out[index] = out[index].as_seen()
    fields = (
        Field("text", Simple("string"), False, None),
        Field("data", data, False, None),  # type: ignore[arg-type]  # see ModelType
        Field("content", BLOCKS, False, None),  # type: ignore[arg-type]  # see ModelType
    )
    site = (function, "output")
    about = "what %s returns: a ToolOutput whose data has the shape observed." % function
    out.append(
        Declaration(site, natural + "Output", tool, about, fields, False, False, False, True)
    )
    return Ref(site)


def _site_text(site: Site) -> str:
    return json.dumps(list(site))


# Types that hold no record: nothing to declare, and no name to make (the hot path).
_LEAVES = (Simple, Choice, Structured)


def _declare_param(function: str, tool: str, param: Param, out: List[Declaration]) -> Param:
    if isinstance(param.type, _LEAVES):
        return param
    about = "the parameter %s of %s." % (literal(param.name), function)
    kind = _declare(
        param.type,
        (function, "param", param.name),
        _pascal(function) + _pascal(param.name),
        tool,
        about,
        True,
        out,
    )
    if kind is param.type:
        return param
    return Param(
        param.name,
        kind,  # type: ignore[arg-type]  # see ModelType
        param.optional,
        param.description,
        param.default,
        param.has_default,
    )


def _declare(
    kind: ValueType,
    site: Site,
    natural: str,
    tool: str,
    about: str,
    is_input: bool,
    out: List[Declaration],
) -> ModelType:
    """``kind`` with every record in it declared into ``out`` (nested ones first)."""
    if isinstance(kind, Record):
        return _declare_record(site, natural, tool, about, kind, is_input, out)
    if isinstance(kind, Array):
        item = _declare(
            kind.item, site + ("[]",), natural, tool, "each item of " + about, is_input, out
        )
        return kind if item is kind.item else Array(item)  # type: ignore[arg-type]
    if isinstance(kind, Nullable):
        inner = _declare(kind.inner, site, natural, tool, about, is_input, out)
        return kind if inner is kind.inner else Nullable(inner)  # type: ignore[arg-type]
    if isinstance(kind, Map):
        value = _declare(
            kind.value,
            site + ("{}",),
            natural + "Value",
            tool,
            "each value of " + about,
            is_input,
            out,
        )
        return kind if value is kind.value else Map(value)  # type: ignore[arg-type]
    if isinstance(kind, AnyOf):
        branches = tuple(
            _declare(
                branch,
                site + ("|%d" % index,),
                natural + str(index + 1),
                tool,
                "branch %d of %s" % (index + 1, about),
                is_input,
                out,
            )
            for index, branch in enumerate(kind.branches)
        )
        return AnyOf(branches)  # type: ignore[arg-type]
    return kind


def _declare_record(
    site: Site,
    natural: str,
    tool: str,
    about: str,
    record: Record,
    is_input: bool,
    out: List[Declaration],
) -> Ref:
    fields = []
    for field in record.fields:
        if isinstance(field.type, _LEAVES):
            fields.append(field)
            continue
        key_about = "the value under the key %s of %s" % (literal(field.name), natural)
        kind = _declare(
            field.type,
            site + ("." + field.name,),
            natural + _pascal(field.name),
            tool,
            key_about + ".",
            is_input,
            out,
        )
        if kind is not field.type:
            field = Field(field.name, kind, field.optional, field.description)  # type: ignore[arg-type]
        fields.append(field)
    out.append(Declaration(site, natural, tool, about, tuple(fields), record.open, is_input))
    return Ref(site)


_WORDS = re.compile(r"[A-Za-z0-9]+")


def _pascal(name: str) -> str:
    """``get_current_time`` and ``getCurrentTime`` -> ``GetCurrentTime``: ASCII words, capitalized.

    Only the first letter of each word changes, so ``HTTPServer`` stays as it
    is; a name without one becomes ``Value``. No ``_`` is ever produced, so a
    digested name (``<natural>_<8 hex>``) never meets a natural one.
    """
    pascal = "".join(word[0].upper() + word[1:] for word in _WORDS.findall(name))
    # A name with no ASCII letter or digit ("", "---", "日本"): a word of ours,
    # so the type is never named like its parent.
    return pascal or "Value"


def _name_types(functions: List[Function], digest: Digest) -> Names:
    """Every declaration's name: natural, or with a digest where one is needed."""
    declarations = [d for function in functions for d in function.declarations]
    taken = {function.name for function in functions} | TYPING_NAMES | BODY_NAMES
    taken |= {label for function in functions for label in function.labels}
    taken |= {"cap", "mcp"} | CONTENT_NAMES
    counts: Dict[str, int] = {}
    for declaration in declarations:
        counts[declaration.natural] = counts.get(declaration.natural, 0) + 1
    by_site: Dict[Site, str] = {}
    owner: Dict[str, Declaration] = {}
    for declaration in declarations:
        name = declaration.natural
        if counts[name] > 1 or name in taken:
            name += "_" + digest_suffix(_site_text(declaration.site), digest)
        if name in owner or name in taken:  # an engineered digest: refuse, never repair
            first = owner[name].tool if name in owner else "a function or label"
            raise ToolNameCollision(first, declaration.tool, name)
        owner[name] = declaration
        by_site[declaration.site] = name
    shadowed = frozenset(function.name for function in functions) & BUILTIN_TYPES
    return Names(by_site, {d.site: d for d in declarations}, shadowed)


# ----------------------------------------------------------------------------- source

# The contract with the seam, stated in every module (and in CLAUDE.md).
_CONTRACT = (
    "Each function returns what internal.invoke returns: mcp_client.codegen.deliver "
    "of the tools/call result. For a tool that declares an outputSchema, that is the "
    "call's structuredContent as the server sent it, typed by the TypedDict the function "
    "names and checked against it (a mismatch raises mcp_client.errors.ResultMismatch), "
    "or Dict[str, Any] when the schema could not be read. For a tool without one, it is "
    "a ToolOutput (internal.ToolOutput: a dict whose keys read as attributes too): the "
    "text blocks joined by newlines, that text parsed when it is one JSON object or "
    "array, or a Python literal of one (data), and every content block as the server "
    "sent it. A "
    "failed call (isError, or a tool with an outputSchema that brought no "
    "structuredContent object) raises mcp_client.errors.ToolFailed instead."
)


def _module(
    server: str,
    module_name: str,
    functions: List[Function],
    names: Names,
    docs: List[List[str]],
    info: Optional[InitializeResult],
) -> str:
    lines = _header(server, module_name) + _module_docstring(server, info)
    lines += [""] + _imports(functions, names)
    if any(function.returns == RESULT for function in functions):
        lines += ["", ""] + _tool_output(names)
    for function, doc in zip(functions, docs):
        lines += ["", ""] + _function(server, function, names, doc)
    return "\n".join(lines) + "\n"


def _header(server: str, module_name: str) -> List[str]:
    # Line 1 pins the encoding and line 2 is fixed, so no server text can sit
    # where PEP 263 looks for a coding declaration.
    return [
        "# -*- coding: utf-8 -*-",
        "# Generated by mcp_client.codegen; do not edit: regenerate it instead.",
        "#",
        *_comment(
            "Module %s: the tools of MCP server %s."
            % (module_name, sanitize(server, MAX_NOTE_CHARS))
        ),
        "# Server text appears in this module only in comment lines like these",
        "# and in escaped string literals; each function ends in internal.invoke.",
        "#",
        *_comment(_CONTRACT),
        "",
    ]


def _module_docstring(server: str, info: Optional[InitializeResult]) -> List[str]:
    """The module's ``__doc__``: the server's name, version and title, and its
    ``instructions``, sanitized and capped like descriptions, as escaped literals."""
    if info is None:
        return _docstring.literals(
            ["The tools of MCP server %s." % sanitize(server, MAX_NOTE_CHARS)], ""
        )
    about = info.server_info
    said = "MCP server %s" % sanitize(about.name, MAX_NOTE_CHARS)
    if about.version:
        said += ", version %s" % sanitize(about.version, MAX_NOTE_CHARS)
    if about.title:
        said += ' (title "%s")' % sanitize(about.title, MAX_NOTE_CHARS)
    lines = wrap(
        "The tools of %s, configured as %s." % (said, sanitize(server, MAX_NOTE_CHARS)), 72
    )
    instructions = sanitize(info.instructions or "", MAX_INSTRUCTIONS_CHARS)
    if instructions:
        lines += ["", "The server's instructions (its text, not checked):"]
        lines += wrap(instructions, 72)
    return _docstring.literals(lines, "")


def _imports(functions: List[Function], names: Names) -> List[str]:
    used = _typing_names(functions, names)
    typing_line = ["from typing import " + ", ".join(sorted(used))] if used else []
    # A function named like a builtin the source spells (def str) shadows it in the
    # module: the source then spells that builtin through the builtins module.
    shadowing = ["import builtins as %s" % BUILTINS_MODULE] if names.shadowed else []
    return (
        typing_line
        + shadowing
        + [
            "import typing as _typing",
            "",
            "from cap.internal import mcp as internal",
        ]
    )


def _typing_names(functions: List[Function], names: Names) -> FrozenSet[str]:
    """The ``typing`` names the annotations and declarations spell."""
    used: Set[str] = set()
    kinds: List[ModelType] = []
    for function in functions:
        if isinstance(function.plan, WholeValue):
            used |= {"Dict", "Any"}
        for param in function.params:
            kinds.append(param.type)
            if param.optional:
                used.add("Optional")
        if function.returns == RESULT:  # ToolOutput and the block types
            used |= set(content.DECLARATION_TYPING) | {"Optional"}
        elif function.result is None:
            used |= {"Dict", "Any"}
    for declaration in names.declarations.values():
        used.add("TypedDict")
        kinds += [field.type for field in declaration.fields]
    while kinds:
        kind = kinds.pop()
        used.add(_TYPING_OF.get(type(kind), ""))
        if isinstance(kind, Array):
            kinds.append(kind.item)
        elif isinstance(kind, Nullable):
            kinds.append(kind.inner)
        elif isinstance(kind, Map):
            kinds.append(kind.value)
        elif isinstance(kind, AnyOf):
            kinds += kind.branches
    return frozenset(used - {""})


# The typing name each kind of type is spelled with, if any (records are _Refs).
_TYPING_OF = {
    Array: "List",
    Nullable: "Optional",
    Map: "Dict",
    Choice: "Literal",
    AnyOf: "Union",
    Structured: "Any",
    Blocks: "List",
}


def _tool_output(names: Names) -> List[str]:
    return (
        _comment(
            "The content blocks of MCP 2025-06-18 (mcp_client.content): test "
            'block["type"] before reading the other keys; a block of a kind not '
            "listed here still arrives, as the server sent it."
        )
        + [_builtins_spelled(line, names) for line in content.DECLARATIONS]
        + _comment(
            "%s: what a tool without an outputSchema returns (codegen.deliver): a dict "
            'whose keys read as attributes too (out["text"] is out.text): its text blocks '
            "joined by newlines, that text parsed when it is one JSON object or array, "
            "or a Python literal of one (else None), and every content block as the "
            "server sent it." % TOOL_OUTPUT
        )
        + _output_type(TOOL_OUTPUT, "Optional[Union[Dict[str, Any], List[Any]]]", names)
    )


def _output_type(name: str, data: str, names: Names) -> List[str]:
    """A ``ToolOutput``'s type, its ``data`` of type ``data``: a ``TypedDict`` of its
    three keys, as ``codegen.deliver`` gives it. The module declares it itself, so that
    it needs nothing of ``cap.internal.mcp`` but ``invoke``, whatever a harness puts
    there. (Code mode's runtime gives ``internal.ToolOutput``, whose keys read as
    attributes too; its check lets a program read them so: ``Generated.outputs``.)"""
    return [
        '%s = TypedDict("%s", {' % (name, name),
        _builtins_spelled('    "text": str, "data": %s, "content": List[Block],' % data, names),
        "})",
    ]


# A builtin's name in the fixed declarations' code (never inside a key's quotes).
_BUILTIN_WORD = re.compile(r'(?<![\w".])(%s)(?![\w"])' % "|".join(sorted(BUILTIN_TYPES)))


def _builtins_spelled(line: str, names: Names) -> str:
    """A line of the fixed declarations with the builtins the module shadows spelt
    through ``_builtins``."""
    if not names.shadowed:
        return line
    return _BUILTIN_WORD.sub(lambda found: builtin(found.group(1), names), line)


def _function(server: str, function: Function, names: Names, doc: List[str]) -> List[str]:
    lines: List[str] = []
    for declaration in function.declarations:
        lines += _declaration(declaration, names) + ["", ""]
    return (
        lines
        + _signature(function, names)
        + _docstring.literals(doc)
        + _body(server, function, names)
    )


def _mixed(declaration: Declaration) -> bool:
    optional = [field.optional for field in declaration.fields]
    return any(optional) and not all(optional)


def _declaration(declaration: Declaration, names: Names) -> List[str]:
    """The record's ``TypedDict``, after its comment: one, or two halves and their join;
    a learned ``ToolOutput``'s, its data the learned type."""
    name = names.by_site[declaration.site]
    comment = _declaration_comment(declaration, name)
    if declaration.output:
        data = source_type(declaration.fields[1].type, names)
        return comment + _output_type(name, data, names)
    if not _mixed(declaration):
        total = "" if not declaration.fields[0].optional else ", total=False"
        return comment + _typed_dict(name, declaration.fields, total, names)
    required = tuple(field for field in declaration.fields if not field.optional)
    optional = tuple(field for field in declaration.fields if field.optional)
    halves = ("_%sRequired" % name, "_%sOptional" % name)
    return (
        comment
        + _typed_dict(halves[0], required, "", names)
        + _typed_dict(halves[1], optional, ", total=False", names)
        + ["class %s(%s, %s):" % (name, halves[0], halves[1]), INDENT + "pass"]
    )


def _typed_dict(name: str, fields: Tuple[Field, ...], total: str, names: Names) -> List[str]:
    entries = ["%s: %s" % (literal(field.name), source_type(field.type, names)) for field in fields]
    return _fit('%s = TypedDict("%s", {' % (name, name), entries, "}%s)" % total, "")


def _declaration_comment(declaration: Declaration, name: str) -> List[str]:
    lines = _comment("%s: %s" % (name, declaration.about))
    for field in declaration.fields:
        note = _docstring.field_note(field)
        if note:
            lines += _comment("%s: %s" % (literal(field.name), note), first="# - ", rest="#   ")
    if declaration.open:
        lines += _comment("Other keys may appear too (additionalProperties).")
    return lines


def _signature(function: Function, names: Names) -> List[str]:
    return _fit(
        "def %s(" % function.name,
        _signature_params(function, names),
        ") -> %s:" % _source_returns(function, names),
        "",
    )


def _signature_params(function: Function, names: Names) -> List[str]:
    if isinstance(function.plan, WholeValue):
        return ["arguments: Dict[%s, Any]" % builtin("str", names)]
    return list(with_star(function, lambda param, label: _source_param(param, label, names)))


def _source_param(param: Param, label: str, names: Names) -> str:
    if not param.optional:
        return "%s: %s" % (label, source_type(param.type, names))
    default = signature_default(param)
    if default is not None:
        return "%s: %s = %s" % (label, source_type(param.type, names), default)
    kind = param.type.inner if isinstance(param.type, Nullable) else param.type
    return "%s: Optional[%s] = None" % (label, source_type(kind, names))


def _source_returns(function: Function, names: Names) -> str:
    if function.result is not None:
        return names.of(function.result)
    if function.returns == STRUCTURED:
        return "Dict[%s, Any]" % builtin("str", names)
    return TOOL_OUTPUT


# A body names no type a label can take: a parameter may be called Dict, Any
# or str (a cast's type is evaluated where the parameters are), so the dict's
# annotation and the cast say _typing.Dict[_typing.Any, _typing.Any], which
# mypy takes for Dict[str, Any] where that is what the signature declares.
_BODY_DICT = "_typing.Dict[_typing.Any, _typing.Any]"


def _cast_target(function: Function, names: Names) -> str:
    if function.result is not None:
        return names.of(function.result)  # never a label: _name_types saw to that
    return _BODY_DICT if function.returns == STRUCTURED else TOOL_OUTPUT


def _body(server: str, function: Function, names: Names) -> List[str]:
    head = "%sreturn _typing.cast(%s, internal.invoke(" % (INDENT, _cast_target(function, names))
    names_sent = "%s, %s, arguments))" % (literal(server), literal(function.tool))
    ret = [head + names_sent]
    if len(ret[0]) > LINE_WIDTH:
        ret = [head, INDENT * 2 + names_sent]
    if isinstance(function.plan, WholeValue):
        return ret
    return _arguments(function) + ret


def _arguments(function: Function) -> List[str]:
    """The ``arguments`` dict: required wire names and those with a shown default at
    once, other optional ones when given."""
    pairs = [(p, label, _always_sent(p)) for p, label in zip(function.params, function.labels)]
    entries = ["%s: %s" % (literal(p.name), label) for p, label, always in pairs if always]
    head = INDENT + "arguments: %s = {" % _BODY_DICT
    lines = _fit(head, entries, "}", INDENT)
    for param, label, always in pairs:
        if not always:
            lines.append("%sif %s is not None:" % (INDENT, label))
            lines.append("%sarguments[%s] = %s" % (INDENT * 2, literal(param.name), label))
    return lines


def _always_sent(param: Param) -> bool:
    return not param.optional or signature_default(param) is not None


def _fit(head: str, items: List[str], tail: str, indent: str) -> List[str]:
    """``head item, item tail`` on one line if it fits, else one item per line."""
    line = head + ", ".join(items) + tail
    if len(line) <= LINE_WIDTH or not items:
        return [line]
    return [head] + ["%s%s%s," % (indent, INDENT, item) for item in items] + [indent + tail]


def _comment(text: str, first: str = "# ", rest: str = "# ") -> List[str]:
    """``text`` (already sanitized) as comment lines; every break is made here."""
    wrapped = wrap(text, LINE_WIDTH - len(rest))
    return [(first if index == 0 else rest) + line for index, line in enumerate(wrapped)]


# ----------------------------------------------------------------------------- helpers


def describe(error: GenerateError) -> str:
    """One sanitized line for a refusal, fit for a log or a model's eyes."""
    return "%s: %s" % (type(error).__name__, sanitize(str(error), MAX_DESCRIPTION_CHARS))


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
    # The lines that start with "#" taken out, in one C-speed pass: each goes with the
    # break before it, so the lines left keep one break between them, as a join would.
    code = _COMMENT_LINE.sub("", "\n" + text)[1:] + "\n"
    if "@" in code or "\\\n" in code:
        return False
    return _plain_strings_only(code) or not any(
        _may_span_lines(code, match) for match in _LEXEMES.finditer(code)
    )


def _plain_strings_only(code: str) -> bool:
    """The scan below in a few C-speed passes, for code whose only strings are ``"..."``.

    Every ``"..."`` closed on its line and not right after a letter is
    removed. When no quote and no ``#`` is left, the strings removed are the
    lexer's own: each began at the first quote the code met, as the lexer's
    would, and none held a line break or had a prefix (a string after a letter
    is left, and its quote with it); none was triple-quoted when no
    ``\"\"\"`` is in the code. Generated code is always
    like this (``escape`` leaves no bare quote in a literal and the docstrings
    are runs of such literals), so the per-lexeme loop runs only for other text.
    """
    if '"""' in code:
        return False
    rest = _DOUBLE_QUOTED.sub("", code)
    return not ("'" in rest or '"' in rest or "#" in rest)


# A "..." closed on its line and not after a letter (a prefix): one left
# unmatched leaves its quote behind. The loop is unrolled (runs of plain
# characters, then one escape at a time): several times faster than an
# alternation per character on 400 KB of source. The quote comes first and the
# letter is looked for behind it, so the engine can skip to the next quote at C
# speed (a pattern that starts with a look-behind is tried at every character).
_DOUBLE_QUOTED = re.compile(r'"(?<![A-Za-z]")[^"\\\n]*(?:\\.[^"\\\n]*)*"')
# A line that starts with "#", with the line break before it (the text is given one).
_COMMENT_LINE = re.compile(r"\n#[^\n]*")


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
