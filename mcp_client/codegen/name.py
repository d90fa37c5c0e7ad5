"""Server-chosen names into Python identifiers for the generated module.

Pure: no I/O, no threads, no clocks. Only what Python requires is changed
(a model guesses ``sortBy``, not ``sort_by_e3f84df7``):

* ``mangle_function`` keeps a tool name verbatim when it is an ASCII
  identifier starting with a letter (``[A-Za-z][A-Za-z0-9_]*``), at most
  ``MAX_NAME_CHARS`` (32) characters, and not in ``FUNCTION_RESERVED``: a hard
  keyword, or a name the generated module binds itself (``internal``, the
  ``typing`` names its annotations use, ``ToolOutput``). A builtin's or a soft
  keyword's name is fine: a program reaches a function as ``server.list``, and
  the module spells a builtin it shadows through ``builtins``.
* ``mangle`` does the same for a server's name, the module a program binds
  (``from cap.mcp import <it>``), under ``RESERVED``: also every builtin and
  soft keyword, which that binding would shadow in the program.
* ``mangle_label`` keeps a parameter name verbatim when it is an ASCII
  identifier (``[A-Za-z_][A-Za-z0-9_]*``) of at most 32 characters (so that
  no surface line is longer than it was when every name was mangled) that is
  not in ``LABEL_RESERVED``:
  a hard keyword, ``__debug__`` (which no code may bind), or a name the
  generated *body* uses (``arguments``, ``internal``, ``_typing``,
  ``ToolOutput``). Builtins such as ``type``, ``id`` or ``format`` are fine
  as parameters, and so are ``str``, ``cast`` or ``Dict``: the body depends
  on none of them (its annotations and its cast go through ``_typing``).

A name that is not an identifier only because of ``-`` or ``.`` (as
``get-sum``) becomes the name with ``_`` (``get_sum``), when that is itself
kept verbatim by the rule above; ``mangle_all`` then gives a digest only to
the altered names that would meet another name of the same listing
(``get-sum`` beside ``get_sum``: ``get_sum`` stays, ``get-sum`` is
``get_sum_<8 hex>``).

Anything else is mangled as before, and always carries its digest:

1. camelCase and PascalCase boundaries become ``_`` (``createIssue`` ->
   ``create_issue``, ``HTTPServer`` -> ``http_server``);
2. every run of characters outside ``[A-Za-z0-9]`` becomes one ``_``, and the
   result is lower-cased and stripped of ``_`` at both ends;
3. an empty result becomes the stem (``mcp`` for a tool, ``arg`` for a
   label) and a leading digit gets the stem in front (``3d`` -> ``mcp_3d``);
4. the result is cut to ``MAX_NAME_CHARS`` (32) characters;
5. ``_`` and the first eight hex characters of ``digest(original)`` are
   appended.

Only ASCII is ever examined or produced (``str.lower``, ``\\w`` and
``str.isidentifier`` outside ASCII follow the interpreter's Unicode database,
and NFKC would make two wire names one identifier). Step 5 is SEED.md's
"mangling digests on any change": ``create-issue`` becomes
``create_issue_<8 hex>`` while ``create_issue`` stays ``create_issue``, so the
two stay distinct. What can still collide is byte-identical originals or an
engineered digest near-miss; ``first_collision`` finds the first such pair,
and ``codegen`` refuses the server (tools) or degrades the tool (labels)
rather than repairing it.

The mangled name is a display artifact only: the wire names travel verbatim
as escaped string literals (SEED.md, "Wire names travel verbatim").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence

__all__ = [
    "Digest",
    "Mangler",
    "Collision",
    "MAX_NAME_CHARS",
    "DIGEST_CHARS",
    "RESERVED",
    "FUNCTION_RESERVED",
    "LABEL_RESERVED",
    "TYPING_NAMES",
    "BODY_NAMES",
    "CONTENT_NAMES",
    "TOOL_STEM",
    "LABEL_STEM",
    "sha256_digest",
    "mangle",
    "mangle_function",
    "mangle_label",
    "mangle_all",
    "first_collision",
    "digest_suffix",
]

#: ``digest(text)`` returns lowercase hex over the UTF-8 bytes of ``text``.
Digest = Callable[[str], str]
#: ``mangle`` or ``mangle_label``.
Mangler = Callable[[str, Digest], str]

#: Longest function name kept verbatim, and longest mangled stem kept before
#: the digest suffix (SEED.md: 32 characters).
MAX_NAME_CHARS = 32
#: Hex characters of the digest appended to an altered name.
DIGEST_CHARS = 8
TOOL_STEM = "mcp"
LABEL_STEM = "arg"

# Listed rather than read from the running interpreter, so the generated
# module does not change with the Python that generated it; a test checks
# these lists against the interpreter's keyword and builtins modules, so a
# new Python that adds a name fails loudly instead of silently.
_KEYWORDS = (
    "False None True and as assert async await break class continue def del elif "
    "else except finally for from global if import in is lambda nonlocal not or "
    "pass raise return try while with yield"
)
_SOFT_KEYWORDS = "case match type _"
# A server's module bound under a builtin's name would shadow it in the program
# (``from cap.mcp import list``), so every builtin is held back from module
# names; a function may take one (the module spells what it shadows through
# ``builtins``). Union over Python 3.9 to 3.13, every name that starts with a
# letter.
_BUILTINS = (
    "ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup "
    "BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError "
    "ConnectionAbortedError ConnectionError ConnectionRefusedError ConnectionResetError "
    "DeprecationWarning EOFError Ellipsis EncodingWarning EnvironmentError Exception "
    "ExceptionGroup FileExistsError FileNotFoundError FloatingPointError FutureWarning "
    "GeneratorExit IOError ImportError ImportWarning IndentationError IndexError "
    "InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError "
    "MemoryError ModuleNotFoundError NameError NotADirectoryError NotImplemented "
    "NotImplementedError OSError OverflowError PendingDeprecationWarning "
    "PermissionError ProcessLookupError PythonFinalizationError RecursionError "
    "ReferenceError ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration "
    "StopIteration SyntaxError SyntaxWarning SystemError SystemExit TabError "
    "TimeoutError TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError "
    "UnicodeError UnicodeTranslateError UnicodeWarning UserWarning ValueError Warning "
    "ZeroDivisionError "
    "abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable "
    "chr classmethod compile complex copyright credits delattr dict dir divmod "
    "enumerate eval exec exit filter float format frozenset getattr globals "
    "hasattr hash help hex id input int isinstance issubclass iter len license "
    "list locals map max memoryview min next object oct open ord pow print "
    "property quit range repr reversed round set setattr slice sorted "
    "staticmethod str sum super tuple type vars zip"
)
#: The ``typing`` names a generated module imports for its annotations.
TYPING_NAMES: FrozenSet[str] = frozenset("Any Dict List Literal Optional TypedDict Union".split())
#: Names a generated function body uses besides its own parameters: the seam
#: (``from cap.internal import mcp as internal``), the dict it builds, the
#: module's ``import typing as _typing`` (its annotation and its cast), and
#: the one result type every module may declare for tools without an
#: outputSchema. A label must never shadow one of them.
BODY_NAMES: FrozenSet[str] = frozenset("arguments internal _typing ToolOutput".split())
#: The content-block types every module with a ToolOutput declares (``content.NAMES``).
CONTENT_NAMES: FrozenSet[str] = frozenset(
    "Annotations TextContent ImageContent AudioContent ResourceLink TextResourceContents "
    "BlobResourceContents EmbeddedResource Block ToolOutput".split()
)
# ``cap`` and ``mcp`` are held back as well, so that a later body importing
# ``cap.mcp`` (SEED.md's result vocabulary) can never rename a function.
_MODULE_NAMES = "cap mcp"

#: Names a function (a tool's) is never allowed to be: a hard keyword, or a name the
#: module binds. A builtin is fine (``list``, ``set``, ``type``): a program calls
#: ``server.list(...)``, and the module spells the builtins it shadows as
#: ``_builtins.str`` (``import builtins as _builtins``).
FUNCTION_RESERVED: FrozenSet[str] = (
    frozenset(" ".join((_KEYWORDS, _MODULE_NAMES)).split())
    | TYPING_NAMES
    | BODY_NAMES
    | CONTENT_NAMES
)
#: Names a server's module is never allowed to be: also every soft keyword and builtin,
#: which ``from cap.mcp import <module>`` would shadow in the program.
RESERVED: FrozenSet[str] = FUNCTION_RESERVED | frozenset(
    " ".join((_SOFT_KEYWORDS, _BUILTINS)).split()
)

#: Names a parameter label is never allowed to be: hard keywords, the one
#: name no code may bind, Python 3.9's ``__peg_parser__`` (a keyword there, an
#: easter egg: the same list on every Python keeps the output deterministic),
#: and what a body uses.
LABEL_RESERVED: FrozenSet[str] = (
    frozenset(_KEYWORDS.split() + ["__debug__", "__peg_parser__"]) | BODY_NAMES
)

_VERBATIM_TOOL = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_VERBATIM_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_HEX8 = re.compile(r"[0-9a-f]{%d}" % DIGEST_CHARS)


@dataclass(frozen=True)
class Collision:
    """Two originals, in listing order, that mangle to the same identifier."""

    first: str
    second: str
    mangled: str


def sha256_digest(text: str) -> str:
    """Lowercase hex SHA-256 of ``text`` as UTF-8.

    A lone surrogate (JSON's ``"\\ud800"`` parses to one) is encoded with
    ``surrogatepass`` so that the function is total.
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def mangle(name: str, digest: Digest) -> str:
    """A server's name as the identifier of its module (alone: see ``mangle_all``)."""
    return _mangled_tool(name, digest, RESERVED)


def mangle_function(name: str, digest: Digest) -> str:
    """A tool's name as a Python function identifier (alone: see ``mangle_all``)."""
    return _mangled_tool(name, digest, FUNCTION_RESERVED)


def _mangled_tool(name: str, digest: Digest, reserved: FrozenSet[str]) -> str:
    if _kept_tool(name, reserved):
        return name
    swapped = _swapped(name)
    if swapped != name and _kept_tool(swapped, reserved):
        return swapped
    return _mangle(name, digest, TOOL_STEM)


def mangle_label(name: str, digest: Digest) -> str:
    """A parameter name as a Python parameter identifier (alone: see ``mangle_all``)."""
    if _kept_label(name):
        return name
    swapped = _swapped(name)
    # Only a swap that starts with a letter: "---" is no name for a parameter.
    if swapped != name and swapped[:1].isalpha() and _kept_label(swapped):
        return swapped
    return _mangle(name, digest, LABEL_STEM)


def _kept_tool(name: str, reserved: FrozenSet[str]) -> bool:
    return (
        len(name) <= MAX_NAME_CHARS
        and bool(_VERBATIM_TOOL.fullmatch(name))
        and name not in reserved
    )


def _kept_label(name: str) -> bool:
    return (
        len(name) <= MAX_NAME_CHARS
        and bool(_VERBATIM_LABEL.fullmatch(name))
        and name not in LABEL_RESERVED
    )


def _swapped(name: str) -> str:
    return name.replace("-", "_").replace(".", "_")


def mangle_all(
    names: Iterable[str], digest: Digest, mangler: Mangler = mangle_function
) -> List[str]:
    """Each of ``names`` mangled, a digest added to every altered name that meets another."""
    originals = list(names)
    mangled = [mangler(original, digest) for original in originals]
    counts: Dict[str, int] = {}
    for identifier in mangled:
        counts[identifier] = counts.get(identifier, 0) + 1
    stem = LABEL_STEM if mangler is mangle_label else TOOL_STEM
    return [
        _mangle(original, digest, stem)
        if counts[identifier] > 1
        and identifier != original
        and not _digested(identifier, original, digest)
        else identifier
        for original, identifier in zip(originals, mangled)
    ]


def _digested(identifier: str, original: str, digest: Digest) -> bool:
    return identifier.endswith("_" + digest_suffix(original, digest))


def first_collision(
    names: Iterable[str], digest: Digest, mangler: Mangler = mangle_function
) -> Optional[Collision]:
    """The first pair of ``names`` that still meet once ``mangle_all`` has named them."""
    originals = list(names)
    return first_meeting(originals, mangle_all(originals, digest, mangler))


def first_meeting(originals: Sequence[str], identifiers: Sequence[str]) -> Optional[Collision]:
    """The first pair of ``originals`` whose ``identifiers`` (``mangle_all``'s, in the
    same order) meet: ``first_collision`` for a caller that keeps the identifiers."""
    seen: Dict[str, str] = {}
    for original, identifier in zip(originals, identifiers):
        if identifier in seen:
            return Collision(seen[identifier], original, identifier)
        seen[identifier] = original
    return None


def _mangle(name: str, digest: Digest, stem: str) -> str:
    return _snake(name, stem)[:MAX_NAME_CHARS].rstrip("_") + "_" + digest_suffix(name, digest)


def _snake(name: str, stem: str) -> str:
    split = _CAMEL_BOUNDARY.sub("_", name)
    snake = _NOT_ALNUM.sub("_", split).lower().strip("_")
    if not snake:
        return stem
    if snake[0].isdigit():  # ASCII only by now, so isdigit is 0-9
        return stem + "_" + snake
    return snake


def digest_suffix(name: str, digest: Digest) -> str:
    """The first ``DIGEST_CHARS`` hex characters of ``digest(name)``, checked."""
    # The digest is the caller's (trusted) function, but its output lands in
    # an identifier, so it is held to its contract rather than trusted blindly.
    head = digest(name)[:DIGEST_CHARS]
    if not _HEX8.fullmatch(head):
        raise ValueError("digest must return at least %d lowercase hex characters" % DIGEST_CHARS)
    return head
