"""jsonrpc: the envelope decoder and the encoders.

What is proved here:
- ``decode`` is total: any bytes or text gives an ``Inbound`` or a
  ``MessageFault`` (``MalformedMessage`` exactly when ``jsonvalue.parse``
  refuses the line, ``BadMessage`` otherwise).
- Every envelope built from arbitrary JSON in every member (right and wrong
  ``jsonrpc``, ids of every type, methods, results, error objects, extra
  members) is classified the way a small model of JSON-RPC 2.0 as PORT.md
  restricts it says, and what decodes carries the members through unchanged.
- What our encoders build decodes back (a request we send is what a server
  request looks like, our responses are responses).
"""

from __future__ import annotations

import unittest
from typing import Any, Dict, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client import jsonrpc
from mcp_client.errors import BadMessage, CorruptionReport, MalformedMessage, MessageFault
from mcp_client.jsonrpc import Notification, Response, RpcError, ServerRequest, decode
from mcp_client.jsonvalue import dump, encode, parse

from strategies import json_values, property_settings
from support import same

PROPERTY = property_settings(300)

JSON_VALUES = json_values(12, width=3, text=8, keys=5)

VALID_ERRORS = st.fixed_dictionaries(
    {"code": st.integers(-33000, 33000), "message": st.text(max_size=10)},
    optional={"data": JSON_VALUES},
)
WILD_ERRORS = st.fixed_dictionaries(
    {},
    optional={
        "code": st.sampled_from([1.0, -32601.0, True, False, "x", None]) | JSON_VALUES,
        "message": st.integers() | JSON_VALUES,
        "data": JSON_VALUES,
    },
)
WILD = {
    "jsonrpc": st.sampled_from(["1.0", "2", "2.0 ", 2.0, 2, None]) | JSON_VALUES,
    "id": st.sampled_from([1.0, 0.0, True, False, None]) | JSON_VALUES,
    "method": JSON_VALUES,
    "result": JSON_VALUES,
    "error": VALID_ERRORS | WILD_ERRORS | JSON_VALUES,
    "params": JSON_VALUES,
}
KNOWN = set(WILD)


@st.composite
def envelopes(draw: Any) -> Dict[str, Any]:
    """A well-formed message of a random kind, then each member kept (mostly),
    dropped, or replaced by something wild, plus unknown extra members."""
    kind = draw(st.sampled_from(["result", "error", "request", "notification"]))
    message: Dict[str, Any] = {"jsonrpc": "2.0"}
    if kind != "notification":
        message["id"] = draw(st.integers() | st.text(max_size=6))
    if kind in ("request", "notification"):
        message["method"] = draw(st.text(max_size=10))
        message.update(draw(st.fixed_dictionaries({}, optional={"params": JSON_VALUES})))
    if kind == "result":
        message["result"] = draw(JSON_VALUES)
    if kind == "error":
        message["error"] = draw(VALID_ERRORS)
    for key in sorted(KNOWN):
        fate = draw(st.sampled_from(["keep"] * 8 + ["drop", "wild"]))
        if fate == "drop":
            message.pop(key, None)
        elif fate == "wild":
            message[key] = draw(WILD[key])
    extras = draw(
        st.dictionaries(
            st.text(max_size=6).filter(lambda k: k not in KNOWN), JSON_VALUES, max_size=2
        )
    )
    return {**extras, **message}


ENVELOPES = envelopes()


def is_id(value: Any) -> bool:
    return type(value) in (int, str)


def model(message: Dict[str, Any]) -> Optional[Any]:
    """JSON-RPC 2.0 as PORT.md narrows it: the expected Inbound, or None for BadMessage."""
    if not (type(message.get("jsonrpc")) is str and message["jsonrpc"] == "2.0"):
        return None
    if "method" in message:
        if type(message["method"]) is not str or "result" in message or "error" in message:
            return None
        if "id" not in message:
            return Notification(message["method"], message.get("params"))
        if not is_id(message["id"]):
            return None
        return ServerRequest(message["id"], message["method"], message.get("params"))
    if not is_id(message.get("id")) or ("result" in message) == ("error" in message):
        return None
    if "result" in message:
        return Response(message["id"], message["result"])
    error = message["error"]
    if (
        type(error) is not dict
        or type(error.get("code")) is not int
        or type(error.get("message")) is not str
    ):
        return None
    return Response(
        message["id"], None, RpcError(error["code"], error["message"], error.get("data"))
    )


def same_inbound(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is RpcError or type(a) in (Response, ServerRequest, Notification):
        fields = a.__dataclass_fields__
        return all(same_inbound(getattr(a, f), getattr(b, f)) for f in fields)
    return same(a, b)


class DecodesEachKind(unittest.TestCase):
    def test_success_response(self) -> None:
        got = decode(b'{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}')
        self.assertTrue(same_inbound(got, Response(7, {"tools": []})))
        self.assertIsNone(got.error)  # type: ignore[union-attr]

    def test_string_and_extreme_int_ids(self) -> None:
        for ident in ("abc", "", 0, -1, 2**63, -(2**64)):
            with self.subTest(id=ident):
                got = decode(dump({"jsonrpc": "2.0", "id": ident, "result": None}))
                self.assertTrue(same_inbound(got, Response(ident, None)))

    def test_error_response_with_and_without_data(self) -> None:
        got = decode('{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}')
        self.assertTrue(same_inbound(got, Response(1, None, RpcError(-32601, "nope", None))))
        got = decode('{"jsonrpc":"2.0","id":1,"error":{"code":5,"message":"m","data":[1]}}')
        self.assertTrue(same_inbound(got, Response(1, None, RpcError(5, "m", [1]))))

    def test_server_request_and_notification(self) -> None:
        got = decode('{"jsonrpc":"2.0","id":"s1","method":"ping"}')
        self.assertTrue(same_inbound(got, ServerRequest("s1", "ping", None)))
        got = decode(
            '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"x":1}}'
        )
        self.assertTrue(
            same_inbound(got, Notification("notifications/tools/list_changed", {"x": 1}))
        )

    def test_str_and_bytes_lines_agree(self) -> None:
        line = '{"jsonrpc":"2.0","id":1,"result":"\u00e9"}'
        self.assertEqual(decode(line), decode(line.encode("utf-8")))


class Encoders(unittest.TestCase):
    def test_exact_shapes(self) -> None:
        self.assertEqual(
            jsonrpc.request(1, "tools/list"), {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        )
        self.assertEqual(
            jsonrpc.request(2, "tools/call", {"name": "x"}),
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}},
        )
        self.assertEqual(
            jsonrpc.notification("notifications/initialized"),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        self.assertEqual(
            jsonrpc.result_response("s", {}), {"jsonrpc": "2.0", "id": "s", "result": {}}
        )
        self.assertEqual(
            jsonrpc.error_response(3, jsonrpc.METHOD_NOT_FOUND, "no"),
            {"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no"}},
        )

    def test_standard_codes(self) -> None:
        self.assertEqual(
            (
                jsonrpc.PARSE_ERROR,
                jsonrpc.INVALID_REQUEST,
                jsonrpc.METHOD_NOT_FOUND,
                jsonrpc.INVALID_PARAMS,
                jsonrpc.INTERNAL_ERROR,
            ),
            (-32700, -32600, -32601, -32602, -32603),
        )

    def test_what_we_send_decodes_as_what_it_is(self) -> None:
        sent = decode(encode(jsonrpc.request(9, "tools/call", {"a": [1]})))
        self.assertTrue(same_inbound(sent, ServerRequest(9, "tools/call", {"a": [1]})))
        sent = decode(encode(jsonrpc.notification("notifications/initialized")))
        self.assertTrue(same_inbound(sent, Notification("notifications/initialized", None)))
        sent = decode(encode(jsonrpc.result_response(4, {})))
        self.assertTrue(same_inbound(sent, Response(4, {})))
        sent = decode(encode(jsonrpc.error_response(4, -32601, "m")))
        self.assertTrue(same_inbound(sent, Response(4, None, RpcError(-32601, "m"))))


class Properties(unittest.TestCase):
    @pytest.mark.slow
    @PROPERTY
    @given(ENVELOPES)
    def test_every_envelope_is_classified_as_the_model_says(self, message: Dict[str, Any]) -> None:
        expected = model(message)
        line = encode(message)
        if expected is None:
            with self.assertRaises(BadMessage) as caught:
                decode(line)
            self.assertTrue(caught.exception.reason)
            self.assertLess(len(caught.exception.reason), 200)  # bounded, whatever the input
        else:
            self.assertTrue(same_inbound(decode(line), expected), (message, decode(line)))

    @pytest.mark.slow
    @PROPERTY
    @given(JSON_VALUES)
    def test_any_json_that_is_not_an_object_is_bad(self, value: Any) -> None:
        if type(value) is dict:
            return
        with self.assertRaises(BadMessage) as caught:
            decode(dump(value))
        wanted = "batch" if type(value) is list else "not an object"
        self.assertIn(wanted, caught.exception.reason)

    @PROPERTY
    @given(st.binary(max_size=80) | st.text(max_size=80).map(lambda t: t.encode("utf-8")))
    def test_decode_is_total_on_bytes(self, line: bytes) -> None:
        self._total(line)

    @PROPERTY
    @given(st.lists(st.integers(0, 0x10FFFF), max_size=40).map(lambda p: "".join(map(chr, p))))
    def test_decode_is_total_on_any_text(self, line: str) -> None:
        self._total(line)

    def _total(self, line: Any) -> None:
        try:
            parse(line)
            parses = True
        except CorruptionReport:
            parses = False
        try:
            got = decode(line)
        except MalformedMessage as fault:
            self.assertFalse(parses)
            self.assertIsInstance(fault.report, CorruptionReport)
            self.assertEqual(fault.reason, "not JSON: " + fault.report.reason)
            return
        except BadMessage:
            self.assertTrue(parses)
            return
        self.assertIsInstance(got, (Response, ServerRequest, Notification))

    def test_message_fault_is_the_base_of_both(self) -> None:
        self.assertTrue(issubclass(MalformedMessage, MessageFault))
        self.assertTrue(issubclass(BadMessage, MessageFault))


if __name__ == "__main__":
    unittest.main()
