"""What ``import mcp_client`` loads, and where the text helpers live.

A client that never jails and never generates must not pay for the jail's
planner, the jailer, the generator or the schema planner at import (issue 18,
item 5): ``mcp_client/__init__.py`` gives those names on first use (PEP 562).
Each check runs in a fresh interpreter, so that nothing another test imported
is already in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest
from typing import Any, List

import mcp_client
from mcp_client import cli, codegen, config, replay, text
from mcp_client._core import _noise as noise

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: What a client that neither jails, nor generates, nor records its wire does not need.
LAZY = [
    "mcp_client.jail",
    "mcp_client.jail.spawn",
    "mcp_client.codegen",
    "mcp_client.codegen.schema",
    "mcp_client.capture",
]


def fresh(code: str) -> Any:
    """Run ``code`` in an isolated interpreter with the checkout first on the path;
    ``code`` prints one JSON value, returned here."""
    prelude = "import json, sys\nsys.path.insert(0, %r)\n" % REPO
    done = subprocess.run(
        [sys.executable, "-I", "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    if done.returncode != 0:
        raise AssertionError("child failed (%d): %s" % (done.returncode, done.stderr[-2000:]))
    return json.loads(done.stdout)


def loaded_after(statement: str) -> List[str]:
    """The ``mcp_client`` modules in ``sys.modules`` after ``statement``."""
    loaded: List[str] = fresh(
        statement + "\nprint(json.dumps(sorted(m for m in sys.modules"
        " if m.startswith('mcp_client'))))"
    )
    return loaded


class ImportMcpClient(unittest.TestCase):
    def test_the_jail_and_the_generator_are_not_loaded(self) -> None:
        loaded = loaded_after("import mcp_client\nmcp_client.start")
        self.assertIn("mcp_client.client", loaded)  # the check can see a loaded module
        for module in LAZY:
            with self.subTest(module=module):
                self.assertNotIn(module, loaded)

    def test_the_lazy_names_resolve_on_first_use(self) -> None:
        got = fresh(
            "import mcp_client\n"
            "from mcp_client import Jail, DEFAULT_HIDDEN\n"
            "import mcp_client.jail as jail_module\n"
            "print(json.dumps({\n"
            "    'generate': mcp_client.codegen.generate.__module__,\n"
            "    'jail': Jail is jail_module.Jail and mcp_client.Jail is Jail,\n"
            "    'hidden': DEFAULT_HIDDEN == jail_module.DEFAULT_HIDDEN,\n"
            "    'jailer': mcp_client.jailer.__name__,\n"
            "    'schema': mcp_client.schema.plan.__module__,\n"
            "    'listed': all(hasattr(mcp_client, name) for name in mcp_client.__all__),\n"
            "    'dir': 'codegen' in dir(mcp_client),\n"
            "}))"
        )
        self.assertEqual(
            got,
            {
                "generate": "mcp_client.codegen",
                "jail": True,
                "hidden": True,
                "jailer": "mcp_client.jail.spawn",
                "schema": "mcp_client.codegen.schema",
                "listed": True,
                "dir": True,
            },
        )

    def test_an_unknown_name_is_still_an_attribute_error(self) -> None:
        with self.assertRaises(AttributeError):
            mcp_client.no_such_name  # noqa: B018 -- the lookup is the test

    def test_the_commands_and_the_config_do_not_load_the_generator(self) -> None:
        loaded = loaded_after("import mcp_client.cli, mcp_client.replay.run, mcp_client.config")
        self.assertIn("mcp_client.cli", loaded)
        self.assertNotIn("mcp_client.codegen", loaded)


#: What the import path must not load: each costs more than the package's own code
#: (dataclasses brings inspect, ast, dis and tokenize).
HEAVY = ["typing", "dataclasses", "inspect", "ast", "dis"]


def bare_import(code: str) -> Any:
    """Run ``code`` after ``import mcp_client`` in a bare ``python -S -I`` (no site,
    nothing imported by a prelude); ``code`` prints one JSON value."""
    program = "import sys\nsys.path.insert(0, %r)\nimport mcp_client\n%s" % (REPO, code)
    done = subprocess.run(
        [sys.executable, "-S", "-I", "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    if done.returncode != 0:
        raise AssertionError("child failed (%d): %s" % (done.returncode, done.stderr[-2000:]))
    return json.loads(done.stdout)


class ImportPath(unittest.TestCase):
    """``import mcp_client`` loads neither typing nor dataclasses (nor what dataclasses
    loads): the values are ``_record.Record``s and the public aliases (``JsonValue``,
    ``Id``, ``Inbound``, ``ContentBlock``, ``Retirement``, ``TransportLike``) are made
    on first use."""

    def test_no_typing_no_dataclasses(self) -> None:
        loaded = bare_import(
            "import json\nprint(json.dumps([m for m in %r if m in sys.modules]))" % (HEAVY,)
        )
        self.assertEqual(loaded, [])

    def test_a_client_value_made_and_printed_loads_none_of_them(self) -> None:
        loaded = bare_import(
            "import json\n"
            "repr(mcp_client.Options()); hash(mcp_client.Spawn('python', ('-c', 'pass')))\n"
            "mcp_client.protocol.decode_tools_page({'tools': [{'name': 'a', 'inputSchema': {}}]})\n"
            "print(json.dumps([m for m in %r if m in sys.modules]))" % (HEAVY,)
        )
        self.assertEqual(loaded, [])

    def test_the_aliases_resolve_on_first_use(self) -> None:
        got = bare_import(
            "import json, typing\n"
            "from mcp_client.jsonvalue import JsonValue\n"
            "from mcp_client.jsonrpc import Id, Inbound, Response\n"
            "from mcp_client.protocol import ContentBlock, Text, Other\n"
            "from mcp_client.transport import Retirement, Exited\n"
            "from mcp_client.client import TransportLike\n"
            "print(json.dumps([\n"
            "    typing.get_args(JsonValue)[:5] == (type(None), bool, int, float, str),\n"
            "    typing.get_args(Id) == (int, str),\n"
            "    Response in typing.get_args(Inbound),\n"
            "    typing.get_args(ContentBlock) == (Text, Other),\n"
            "    Exited in typing.get_args(Retirement),\n"
            "    mcp_client.ContentBlock is ContentBlock,\n"
            "    len(typing.get_args(TransportLike)) == 2,\n"
            "]))"
        )
        self.assertEqual(got, [True] * 7)


class Layers(unittest.TestCase):
    """The face loads nothing until a name of it is read, so that importing a codec --
    which runs ``mcp_client/__init__`` first -- loads nothing impure."""

    def test_a_codec_loads_no_thread_process_or_selector(self) -> None:
        for codec in ("jsonvalue", "jsonrpc", "protocol", "stdio"):
            with self.subTest(codec=codec):
                got = fresh_bare("import mcp_client.%s" % codec)
                self.assertEqual([m for m in got if m in IMPURE], [])
                self.assertNotIn("mcp_client.client", got)

    def test_the_face_alone_loads_no_client(self) -> None:
        got = fresh_bare("import mcp_client")
        self.assertEqual(
            [m for m in got if m.startswith("mcp_client.")],
            ["mcp_client._lazy", "mcp_client._version"],
        )
        self.assertEqual([m for m in got if m in IMPURE], [])

    def test_the_client_loads_on_first_use_and_the_names_are_the_modules(self) -> None:
        got = fresh(
            "import mcp_client\n"
            "before = 'mcp_client.client' in sys.modules\n"
            "from mcp_client import start, Spawn, McpClientError\n"
            "from mcp_client import client, transport, errors\n"
            "print(json.dumps([before, start is client.start, Spawn is transport.Spawn,\n"
            "                  McpClientError is errors.McpClientError]))"
        )
        self.assertEqual(got, [False, True, True, True])


#: What a codec's import must not load (``python -S -I``: no site to load it first).
IMPURE = ["threading", "subprocess", "selectors", "signal", "socket"]


def fresh_bare(statement: str) -> List[str]:
    """Every module in ``sys.modules`` after ``statement`` in a bare ``python -S -I``."""
    program = "import sys, json\nsys.path.insert(0, %r)\nbefore = set(sys.modules)\n%s\n" % (
        REPO,
        statement,
    )
    program += "print(json.dumps(sorted(set(sys.modules) - before)))"
    done = subprocess.run(
        [sys.executable, "-S", "-I", "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    if done.returncode != 0:
        raise AssertionError("child failed (%d): %s" % (done.returncode, done.stderr[-2000:]))
    found: List[str] = json.loads(done.stdout)
    return found


class TopLevelResultTypes(unittest.TestCase):
    """The names a user reaches for come from ``mcp_client``: the decoded results at
    once (``protocol`` is loaded anyway), ``ToolOutput`` and the typed blocks on first use."""

    def test_the_result_types_are_the_protocol_s(self) -> None:
        from mcp_client import protocol

        for name in ("CallToolResult", "ToolDescriptor", "Text", "Other", "InitializeResult"):
            with self.subTest(name=name):
                self.assertIs(getattr(mcp_client, name), getattr(protocol, name))

    def test_tool_output_loads_the_content_module_on_first_use(self) -> None:
        got = fresh(
            "import mcp_client\n"
            "before = 'mcp_client.content' in sys.modules\n"
            "from mcp_client import ToolOutput, TextContent\n"
            "import mcp_client.content as content\n"
            "print(json.dumps([before, ToolOutput is content.ToolOutput,\n"
            "                  TextContent is content.TextContent]))"
        )
        self.assertEqual(got, [False, True, True])


class TextHelpersHome(unittest.TestCase):
    """``sanitize``/``escape``/``truncate`` live in ``mcp_client.text``; codegen re-exports
    them under the names PORT.md gives, and the CLI, replay and config use the one copy."""

    def test_codegen_re_exports_the_text_helpers(self) -> None:
        for name in ("sanitize", "escape", "truncate"):
            with self.subTest(name=name):
                self.assertIs(getattr(codegen, name), getattr(text, name))
                self.assertEqual(getattr(codegen, name).__module__, "mcp_client.text")
                self.assertIn(name, codegen.__all__)

    def test_one_copy_everywhere(self) -> None:
        self.assertIs(noise.escape_code_point, text.escape_code_point)
        self.assertIs(cli.sanitize, text.sanitize)
        self.assertIs(config.escape, text.escape)
        self.assertIs(replay.inert, text.inert)


if __name__ == "__main__":
    unittest.main()


class OldNames(unittest.TestCase):
    """A module that moved into a subpackage answers to its old name too: the same
    module object (a patch through either is seen by both), ``python -m`` included."""

    def test_every_old_name_is_its_new_home(self) -> None:
        got = fresh(
            "import importlib\n"
            "from mcp_client._lazy import MOVED\n"
            "print(json.dumps({old: importlib.import_module(old) is importlib.import_module(new)\n"
            "                  and importlib.import_module(new).__spec__.name == new\n"
            "                  for old, new in MOVED.items()}))"
        )
        from mcp_client._lazy import MOVED

        self.assertEqual(got, dict.fromkeys(MOVED, True))

    def test_from_imports_of_old_names(self) -> None:
        got = fresh(
            "from mcp_client.jailer import spawn_command\n"
            "from mcp_client.content import ToolOutput\n"
            "from mcp_client import shapes, noise\n"
            "import mcp_client.jail.spawn as home\n"
            "print(json.dumps([spawn_command is home.spawn_command,\n"
            "                  ToolOutput.__module__, shapes.__name__, noise.__name__]))"
        )
        self.assertEqual(
            got,
            [
                True,
                "mcp_client.codegen.content",
                "mcp_client.codegen.shapes",
                "mcp_client._core._noise",
            ],
        )

    def test_python_dash_m_runs_an_old_name(self) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "mcp_client.demo_server", "--help"],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ, PYTHONPATH=REPO),
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("demo MCP server", done.stdout)

    def test_a_name_that_never_was_is_still_not_found(self) -> None:
        with self.assertRaises(ModuleNotFoundError):
            __import__("mcp_client.no_such_module")
