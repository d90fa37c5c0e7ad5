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

The last rung is never longer than the bare signatures the generator made
before issue 19 (names are only ever shorter now), so a server that fitted
then fits now. Only what still does not fit refuses the server
(``SurfaceTooLarge``). The order is a model's: what a tool does in a sentence,
then what it returns, then what it takes, then the rest of the prose. The
source and the docs are never cut by the surface budget.
"""

from __future__ import annotations

import functools
import io
import json
import re
import token
import tokenize
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from .errors import (
    GenerateError,
    SanitizerBreach,
    SurfaceTooLarge,
    ToolFailed,
    ToolNameCollision,
    TooManyTools,
)
from .name import (
    BODY_NAMES,
    TYPING_NAMES,
    Digest,
    digest_suffix,
    first_collision,
    mangle,
    mangle_label,
    sha256_digest,
)
from .protocol import CallToolResult, Text, ToolDescriptor
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

# Re-exported: PORT.md names these helpers codegen's; they live in .text so that what shows
# server text (the CLI, replay, the errors) does not load the generator.
from .text import escape, sanitize, scan_window, truncate

__all__ = [
    "Generated",
    "GeneratedTool",
    "generate",
    "deliver",
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
]

#: A listing with more tools than this is refused (SEED.md, listing size is capped).
MAX_TOOLS = 256
#: UTF-8 bytes of surface: a larger one is cut (see the module doc), and bare
#: signatures past it are refused.
MAX_SURFACE_BYTES = 64 * 1024
#: Characters kept of a tool's description in the surface.
MAX_DESCRIPTION_CHARS = 400
#: Characters kept of a note: a parameter description, a reason, the server name.
MAX_NOTE_CHARS = 120
#: Characters of a shape in the surface before it shows less.
MAX_SHAPE_CHARS = 1000
#: UTF-8 bytes of one tool's doc (``GeneratedTool.doc``, its docstring).
MAX_DOC_BYTES = 8 * 1024
#: UTF-8 bytes of the signature line a doc starts with.
MAX_DOC_SIGNATURE_BYTES = 2 * 1024
#: Characters kept of a tool's description in its doc.
MAX_DOC_DESCRIPTION_CHARS = 2000
#: Characters kept of a parameter's or a key's description in a doc.
MAX_DOC_NOTE_CHARS = 400
#: Characters of a default shown in the surface; a longer one shows in the doc only.
MAX_DEFAULT_CHARS = 40
#: Characters of error text a ToolFailed carries.
MAX_ERROR_CHARS = 2000
#: Longest comment and code line the generator wraps to (longer words stay whole).
LINE_WIDTH = 79
#: The result type of every tool without an outputSchema (``deliver``'s dict).
TOOL_OUTPUT = "ToolOutput"

_INDENT = "    "
_PYTHON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
_STRUCTURED = "structured"
_RESULT = "result"


@dataclass(frozen=True)
class GeneratedTool:
    """One tool as generated: what a harness shows, and how ``deliver`` answers for it.

    ``returns`` is ``"structured"`` when the function returns the call's
    ``structuredContent`` (the tool declares an ``outputSchema``), ``"result"``
    when it returns a ``ToolOutput``. ``line`` is its surface line as it finally
    appears (after any budget cut, without the newline); ``doc`` its full
    detail, at most ``MAX_DOC_BYTES``.
    """

    function: str
    wire_name: str
    returns: str
    line: str
    doc: str


@dataclass(frozen=True)
class Generated:
    """One server's generated module: its dotted name, its source, its surface, its tools."""

    module_name: str
    source: str
    surface: str
    tools: Tuple[GeneratedTool, ...] = ()


@dataclass(frozen=True)
class _Ref:
    """A record declared at module level; ``site`` is where it sits (its identity)."""

    site: "_Site"


#: A type after declaration: records replaced by references to their declarations.
#: The schema's containers (Array, Nullable, AnyOf, Field, Param) are reused to
#: hold one, the only place codegen's types go past the schema's: hence the few
#: ``type: ignore[arg-type]`` where a _Ref is put in them.
_Type = Union[ValueType, _Ref]


@dataclass(frozen=True)
class _Declaration:
    """One record type: where it sits, its natural name, what it is, its keys."""

    site: "_Site"  # unique in the module: the path that leads to it
    natural: str
    tool: str  # the wire name of the tool it belongs to (for a collision's message)
    about: str  # what the type describes, for its comment (generator text and escapes)
    fields: Tuple[Field, ...]  # types are _Type: nested records are _Ref
    open: bool
    is_input: bool


@dataclass(frozen=True)
class _Function:
    """One tool, read and named; everything the source, surface and doc are made from."""

    name: str  # mangled: a display artifact only
    tool: str  # the wire name, verbatim
    description: str  # sanitized, cut to MAX_DESCRIPTION_CHARS
    long_description: str  # sanitized, cut to MAX_DOC_DESCRIPTION_CHARS
    plan: Plan  # a label collision has already degraded it to WholeValue
    params: Tuple[Param, ...]  # Typed only: required first, then optional; types are _Type
    labels: Tuple[str, ...]  # one per param, same order
    claims: str  # sanitized: the title and the annotations, "" when the server claims none
    returns: str  # _STRUCTURED or _RESULT
    result: Optional[_Ref]  # a structured tool's record, when its schema reads as one
    result_reason: str  # sanitized: why a structured result is untyped, "" otherwise
    declarations: Tuple[_Declaration, ...]  # nested ones first; inputs, then the result's


class _Names(NamedTuple):
    """The module's type names: by site, and the declarations by site."""

    by_site: Dict["_Site", str]
    declarations: Dict["_Site", _Declaration]

    def of(self, ref: _Ref) -> str:
        return self.by_site[ref.site]


# ----------------------------------------------------------------------------- generate


def generate(
    server: str, tools: Sequence[ToolDescriptor], digest: Digest = sha256_digest
) -> Generated:
    """Source, surface and tools for ``server``'s ``tools``, or a :class:`GenerateError`."""
    if len(tools) > MAX_TOOLS:
        raise TooManyTools(len(tools), MAX_TOOLS)
    collision = first_collision((tool.name for tool in tools), digest)
    if collision is not None:
        raise ToolNameCollision(collision.first, collision.second, collision.mangled)
    module_name = "cap.mcp." + mangle(server, digest)
    functions = sorted((_read(tool, digest) for tool in tools), key=lambda f: f.name)
    names = _name_types(functions, digest)
    pieces = [_surface_line(module_name, function, names) for function in functions]
    lines = _surface(pieces)
    signatures = [_signature_line(line) for line in pieces]
    docs = [
        _doc(function, names, MAX_DOC_BYTES - len(signature.encode("utf-8")) - 2)
        for function, signature in zip(functions, signatures)
    ]
    source = _module(server, module_name, functions, names, docs)
    scan_for_at(source)
    generated = tuple(
        GeneratedTool(
            function.name,
            function.tool,
            function.returns,
            line,
            signature + "\n\n" + "\n".join(doc),
        )
        for function, line, signature, doc in zip(functions, lines, signatures, docs)
    )
    surface = "".join(line + "\n" for line in lines)
    return Generated(module_name, source, surface, generated)


def deliver(tool: GeneratedTool, result: CallToolResult) -> Any:
    """What the generated function for ``tool`` returns for ``result``; total.

    ``structuredContent`` for a ``"structured"`` tool, a ``ToolOutput`` dict
    for a ``"result"`` one; :class:`ToolFailed` when the tool answered
    ``isError``, or a ``"structured"`` tool brought no ``structuredContent``
    object. The values are the server's, raw and untrusted.
    """
    if result.is_error:
        raise ToolFailed(tool.wire_name, result, _error_text(tool, result))
    if tool.returns == _STRUCTURED:
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
        return result.structured_content
    return {
        "text": "\n".join(block.text for block in result.content if isinstance(block, Text)),
        "content": [_raw_block(block) for block in result.content],
    }


def _raw_block(block: Any) -> Any:
    if isinstance(block, Text):
        return block.raw if block.raw is not None else {"type": "text", "text": block.text}
    return block.raw


def _error_text(tool: GeneratedTool, result: CallToolResult) -> str:
    text = " ".join(block.text for block in result.content if isinstance(block, Text))
    said = sanitize(text, MAX_ERROR_CHARS)
    return said or sanitize(
        "tool %s reported an error (isError) with no text" % tool.wire_name, MAX_ERROR_CHARS
    )


def _read(tool: ToolDescriptor, digest: Digest) -> _Function:
    name = mangle(tool.name, digest)
    text = tool.description if tool.description is not None else tool.title
    long_description = sanitize(text or "", MAX_DOC_DESCRIPTION_CHARS)
    # The same as sanitizing to the shorter limit: the first characters are the same.
    description = truncate(long_description, MAX_DESCRIPTION_CHARS).rstrip()
    claims = _claims(tool, description)
    declarations: List[_Declaration] = []
    tool_plan = _degrade_on_label_collision(plan(tool.input_schema), digest)
    params: Tuple[Param, ...] = ()
    if not isinstance(tool_plan, WholeValue):
        params = tuple(
            _declare_param(name, tool.name, param, declarations)
            for param in sorted(tool_plan.params, key=lambda p: p.optional)
        )
    labels = tuple(mangle_label(param.name, digest) for param in params)
    returns, result, reason = _read_result(name, tool, declarations)
    return _Function(
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
    )


def _degrade_on_label_collision(tool_plan: Plan, digest: Digest) -> Plan:
    # SEED.md: a label collision inside one tool degrades that one function to
    # its whole-value form; the rest of the module is unaffected.
    if isinstance(tool_plan, WholeValue):
        return tool_plan
    names = (param.name for param in tool_plan.params)
    collision = first_collision(names, digest, mangle_label)
    if collision is None:
        return tool_plan
    return WholeValue(
        "parameters %r and %r both become %s"
        % (collision.first, collision.second, collision.mangled)
    )


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
    function: str, tool: ToolDescriptor, out: List[_Declaration]
) -> Tuple[str, Optional[_Ref], str]:
    """What the tool returns, its record if it has one, and why not if it has none."""
    if tool.output_schema is None:
        return _RESULT, None, ""
    output = plan_output(tool.output_schema)
    if isinstance(output, WholeValue):
        return _STRUCTURED, None, sanitize(output.reason, MAX_NOTE_CHARS)
    site = (function, "result")
    about = "what %s returns: the call's structuredContent." % function
    ref = _declare_record(site, _pascal(function) + "Result", tool.name, about, output, False, out)
    return _STRUCTURED, ref, ""


#: Where a record sits: the function, "result" or "param" and the parameter's
#: name, then a step per level: "." + key, "[]" for an array's items, "|<n>"
#: for a union's n-th branch. A key step always starts with ".", so no key can
#: pass for another step. Kept as a tuple (a string that nested its parent's
#: would grow with every level of escaping); it is spelled out, flat, only
#: for the digest of a name that needs one.
_Site = Tuple[str, ...]


def _site_text(site: _Site) -> str:
    return json.dumps(list(site))


# Types that hold no record: nothing to declare, and no name to make (the hot path).
_LEAVES = (Simple, Choice, Structured)


def _declare_param(function: str, tool: str, param: Param, out: List[_Declaration]) -> Param:
    if isinstance(param.type, _LEAVES):
        return param
    about = "the parameter %s of %s." % (_literal(param.name), function)
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
        kind,  # type: ignore[arg-type]  # see _Type
        param.optional,
        param.description,
        param.default,
        param.has_default,
    )


def _declare(
    kind: ValueType,
    site: _Site,
    natural: str,
    tool: str,
    about: str,
    is_input: bool,
    out: List[_Declaration],
) -> _Type:
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
    site: _Site,
    natural: str,
    tool: str,
    about: str,
    record: Record,
    is_input: bool,
    out: List[_Declaration],
) -> _Ref:
    fields = []
    for field in record.fields:
        if isinstance(field.type, _LEAVES):
            fields.append(field)
            continue
        key_about = "the value under the key %s of %s" % (_literal(field.name), natural)
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
    out.append(_Declaration(site, natural, tool, about, tuple(fields), record.open, is_input))
    return _Ref(site)


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


def _name_types(functions: List[_Function], digest: Digest) -> _Names:
    """Every declaration's name: natural, or with a digest where one is needed."""
    declarations = [d for function in functions for d in function.declarations]
    taken = {function.name for function in functions} | TYPING_NAMES | BODY_NAMES
    taken |= {label for function in functions for label in function.labels}
    taken |= {"cap", "mcp", TOOL_OUTPUT}
    counts: Dict[str, int] = {}
    for declaration in declarations:
        counts[declaration.natural] = counts.get(declaration.natural, 0) + 1
    by_site: Dict[_Site, str] = {}
    owner: Dict[str, _Declaration] = {}
    for declaration in declarations:
        name = declaration.natural
        if counts[name] > 1 or name in taken:
            name += "_" + digest_suffix(_site_text(declaration.site), digest)
        if name in owner or name in taken:  # an engineered digest: refuse, never repair
            first = owner[name].tool if name in owner else "a function or label"
            raise ToolNameCollision(first, declaration.tool, name)
        owner[name] = declaration
        by_site[declaration.site] = name
    return _Names(by_site, {d.site: d for d in declarations})


# ----------------------------------------------------------------------------- type text


def _source_type(kind: _Type, names: _Names) -> str:
    """``kind`` as a ``typing`` annotation."""
    if isinstance(kind, _Ref):
        return names.of(kind)
    if isinstance(kind, Simple):
        return _PYTHON_TYPES[kind.kind]
    if isinstance(kind, Array):
        return "List[%s]" % _source_type(kind.item, names)
    if isinstance(kind, Nullable):
        return "Optional[%s]" % _source_type(kind.inner, names)
    if isinstance(kind, Map):
        return "Dict[str, %s]" % _source_type(kind.value, names)
    if isinstance(kind, Choice):
        return "Literal[%s]" % ", ".join(_member(member) for member in kind.members)
    if isinstance(kind, AnyOf):
        return "Union[%s]" % ", ".join(_source_type(branch, names) for branch in kind.branches)
    return "Any"


def _member(member: Any) -> str:
    if type(member) is str:
        return _literal(member)
    return repr(member)  # an int or a bool: True, False, digits


class _Show(NamedTuple):
    """How much of a type the surface shows."""

    shapes: bool  # an object as Name{shape}; else its name only
    plain: bool  # the first surface's types: objects and unions Any, enums their kind


def _surface_type(
    kind: _Type, names: _Names, show: _Show, ref: Optional[Callable[[_Ref], str]] = None
) -> str:
    """``kind`` in the surface's spelling; objects as ``Name{shape}`` where shown,
    or as ``ref`` spells them (a doc's nested shapes)."""
    if show.plain:
        return _plain_type(kind)
    if isinstance(kind, _Ref):
        if ref is not None:
            return ref(kind)
        name = names.of(kind)
        return name + _record_shape(names.declarations[kind.site], names) if show.shapes else name
    if isinstance(kind, Simple):
        return _PYTHON_TYPES[kind.kind]
    if isinstance(kind, Array):
        return "list[%s]" % _surface_type(kind.item, names, show, ref)
    if isinstance(kind, Nullable):
        return "%s | None" % _surface_type(kind.inner, names, show, ref)
    if isinstance(kind, Map):
        return "dict[str, %s]" % _surface_type(kind.value, names, show, ref)
    if isinstance(kind, Choice):
        return "Literal[%s]" % ", ".join(_member(member) for member in kind.members)
    if isinstance(kind, AnyOf):
        return " | ".join(_surface_type(branch, names, show, ref) for branch in kind.branches)
    return "Any"


def _plain_type(kind: _Type) -> str:
    """The type as the first surface showed a parameter (never longer than this one)."""
    if isinstance(kind, Nullable):
        return _plain_type(kind.inner)
    if isinstance(kind, Simple):
        return _PYTHON_TYPES[kind.kind]
    if isinstance(kind, Array) and isinstance(kind.item, Simple):
        return "list[%s]" % _PYTHON_TYPES[kind.item.kind]
    if isinstance(kind, Choice):
        kinds = {type(member) for member in kind.members}
        return (
            {str: "str", int: "int", bool: "bool"}.get(kinds.pop(), "Any")
            if len(kinds) == 1
            else "Any"
        )
    return "Any"


def _record_shape(declaration: _Declaration, names: _Names) -> str:
    """The whole shape if it is short enough, else its top-level keys, else nothing."""
    for deep in (True, False):
        shape = _shape(declaration, names, deep)
        if len(shape) <= MAX_SHAPE_CHARS:
            return shape
    return ""


def _shape(declaration: _Declaration, names: _Names, deep: bool) -> str:
    entries = [
        "%s%s: %s"
        % (
            _literal(field.name),
            "?" if field.optional else "",
            _shape_type(field.type, names, deep),
        )
        for field in declaration.fields
    ]
    return "{%s}" % ", ".join(entries + ["..."] if declaration.open else entries)


def _shape_type(kind: _Type, names: _Names, deep: bool) -> str:
    """``kind`` as a shape spells it: a nested record in full (``deep``) or ``{...}``."""

    def nested(site: _Ref) -> str:
        return _shape(names.declarations[site.site], names, deep) if deep else "{...}"

    return _surface_type(kind, names, _Show(False, False), nested)


def _default_text(param: Param) -> Optional[str]:
    """The server's default as a Python literal, if it has one short enough to show."""
    if not param.has_default:
        return None
    value = param.default
    if type(value) is str:
        text = _literal(value)
    elif value is None or type(value) in (bool, int, float):
        text = repr(value)
    elif value in ([], {}):
        text = repr(value)
    else:
        return None
    return text if len(text) <= MAX_DEFAULT_CHARS else None


def _untyped_reason(kind: _Type) -> Optional[str]:
    """Why the value, or what a list, a map or a nullable holds, is ``Any``, if it is."""
    kind = _held(kind)
    return kind.reason if isinstance(kind, Structured) else None


def _held(kind: _Type) -> _Type:
    """What a list, a map or a nullable holds, through any number of them."""
    while isinstance(kind, (Array, Nullable, Map)):
        kind = (
            kind.item
            if isinstance(kind, Array)
            else kind.inner
            if isinstance(kind, Nullable)
            else kind.value
        )
    return kind


# ----------------------------------------------------------------------------- surface


class _Rung(NamedTuple):
    """One cut of the surface budget: what every line still shows."""

    description_chars: int
    result_shapes: bool
    input_shapes: bool
    claims: bool
    defaults: bool
    plain_params: bool
    plain_returns: bool


# What gives first when the surface would pass MAX_SURFACE_BYTES, rung by rung
# (see the module doc).
_RUNGS: Tuple[_Rung, ...] = (
    _Rung(MAX_DESCRIPTION_CHARS, True, True, True, True, False, False),
    _Rung(MAX_NOTE_CHARS, True, True, True, True, False, False),
    _Rung(MAX_NOTE_CHARS, False, True, True, True, False, False),
    _Rung(MAX_NOTE_CHARS, False, False, True, True, False, False),
    _Rung(0, False, False, True, True, False, False),
    _Rung(0, False, False, False, True, False, False),
    _Rung(0, False, False, False, False, True, False),
    _Rung(0, False, False, False, False, True, True),
)


class _Line(NamedTuple):  # a tuple: 256 of them are made per listing, cheaply
    """One function's surface line in pieces, so that each rung is a lookup and a join."""

    head: str  # "<module>.<function>("
    params: Dict[Tuple[bool, bool, bool], str]  # by (shapes, defaults, plain)
    returns: Dict[Tuple[bool, bool], str]  # by (shapes, plain)
    claims: str  # "[server says: ...]", or ""
    description: str


def _surface(lines: List[_Line]) -> List[str]:
    """Each function's line, at the first rung where the whole surface fits."""
    size = 0
    for rung in _RUNGS:
        rendered = [_render(line, rung) for line in lines]
        size = sum(len(text.encode("utf-8")) + 1 for text in rendered)
        if size <= MAX_SURFACE_BYTES:
            return rendered
    raise SurfaceTooLarge(size, MAX_SURFACE_BYTES)


def _render(line: _Line, rung: _Rung) -> str:
    params = line.params[(rung.input_shapes, rung.defaults, rung.plain_params)]
    returns = line.returns[(rung.result_shapes, rung.plain_returns)]
    description = line.description
    if len(description) > rung.description_chars:  # a cut may end in a space
        description = truncate(description, rung.description_chars).rstrip()
    claim = line.claims if rung.claims else ""
    comment = claim + " " + description if claim and description else claim or description
    text = "%s%s) -> %s" % (line.head, params, returns)
    return "%s  # %s" % (text, comment) if comment else text


_PARAM_VARIANTS = ((True, True, False), (False, True, False), (False, False, True))
_RETURN_VARIANTS = ((True, False), (False, False), (False, True))


def _surface_line(module_name: str, function: _Function, names: _Names) -> _Line:
    head = "%s.%s(" % (module_name, function.name)
    claims = "[server says: %s]" % function.claims if function.claims else ""
    params = {key: _surface_params(function, names, *key) for key in _PARAM_VARIANTS}
    returns = {key: _surface_returns(function, names, *key) for key in _RETURN_VARIANTS}
    return _Line(head, params, returns, claims, function.description)


def _surface_params(
    function: _Function, names: _Names, shapes: bool, defaults: bool, plain: bool
) -> str:
    if isinstance(function.plan, WholeValue):
        return "arguments: dict[str, Any]"
    show = _Show(shapes, plain)
    return ", ".join(
        _with_star(
            function, lambda param, label: _surface_param(param, label, names, show, defaults)
        )
    )


def _surface_param(param: Param, label: str, names: _Names, show: _Show, defaults: bool) -> str:
    kind = param.type
    if not param.optional:
        return "%s: %s" % (label, _surface_type(kind, names, show))
    default = _default_text(param) if defaults else None
    if default is not None:
        return "%s: %s = %s" % (label, _surface_type(kind, names, show), default)
    if isinstance(kind, Nullable) and not show.plain:
        kind = kind.inner  # one "| None" is enough
    return "%s: %s | None = None" % (label, _surface_type(kind, names, show))


def _surface_returns(function: _Function, names: _Names, shapes: bool, plain: bool) -> str:
    if plain:
        return "Any"
    if function.result is not None:
        return _surface_type(function.result, names, _Show(shapes, False))
    if function.returns == _STRUCTURED:
        return "dict[str, Any]"
    # The line alone must say what a ToolOutput holds, as it says a result type's
    # shape: a model reading "-> ToolOutput" could not know to read ["text"].
    return TOOL_OUTPUT + _TOOL_OUTPUT_SHAPE if shapes else TOOL_OUTPUT


#: ``ToolOutput``'s keys as the surface shows them (``ToolOutput`` in the module).
_TOOL_OUTPUT_SHAPE = '{"text": str, "content": list[dict[str, Any]]}'


def _with_star(function: _Function, render: Callable[[Param, str], str]) -> Iterator[str]:
    """Rendered parameters, with the bare ``*`` before the first optional one."""
    starred = False
    for param, label in zip(function.params, function.labels):
        if param.optional and not starred:
            starred = True
            yield "*"
        yield render(param, label)


def _signature_line(line: _Line) -> str:
    """The doc's first line: the fullest surface line without its comment, within
    ``MAX_DOC_SIGNATURE_BYTES`` (the shapes give way to the types' names, which
    the doc's type sections spell out, then the line is cut)."""
    text = ""
    for shapes in (True, False):
        text = "%s%s) -> %s" % (
            line.head,
            line.params[(shapes, True, False)],
            line.returns[(shapes, False)],
        )
        if len(text.encode("utf-8")) <= MAX_DOC_SIGNATURE_BYTES:
            return text
    return truncate(text, MAX_DOC_SIGNATURE_BYTES // 4)  # 4 bytes a character at most


# ----------------------------------------------------------------------------- doc


def _doc(function: _Function, names: _Names, limit: int) -> List[str]:
    """The docstring's lines (generator text, sanitized server text), within ``limit`` bytes."""
    lines = _wrap(function.long_description, 72) or ["(The server gives no description.)"]
    if function.name != function.tool:  # the name the description and the server use
        lines += [""] + _indented("The server's tool %s." % _literal(function.tool), "")
    lines += _doc_params(function, names)
    lines += _doc_types("Input types:", function, names, True)
    lines += _doc_returns(function, names)
    lines += _doc_types("Result types:", function, names, False)
    if function.claims:
        lines += [""] + _indented("Server says (claims, not checked): " + function.claims, "")
    lines += _raises(function)
    return _cut(lines, limit)


def _doc_params(function: _Function, names: _Names) -> List[str]:
    if isinstance(function.plan, WholeValue):
        return ["", "Args:"] + _indented(
            "arguments: one dict, sent unchanged as the tool's arguments: "
            + sanitize(function.plan.reason, MAX_NOTE_CHARS),
            "    ",
        )
    if not function.params:
        return []
    lines = ["", "Args:"]
    for param, label in zip(function.params, function.labels):
        lines += _indented("%s: %s" % (label, _param_note(param, label, names)), "    ")
    return lines


def _param_note(param: Param, label: str, names: _Names) -> str:
    notes = [
        "(%s%s)"
        % (
            _surface_type(param.type, names, _Show(False, False)),
            ", optional" if param.optional else "",
        )
    ]
    if label != param.name:
        notes.append("sent as %s." % _literal(param.name))
    notes.append(_description_note(param.description))
    choices = _choices(param.type)
    if choices:
        notes.append("One of: %s." % choices)
    if param.has_default:
        shown = _default_text(param) or sanitize(json.dumps(param.default), MAX_NOTE_CHARS)
        notes.append("Default: %s (the server applies it when this is left out)." % shown)
    reason = _untyped_reason(param.type)
    if reason is not None:
        notes.append("(untyped: %s)" % sanitize(reason, MAX_NOTE_CHARS))
    return " ".join(note for note in notes if note)


def _sentence(text: str) -> str:
    """``text`` ending in a full stop (or its own punctuation), so notes after it read apart."""
    return text + "." if text and text[-1] not in ".!?:;)" else text


def _choices(kind: _Type) -> str:
    kind = _held(kind)
    if not isinstance(kind, Choice):
        return ""
    return ", ".join(_member(member) for member in kind.members)


def _doc_types(title: str, function: _Function, names: _Names, is_input: bool) -> List[str]:
    declarations = [d for d in function.declarations if d.is_input is is_input]
    if not declarations:
        return []
    lines = ["", title]
    for declaration in reversed(declarations):  # outermost first, as a reader meets them
        shape = _shape(declaration, names, False)
        lines += _indented("%s: %s" % (names.by_site[declaration.site], shape), "    ")
        for field in declaration.fields:
            note = _field_note(field)
            if note:
                lines += _indented("%s: %s" % (_literal(field.name), note), "        ")
    return lines


def _description_note(description: Optional[str]) -> str:
    """A parameter's or key's description as a docstring sentence. One ``$defs``
    entry is every ``$ref`` site's (255 sites, one 200k-character description:
    issue 25), so it is built once: the cache's key is only what ``sanitize``
    reads of the text (its window and one more), which is the same answer and
    holds no more than that."""
    return _sanitized_note((description or "")[: scan_window(MAX_DOC_NOTE_CHARS) + 1])


@functools.lru_cache(maxsize=1024)
def _sanitized_note(window: str) -> str:
    return _sentence(sanitize(window, MAX_DOC_NOTE_CHARS))


def _field_note(field: Field) -> str:
    notes = [_description_note(field.description)]
    choices = _choices(field.type)
    if choices:
        notes.append("One of: %s." % choices)
    reason = _untyped_reason(field.type)
    if reason is not None:
        notes.append("(untyped: %s)" % sanitize(reason, MAX_NOTE_CHARS))
    return " ".join(note for note in notes if note)


def _doc_returns(function: _Function, names: _Names) -> List[str]:
    if function.returns == _RESULT:
        return _RETURNS_TOOL_OUTPUT
    if function.result is None:
        text = "dict[str, Any]: the call's structuredContent, untyped: %s." % function.result_reason
    else:
        text = (
            "%s: the call's structuredContent, as the server sent it (its claim; "
            "nothing checks it)." % names.of(function.result)
        )
    return ["", "Returns:"] + _indented(text, "    ")


def _raises(function: _Function) -> List[str]:
    return _RAISES[function.returns]


def _indented(text: str, indent: str) -> List[str]:
    """``text`` wrapped to 72 columns, every line after the first indented further."""
    wrapped = _wrap(text, 72 - len(indent) - 4)
    return [
        (indent if index == 0 else indent + _INDENT) + line for index, line in enumerate(wrapped)
    ]


def _cut(lines: List[str], limit: int) -> List[str]:
    """The lines that fit in ``limit`` UTF-8 bytes (with their breaks), and a mark if cut."""
    size = 0
    for index, line in enumerate(lines):
        size += len(line.encode("utf-8")) + 1
        if size > limit - 64:  # room for the mark
            return lines[:index] + ["(cut here: a tool's doc is at most %d bytes)" % MAX_DOC_BYTES]
    return lines


# ----------------------------------------------------------------------------- source

# The contract with the seam, stated in every module (and in CLAUDE.md).
_CONTRACT = (
    "Each function returns what internal.invoke returns: mcp_client.codegen.deliver "
    "of the tools/call result. For a tool that declares an outputSchema, that is the "
    "call's structuredContent as the server sent it, typed by the TypedDict the function "
    "names (the server's claim; nothing checks it), or Dict[str, Any] when the schema "
    "could not be read. For a tool without one, it is a ToolOutput: the text blocks "
    "joined by newlines, and every content block as the server sent it. A failed call "
    "(isError, or a tool with an outputSchema that brought no structuredContent object) "
    "raises mcp_client.errors.ToolFailed instead."
)


def _module(
    server: str, module_name: str, functions: List[_Function], names: _Names, docs: List[List[str]]
) -> str:
    lines = _header(server, module_name) + _imports(functions, names)
    if any(function.returns == _RESULT for function in functions):
        lines += ["", ""] + _tool_output()
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


def _imports(functions: List[_Function], names: _Names) -> List[str]:
    used = _typing_names(functions, names)
    typing_line = ["from typing import " + ", ".join(sorted(used))] if used else []
    return typing_line + [
        "import typing as _typing",
        "",
        "from cap.internal import mcp as internal",
    ]


def _typing_names(functions: List[_Function], names: _Names) -> FrozenSet[str]:
    """The ``typing`` names the annotations and declarations spell."""
    used: Set[str] = set()
    kinds: List[_Type] = []
    for function in functions:
        if isinstance(function.plan, WholeValue):
            used |= {"Dict", "Any"}
        for param in function.params:
            kinds.append(param.type)
            if param.optional:
                used.add("Optional")
        if function.returns == _RESULT:
            used |= {"TypedDict", "List", "Dict", "Any"}  # ToolOutput
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
}


def _tool_output() -> List[str]:
    return _comment(
        "%s: what a tool without an outputSchema returns (codegen.deliver): its "
        "text blocks joined by newlines, and every content block as the server "
        "sent it." % TOOL_OUTPUT
    ) + [
        '%s = TypedDict("%s", {"text": str, "content": List[Dict[str, Any]]})'
        % (TOOL_OUTPUT, TOOL_OUTPUT)
    ]


def _function(server: str, function: _Function, names: _Names, doc: List[str]) -> List[str]:
    lines: List[str] = []
    for declaration in function.declarations:
        lines += _declaration(declaration, names) + ["", ""]
    return lines + _signature(function, names) + _docstring(doc) + _body(server, function, names)


def _mixed(declaration: _Declaration) -> bool:
    optional = [field.optional for field in declaration.fields]
    return any(optional) and not all(optional)


def _declaration(declaration: _Declaration, names: _Names) -> List[str]:
    """The record's ``TypedDict``, after its comment: one, or two halves and their join."""
    name = names.by_site[declaration.site]
    comment = _declaration_comment(declaration, name)
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
        + ["class %s(%s, %s):" % (name, halves[0], halves[1]), _INDENT + "pass"]
    )


def _typed_dict(name: str, fields: Tuple[Field, ...], total: str, names: _Names) -> List[str]:
    entries = [
        "%s: %s" % (_literal(field.name), _source_type(field.type, names)) for field in fields
    ]
    return _fit('%s = TypedDict("%s", {' % (name, name), entries, "}%s)" % total, "")


def _declaration_comment(declaration: _Declaration, name: str) -> List[str]:
    lines = _comment("%s: %s" % (name, declaration.about))
    for field in declaration.fields:
        note = _field_note(field)
        if note:
            lines += _comment("%s: %s" % (_literal(field.name), note), first="# - ", rest="#   ")
    if declaration.open:
        lines += _comment("Other keys may appear too (additionalProperties).")
    return lines


def _signature(function: _Function, names: _Names) -> List[str]:
    return _fit(
        "def %s(" % function.name,
        _signature_params(function, names),
        ") -> %s:" % _source_returns(function, names),
        "",
    )


def _signature_params(function: _Function, names: _Names) -> List[str]:
    if isinstance(function.plan, WholeValue):
        return ["arguments: Dict[str, Any]"]
    return list(_with_star(function, lambda param, label: _source_param(param, label, names)))


def _source_param(param: Param, label: str, names: _Names) -> str:
    if not param.optional:
        return "%s: %s" % (label, _source_type(param.type, names))
    kind = param.type.inner if isinstance(param.type, Nullable) else param.type
    return "%s: Optional[%s] = None" % (label, _source_type(kind, names))


def _source_returns(function: _Function, names: _Names) -> str:
    if function.result is not None:
        return names.of(function.result)
    return "Dict[str, Any]" if function.returns == _STRUCTURED else TOOL_OUTPUT


# A body names no type a label can take: a parameter may be called Dict, Any
# or str (a cast's type is evaluated where the parameters are), so the dict's
# annotation and the cast say _typing.Dict[_typing.Any, _typing.Any], which
# mypy takes for Dict[str, Any] where that is what the signature declares.
_BODY_DICT = "_typing.Dict[_typing.Any, _typing.Any]"


def _cast_target(function: _Function, names: _Names) -> str:
    if function.result is not None:
        return names.of(function.result)  # never a label: _name_types saw to that
    return _BODY_DICT if function.returns == _STRUCTURED else TOOL_OUTPUT


def _docstring(doc: List[str]) -> List[str]:
    """The doc as one docstring: adjacent ``escape``d literals, one per line of text."""
    literals = ['"%s\\n"' % escape(line) for line in doc[:-1]] + ['"%s"' % escape(doc[-1])]
    if len(literals) == 1:
        return [_INDENT + literals[0]]
    first = _INDENT + "(" + literals[0]
    return (
        [first]
        + [_INDENT + " " + literal for literal in literals[1:-1]]
        + [_INDENT + " " + literals[-1] + ")"]
    )


def _body(server: str, function: _Function, names: _Names) -> List[str]:
    head = "%sreturn _typing.cast(%s, internal.invoke(" % (_INDENT, _cast_target(function, names))
    names_sent = "%s, %s, arguments))" % (_literal(server), _literal(function.tool))
    ret = [head + names_sent]
    if len(ret[0]) > LINE_WIDTH:
        ret = [head, _INDENT * 2 + names_sent]
    if isinstance(function.plan, WholeValue):
        return ret
    return _arguments(function) + ret


def _arguments(function: _Function) -> List[str]:
    """The ``arguments`` dict: required wire names at once, optional ones when given."""
    pairs = list(zip(function.params, function.labels))
    entries = ["%s: %s" % (_literal(p.name), label) for p, label in pairs if not p.optional]
    head = _INDENT + "arguments: %s = {" % _BODY_DICT
    lines = _fit(head, entries, "}", _INDENT)
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


# The doc's fixed paragraphs, wrapped once.
_RETURNS_TOOL_OUTPUT = ["", "Returns:"] + _indented(
    "ToolOutput: the text blocks joined by newlines, and every content block as "
    "the server sent it (images and resources too).",
    "    ",
)
_RAISES = {
    _STRUCTURED: ["", "Raises:"]
    + _indented(
        "ToolFailed: the tool reported an error (isError) or brought no structuredContent; "
        "str() is its error text.",
        "    ",
    ),
    _RESULT: ["", "Raises:"]
    + _indented(
        "ToolFailed: the tool reported an error (isError); str() is its error text.", "    "
    ),
}


# ----------------------------------------------------------------------------- helpers


def describe(error: GenerateError) -> str:
    """One sanitized line for a refusal, fit for a log or a model's eyes."""
    return "%s: %s" % (type(error).__name__, sanitize(str(error), MAX_DESCRIPTION_CHARS))


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
# alternation per character on 400 KB of source.
_DOUBLE_QUOTED = re.compile(r'(?<![A-Za-z])"[^"\\\n]*(?:\\.[^"\\\n]*)*"')


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
