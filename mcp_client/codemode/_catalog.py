"""Code mode's discovery: the generated tools ranked for a query, and described by name.

Pure: it reads the ``Generated`` modules and nothing else. A query's words are
matched, case-insensitively, in a tool's function and wire names (worth most), its
server's key, and its doc (the description, parameters and claims); a tool's score
is the sum, and ties go by name so that the order is the same every time.

What a query or a name may cost is bounded before anything scans it (a host's line
may hold 16 MiB): a query's first :data:`MAX_QUERY_CHARS` characters, its first
:data:`MAX_QUERY_WORDS` distinct words; a name past :data:`MAX_NAME_CHARS` names no
tool, gets no closest names, and is echoed cut.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, List, NamedTuple, Optional, Sequence, Set, Tuple

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..codegen import Generated, GeneratedTool

#: What a word found in each place is worth.
IN_NAME, IN_SERVER, IN_DOC = 3, 2, 1
#: How many of the closest names an unknown name is answered with.
CLOSEST = 5
#: The characters of a query read, and the distinct words of it scored.
MAX_QUERY_CHARS, MAX_QUERY_WORDS = 4096, 32
#: The longest name looked up (a config key and a function are far shorter), and the
#: characters of an unknown one said back.
MAX_NAME_CHARS, SHOWN_NAME_CHARS = 1000, 100

_WORD = re.compile(r"[a-z0-9]+")


class Entry(NamedTuple):
    """One tool as discovery sees it."""

    server: str
    tool: "GeneratedTool"

    @property
    def name(self) -> str:
        return "%s.%s" % (self.server, self.tool.function)


def entries(servers: Sequence[Tuple[str, "Generated"]]) -> List[Entry]:
    return [Entry(server, tool) for server, generated in servers for tool in generated.tools]


def words(text: str) -> List[str]:
    return _WORD.findall(text.lower())


def query_words(query: str) -> List[str]:
    """The words a query is scored by: distinct, in order, bounded (see the docstring)."""
    return list(dict.fromkeys(words(query[:MAX_QUERY_CHARS])))[:MAX_QUERY_WORDS]


def shown_name(name: str) -> str:
    """``name`` as an answer repeats it: cut past :data:`SHOWN_NAME_CHARS`."""
    if len(name) <= SHOWN_NAME_CHARS:
        return name
    return "%s... (%d characters)" % (name[:SHOWN_NAME_CHARS], len(name))


def score(entry: Entry, query: Sequence[str]) -> int:
    names = set(words(entry.tool.function) + words(entry.tool.wire_name))
    server = set(words(entry.server))
    doc = entry.tool.doc.lower()
    total = 0
    for word in query:
        total += IN_NAME if word in names or _part_of(word, names) else 0
        total += IN_SERVER if word in server else 0
        total += IN_DOC if word in doc else 0
    return total


def _part_of(word: str, names: Set[str]) -> bool:
    return len(word) >= 3 and any(name.startswith(word) for name in names)


def ranked(all_entries: Sequence[Entry], query: str) -> List[Entry]:
    """The entries that match ``query``, best first; every entry for an empty query."""
    wanted = query_words(query)
    if not wanted:
        return sorted(all_entries, key=lambda entry: entry.name)
    scored = [(score(entry, wanted), entry) for entry in all_entries]
    return [entry for points, entry in sorted(scored, key=_order) if points > 0]


def _order(item: Tuple[int, Entry]) -> Tuple[int, str]:
    return (-item[0], item[1].name)


def find(all_entries: Sequence[Entry], name: str) -> Optional[Entry]:
    """The entry named ``server.function`` (or ``server.wire_name``), if any."""
    if len(name) > MAX_NAME_CHARS:
        return None
    for entry in all_entries:
        if name in (entry.name, "%s.%s" % (entry.server, entry.tool.wire_name)):
            return entry
    return None


def closest(all_entries: Sequence[Entry], name: str) -> List[str]:
    """The names closest to ``name``: within its server when it names one."""
    server, _, function = name.rpartition(".")
    within = [entry for entry in all_entries if entry.server == server]
    pool = within or list(all_entries)
    names = {entry.tool.function if within else entry.name: entry.name for entry in pool}
    wanted = function if within else name
    found = difflib.get_close_matches(wanted, list(names), n=CLOSEST, cutoff=0.6)
    if len(found) < CLOSEST:  # "read" should find "read_file" too
        tail = wanted.rsplit(".", 1)[-1].lower()
        found += [each for each in names if tail and tail in each.lower() and each not in found]
    return [names[each] for each in found[:CLOSEST]]


def described(entry: Entry) -> str:
    return "%s\n\n%s" % (entry.tool.line, entry.tool.doc)


def unknown(all_entries: Sequence[Entry], name: str) -> str:
    close = closest(all_entries, name) if len(name) <= MAX_NAME_CHARS else []
    if not close:
        return "no tool %s; search for one by what it does" % shown_name(name)
    return "no tool %s; the closest: %s" % (shown_name(name), ", ".join(close))
