"""Nothing an operator reads is raw (issue 17 item 8).

Against a real child (``scripted.py hostile_text``) whose every string holds
terminal escapes, a bidi override and a newline that starts a forged log
line: its ``serverInfo`` name reaches every ``mcp_client.server`` record and
its ``extra["server"]`` sanitized, as do the methods it sends (debug records)
and its error messages (``ServerError``); ``initialize_result`` and
``rpc_error`` keep what the server sent. The CLI's side is
``test_cli.py`` ``test_a_hostile_server_prints_no_control_character``.
"""

from __future__ import annotations

import logging
import unittest
from typing import List

from mcp_client import ProcessTransport, start
from mcp_client.errors import ServerError
from mcp_client.transport import CAPTURE

from hostile import unsafe_characters
from servers.scripted import HOSTILE
from support import LONG, OPTIONS, server, text_of


class ServerTextInLogs(unittest.TestCase):
    def setUp(self) -> None:
        self.records: List[logging.LogRecord] = []
        handler = logging.Handler(logging.DEBUG)
        handler.emit = self.records.append  # type: ignore[method-assign]
        root = logging.getLogger("mcp_client")
        level = root.level
        root.addHandler(handler)
        root.setLevel(logging.DEBUG)
        self.addCleanup(root.setLevel, level)
        self.addCleanup(root.removeHandler, handler)

    def test_log_records_and_errors_hold_no_control_characters(self) -> None:
        client = start(ProcessTransport(server("hostile_text"), stderr=CAPTURE), OPTIONS)
        self.assertEqual(text_of(client.call_tool("echo", {}, timeout=LONG)), "result " + HOSTILE)
        with self.assertRaises(ServerError) as caught:
            client.call_tool("other", {}, timeout=LONG)
        client.shutdown()
        assert client.initialize_result is not None  # the protocol keeps the name raw
        self.assertEqual(client.initialize_result.server_info.name, "name" + HOSTILE)
        self.assertEqual(caught.exception.rpc_error.message, "error " + HOSTILE)
        self.assertEqual(unsafe_characters(str(caught.exception)), [])
        self.assertIn("error", str(caught.exception))
        named = [r for r in self.records if getattr(r, "server", "").startswith("name")]
        self.assertTrue(any("call" in r.getMessage() for r in named), self.records)
        methods = [r for r in self.records if "notify" in r.getMessage() or "ask" in r.getMessage()]
        self.assertEqual(len(methods), 2, [r.getMessage() for r in self.records])
        for record in self.records:
            with self.subTest(message=record.getMessage()):
                self.assertEqual(unsafe_characters(record.getMessage()), [])
                self.assertEqual(unsafe_characters(getattr(record, "server", "")), [])


if __name__ == "__main__":
    unittest.main()
