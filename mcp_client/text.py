"""Server text made safe to show: in a comment, a string literal, a log line, a terminal.

Pure and total: no I/O, no threads, no clocks, and nothing of the package
imported, so the CLI, replay, the errors and the connect path use these
without loading the generator. :mod:`mcp_client.codegen` re-exports
``sanitize``, ``truncate`` and ``escape``, where PORT.md names them.

- :func:`sanitize`: one line of plain text of at most ``limit`` characters,
  every control, format character and bidi override gone (a comment, a log).
- :func:`escape`: the body of a ``"..."`` Python literal, printable ASCII only.
- :func:`inert`: text kept as it is where printable, every other character
  spelt as Python spells it (a terminal: an ANSI escape arrives inert).
- :func:`truncate` and :func:`escape_code_point`, the pieces they share.
"""

from __future__ import annotations

import re
import unicodedata

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Optional

__all__ = ["sanitize", "scan_window", "truncate", "escape", "inert", "escape_code_point"]

# Direction-changing codepoints (Unicode TR9; "Trojan Source", CVE-2021-42574),
# listed by codepoint so that their removal does not depend on the Unicode
# database of the interpreter: ALM, LRM, RLM, LRE..RLO, LRI..PDI.
_BIDI_CONTROLS = frozenset([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
# Control (Cc), format (Cf), surrogate (Cs: not encodable as UTF-8), line and
# paragraph separators (Zl, Zp: U+2028 and U+2029 end a line in many readers).
_REMOVED_CATEGORIES = frozenset(["Cc", "Cf", "Cs", "Zl", "Zp"])
# Everything but printable ASCII goes through a per-character function; plain
# text costs a C-speed scan only.
_NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e]")
#: sanitize reads at most this many characters a character shown, and this many more.
_SCAN_PER_CHAR, _SCAN_SLACK = 4, 256


def sanitize(text: str, limit: int) -> str:
    """``text`` fit for a comment: controls gone, whitespace one space, ``limit`` chars.

    A removed character that is whitespace (``\\n``, ``\\t``, U+2028...) turns
    into a space so that words stay apart; any other is dropped. Runs of
    whitespace then become one space and the ends are stripped.

    Only the first ``4 * limit + 256`` characters are read (:func:`scan_window`):
    a description of 200k control characters costs what a short one does. A text
    cut there ends in ``...``, as one cut at ``limit`` does.
    """
    window = scan_window(limit)
    cut = len(text) > window
    cleaned = _NOT_PRINTABLE_ASCII.sub(_clean_char, text[:window] if cut else text)
    words = " ".join(cleaned.split())
    if cut:  # the reader must see that the text went on, even when what was read fits
        words = (words + " ...").lstrip()
    return truncate(words, limit).rstrip()  # a cut may end in a space


def scan_window(limit: int) -> int:
    """How much of a text :func:`sanitize` reads for ``limit`` characters shown: whitespace
    collapses and controls vanish, so a window of the limit alone could lose ordinary
    words; four times it keeps every text that is mostly text."""
    return max(limit, 0) * _SCAN_PER_CHAR + _SCAN_SLACK


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
    outside its comment lines, and ``codegen.scan_for_at`` proves that without
    a tokenizer.
    """
    return _NEEDS_ESCAPE.sub(_escape_char, text)


def escape_lines(lines: List[str]) -> List[str]:
    """``[escape(line) for line in lines]``, in a few C-speed passes over their join
    when they are printable ASCII (most generated text): then only ``\\``, ``"``
    and ``@`` change, and the join's line breaks are the joins alone."""
    joined = "\n".join(lines)
    plain = joined.isascii() and joined.replace("\n", " ").isprintable()
    if not plain or joined.count("\n") != len(lines) - 1:
        return [escape(line) for line in lines]
    escaped = joined.replace("\\", "\\\\").replace('"', '\\"').replace("@", "\\x40")
    return escaped.split("\n") if lines else []


def _escape_char(match: "re.Match[str]") -> str:
    code = ord(match.group())
    if code in (0x22, 0x5C):
        return "\\" + match.group()
    return escape_code_point(code)


def inert(text: str, keep: str = "", limit: Optional[int] = None) -> str:
    """``text`` with every character that is neither printable nor in ``keep``
    (an escape, a newline, a bidi override) spelt ``\\xNN``/``\\uNNNN``/``\\UNNNNNNNN``.

    Not reversible (a backslash stays one), which is right for a reader's eyes:
    the CLI keeps ``"\\n\\t"`` of a tool's text, replay quotes a log with nothing kept.
    With ``limit``, the result is :func:`truncate`'d to it, and only ``limit + 1``
    characters are read (a spelt character is never shorter than itself, so that is
    the same text as cutting the whole).
    """
    if limit is not None:
        return truncate(inert(text[: max(limit, 0) + 1], keep), limit)
    if not keep:
        return _NOT_PRINTABLE_ASCII.sub(_inert_char, text)
    return _NOT_PRINTABLE_ASCII.sub(lambda match: _inert_char(match, keep), text)


def _inert_char(match: "re.Match[str]", keep: str = "") -> str:
    char = match.group()
    return char if char.isprintable() or char in keep else escape_code_point(ord(char))


def escape_code_point(code: int) -> str:
    """Python's escape of one code point: ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``."""
    if code < 0x100:
        return "\\x%02x" % code
    if code < 0x10000:
        return "\\u%04x" % code
    return "\\U%08x" % code
