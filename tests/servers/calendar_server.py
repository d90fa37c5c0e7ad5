"""A scripted calendar server for issue 24's results: ``python calendar_server.py``.

Standard library only. Its tools are the cases of the issue:

- ``resolve_time(when, zone)``: no ``outputSchema``, and its text is a JSON object
  whose keys (``resolved_local``, ``adjusted_local``, ``zone``) no surface shows
  until they are learned; ``adjusted_local`` is sent only when ``zone`` is not UTC
  (an optional key);
- ``broken_promise()``: declares ``{"datetime": string}`` and sends ``{"datetime": 5}``
  (a server that breaks its own outputSchema);
- ``kept_promise()``: declares the same and keeps it;
- ``snapshot()``: a text block, an image block and a block of a kind 2025-06-18 does
  not know (``hologram``);
- ``say(text)``: prose, which is not JSON;
- ``busy_days()``: a Python ``repr`` of a dict where JSON was due;
- ``report()``: JSON text whose ``result`` is a string of JSON text;
- ``wrapped()``: declares ``{"result": string}`` and sends JSON text there, as a server
  that wraps its value in ``result`` does.

With ``--twin`` it is another server that says it is the calendar (the same
``serverInfo``) and whose ``resolve_time`` answers other keys (``amount``, ``note``).
It answers ``initialize`` with a title and ``instructions``. It exits when stdin ends.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict

TEXT_ONLY = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
DATETIME = {
    "type": "object",
    "properties": {"datetime": {"type": "string"}},
    "required": ["datetime"],
}
NOTHING = {"type": "object", "properties": {}}
TOOLS = [
    {
        "name": "resolve_time",
        "description": "Resolve a local time in a zone; returns JSON.",
        "inputSchema": {
            "type": "object",
            "properties": {"when": {"type": "string"}, "zone": {"type": "string"}},
            "required": ["when", "zone"],
        },
    },
    {"name": "broken_promise", "inputSchema": NOTHING, "outputSchema": DATETIME},
    {"name": "kept_promise", "inputSchema": NOTHING, "outputSchema": DATETIME},
    {"name": "snapshot", "inputSchema": NOTHING},
    {"name": "say", "inputSchema": TEXT_ONLY},
    {"name": "busy_days", "inputSchema": NOTHING},
    {"name": "report", "inputSchema": NOTHING},
    {
        "name": "wrapped",
        "inputSchema": NOTHING,
        "outputSchema": {
            "type": "object",
            "properties": {"result": {"type": "string"}},
            "required": ["result"],
        },
    },
]
TWIN = "--twin" in sys.argv[1:]
REPORT = {"total": 3, "days": ["mon", "tue", "wed"]}
PNG = (  # a 1x1 picture
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def text(value: str) -> Dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def resolve(arguments: Dict[str, Any]) -> Dict[str, Any]:
    answer = {"resolved_local": "%s 09:00" % arguments.get("when"), "zone": arguments.get("zone")}
    if arguments.get("zone") != "UTC":
        answer["adjusted_local"] = "%s 10:00" % arguments.get("when")
    return text(json.dumps(answer))


def call(name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
    if name == "resolve_time" and TWIN:
        return text(json.dumps({"amount": 1.5, "note": "twin"}))
    if name == "resolve_time":
        return resolve(arguments)
    if name == "busy_days":
        return text(repr({"days": ("mon", "fri"), "count": 2, "all_day": True, "note": None}))
    if name == "report":
        return text(json.dumps({"result": json.dumps(REPORT)}))
    if name == "wrapped":
        wrapped = {"result": json.dumps([REPORT])}
        return dict(text(json.dumps(wrapped)), structuredContent=wrapped)
    if name == "broken_promise":
        return dict(text('{"datetime": 5}'), structuredContent={"datetime": 5})
    if name == "kept_promise":
        return dict(text('{"datetime": "2026-12-02T09:00"}'), structuredContent={"datetime": "x"})
    if name == "snapshot":
        return {
            "content": [
                {"type": "text", "text": "a picture"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "hologram", "depth": 3},
            ]
        }
    return text("You said: %s" % arguments.get("text"))


def answer(message: Dict[str, Any]) -> Any:
    method = message.get("method")
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "calendar", "version": "1.4.2", "title": "Calendar"},
            "instructions": "Times are local to the zone asked for.\nAsk for one zone a call.",
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        params = message.get("params") or {}
        return call(str(params.get("name")), params.get("arguments") or {})
    return {}


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
