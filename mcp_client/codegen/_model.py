"""What ``codegen`` reads a tool into, and how its types are spelt.

Pure: no I/O, no threads, no clocks. The generator reads each tool once into a
:class:`Function` (its parameters, result and the record types they declare,
each a :class:`Declaration` met through a :class:`Ref`), names the types
(:class:`Names`), and then three renderings are made of the same model: the
module's source (``codegen``), the surface line (``_surface``) and the doc
(``_docstring``). What they share lives here: the model, each type's spelling
in the source (``typing``) and in the surface and doc (the modern spelling,
with shapes), the defaults a signature shows, and the text layout (``wrap``,
``literal``). Nothing here is API; ``codegen`` re-exports what is.
"""

from __future__ import annotations

import functools
import re
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
    Tuple,
    Union,
)

from ..text import escape
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
)

#: Characters kept of a note: a parameter description, a reason, the server name.
MAX_NOTE_CHARS = 120
#: Characters of a shape in the surface before it shows less.
MAX_SHAPE_CHARS = 1000
#: Characters of a default shown in the surface; a longer one shows in the doc only.
MAX_DEFAULT_CHARS = 40
#: The result type of every tool without an outputSchema (``deliver``'s dict).
TOOL_OUTPUT = "ToolOutput"
#: How the surface marks a shape learned from calls, not declared: ``observed{...}``.
OBSERVED = "observed"

INDENT = "    "
PYTHON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
#: ``Function.returns``: the call's structuredContent (an outputSchema), or a ToolOutput.
STRUCTURED = "structured"
RESULT = "result"


#: Where a record sits: the function, "result" or "param" and the parameter's
#: name, then a step per level: "." + key, "[]" for an array's items, "|<n>"
#: for a union's n-th branch. A key step always starts with ".", so no key can
#: pass for another step. Kept as a tuple (a string that nested its parent's
#: would grow with every level of escaping); it is spelled out, flat, only
#: for the digest of a name that needs one.
Site = Tuple[str, ...]


@dataclass(frozen=True)
class Ref:
    """A record declared at module level; ``site`` is where it sits (its identity)."""

    site: Site


@dataclass(frozen=True)
class Blocks:
    """``List[Block]``: a ToolOutput's content (the block types of ``content``)."""


BLOCKS = Blocks()


#: A type after declaration: records replaced by references to their declarations.
#: The schema's containers (Array, Nullable, AnyOf, Field, Param) are reused to
#: hold one, the only place codegen's types go past the schema's: hence the few
#: ``type: ignore[arg-type]`` where a Ref is put in them.
ModelType = Union[ValueType, Ref, Blocks]


@dataclass(frozen=True)
class Declaration:
    """One record type: where it sits, its natural name, what it is, its keys."""

    site: Site  # unique in the module: the path that leads to it
    natural: str
    tool: str  # the wire name of the tool it belongs to (for a collision's message)
    about: str  # what the type describes, for its comment (generator text and escapes)
    fields: Tuple[Field, ...]  # types are ModelType: nested records are Ref
    open: bool
    is_input: bool
    seen: bool = False  # a shape learned from calls (shapes), not declared: "observed{...}"
    #: A ``ToolOutput`` whose data is a learned shape: its fields are text, data, content,
    #: a TypedDict of the three keys, its data the learned type (``_output_type``).
    output: bool = False

    def as_seen(self) -> "Declaration":
        return Declaration(
            self.site, self.natural, self.tool, self.about, self.fields, self.open, False, True
        )


@dataclass(frozen=True)
class Function:
    """One tool, read and named; everything the source, surface and doc are made from."""

    name: str  # mangled: a display artifact only
    tool: str  # the wire name, verbatim
    description: str  # sanitized, cut to MAX_DESCRIPTION_CHARS
    long_description: str  # sanitized, cut to MAX_DOC_DESCRIPTION_CHARS
    plan: Plan  # a label collision has already degraded it to WholeValue
    params: Tuple[Param, ...]  # Typed only: required first, then optional; types are ModelType
    labels: Tuple[str, ...]  # one per param, same order
    claims: str  # sanitized: the title and the annotations, "" when the server claims none
    returns: str  # STRUCTURED or RESULT
    result: Optional[Ref]  # a structured tool's record, when its schema reads as one
    result_reason: str  # sanitized: why a structured result is untyped, "" otherwise
    declarations: Tuple[Declaration, ...]  # nested ones first; inputs, then the result's
    output: Optional[Record]  # the declared result record, for the run-time check
    seen_calls: int  # calls a learned data shape was seen in; 0: none learned
    #: Where deliver parses a string that held JSON text in every call seen (shapes.Path).
    parsed: Tuple[Tuple[Tuple[str, ...], ...], ...] = ()


class Names(NamedTuple):
    """The module's type names: by site, and the declarations by site; the builtins the
    source spells that a function of the module shadows (``def str(...)``)."""

    by_site: Dict[Site, str]
    declarations: Dict[Site, Declaration]
    shadowed: FrozenSet[str] = frozenset()

    def of(self, ref: Ref) -> str:
        return self.by_site[ref.site]


#: The builtins a module's source spells: the types of the JSON scalars.
BUILTIN_TYPES: FrozenSet[str] = frozenset(PYTHON_TYPES.values())
#: How a module names the builtins it shadows (``import builtins as _builtins``): no
#: function, label or type can take the name (none starts with ``_`` and a letter after).
BUILTINS_MODULE = "_builtins"


def builtin(name: str, names: Names) -> str:
    """A builtin as the module spells it: through ``_builtins`` where a function shadows it."""
    return "%s.%s" % (BUILTINS_MODULE, name) if name in names.shadowed else name


def source_type(kind: ModelType, names: Names) -> str:
    """``kind`` as a ``typing`` annotation."""
    if isinstance(kind, Ref):
        return names.of(kind)
    if isinstance(kind, Simple):
        return builtin(PYTHON_TYPES[kind.kind], names)
    if isinstance(kind, Array):
        return "List[%s]" % source_type(kind.item, names)
    if isinstance(kind, Nullable):
        return "Optional[%s]" % source_type(kind.inner, names)
    if isinstance(kind, Map):
        return "Dict[%s, %s]" % (builtin("str", names), source_type(kind.value, names))
    if isinstance(kind, Choice):
        return "Literal[%s]" % ", ".join(member_text(member) for member in kind.members)
    if isinstance(kind, AnyOf):
        return "Union[%s]" % ", ".join(source_type(branch, names) for branch in kind.branches)
    if isinstance(kind, Blocks):
        return "List[Block]"
    return "Any"


def member_text(member: Any) -> str:
    if type(member) is str:
        return literal(member)
    return repr(member)  # an int or a bool: True, False, digits


class Show(NamedTuple):
    """How much of a type the surface shows."""

    shapes: bool  # an object as Name{shape}; else its name only
    plain: bool  # the first surface's types: objects and unions Any, enums their kind


#: Objects by their names only, everything else in full (a doc's types, a shape's keys).
NAMES_ONLY = Show(False, False)


def surface_type(
    kind: ModelType, names: Names, show: Show, ref: Optional[Callable[[Ref], str]] = None
) -> str:
    """``kind`` in the surface's spelling; objects as ``Name{shape}`` where shown,
    or as ``ref`` spells them (a doc's nested shapes)."""
    if show.plain:
        return plain_type(kind)
    if isinstance(kind, Ref):
        if ref is not None:
            return ref(kind)
        name = names.of(kind)
        declaration = names.declarations[kind.site]
        if declaration.seen:  # learned, not declared: a program reads it as data's shape
            return OBSERVED + (record_shape(declaration, names) if show.shapes else "{...}")
        return name + record_shape(declaration, names) if show.shapes else name
    if isinstance(kind, Simple):
        return PYTHON_TYPES[kind.kind]
    if isinstance(kind, Array):
        return "list[%s]" % surface_type(kind.item, names, show, ref)
    if isinstance(kind, Nullable):
        return "%s | None" % surface_type(kind.inner, names, show, ref)
    if isinstance(kind, Map):
        return "dict[str, %s]" % surface_type(kind.value, names, show, ref)
    if isinstance(kind, Choice):
        return "Literal[%s]" % ", ".join(member_text(member) for member in kind.members)
    if isinstance(kind, AnyOf):
        return " | ".join(surface_type(branch, names, show, ref) for branch in kind.branches)
    if isinstance(kind, Blocks):
        return "list[Block]"
    return "Any"


def plain_type(kind: ModelType) -> str:
    """The type as the first surface showed a parameter (never longer than this one)."""
    if isinstance(kind, Nullable):
        return plain_type(kind.inner)
    if isinstance(kind, Simple):
        return PYTHON_TYPES[kind.kind]
    if isinstance(kind, Array) and isinstance(kind.item, Simple):
        return "list[%s]" % PYTHON_TYPES[kind.item.kind]
    if isinstance(kind, Choice):
        kinds = {type(member) for member in kind.members}
        return (
            {str: "str", int: "int", bool: "bool"}.get(kinds.pop(), "Any")
            if len(kinds) == 1
            else "Any"
        )
    return "Any"


def record_shape(declaration: Declaration, names: Names) -> str:
    """The whole shape if it is short enough, else its top-level keys, else nothing."""
    for deep in (True, False):
        shape = shape_of(declaration, names, deep)
        if len(shape) <= MAX_SHAPE_CHARS:
            return shape
    return ""


def shape_of(declaration: Declaration, names: Names, deep: bool) -> str:
    entries = [
        "%s%s: %s"
        % (
            literal(field.name),
            "?" if field.optional else "",
            shape_type(field.type, names, deep),
        )
        for field in declaration.fields
    ]
    return "{%s}" % ", ".join(entries + ["..."] if declaration.open else entries)


def shape_type(kind: ModelType, names: Names, deep: bool) -> str:
    """``kind`` as a shape spells it: a nested record in full (``deep``) or ``{...}``."""

    def nested(site: Ref) -> str:
        declaration = names.declarations[site.site]
        mark = OBSERVED if declaration.seen else ""
        return mark + (shape_of(declaration, names, deep) if deep else "{...}")

    return surface_type(kind, names, NAMES_ONLY, nested)


def default_text(param: Param) -> Optional[str]:
    """The server's default as a Python literal, if it has one short enough to show."""
    if not param.has_default:
        return None
    value = param.default
    if type(value) is str:
        text = literal(value)
    elif value is None or type(value) in (bool, int, float):
        text = repr(value)
    elif value in ([], {}):
        text = repr(value)
    else:
        return None
    return text if len(text) <= MAX_DEFAULT_CHARS else None


def signature_default(param: Param) -> Optional[str]:
    """The default the function's signature and the surface both show, if any.

    One truth for both (issue 24): an optional parameter whose server default
    is a string, number or boolean that its own type admits, short enough to
    show, takes it as its Python default and always sends it; any other
    optional parameter defaults to ``None`` and is left out when ``None``.
    """
    if not param.optional or param.default is None:
        return None
    text = default_text(param)
    return text if text is not None and default_fits(param.default, param.type) else None


def default_fits(value: Any, kind: ModelType) -> bool:
    """``value`` (a scalar) is of ``kind``: so ``label: <kind> = value`` type-checks."""
    if isinstance(kind, Nullable):
        return default_fits(value, kind.inner)
    if isinstance(kind, AnyOf):
        return any(default_fits(value, branch) for branch in kind.branches)
    if isinstance(kind, Choice):
        return type(value) in (str, int, bool) and any(
            type(member) is type(value) and member == value for member in kind.members
        )
    if isinstance(kind, Simple):
        wanted = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}
        return type(value) in wanted[kind.kind]
    return False


def untyped_reason(kind: ModelType) -> Optional[str]:
    """Why the value, or what a list, a map or a nullable holds, is ``Any``, if it is."""
    kind = held(kind)
    return kind.reason if isinstance(kind, Structured) else None


def held(kind: ModelType) -> ModelType:
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


def with_star(function: Function, render: Callable[[Param, str], str]) -> Iterator[str]:
    """Rendered parameters, with the bare ``*`` before the first optional one."""
    starred = False
    for param, label in zip(function.params, function.labels):
        if param.optional and not starred:
            starred = True
            yield "*"
        yield render(param, label)


def wrap(text: str, width: int) -> List[str]:
    """``text``'s words (split at spaces) in greedy lines of at most ``width``
    characters, one space between words; a longer word has a line of its own."""
    # Most notes fit on one line; the general path would return them unchanged.
    if len(text) <= width and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return [text] if text else []
    words = " ".join(filter(None, text.split(" ")))
    if width < 1:
        return words.split(" ") if words else []
    return _lines(width).findall(words)


@functools.cache  # a width or two per generator line kind
def _lines(width: int) -> "re.Pattern[str]":
    # A line: the most characters (up to width) that end at a word's end, or,
    # when not even one word fits, that word alone. The C engine does what a
    # loop over the words did, the greedy rule unchanged (a property test holds
    # the two equal).
    return re.compile(r"[^ ].{0,%d}(?= |\Z)|[^ ]+" % (width - 1), re.S)


def literal(text: str) -> str:
    """``text`` as a ``"..."`` literal (``escape``d)."""
    if len(text) > _SHORT_LITERAL_CHARS:
        return '"' + escape(text) + '"'
    return _short_literal(text)


# A listing spells the same short keys, names and members hundreds of times; the cache
# holds at most this many of them, each at most this long (a few hundred KB at most).
_SHORT_LITERAL_CHARS = 40
_SHORT_LITERALS = 1024


@functools.lru_cache(maxsize=_SHORT_LITERALS)
def _short_literal(text: str) -> str:
    return '"' + escape(text) + '"'
