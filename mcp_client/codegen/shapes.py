"""Shapes learned: what a tool that declares no ``outputSchema`` was seen to return.

The recorder (``record``, ``merge``, ``to_type``, ``dump_shape``,
``load_shape``) is pure and total; :class:`Store` keeps learned shapes in a
directory the operator names, one file per configured server.

**What a shape records**: the JSON kind of a value (``null``, ``boolean``,
``integer``, ``number``, ``string``, ``array``, ``object``); an object's keys,
each with its own shape and the number of calls it was present in (a key
missing in some calls is optional); an array's items, merged into one shape; a
union where the kinds seen differ (an integer and a number merge into a
number); a string that held a JSON object or array (:class:`JsonText`, with the
shape of what it held: ``{"result": "{\\"id\\": 1}"}``), which stays so only while
every call's string there held one (once it did not, it is a string). **Never a
value**: no string, number or boolean is kept, only its kind.

**Bounds**, so that a hostile server's results cost what its schemas cost and
its shapes are caged like them (their keys reach generated code only through
``codegen``, as escaped literals): ``MAX_DEPTH`` levels (deeper is ``any``);
``MAX_KEYS`` keys of an object, none longer than ``MAX_KEY_CHARS`` (an object
past either is read as a map: keys that are data, ids or names, are never
kept); ``MAX_ITEMS`` items of an array looked at; ``MAX_UNION`` kinds in a
union (more is ``any``); ``MAX_NODES`` nodes in a shape (a larger one is
``any``). A file is read up to ``MAX_FILE_BYTES`` and through the bounded
parser, and a file that is not what ``Store`` writes is ignored (a warning):
learning starts afresh.

**How a shape is keyed**: a file by what the operator configured
(:func:`source`: the server's config key, its command and its working
directory), never by what a server says of itself, so that no server can
teach another's shapes by claiming its ``serverInfo``; inside, the server's
version (a file of another version is read as empty: an upgraded server
starts afresh) and an entry per tool, keyed by a digest of its name and
``inputSchema`` (a tool whose parameters changed starts afresh). Files are
written whole, never through a link (as every file the package writes), to a
temporary name, then renamed into place.

``to_type`` reads a shape into ``schema``'s type language (records open:
other keys may come), which ``codegen`` renders as ``observed{...}``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union, cast

from ..errors import SymlinkRefused
from ..jsonvalue import JsonValue, parse
from ..protocol import ToolDescriptor
from .name import sha256_digest
from .schema import AnyOf, Array, Field, Map, Nullable, Record, Simple, Structured, ValueType

__all__ = [
    "Shape",
    "Scalar",
    "ListOf",
    "ObjectOf",
    "MapOf",
    "UnionOf",
    "JsonText",
    "Opaque",
    "Path",
    "json_paths",
    "json_texts",
    "json_text",
    "Learned",
    "Store",
    "learn",
    "record",
    "merge",
    "to_type",
    "dump_shape",
    "load_shape",
    "tool_key",
    "source",
    "default_directory",
    "MAX_DEPTH",
    "MAX_KEYS",
    "MAX_KEY_CHARS",
    "MAX_ITEMS",
    "MAX_UNION",
    "MAX_NODES",
    "MAX_FILE_BYTES",
]

LOGGER = logging.getLogger("mcp_client.shapes")  # its name before the move: users configure it

#: Levels of nesting a shape keeps; a deeper value is ``any``.
MAX_DEPTH = 8
#: Keys an object may have to be kept as a record; more is a map.
MAX_KEYS = 64
#: Characters a key may have to be kept; a longer one makes its object a map.
MAX_KEY_CHARS = 64
#: Items of an array looked at (the first ones).
MAX_ITEMS = 64
#: Kinds a union may hold; more is ``any``.
MAX_UNION = 4
#: Nodes a shape may have; a larger one is ``any``.
MAX_NODES = 512
#: Bytes of a store file that are read.
MAX_FILE_BYTES = 1024 * 1024
#: Tools one store file keeps.
MAX_TOOLS = 256

_FORMAT = "mcp_client.shapes/2"
_SCALARS = ("null", "boolean", "integer", "number", "string")


@dataclass(frozen=True)
class Scalar:
    """A JSON scalar seen: ``kind`` is its JSON kind."""

    kind: str  # one of _SCALARS


@dataclass(frozen=True)
class ListOf:
    """An array seen; ``item`` the shape of its items merged."""

    item: Optional["Shape"]  # None: only empty arrays were seen


@dataclass(frozen=True)
class ObjectOf:
    """An object seen: each key, its shape, and in how many calls it was present."""

    keys: Tuple[Tuple[str, "Shape", int], ...]  # key, shape, calls it was present in
    calls: int  # objects merged into this one


@dataclass(frozen=True)
class MapOf:
    """An object seen as a map: any keys, ``value`` their values' shape merged."""

    value: Optional["Shape"]  # None: only empty objects were seen as maps


@dataclass(frozen=True)
class UnionOf:
    """Values of different kinds seen at one place."""

    branches: Tuple["Shape", ...]  # 2..MAX_UNION, distinct kinds, never a UnionOf


@dataclass(frozen=True)
class JsonText:
    """A string that held JSON text, an object or an array, in every call seen: ``shape``
    is what it held. ``codegen.deliver`` parses it where it was seen (:func:`json_paths`)."""

    shape: "Shape"


@dataclass(frozen=True)
class Opaque:
    """A place too large or too deep to learn: ``reason`` says which."""

    reason: str  # generator text


Shape = Union[Scalar, ListOf, ObjectOf, MapOf, UnionOf, JsonText, Opaque]


@dataclass(frozen=True)
class Learned:
    """What one tool was seen to return over ``calls`` calls: its ``data`` and
    ``structuredContent`` shapes (``None`` when never seen)."""

    calls: int
    data: Optional[Shape] = None
    structured: Optional[Shape] = None


_TOO_DEEP = Opaque("nested too deep to learn")
_TOO_BIG = Opaque("too large a shape to learn")
_TOO_MIXED = Opaque("more kinds than a union keeps")
_KIND_OF = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}


# ----------------------------------------------------------------------------- record


def learn(value: Any) -> Shape:
    """The shape of one value; total and bounded (see the module doc)."""
    shape = _Recorder().shape(value, 0)
    return shape if _size(shape) <= MAX_NODES else _TOO_BIG


class _Recorder:
    def __init__(self) -> None:
        self.nodes = MAX_NODES

    def shape(self, value: Any, depth: int) -> Shape:
        self.nodes -= 1
        if self.nodes < 0:
            return _TOO_BIG
        kind = _KIND_OF.get(type(value))
        if kind == "string" and value[:1] in _JSON_OPENERS and depth < MAX_DEPTH:
            held = json_text(value)
            if held is not None:  # what the string held is learned one level down
                return JsonText(self.shape(held, depth + 1))
        if kind is not None:
            return Scalar(kind)
        if depth >= MAX_DEPTH:
            return _TOO_DEEP
        if type(value) is list:
            return self.array(value, depth)
        if type(value) is dict:
            return self.object(value, depth)
        return Opaque("not a JSON value")

    def array(self, value: List[Any], depth: int) -> Shape:
        item: Optional[Shape] = None
        for entry in value[:MAX_ITEMS]:
            seen = self.shape(entry, depth + 1)
            item = seen if item is None else merge(item, seen)
        return ListOf(item)

    def object(self, value: Dict[Any, Any], depth: int) -> Shape:
        if _map_like(value):
            merged: Optional[Shape] = None
            for entry in list(value.values())[:MAX_ITEMS]:
                seen = self.shape(entry, depth + 1)
                merged = seen if merged is None else merge(merged, seen)
            return MapOf(merged)
        keys = tuple((key, self.shape(entry, depth + 1), 1) for key, entry in value.items())
        return ObjectOf(keys, 1)


#: The old name of :func:`learn`, kept for those who call it (``record`` is a
#: ``schema.Record`` now, and nothing else).
record = learn

_JSON_OPENERS = ("{", "[")


def json_text(text: str) -> Optional[JsonValue]:
    """The object or array ``text`` holds as JSON (the whole of it), or ``None``; total."""
    if text[:1] not in _JSON_OPENERS or not text.rstrip().endswith(("}", "]")):
        return None
    try:
        held = parse(text)
    except ValueError:
        return None
    return held if type(held) in (dict, list) else None


def _map_like(value: Dict[Any, Any]) -> bool:
    return len(value) > MAX_KEYS or any(
        type(key) is not str or len(key) > MAX_KEY_CHARS for key in value
    )


# ----------------------------------------------------------------------------- merge


def merge(first: Shape, second: Shape) -> Shape:
    """One shape for what either described; total, bounded like ``record``."""
    shape = _merge(first, second)
    return shape if _size(shape) <= MAX_NODES else _TOO_BIG


def _merge(first: Shape, second: Shape) -> Shape:
    if isinstance(first, Opaque):
        return first
    if isinstance(second, Opaque):
        return second
    if isinstance(first, UnionOf) or isinstance(second, UnionOf) or _group(first) != _group(second):
        return _union(first, second)
    if isinstance(first, JsonText) and isinstance(second, JsonText):
        return JsonText(_merge(first.shape, second.shape))
    if isinstance(first, JsonText) or isinstance(second, JsonText):
        return Scalar("string")  # once a string there held no JSON, it is a string
    if isinstance(first, Scalar) and isinstance(second, Scalar):
        return first if first.kind == second.kind else Scalar("number")
    if isinstance(first, ListOf) and isinstance(second, ListOf):
        return ListOf(_merge_optional(first.item, second.item))
    if isinstance(first, MapOf) or isinstance(second, MapOf):
        return MapOf(_merge_optional(_values(first), _values(second)))
    assert isinstance(first, ObjectOf) and isinstance(second, ObjectOf)
    return _merge_objects(first, second)


def _group(shape: Shape) -> str:
    """What merges without a union: integers with numbers, records with maps, JSON text
    with strings."""
    if isinstance(shape, JsonText):
        return "string"
    if isinstance(shape, Scalar):
        return "number" if shape.kind == "integer" else shape.kind
    return "array" if isinstance(shape, ListOf) else "object"


def _merge_optional(first: Optional[Shape], second: Optional[Shape]) -> Optional[Shape]:
    if first is None:
        return second
    return first if second is None else _merge(first, second)


def _values(shape: Shape) -> Optional[Shape]:
    if isinstance(shape, MapOf):
        return shape.value
    merged: Optional[Shape] = None
    for _, value, _ in shape.keys if isinstance(shape, ObjectOf) else ():
        merged = _merge_optional(merged, value)
    return merged


def _merge_objects(first: ObjectOf, second: ObjectOf) -> Shape:
    keys: Dict[str, Tuple[Shape, int]] = {key: (s, n) for key, s, n in first.keys}
    for key, shape, count in second.keys:
        if key in keys:
            old, seen = keys[key]
            keys[key] = (_merge(old, shape), seen + count)
        else:
            keys[key] = (shape, count)
    if len(keys) > MAX_KEYS:  # keys that vary call by call are data: a map
        return MapOf(_merge_optional(_values(first), _values(second)))
    entries = tuple((key, shape, count) for key, (shape, count) in keys.items())
    return ObjectOf(entries, first.calls + second.calls)


def _union(first: Shape, second: Shape) -> Shape:
    branches: List[Shape] = []
    for shape in _branches(first) + _branches(second):
        for index, branch in enumerate(branches):
            if _group(branch) == _group(shape):
                branches[index] = _merge(branch, shape)
                break
        else:
            branches.append(shape)
    if len(branches) > MAX_UNION:
        return _TOO_MIXED
    return branches[0] if len(branches) == 1 else UnionOf(tuple(branches))


def _branches(shape: Shape) -> List[Shape]:
    return list(shape.branches) if isinstance(shape, UnionOf) else [shape]


def _size(shape: Optional[Shape]) -> int:
    if isinstance(shape, ListOf):
        return 1 + _size(shape.item)
    if isinstance(shape, MapOf):
        return 1 + _size(shape.value)
    if isinstance(shape, ObjectOf):
        return 1 + sum(_size(value) for _, value, _ in shape.keys)
    if isinstance(shape, UnionOf):
        return sum(_size(branch) for branch in shape.branches)
    if isinstance(shape, JsonText):
        return 1 + _size(shape.shape)
    return 0 if shape is None else 1


# ----------------------------------------------------------------------------- types


def to_type(shape: Shape) -> ValueType:
    """``shape`` in ``schema``'s language: records open, optional keys those not always seen."""
    if isinstance(shape, Scalar):
        if shape.kind == "null":
            return Structured("only null was seen")
        return Simple(shape.kind)  # type: ignore[arg-type]  # one of schema.KINDS
    if isinstance(shape, ListOf):
        return Array(
            Structured("only empty arrays were seen") if shape.item is None else to_type(shape.item)
        )
    if isinstance(shape, MapOf):
        return Map(
            Structured("only empty objects were seen")
            if shape.value is None
            else to_type(shape.value)
        )
    if isinstance(shape, ObjectOf):
        return _record_type(shape)
    if isinstance(shape, UnionOf):
        return _union_type(shape)
    if isinstance(shape, JsonText):  # delivered parsed: typed as what it held
        return to_type(shape.shape)
    return Structured(shape.reason)


#: What a field's doc says of a string that held JSON, delivered parsed.
JSON_TEXT_NOTE = "a string of JSON text in every call seen, given parsed"


def _record_type(shape: ObjectOf) -> ValueType:
    if not shape.keys:
        return Map(Structured("only empty objects were seen"))
    fields = tuple(
        Field(
            key,
            to_type(value),
            count < shape.calls,
            JSON_TEXT_NOTE if isinstance(value, JsonText) else None,
        )
        for key, value, count in shape.keys
    )
    return Record(fields, True)


#: Where a string to parse sits: a step a level, ``("key", name)`` into an object,
#: ``("item",)`` into every item of an array, ``("value",)`` into every value of a map.
Path = Tuple[Tuple[str, ...], ...]


def json_paths(shape: Optional[Shape]) -> Tuple[Path, ...]:
    """Where ``shape`` holds :class:`JsonText`, outer places first: ``deliver`` parses
    each in turn, so a path past one goes on inside what it held."""
    return tuple(path for path, _ in json_texts(shape))


def json_texts(shape: Optional[Shape]) -> Tuple[Tuple[Path, JsonText], ...]:
    """Each :class:`JsonText` of ``shape`` with its path, outer places first."""
    found: List[Tuple[Path, JsonText]] = []
    todo: List[Tuple[Optional[Shape], Path]] = [(shape, ())]
    while todo:  # breadth first: a shorter path before the longer ones under it
        here, path = todo.pop(0)
        if isinstance(here, JsonText):
            found.append((path, here))
            todo.append((here.shape, path))
        elif isinstance(here, ObjectOf):
            todo += [(value, path + (("key", key),)) for key, value, _ in here.keys]
        elif isinstance(here, ListOf):
            todo.append((here.item, path + (("item",),)))
        elif isinstance(here, MapOf):
            todo.append((here.value, path + (("value",),)))
        elif isinstance(here, UnionOf):  # a branch's place is the union's
            todo += [(branch, path) for branch in here.branches]
    return tuple(found)


def _union_type(shape: UnionOf) -> ValueType:
    null = any(isinstance(b, Scalar) and b.kind == "null" for b in shape.branches)
    kept = [to_type(b) for b in shape.branches if not (isinstance(b, Scalar) and b.kind == "null")]
    if any(isinstance(kind, Structured) for kind in kept):
        return Structured("a union with a branch that cannot be typed")
    inner: ValueType = kept[0] if len(kept) == 1 else AnyOf(tuple(kept))
    return Nullable(inner) if null else inner


# ----------------------------------------------------------------------------- files


def dump_shape(shape: Shape) -> JsonValue:
    """``shape`` as JSON (kinds and keys only), for the store."""
    if isinstance(shape, Scalar):
        return shape.kind
    if isinstance(shape, ListOf):
        return {"array": None if shape.item is None else dump_shape(shape.item)}
    if isinstance(shape, MapOf):
        return {"map": None if shape.value is None else dump_shape(shape.value)}
    if isinstance(shape, ObjectOf):
        keys: List[JsonValue] = [[key, dump_shape(value), n] for key, value, n in shape.keys]
        return {"object": keys, "calls": shape.calls}
    if isinstance(shape, UnionOf):
        return {"union": [dump_shape(branch) for branch in shape.branches]}
    if isinstance(shape, JsonText):
        return {"json": dump_shape(shape.shape)}
    return {"any": shape.reason}


def load_shape(raw: JsonValue) -> Optional[Shape]:
    """A shape from ``dump_shape``'s JSON, or ``None`` for anything else; total, bounded."""
    try:
        shape = _load(raw, 0)
    except (ValueError, TypeError, KeyError):
        return None
    return shape if _size(shape) <= MAX_NODES else None


def _load(raw: JsonValue, depth: int) -> Shape:
    if depth > MAX_DEPTH + 1:
        raise ValueError("too deep")
    if type(raw) is str and raw in _SCALARS:
        return Scalar(raw)
    if type(raw) is not dict or len(raw) > 2:
        raise ValueError("not a shape")
    if "array" in raw:
        return ListOf(None if raw["array"] is None else _load(raw["array"], depth + 1))
    if "map" in raw:
        return MapOf(None if raw["map"] is None else _load(raw["map"], depth + 1))
    if "union" in raw:
        return _load_union(raw["union"], depth)
    if "json" in raw:
        return JsonText(_load(raw["json"], depth + 1))
    if "object" in raw:
        return _load_object(raw["object"], raw["calls"], depth)
    reason = raw["any"]
    if type(reason) is not str:
        raise ValueError("not a shape")
    return Opaque(reason[:120])


def _load_union(raw: JsonValue, depth: int) -> Shape:
    if type(raw) is not list or not 2 <= len(raw) <= MAX_UNION:
        raise ValueError("not a union")
    branches = tuple(_load(branch, depth) for branch in raw)  # the same level: no deeper
    if any(isinstance(branch, (UnionOf, Opaque)) for branch in branches):
        raise ValueError("not a union")
    if len({_group(branch) for branch in branches}) != len(branches):
        raise ValueError("not a union")
    return UnionOf(branches)


def _load_object(raw: JsonValue, calls: JsonValue, depth: int) -> Shape:
    if type(raw) is not list or len(raw) > MAX_KEYS or not _count(calls):
        raise ValueError("not an object")
    keys = []
    for entry in raw:
        if type(entry) is not list or len(entry) != 3:
            raise ValueError("not a key")
        key, value, count = entry
        if type(key) is not str or len(key) > MAX_KEY_CHARS or not _count(count):
            raise ValueError("not a key")
        if count > calls:  # type: ignore[operator]  # both ints by now
            raise ValueError("not a key")
        keys.append((key, _load(value, depth + 1), count))
    if len({key for key, _, _ in keys}) != len(keys):
        raise ValueError("a key twice")
    return ObjectOf(tuple(keys), calls)  # type: ignore[arg-type]


def _count(value: JsonValue) -> bool:
    return type(value) is int and 0 < value < 2**53


def tool_key(tool: ToolDescriptor) -> str:
    """The store's key of a tool: a digest of its name and ``inputSchema``."""
    text = json.dumps([tool.name, tool.input_schema], sort_keys=True, ensure_ascii=True)
    return sha256_digest(text)[:32]


def default_directory(
    environ: Optional[Mapping[str, str]] = None, platform: Optional[str] = None
) -> str:
    """The per-user store: ``mcp-client/shapes`` in the platform's cache directory
    (``$XDG_CACHE_HOME``, else ``~/.cache``; ``~/Library/Caches`` on macOS)."""
    environ = os.environ if environ is None else environ
    home = environ.get("HOME") or os.path.expanduser("~")
    if (platform or sys.platform) == "darwin":
        cache = os.path.join(home, "Library", "Caches")
    else:
        cache = environ.get("XDG_CACHE_HOME", "")
        if not os.path.isabs(cache):  # the spec: a relative path is to be ignored
            cache = os.path.join(home, ".cache")
    return os.path.join(cache, "mcp-client", "shapes")


def source(name: str, command: Sequence[str], cwd: Optional[str] = None) -> str:
    """The store's key of a configured server: its config key, its command (the
    executable and its arguments) and its working directory, as the operator wrote
    them. What a server says of itself (``serverInfo``) is no part of it."""
    return json.dumps([name, list(command), cwd], ensure_ascii=True)


def _file_name(source: str) -> str:
    return "server-" + sha256_digest(source)[:32] + ".json"


# ----------------------------------------------------------------------------- store


class Store:
    """Learned shapes in ``directory`` (made if missing): read once per server, merged
    in memory by ``observe``, written by ``flush``. Thread-safe: runs may overlap.

    A server is named by its :func:`source` (what the operator configured) and the
    ``version`` it gives: a file holds one version, and another starts afresh."""

    def __init__(self, directory: Union[str, "os.PathLike[str]"]) -> None:
        self.directory = os.fspath(directory)
        self._lock = threading.Lock()
        self._files: Dict[str, Tuple[str, Dict[str, Learned]]] = {}  # name: version, entries
        self._dirty: Set[str] = set()
        # tool_key digests the inputSchema: once per descriptor, not once per call. The
        # descriptor is held with its key, so its id is not reused while cached.
        self._keys: Dict[int, Tuple[ToolDescriptor, str]] = {}

    def learned(
        self, source: str, version: str, tools: Sequence[ToolDescriptor]
    ) -> Dict[str, Learned]:
        """What was learned of ``tools`` (by wire name), for ``codegen.generate``'s ``learned``."""
        with self._lock:
            entries = self._entries(source, version)
            return {tool.name: entries[key] for tool, key in _keyed(tools) if key in entries}

    def observe(
        self,
        source: str,
        version: str,
        tool: ToolDescriptor,
        data: Any = None,
        structured: Any = None,
    ) -> None:
        """Merge one delivered call's ``data`` and ``structuredContent`` shapes (never values)."""
        data_shape, structured_shape = learn(data), learn(structured)
        with self._lock:
            key = self._key(tool)
            entries = self._entries(source, version, replace=True)
            old = entries.get(key)
            if old is None and len(entries) >= MAX_TOOLS:
                return
            entries[key] = _observed(old, data_shape, structured_shape)
            self._dirty.add(_file_name(source))

    def flush(self) -> None:
        """Write every file ``observe`` changed; a failure is logged, not raised."""
        with self._lock:
            dirty, self._dirty = self._dirty, set()
            for name in sorted(dirty):
                try:
                    self._write(name)
                except (OSError, SymlinkRefused) as error:
                    LOGGER.warning("shapes: could not write %s: %s", name, error)

    def _key(self, tool: ToolDescriptor) -> str:
        cached = self._keys.get(id(tool))
        if cached is not None and cached[0] is tool:
            return cached[1]
        if len(self._keys) >= 4 * MAX_TOOLS:
            self._keys.clear()
        key = tool_key(tool)
        self._keys[id(tool)] = (tool, key)
        return key

    def _entries(self, source: str, version: str, replace: bool = False) -> Dict[str, Learned]:
        """The entries of ``source`` at ``version``: none when the file holds another
        version (what it taught is not this one's), and then, to ``replace``, a new set."""
        name = _file_name(source)
        held = self._files.get(name)
        if held is None:
            held = self._files[name] = self._read(name)
        if held[0] == version:
            return held[1]
        if not replace:
            return {}
        self._files[name] = (version, {})
        return self._files[name][1]

    def _read(self, name: str) -> Tuple[str, Dict[str, Learned]]:
        path = os.path.join(self.directory, name)
        try:
            with open(path, "rb") as stream:
                data = stream.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return "", {}
        except OSError as error:
            LOGGER.warning("shapes: could not read %s: %s", path, error)
            return "", {}
        held = _entries_of(data) if len(data) <= MAX_FILE_BYTES else None
        if held is None:
            LOGGER.warning("shapes: %s is not a shapes file; learning starts afresh", path)
            return "", {}
        return held

    def _write(self, name: str) -> None:
        from .._os.files import open_for_writing

        os.makedirs(self.directory, mode=0o700, exist_ok=True)  # the user's alone
        version, entries = self._files[name]
        tools = {key: _dumped(learned) for key, learned in entries.items()}
        body = {"format": _FORMAT, "version": version, "tools": tools}
        text = json.dumps(body, ensure_ascii=True, sort_keys=True, indent=1) + "\n"
        path = os.path.join(self.directory, name)
        temporary = "%s.%d.tmp" % (path, os.getpid())
        fd = open_for_writing(temporary, os.O_CREAT | os.O_TRUNC, "the shapes file")
        with os.fdopen(fd, "w", encoding="ascii") as stream:
            stream.write(text)
        os.replace(temporary, path)


def _keyed(tools: Sequence[ToolDescriptor]) -> List[Tuple[ToolDescriptor, str]]:
    return [(tool, tool_key(tool)) for tool in tools]


def _entries_of(data: bytes) -> Optional[Tuple[str, Dict[str, Learned]]]:
    """A store file's version and tools, each entry checked (a bad one dropped), or
    ``None`` if it is not one."""
    try:
        body = parse(data)
    except ValueError:
        return None
    if type(body) is not dict or body.get("format") != _FORMAT:
        return None
    tools, version = body.get("tools"), body.get("version")
    if type(tools) is not dict or len(tools) > MAX_TOOLS or type(version) is not str:
        return None
    entries: Dict[str, Learned] = {}
    for key, entry in tools.items():
        learned = _loaded(entry)
        if learned is not None:
            entries[key] = learned
    return version, entries


def _loaded(entry: JsonValue) -> Optional[Learned]:
    if type(entry) is not dict or not _count(entry.get("calls")):
        return None
    parts: List[Optional[Shape]] = []
    for part in ("data", "structured"):
        raw = entry.get(part)
        shape = None if raw is None else load_shape(raw)
        if raw is not None and shape is None:
            return None
        parts.append(shape)
    return Learned(cast(int, entry["calls"]), parts[0], parts[1])


def _dumped(learned: Learned) -> JsonValue:
    return {
        "calls": learned.calls,
        "data": None if learned.data is None else dump_shape(learned.data),
        "structured": None if learned.structured is None else dump_shape(learned.structured),
    }


def _observed(old: Optional[Learned], data: Shape, structured: Shape) -> Learned:
    if old is None:
        return Learned(1, data, structured)
    return Learned(
        old.calls + 1,
        data if old.data is None else merge(old.data, data),
        structured if old.structured is None else merge(old.structured, structured),
    )
