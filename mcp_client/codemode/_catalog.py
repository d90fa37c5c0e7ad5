"""Code mode's discovery: the generated tools ranked for a query, and described by name.

Pure: it reads the ``Generated`` modules (and, when the runner has them, each tool's
descriptor and its server's own names) and nothing else.

**Ranking** is BM25F (Robertson and Zaragoza, "The Probabilistic Relevance Framework:
BM25 and Beyond", 2009): each tool is a document of five fields, each weighted --
its names (the function's and the wire name), its title, its server (the config's key
and the names the server gives itself: "postgres" finds a server configured as
``pg``), its description, its parameters' names -- and a query word is worth more the
fewer tools hold it (its IDF) and the more of a short field it fills. Words are cut
into their parts (``getFileInfo``, ``get_file_info`` and "get file info" are the same
three words), stopwords ("a", "the", "of") count for nothing, and each word is
stemmed (``files`` is ``file``, ``listing`` is ``list``). A query word also finds,
at half its worth, the words a tool author uses for the same act (:data:`SYNONYMS`:
"remove" finds ``delete_file``, "folder" finds ``create_directory``) and the longer
words it begins ("repo" finds "repository"). A tool that says it is deprecated is
ranked down (a quarter of its score), never hidden. Ties go by name, so the order is
the same every time.

What a query or a name may cost is bounded before anything scans it (a host's line
may hold 16 MiB): a query's first :data:`MAX_QUERY_CHARS` characters, its first
:data:`MAX_QUERY_WORDS` distinct words; a name past :data:`MAX_NAME_CHARS` names no
tool, gets no closest names, and is echoed cut. Each field a tool is indexed by is
read to :data:`MAX_FIELD_CHARS` characters.
"""

from __future__ import annotations

import difflib
import math
import re
from typing import (
    TYPE_CHECKING,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
)

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..codegen import Generated, GeneratedTool
    from ..protocol import ToolDescriptor

#: How many of the closest names an unknown name is answered with.
CLOSEST = 5
#: The characters of a query read, and the distinct words of it scored.
MAX_QUERY_CHARS, MAX_QUERY_WORDS = 4096, 32
#: The longest name looked up (a config key and a function are far shorter), and the
#: characters of an unknown one said back.
MAX_NAME_CHARS, SHOWN_NAME_CHARS = 1000, 100
#: The characters of each field a tool is indexed by.
MAX_FIELD_CHARS = 8192

#: The fields, their weights, and how much their length counts (BM25F's b): a name is
#: short whatever it holds; a description's words count less in a long one.
FIELDS: Tuple[Tuple[str, float, float], ...] = (
    ("name", 3.0, 0.0),
    ("title", 2.0, 0.0),
    ("server", 1.5, 0.0),
    ("description", 1.0, 0.75),
    ("params", 0.7, 0.3),
)
#: BM25's saturation: how soon more of a word stops adding.
K1 = 1.2
#: What a synonym or a longer word a query word begins is worth, against the word itself.
RELATED = 0.5
#: A deprecated tool's score is multiplied by this.
DEPRECATED = 0.25
#: A match shown scores at least this much of the best one's (the rest are counted).
SHOWN_FLOOR = 0.3

#: Words that say nothing of what a tool does.
STOPWORDS = frozenset(
    "a an the of to in on for with and or by from at as is are be been it its this that "
    "these those into onto my me i we you your our some any all can could should would "
    "will do does how what which who whom whose where when there their them then than "
    "please want need using use via about each every".split()
)

#: Words a tool author may use for the same act or thing (one group a line); a query
#: word finds the others at :data:`RELATED` of its worth.
SYNONYMS: Tuple[str, ...] = (
    "read get fetch retrieve load view show open cat dump",
    "list enumerate ls browse",
    "create make new add insert init initialize open",
    "delete remove rm erase drop destroy purge unlink forget",
    "update edit modify change patch replace set alter",
    "search find query lookup look locate grep match filter",
    "write save store put persist record remember",
    "run execute exec invoke call perform launch start evaluate eval",
    "move rename mv",
    "copy duplicate clone cp",
    "download fetch pull",
    "upload push publish",
    "directory folder dir",
    "file document doc",
    "page url website site web webpage link",
    "screenshot snapshot capture",
    "history log",
    "stop kill terminate cancel end halt close",
    "entire whole everything complete full",
    "time clock",
    "describe explain info details inspect",
    "comment reply",
    "fact observation note information knowledge",
    "person people user member account entity",
    "error failure fault",
    "sql database db query",
    "issue ticket bug",
    "message msg",
    "tag label",
    "memory graph",
)

_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def stem(word: str) -> str:
    """A light suffix stripper (no dictionary): plurals, -ing, -ed, a final e."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch")):
        if word.endswith(suffix):
            return word[: -len(suffix)] + replacement
    if word.endswith("shes"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "ls":
                word = word[:-1]  # committed -> commit, running -> run
            break
    return word[:-1] if len(word) >= 4 and word.endswith("e") else word


def terms(text: str) -> List[str]:
    """``text``'s words, cut into their parts, lowercase, stemmed, stopwords out."""
    found = []
    for part in _PART.findall(text[:MAX_FIELD_CHARS]):
        word = part.lower()
        if word not in STOPWORDS:
            found.append(stem(word))
    return found


def _synonym_table() -> Dict[str, FrozenSet[str]]:
    table: Dict[str, FrozenSet[str]] = {}
    for line in SYNONYMS:
        group = frozenset(stem(word) for word in line.split())
        for word in group:
            table[word] = table.get(word, frozenset()) | (group - {word})
    return table


_RELATED_WORDS = _synonym_table()


class Entry(NamedTuple):
    """One tool as discovery sees it: its names, and its fields' words."""

    server: str  # the config's key
    module: str  # the module's name in cap.mcp (the key, or the key made a Python name)
    tool: "GeneratedTool"
    fields: Tuple[Tuple[str, ...], ...]  # one per FIELDS entry
    deprecated: bool

    @property
    def name(self) -> str:
        return "%s.%s" % (self.server, self.tool.function)

    @property
    def shown(self) -> str:
        """How a program calls it: ``<module>.<function>``."""
        return "%s.%s" % (self.module, self.tool.function)


class About(NamedTuple):
    """What the runner knows of a server beyond its module: the names it gives itself
    (``serverInfo``'s name and title), and its tools' descriptors by wire name."""

    names: Tuple[str, ...] = ()
    descriptors: Mapping[str, "ToolDescriptor"] = {}


def entries(
    servers: Sequence[Tuple[str, "Generated"]], about: Optional[Mapping[str, About]] = None
) -> List[Entry]:
    """Every tool of ``servers`` (each a config key and its module), indexed."""
    made = []
    for server, generated in servers:
        known = (about or {}).get(server, About())
        module = generated.module_name.rsplit(".", 1)[-1]
        for tool in generated.tools:
            made.append(_entry(server, module, tool, known))
    return made


def _entry(server: str, module: str, tool: "GeneratedTool", about: About) -> Entry:
    descriptor = about.descriptors.get(tool.wire_name)
    title = _title(descriptor)
    description = (descriptor.description if descriptor else None) or _doc_text(tool.doc)
    names = (
        tool.function if tool.function == tool.wire_name else tool.function + " " + tool.wire_name
    )
    fields = (
        terms(names),
        terms(title),
        terms(" ".join((server, module) + about.names)),
        terms(description),
        terms(" ".join(_param_names(descriptor))),
    )
    deprecated = "deprecat" in (title + " " + description[:MAX_FIELD_CHARS]).lower()
    return Entry(server, module, tool, tuple(tuple(each) for each in fields), deprecated)


def _title(descriptor: "Optional[ToolDescriptor]") -> str:
    if descriptor is None:
        return ""
    annotations = descriptor.annotations if isinstance(descriptor.annotations, dict) else {}
    title = descriptor.title or annotations.get("title")
    return title if isinstance(title, str) else ""


def _param_names(descriptor: "Optional[ToolDescriptor]") -> List[str]:
    schema = descriptor.input_schema if descriptor is not None else None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return [str(name) for name in properties][:64] if isinstance(properties, dict) else []


def _doc_text(doc: str) -> str:
    """Without a descriptor, the doc after its signature line: what the tool says."""
    return doc.split("\n\n", 1)[-1]


def query_words(query: str) -> List[str]:
    """The words a query is scored by: distinct, in order, bounded (see the docstring)."""
    return list(dict.fromkeys(terms(query[:MAX_QUERY_CHARS])))[:MAX_QUERY_WORDS]


def shown_name(name: str) -> str:
    """``name`` as an answer repeats it: cut past :data:`SHOWN_NAME_CHARS`."""
    if len(name) <= SHOWN_NAME_CHARS:
        return name
    return "%s... (%d characters)" % (name[:SHOWN_NAME_CHARS], len(name))


# ----------------------------------------------------------------------------- ranking


class Index(NamedTuple):
    """What BM25F needs of the whole catalogue: each word's IDF, each field's mean
    length, and every word there is (for the longer words a query word begins)."""

    idf: Mapping[str, float]
    mean_lengths: Tuple[float, ...]
    vocabulary: Tuple[str, ...]


def index(all_entries: Sequence[Entry]) -> Index:
    holders: Dict[str, int] = {}
    totals = [0] * len(FIELDS)
    for entry in all_entries:
        for word in set(word for field in entry.fields for word in field):
            holders[word] = holders.get(word, 0) + 1
        for n, field in enumerate(entry.fields):
            totals[n] += len(field)
    count = max(len(all_entries), 1)
    idf = {
        word: math.log(1.0 + (count - held + 0.5) / (held + 0.5)) for word, held in holders.items()
    }
    return Index(idf, tuple(max(total / count, 1.0) for total in totals), tuple(sorted(holders)))


def expansions(word: str, vocabulary: Iterable[str]) -> Dict[str, float]:
    """The words ``word`` finds, each with its worth: itself, its synonyms, and the
    longer words it begins (four letters or more: "repo" finds "repository")."""
    found = {other: RELATED for other in _RELATED_WORDS.get(word, ())}
    if len(word) >= 4:
        found.update((other, RELATED) for other in vocabulary if other.startswith(word))
    found[word] = 1.0
    return found


class Query(List[Dict[str, float]]):
    """A query made for one catalogue: each of its words' expansions, in order, and the
    catalogue's :class:`Index`. A word that is a synonym of an earlier one adds nothing
    of its own ("make a new folder": "new" is "make" again), so that one idea said
    twice is not worth two."""

    def __init__(self, words: Sequence[str], catalogue: Index) -> None:
        kept: List[str] = []
        for word in words:
            if not any(word in _RELATED_WORDS.get(earlier, ()) for earlier in kept):
                kept.append(word)
        super().__init__(expansions(word, catalogue.vocabulary) for word in kept)
        self.catalogue = catalogue


def score(entry: Entry, query: Query) -> float:
    """BM25F of ``entry`` for ``query``: each query word adds the best of its
    expansions, so a word found twice over counts once."""
    total = 0.0
    for words in query:
        total += max(
            (worth * _term(entry, word, query.catalogue) for word, worth in words.items()),
            default=0.0,
        )
    return total * DEPRECATED if entry.deprecated and total else total


def _term(entry: Entry, word: str, catalogue: Index) -> float:
    idf = catalogue.idf.get(word)
    if idf is None:
        return 0.0
    weighted = 0.0
    for (_, weight, b), field, mean in zip(FIELDS, entry.fields, catalogue.mean_lengths):
        held = field.count(word)
        if held:
            weighted += weight * held / (1.0 - b + b * len(field) / mean)
    return idf * weighted / (K1 + weighted) if weighted else 0.0


def ranked(all_entries: Sequence[Entry], query: str) -> List[Tuple[Entry, float]]:
    """The entries that score for ``query``, best first, with their scores; every entry
    (scored 0) for a query with no word to score."""
    wanted = query_words(query)
    if not wanted:
        return [(entry, 0.0) for entry in sorted(all_entries, key=lambda entry: entry.name)]
    made = Query(wanted, index(all_entries))
    scored = [(entry, score(entry, made)) for entry in all_entries]
    return sorted(((e, s) for e, s in scored if s > 0), key=_order)


def _order(item: Tuple[Entry, float]) -> Tuple[float, str]:
    return (-item[1], item[0].name)


def shown(found: Sequence[Tuple[Entry, float]], limit: int) -> List[Entry]:
    """The matches worth showing: at most ``limit``, each scoring at least
    :data:`SHOWN_FLOOR` of the best (every one, for an unscored listing)."""
    if not found:
        return []
    floor = found[0][1] * SHOWN_FLOOR
    return [entry for entry, points in found[: max(limit, 0)] if points >= floor]


# ----------------------------------------------------------------------------- by name


def find(all_entries: Sequence[Entry], name: str) -> Optional[Entry]:
    """The entry named ``server.function`` (the config key or the module's name; the
    function's name or the wire name), if any."""
    if len(name) > MAX_NAME_CHARS:
        return None
    for entry in all_entries:
        if name in _spellings(entry):
            return entry
    return None


def _spellings(entry: Entry) -> Tuple[str, ...]:
    return tuple(
        "%s.%s" % (server, function)
        for server in (entry.server, entry.module)
        for function in (entry.tool.function, entry.tool.wire_name)
    )


def closest(all_entries: Sequence[Entry], name: str) -> List[str]:
    """The names closest to ``name``: within its server when it names one."""
    server, _, function = name.rpartition(".")
    within = [entry for entry in all_entries if server in (entry.server, entry.module)]
    pool = within or list(all_entries)
    names = {entry.tool.function if within else entry.name: entry.name for entry in pool}
    wanted = function if within else name
    found = difflib.get_close_matches(wanted, list(names), n=CLOSEST, cutoff=0.6)
    if len(found) < CLOSEST:  # "read" should find "read_file" too
        tail = wanted.rsplit(".", 1)[-1].lower()
        found += [each for each in names if tail and tail in each.lower() and each not in found]
    return [names[each] for each in found[:CLOSEST]]


def unknown(all_entries: Sequence[Entry], name: str) -> str:
    close = closest(all_entries, name) if len(name) <= MAX_NAME_CHARS else []
    if not close:
        return "no tool %s; search for one by what it does" % shown_name(name)
    return "no tool %s; the closest: %s" % (shown_name(name), ", ".join(close))
