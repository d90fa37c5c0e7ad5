"""Code mode's discovery: the generated tools ranked for a query, and described by name.

Pure: it reads the ``Generated`` modules and nothing else. A query's words are
matched, case-insensitively, in a tool's function and wire names (worth most), its
server's key, and its doc (the description, parameters and claims); a tool's score
is the sum, and ties go by name so that the order is the same every time.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, List, NamedTuple, Optional, Sequence, Set, Tuple

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from .codegen import Generated, GeneratedTool

#: What a word found in each place is worth.
IN_NAME, IN_SERVER, IN_DOC = 3, 2, 1
#: How many of the closest names an unknown name is answered with.
CLOSEST = 5

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
    wanted = words(query)
    if not wanted:
        return sorted(all_entries, key=lambda entry: entry.name)
    scored = [(score(entry, wanted), entry) for entry in all_entries]
    return [entry for points, entry in sorted(scored, key=_order) if points > 0]


def _order(item: Tuple[int, Entry]) -> Tuple[int, str]:
    return (-item[0], item[1].name)


def find(all_entries: Sequence[Entry], name: str) -> Optional[Entry]:
    """The entry named ``server.function`` (or ``server.wire_name``), if any."""
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
    close = closest(all_entries, name)
    if not close:
        return "no tool %s; search for one by what it does" % name
    return "no tool %s; the closest: %s" % (name, ", ".join(close))
