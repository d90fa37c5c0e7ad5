"""The hostile lines a server can send where an answer belongs, named once.

Each line is tested at every layer it reaches, from this one table:

- ``test_hostile_codecs.py``: decoding it raises exactly ``fault``, whose reason holds ``reason``;
- ``test_noise.py``: it is noise (``MalformedMessage``: not JSON at all) or not (``BadMessage``);
- ``test_scripted_servers.py``: the ``scripted.py`` behaviour writes exactly it, on raw pipes;
- ``test_client_channel.py``: an in-process peer answers a call with it: the client dies, the
  reason latched;
- ``test_client_process.py``: the scripted behaviour does: the client dies, the server is killed;
- ``test_replay.py``: the shipped ``invalid_utf8`` capture holds its bytes exactly.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Callable, List, NamedTuple, Tuple

from mcp_client.errors import BadMessage, LineTooLong, MalformedMessage
from mcp_client.jsonvalue import MAX_DEPTH
from mcp_client.stdio import MAX_LINE_BYTES

from servers.scripted import sized_line

#: The id a client's first call after the handshake gets (``initialize`` is 1).
FIRST_CALL = 2


class Hostile(NamedTuple):
    #: Names the tests made from this line: ``test_<key>`` (see :func:`each`).
    key: str
    #: The ``scripted.py`` behaviour and arguments that answer every ``tools/call``
    #: with this line; ``()`` for none.
    behaviour: Tuple[str, ...]
    #: The line answering ``tools/call`` request ``ident`` with arguments ``{}``, no newline.
    answer: Callable[[int], bytes]
    #: What decoding it raises: ``jsonrpc.decode``'s fault, or the framing's ``LineTooLong``.
    fault: type
    #: A needle in that fault's reason, and so in the reason the client dies with.
    reason: str

    @property
    def line(self) -> bytes:
        """The line answering a client's first call."""
        return self.answer(FIRST_CALL)

    @property
    def death(self) -> str:
        """How the reason the client dies with begins."""
        return "framing: " if self.fault is LineTooLong else "server sent an invalid line: "


def _echo(ident: bytes) -> bytes:
    """A correct answer (the echo of ``{}``) with ``ident`` as its id, spelled as is."""
    return b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"{}"}]}}' % ident


GARBAGE = Hostile(
    "garbage_line", (), lambda ident: b"this is not json", MalformedMessage, "not JSON"
)
INVALID_UTF8 = Hostile(
    "invalid_utf8",
    ("invalid_utf8",),
    lambda ident: (
        b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text",'
        b'"text":"bad \xff\xfe \xc3 bytes"}]}}' % ident
    ),
    MalformedMessage,
    "not UTF-8",
)
BATCH = Hostile(
    "batch", ("batch",), lambda ident: b"[%s]" % _echo(b"%d" % ident), BadMessage, "batch"
)
NULL_ID = Hostile(
    "null_id_error",
    ("null_id_error",),
    lambda ident: b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
    BadMessage,
    "id None is not an integer",
)
FLOAT_ID = Hostile(
    "float_id",
    ("float_id",),
    lambda ident: _echo(b"%d.0" % ident),
    BadMessage,
    "id %d.0 is not an integer" % FIRST_CALL,
)
DEEP_NESTING = Hostile(
    "deep_nesting",
    ("deep_nesting",),
    lambda ident: (
        b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"deep"}],'
        b'"structuredContent":{"nested":%s%s}}}' % (ident, b"[" * 100000, b"]" * 100000)
    ),
    MalformedMessage,
    "nesting deeper than %d" % MAX_DEPTH,
)
HUGE_LINE = Hostile(
    "huge_line",
    ("huge_line", str(17 * 1024 * 1024)),
    lambda ident: sized_line(ident, 17 * 1024 * 1024),
    LineTooLong,
    "the limit is %d" % MAX_LINE_BYTES,
)

LINES = (GARBAGE, INVALID_UTF8, BATCH, NULL_ID, FLOAT_ID, DEEP_NESTING, HUGE_LINE)


def each(check: str, scripted: bool = False) -> Callable[[Any], Any]:
    """A class decorator: a test ``test_<key>`` for every hostile line (only those a
    ``scripted.py`` behaviour sends, if ``scripted``), calling ``self.<check>(line)``."""

    def decorate(cls: Any) -> Any:
        for hostile in LINES:
            if scripted and not hostile.behaviour:
                continue

            def test(self: Any, hostile: Hostile = hostile) -> None:
                getattr(self, check)(hostile)

            test.__name__ = "test_" + hostile.key
            test.__qualname__ = "%s.%s" % (cls.__qualname__, test.__name__)
            assert not hasattr(cls, test.__name__), test.__name__
            setattr(cls, test.__name__, test)
        return cls

    return decorate


def unsafe_characters(text: str, lines: bool = False) -> List[str]:
    """What in ``text`` could drive a terminal or forge a log line: controls (C1
    ones too, and the newline unless ``lines``: text of several lines), format
    characters (bidi overrides), line and paragraph separators."""
    return sorted(
        {
            char
            for char in text
            if not (lines and char == "\n")
            and unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")
        }
    )
