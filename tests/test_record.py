"""The public values are frozen ``Record``s, not dataclasses: what the dataclasses gave stays.

Each value class is held against the frozen dataclass it replaced (declared here
as it was declared in the package): the same ``repr`` text, ``==`` and ``hash``,
construction by position and by keyword with the same defaults, ``__match_args__``,
the freeze (``dataclasses.FrozenInstanceError``), pickling and copying, and
``dataclasses.fields`` / ``replace`` / ``asdict`` / ``is_dataclass``.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import unittest
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from hypothesis import given
from hypothesis import strategies as st

from mcp_client import _frozen as _record
from mcp_client import client, jsonrpc, protocol, transport
from mcp_client.errors import ProtocolFault
from mcp_client.jsonvalue import JsonValue

# ------------------------------------------------------------ the dataclasses they replaced


@dataclass(frozen=True)
class ClientInfo:
    name: str = "mcp_client"
    version: str = "0"


@dataclass(frozen=True)
class ServerInfo:
    name: str
    version: str
    title: Optional[str] = None


@dataclass(frozen=True)
class ToolsCapability:
    list_changed: bool = False


@dataclass(frozen=True)
class InitializeResult:
    protocol_version: str
    server_info: Any
    capabilities: Dict[str, JsonValue]
    tools: Any
    instructions: Optional[str] = None


@dataclass(frozen=True)
class ToolDescriptor:
    name: str
    input_schema: JsonValue
    title: Optional[str] = None
    description: Optional[str] = None
    output_schema: JsonValue = None
    annotations: Optional[Dict[str, JsonValue]] = None


@dataclass(frozen=True)
class ToolsPage:
    tools: Tuple[Any, ...]
    next_cursor: Optional[str] = None


@dataclass(frozen=True)
class Listing:
    method: str
    params: Callable[[Optional[str]], JsonValue]
    items: Callable[[JsonValue], Tuple[Any, ...]]


@dataclass(frozen=True)
class Text:
    text: str
    raw: Optional[Dict[str, JsonValue]] = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Other:
    kind: str
    raw: Dict[str, JsonValue]


@dataclass(frozen=True)
class CallToolResult:
    content: Tuple[Any, ...]
    is_error: bool = False
    structured_content: JsonValue = None


@dataclass(frozen=True)
class RpcError:
    code: int
    message: str
    data: JsonValue = None


@dataclass(frozen=True)
class Response:
    id: Any
    result: JsonValue
    error: Any = None


@dataclass(frozen=True)
class ServerRequest:
    id: Any
    method: str
    params: JsonValue = None


@dataclass(frozen=True)
class Notification:
    method: str
    params: JsonValue = None


@dataclass(frozen=True)
class Spawn:
    executable: str
    args: Tuple[str, ...] = ()
    env: Optional[Mapping[str, str]] = field(default=None, hash=False)
    cwd: Optional[str] = None


@dataclass(frozen=True)
class NoResource:
    pass


@dataclass(frozen=True)
class Exited:
    returncode: int


@dataclass(frozen=True)
class ChannelClosed:
    pass


@dataclass(frozen=True)
class Options:
    client_info: Any = client.Options().client_info
    handshake_timeout: float = 30.0
    request_timeout: float = 60.0
    max_tool_pages: int = 64
    retire_timeout: float = 10.0
    capture: Any = None
    retire_grace: float = 0.0
    tolerated_noise_lines: int = 0


def _params(cursor: Optional[str]) -> JsonValue:
    return cursor


def _items(result: JsonValue) -> Tuple[Any, ...]:
    return ()


#: (the value class, the dataclass it replaced, sample arguments: all, then the required).
CASES: List[Tuple[type, type, Tuple[Any, ...], Tuple[Any, ...]]] = [
    (protocol.ClientInfo, ClientInfo, ("me", "1.0"), ()),
    (protocol.ServerInfo, ServerInfo, ("srv", "2", "The Server"), ("srv", "2")),
    (protocol.ToolsCapability, ToolsCapability, (True,), ()),
    (
        protocol.InitializeResult,
        InitializeResult,
        ("2025-06-18", ("srv",), {"tools": {}}, (True,), "be nice"),
        ("2025-06-18", ("srv",), {}, None),
    ),
    (
        protocol.ToolDescriptor,
        ToolDescriptor,
        ("echo", {"type": "object"}, "Echo", "says it back", {"type": "object"}, {"a": 1}),
        ("echo", {}),
    ),
    (protocol.ToolsPage, ToolsPage, ((1, 2), "next"), ((),)),
    (protocol.Listing, Listing, ("tools/list", _params, _items), ("tools/list", _params, _items)),
    (protocol.Text, Text, ("hello", {"type": "text", "text": "hello"}), ("hello",)),
    (protocol.Other, Other, ("image", {"type": "image"}), ("image", {})),
    (protocol.CallToolResult, CallToolResult, ((1,), True, {"a": [1]}), ((),)),
    (jsonrpc.RpcError, RpcError, (-32601, "nope", [1]), (-32601, "nope")),
    (jsonrpc.Response, Response, (7, None, ("e",)), (7, {"ok": True})),
    (jsonrpc.ServerRequest, ServerRequest, ("s1", "ping", {"a": 1}), ("s1", "ping")),
    (jsonrpc.Notification, Notification, ("notifications/x", [1]), ("notifications/x",)),
    (transport.Spawn, Spawn, ("python", ("-c", "pass"), {"A": "1"}, "/tmp"), ("python",)),
    (transport.NoResource, NoResource, (), ()),
    (transport.Exited, Exited, (-9,), (-9,)),
    (transport.ChannelClosed, ChannelClosed, (), ()),
    (
        client.Options,
        Options,
        (protocol.ClientInfo("x", "1"), 1.0, 2.0, 3, 4.0, "log.jsonl", 0.5, 6),
        (),
    ),
]


def hashable(args: Tuple[Any, ...]) -> bool:
    try:
        hash(args)
    except TypeError:
        return False
    return True


class LikeTheDataclasses(unittest.TestCase):
    """Every value class behaves as the frozen dataclass it replaced."""

    def each(self) -> Any:
        for cls, reference, full, required in CASES:
            for args in (full, required):
                with self.subTest(cls=cls.__name__, args=args):
                    yield cls, reference, args

    def test_every_public_value_is_covered(self) -> None:
        ours = {cls for cls, _, _, _ in CASES}
        everything = set(_subclasses(_record.Frozen))
        self.assertEqual(everything - ours, set(), "a Record without a case here")

    def test_repr(self) -> None:
        for cls, reference, args in self.each():
            self.assertEqual(repr(cls(*args)), repr(reference(*args)))

    def test_keywords_and_defaults(self) -> None:
        for cls, reference, args in self.each():
            names = [f.name for f in dataclasses.fields(reference)]
            by_name = cls(**dict(zip(names, args)))
            self.assertEqual(by_name, cls(*args))
            self.assertEqual(
                [getattr(by_name, name) for name in names],
                [getattr(reference(*args), name) for name in names],
            )

    def test_equality_and_hash(self) -> None:
        for cls, reference, args in self.each():
            one, two = cls(*args), cls(*copy.deepcopy(args))
            self.assertEqual(one, two)
            self.assertFalse(one != two)
            self.assertNotEqual(one, reference(*args), "another class is never equal")
            if hashable(tuple(_hashed_values(reference(*args)))):
                self.assertEqual(hash(one), hash(reference(*args)))
            else:
                with self.assertRaises(TypeError):
                    hash(one)

    def test_match_args(self) -> None:
        for cls, reference, _ in self.each():
            # A dataclass has them from 3.10 on: its fields taken by __init__, in order.
            init = tuple(f.name for f in dataclasses.fields(reference) if f.init)
            expected = getattr(reference, "__match_args__", init)
            self.assertEqual(getattr(cls, "__match_args__"), expected)

    def test_frozen(self) -> None:
        for cls, reference, args in self.each():
            value = cls(*args)
            for name in [f.name for f in dataclasses.fields(reference)] + ["other"]:
                with self.assertRaisesRegex(dataclasses.FrozenInstanceError, "cannot assign"):
                    setattr(value, name, 1)
                with self.assertRaises(dataclasses.FrozenInstanceError):
                    delattr(value, name)
            self.assertFalse(hasattr(value, "__dict__"), "slots only")

    def test_pickle_and_copy(self) -> None:
        for cls, _, args in self.each():
            if cls is protocol.Listing:  # its functions pickle by name, as before
                continue
            value = cls(*args)
            for again in (
                pickle.loads(pickle.dumps(value)),
                copy.copy(value),
                copy.deepcopy(value),
            ):
                self.assertIs(type(again), cls)
                self.assertEqual(again, value)
                self.assertEqual(repr(again), repr(value))

    def test_dataclasses_functions(self) -> None:
        for cls, reference, args in self.each():
            value, old = cls(*args), reference(*args)
            self.assertTrue(dataclasses.is_dataclass(value))
            ours, theirs = dataclasses.fields(value), dataclasses.fields(old)
            self.assertEqual(
                [(f.name, f.default, f.compare, f.hash, f.repr, f.init) for f in ours],
                [(f.name, f.default, f.compare, f.hash, f.repr, f.init) for f in theirs],
            )
            if cls is not protocol.InitializeResult:  # its samples nest other classes
                self.assertEqual(dataclasses.asdict(value), dataclasses.asdict(old))
            self.assertEqual(dataclasses.replace(value), value)

    def test_replace_checks_again(self) -> None:
        options = dataclasses.replace(client.Options(), max_tool_pages=3)
        self.assertEqual(options.max_tool_pages, 3)
        with self.assertRaisesRegex(ValueError, "max_tool_pages"):
            dataclasses.replace(options, max_tool_pages=0)
        spawn = dataclasses.replace(transport.Spawn("python"), args=["-c", "pass"])
        self.assertEqual(spawn.args, ("-c", "pass"))
        with self.assertRaises(TypeError):
            dataclasses.replace(spawn, args="oops")

    def test_text_compares_and_shows_no_raw(self) -> None:
        self.assertEqual(protocol.Text("a", {"x": 1}), protocol.Text("a", {"y": 2}))
        self.assertEqual(repr(protocol.Text("a", {"x": 1})), "Text(text='a')")

    def test_spawn_hashes_without_env(self) -> None:
        one = transport.Spawn("python", (), {"A": "1"})
        self.assertEqual(hash(one), hash(transport.Spawn("python", (), {"B": "2"})))
        self.assertNotEqual(one, transport.Spawn("python", (), {"B": "2"}))


class DecodedValues(unittest.TestCase):
    """The decoders' values, built through the setters, are the classes' own."""

    @given(
        st.text(min_size=1, max_size=8),
        st.one_of(st.none(), st.text(max_size=8)),
        st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
    )
    def test_a_decoded_tool_is_the_constructed_one(
        self, name: str, title: Optional[str], annotations: Optional[Dict[str, Any]]
    ) -> None:
        raw = {"name": name, "inputSchema": {}, "title": title, "annotations": annotations}
        page = protocol.decode_tools_page({"tools": [raw]})
        self.assertEqual(
            page.tools, (protocol.ToolDescriptor(name, {}, title, None, None, annotations),)
        )

    def test_a_fault_still_names_the_path(self) -> None:
        with self.assertRaisesRegex(ProtocolFault, r"tools\[1\]\.name"):
            protocol.decode_tools_page({"tools": [{"name": "a", "inputSchema": {}}, {}]})


def _subclasses(cls: type) -> List[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found += _subclasses(sub)
    return found


def _hashed_values(value: Any) -> List[Any]:
    return [
        getattr(value, f.name)
        for f in dataclasses.fields(value)
        if f.hash or (f.hash is None and f.compare)
    ]
