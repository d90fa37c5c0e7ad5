"""``config.load``: both shapes, ``${VAR}`` expansion, entries left out, and every
fault one ``ConfigError`` line naming the file and the entry.

The CLI's ``--config`` is tested against real servers in ``test_cli.py``.
"""

from __future__ import annotations

import json
import os
import tempfile
import unittest
from typing import Any, Dict, Mapping, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_client import config
from mcp_client.config import ConfiguredServer, LoadedConfig
from mcp_client.errors import ConfigError, McpClientError
from mcp_client.transport import Spawn, child_environment

from strategies import examples


class ConfigCase(unittest.TestCase):
    def setUp(self) -> None:
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.path = os.path.join(directory.name, "servers.json")

    def write(self, document: Any) -> str:
        text = document if isinstance(document, str) else json.dumps(document)
        with open(self.path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return self.path

    def load(self, document: Any, environ: Optional[Mapping[str, str]] = None) -> LoadedConfig:
        return config.load(self.write(document), {} if environ is None else environ)

    def refused(self, document: Any, environ: Optional[Mapping[str, str]] = None) -> ConfigError:
        with self.assertRaises(ConfigError) as caught:
            self.load(document, environ)
        error = caught.exception
        self.assertEqual(error.path, self.path)
        self.assertNotIn("\n", str(error))
        self.assertTrue(str(error).startswith(self.path + ": "), str(error))
        return error


def servers(entries: Dict[str, Any], key: str = "mcpServers") -> Dict[str, Any]:
    return {key: entries}


class Shapes(ConfigCase):
    def test_claude_desktop_shape(self) -> None:
        loaded = self.load(
            servers(
                {
                    "time": {
                        "command": "uvx",
                        "args": ["mcp-server-time"],
                        "env": {"TZ": "UTC"},
                        "cwd": "/srv",
                    },
                    "bare": {"command": "demo"},
                }
            )
        )
        self.assertEqual(
            loaded.servers,
            (
                ConfiguredServer("time", Spawn("uvx", ("mcp-server-time",), {"TZ": "UTC"}, "/srv")),
                ConfiguredServer("bare", Spawn("demo")),
            ),
        )
        self.assertEqual(loaded.skipped, ())
        self.assertEqual(loaded.names(), ("time", "bare"))

    def test_vs_code_shape(self) -> None:
        loaded = self.load(
            servers(
                {
                    "git": {
                        "type": "stdio",
                        "command": "mcp-server-git",
                        "args": ["--repository", "."],
                    }
                },
                "servers",
            )
        )
        self.assertEqual(
            loaded.servers,
            (ConfiguredServer("git", Spawn("mcp-server-git", ("--repository", "."))),),
        )

    def test_file_order_is_kept(self) -> None:
        names = ["zeta", "alpha", "mid", "beta"]
        loaded = self.load(servers({name: {"command": name} for name in names}))
        self.assertEqual(list(loaded.names()), names)

    def test_env_is_added_to_the_minimal_environment_not_the_harness(self) -> None:
        loaded = self.load(servers({"s": {"command": "x", "env": {"API_KEY": "k"}}}))
        env = child_environment(loaded.servers[0].spawn)
        self.assertEqual(env["API_KEY"], "k")
        self.assertEqual(env.get("PATH"), os.environ.get("PATH"))
        os.environ["MCP_CLIENT_TEST_SECRET"] = "s"
        self.addCleanup(os.environ.pop, "MCP_CLIENT_TEST_SECRET")
        self.assertNotIn("MCP_CLIENT_TEST_SECRET", child_environment(loaded.servers[0].spawn))

    def test_unknown_fields_are_ignored(self) -> None:
        loaded = self.load(
            {
                "mcpServers": {"s": {"command": "x", "disabled": False, "autoApprove": []}},
                "other": 1,
            }
        )
        self.assertEqual(loaded.servers[0].spawn, Spawn("x"))


class Expansion(ConfigCase):
    ENTRY = {
        "command": "${BIN}/server",
        "args": ["--root", "${ROOT:-/data}", "${env:MODE}"],
        "env": {"TOKEN": "${TOKEN}", "PLAIN": "a$b{c}"},
        "cwd": "${HOME}/work",
    }

    def test_every_field_is_expanded(self) -> None:
        spawn = (
            self.load(
                servers({"s": self.ENTRY}),
                {"BIN": "/opt/bin", "MODE": "fast", "TOKEN": "t0k", "HOME": "/home/u"},
            )
            .servers[0]
            .spawn
        )
        self.assertEqual(
            spawn,
            Spawn(
                "/opt/bin/server",
                ("--root", "/data", "fast"),
                {"TOKEN": "t0k", "PLAIN": "a$b{c}"},
                "/home/u/work",
            ),
        )

    def test_a_set_variable_wins_over_its_default(self) -> None:
        loaded = self.load(servers({"s": {"command": "${X:-default}"}}), {"X": "set"})
        spawn = loaded.servers[0].spawn
        self.assertEqual(spawn.executable, "set")

    def test_the_default_stands_in_for_an_empty_value_as_in_the_shell(self) -> None:
        spawn = (
            self.load(
                servers({"s": {"command": "${X:-default}", "args": ["<${Y}>"]}}), {"X": "", "Y": ""}
            )
            .servers[0]
            .spawn
        )
        self.assertEqual(spawn.argv(), ("default", "<>"))

    def test_an_unset_variable_names_itself_and_the_entry(self) -> None:
        error = self.refused(
            servers({"ok": {"command": "x"}, "needs": {"command": "x", "env": {"K": "${API_KEY}"}}})
        )
        self.assertEqual(error.entry, "needs")
        self.assertIn("${API_KEY} is not set", str(error))
        self.assertIn('server "needs"', str(error))
        self.assertIn("env.K", str(error))

    def test_a_reference_this_reader_cannot_expand_is_refused(self) -> None:
        for text in ("${input:token}", "${workspaceFolder", "${1X}"):
            with self.subTest(text=text):
                error = self.refused(servers({"s": {"command": "x", "args": [text]}}))
                self.assertIn("args[0]", str(error))

    def test_an_expansion_is_not_expanded_again(self) -> None:
        spawn = self.load(servers({"s": {"command": "${A}"}}), {"A": "${B}", "B": "no"}).servers[0]
        self.assertEqual(spawn.spawn.executable, "${B}")


class LeftOut(ConfigCase):
    def test_http_sse_and_url_entries_are_warned_about_and_left_out(self) -> None:
        loaded = self.load(
            servers(
                {
                    "remote": {"type": "http", "url": "https://example.com/mcp"},
                    "events": {"type": "sse", "url": "https://example.com/sse"},
                    "local": {"command": "x"},
                    "cursor": {"url": "https://example.com/mcp"},
                }
            )
        )
        self.assertEqual(loaded.names(), ("local",))
        self.assertEqual(len(loaded.skipped), 3)
        for name, line in zip(("remote", "events", "cursor"), loaded.skipped):
            self.assertIn('server "%s" left out' % name, line)
            self.assertIn(self.path, line)
            self.assertNotIn("\n", line)
        self.assertIn('"type" is http', loaded.skipped[0])

    def test_a_file_with_only_remote_servers_fails(self) -> None:
        error = self.refused(servers({"remote": {"type": "http", "url": "https://x"}}))
        self.assertIsNone(error.entry)
        self.assertIn("no stdio server", str(error))
        self.assertIn('"remote" left out', str(error))

    def test_an_empty_file_of_servers_fails(self) -> None:
        self.assertIn("no stdio server", str(self.refused(servers({}))))

    def test_a_hostile_entry_name_stays_on_one_line(self) -> None:
        loaded = self.load(servers({"a\nb\x1b[2J\u202e": {"type": "http"}, "ok": {"command": "x"}}))
        self.assertEqual(len(loaded.skipped), 1)
        self.assertTrue(loaded.skipped[0].isprintable(), loaded.skipped[0])


class Faults(ConfigCase):
    def test_a_missing_file(self) -> None:
        with self.assertRaises(ConfigError) as caught:
            config.load(self.path + ".missing", {})
        self.assertEqual(
            str(caught.exception),
            "%s.missing: cannot read it: No such file or directory" % self.path,
        )
        self.assertIsNone(caught.exception.entry)

    def test_a_directory(self) -> None:
        with self.assertRaises(ConfigError):
            config.load(os.path.dirname(self.path), {})

    def test_bad_json_is_one_line_with_where(self) -> None:
        error = self.refused('{"mcpServers": {"s": {"command": "x",}}}')
        self.assertIn("not JSON", str(error))
        self.assertIn("line 1 column", str(error))

    def test_not_utf8(self) -> None:
        with open(self.path, "wb") as stream:
            stream.write(b'{"mcpServers": {"\xff": {}}}')
        with self.assertRaises(ConfigError) as caught:
            config.load(self.path, {})
        self.assertIn("not UTF-8", str(caught.exception))

    def test_shapes_that_are_not_a_config(self) -> None:
        for document, words in (
            ([1], "a JSON object"),
            ({"tools": {}}, '"mcpServers"'),
            ({"mcpServers": []}, "must be an object"),
            ({"mcpServers": {}, "servers": {}}, "both"),
        ):
            with self.subTest(document=document):
                self.assertIn(words, str(self.refused(document)))

    def test_wrong_field_types_name_the_entry_and_the_field(self) -> None:
        cases = [
            ({"command": 1}, '"command" must be a string, not a number'),
            ({}, 'no "command"'),
            ({"command": ""}, 'no "command"'),
            ({"command": "x", "args": "a b"}, '"args" must be a list'),
            ({"command": "x", "args": ["a", None]}, '"args"[1] must be a string, not null'),
            ({"command": "x", "env": ["A=1"]}, '"env" must be an object'),
            ({"command": "x", "env": {"PORT": 8080}}, '"env"."PORT" must be a string'),
            ({"command": "x", "env": {"A=B": "1"}}, "not a variable name"),
            ({"command": "x", "cwd": True}, '"cwd" must be a string, not a boolean'),
            ({"command": "x", "args": ["a\u0000b"]}, "NUL"),
            ({"type": "stdio"}, 'no "command"'),
            ("text", "must be an object, not a string"),
        ]
        for entry, words in cases:
            with self.subTest(entry=entry):
                error = self.refused(servers({"bad one": entry}))
                self.assertEqual(error.entry, "bad one")
                self.assertIn('server "bad one": ', str(error))
                self.assertIn(words, str(error))

    def test_an_error_is_a_client_error_and_pickles(self) -> None:
        import pickle

        error = self.refused(servers({"s": {"command": 1}}))
        self.assertIsInstance(error, McpClientError)
        copy = pickle.loads(pickle.dumps(error))
        self.assertEqual((str(copy), copy.path, copy.entry), (str(error), error.path, error.entry))


class Totality(ConfigCase):
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["command", "args", "env", "cwd", "type", "url", "x"])
                | st.text(max_size=4),
                inner,
                max_size=5,
            )
        ),
        max_leaves=20,
    )

    @pytest.mark.slow
    @settings(max_examples=examples(200), deadline=None)
    @given(
        entries=st.dictionaries(st.text(max_size=6), json_values, max_size=4),
        key=st.sampled_from(["mcpServers", "servers"]),
    )
    def test_any_document_loads_or_is_one_config_error(
        self, entries: Dict[str, Any], key: str
    ) -> None:
        try:
            loaded = self.load({key: entries}, {"HOME": "/h"})
        except ConfigError as e:
            self.assertNotIn("\n", str(e))
            return
        self.assertTrue(loaded.servers)
        for server in loaded.servers:
            self.assertIn(server.name, entries)
            self.assertTrue(server.spawn.executable)

    @settings(max_examples=examples(200), deadline=None)
    @given(data=st.binary(max_size=64))
    def test_any_bytes_load_or_are_one_config_error(self, data: bytes) -> None:
        with open(self.path, "wb") as stream:
            stream.write(data)
        try:
            config.load(self.path, {})
        except ConfigError as e:
            self.assertNotIn("\n", str(e))


if __name__ == "__main__":
    unittest.main()
