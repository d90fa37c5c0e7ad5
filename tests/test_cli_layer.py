"""The command line every command shares: the argument types, the flags' vocabulary and
their aliases, the table of exit statuses, and docs/cli.md held to all three."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import signal
import unittest
import warnings
from typing import Any, Callable, Dict, List
from unittest import mock

from mcp_client import cli
from mcp_client.cli import arguments, demo_server, exits, render
from mcp_client.cli import codemode as codemode_cli
from mcp_client.cli import replay as replay_cli
from mcp_client.cli import serve as serve_cli
from mcp_client.replay import run as replay_run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20


def refused(kind: Callable[[str], Any], text: str) -> str:
    """The message ``kind`` refuses ``text`` with; fails when it takes it."""
    try:
        kind(text)
    except argparse.ArgumentTypeError as e:
        return str(e)
    raise AssertionError("%s took %r" % (kind.__name__, text))


def docs_table(heading: str) -> List[List[str]]:
    """The rows of the first table under ``## heading`` in docs/cli.md, cells stripped."""
    with open(os.path.join(REPO, "docs", "cli.md"), encoding="utf-8") as source:
        section = source.read().split("## " + heading + "\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    rows = [re.split(r"(?<!\\)\|", line)[1:-1] for line in lines[2:]]
    return [[cell.strip() for cell in row] for row in rows]


def codemode_args(*argv: str) -> argparse.Namespace:
    return codemode_cli._parser("codemode").parse_args(["--config", "x.json", *argv])


class Types(unittest.TestCase):
    def test_a_size_is_bytes_or_a_number_with_its_unit(self) -> None:
        for text, value in (
            ("4096", 4096),
            ("0", 0),
            ("64K", 64 << 10),
            ("512M", 512 * MIB),
            ("1G", 1 << 30),
            ("2g", 2 << 30),
            ("512MiB", 512 * MIB),
            (" 8M ", 8 * MIB),
        ):
            with self.subTest(text=text):
                self.assertEqual(arguments.size(text), value)
        for text in ("lots", "1.5G", "-1", "", "5T", "M"):
            with self.subTest(text=text):
                self.assertIn("64K, 512M, 1G", refused(arguments.size, text))

    def test_a_duration_is_seconds_or_a_number_with_its_unit(self) -> None:
        for text, value in (
            ("1.5", 1.5),
            ("30", 30.0),
            ("90s", 90.0),
            ("2m", 120.0),
            ("500ms", 0.5),
            ("1h", 3600.0),
            (".5s", 0.5),
            ("1e-1", 0.1),
        ):
            with self.subTest(text=text):
                self.assertAlmostEqual(arguments.duration(text), value)
        for text in ("soon", "5x", "m", ""):
            with self.subTest(text=text):
                self.assertIn("90s, 2m, 500ms", refused(arguments.duration, text))
        for text in ("0", "-1", "0s", "inf", "nan"):
            with self.subTest(text=text):
                self.assertIn("positive number of seconds", refused(arguments.duration, text))

    def test_counts_and_whole_seconds(self) -> None:
        self.assertEqual(arguments.count("0"), 0)
        self.assertEqual(arguments.positive_count("3"), 3)
        self.assertIn("not a whole number", refused(arguments.count, "1.5"))
        self.assertIn("0 or more", refused(arguments.count, "-1"))
        self.assertIn("not a positive integer", refused(arguments.positive_count, "0"))
        self.assertEqual(arguments.whole_seconds("2m"), 120)
        self.assertIn("whole seconds", refused(arguments.whole_seconds, "1.5"))

    def test_the_old_names_are_the_types(self) -> None:
        self.assertIs(arguments.seconds_argument, arguments.duration)
        self.assertIs(cli.bytes_argument, arguments.size)
        self.assertIs(cli.count_argument, arguments.positive_count)

    def test_a_size_is_shown_as_it_is_written(self) -> None:
        self.assertEqual(
            [arguments.shown_size(n) for n in (512 * MIB, 64 << 10, 1 << 30, 1000, 0)],
            ["512M", "64K", "1G", "1000", "0"],
        )


class SameFormsEverywhere(unittest.TestCase):
    """A size is 512M and a duration 90s in every command that takes one."""

    def test_the_main_job(self) -> None:
        settings = cli.parse_arguments(
            ["--timeout", "90s", "--jail-servers", "--memory", "1G", "--cpu-seconds", "2m"]
        )
        self.assertEqual(settings.timeout, 90.0)
        assert settings.jail is not None
        self.assertEqual((settings.jail.memory_bytes, settings.jail.cpu_seconds), (1 << 30, 120))

    def test_codemode_and_serve(self) -> None:
        flags = ["--memory", "256M", "--max-output", "1K", "--scratch-bytes", "64M"]
        flags += ["--wall-clock", "2m", "--timeout", "500ms", "--cpu-seconds", "1m"]
        for parse in (codemode_args, self.serve_args):
            with self.subTest(parse=parse.__name__):
                limits = codemode_cli.runner_options(parse(*flags)).limits
                self.assertEqual(
                    (limits.memory_bytes, limits.max_output_bytes, limits.scratch_bytes),
                    (256 * MIB, 1024, 64 * MIB),
                )
                self.assertEqual(
                    (limits.wall_clock, limits.call_timeout, limits.cpu_seconds), (120, 0.5, 60)
                )

    def test_replay(self) -> None:
        self.assertEqual(replay_cli._arguments(["--timeout", "2m", "LOG"], "replay").timeout, 120)

    def test_a_size_refused_names_the_forms_in_codemode_too(self) -> None:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as done:
            codemode_args("--memory", "lots")
        self.assertEqual(done.exception.code, exits.USAGE)
        self.assertIn("argument --memory: not a size: 'lots'", err.getvalue())

    def serve_args(self, *argv: str) -> argparse.Namespace:
        return serve_cli._parser("serve").parse_args(["--config", "x.json", *argv])


class Aliases(unittest.TestCase):
    """Each old spelling is the same action as its flag's canonical one."""

    def test_every_alias_reads_as_its_canonical_flag(self) -> None:
        values: Dict[str, List[str]] = {"switch": [], "value": ["7"], "repeated": ["/srv"]}
        for flag in arguments.VOCABULARY:
            for alias in flag.aliases:
                with self.subTest(alias=alias):
                    given = values[flag.kind]
                    canonical = codemode_args(flag.canonical, *given)
                    self.assertEqual(codemode_args(alias, *given), canonical)

    def test_the_main_jobs_old_jail_flags(self) -> None:
        old = cli.parse_arguments(
            ["--jail", "--allow-read", "/r", "--allow-write", "/w", "--allow-net"]
            + ["--max-processes", "9", "--call-timeout", "5"]
        )
        new = cli.parse_arguments(
            ["--jail-servers", "--server-read", "/r", "--server-write", "/w", "--server-network"]
            + ["--max-tasks", "9", "--timeout", "5"]
        )
        self.assertEqual(old, new)
        assert new.jail is not None
        self.assertEqual((new.jail.max_processes, new.jail.network), (9, True))

    def test_help_lists_the_canonical_spelling_and_names_the_aliases_last(self) -> None:
        for name, parser in (
            ("mcp-client", cli.settings._parser()),
            ("codemode", codemode_cli._parser("codemode")),
            ("serve", serve_cli._parser("serve")),
        ):
            with self.subTest(command=name):
                text = parser.format_help()
                listed, _, last = text.rpartition("Older spellings still work:")
                self.assertIn("--server-read PATH", listed)
                self.assertNotIn("--allow-read", listed)
                self.assertIn("--allow-read for --server-read", " ".join(last.split()))

    def test_a_jail_flag_without_the_jail_names_both_spellings(self) -> None:
        with self.assertRaisesRegex(
            cli.UsageError, r"--max-tasks \(--max-processes\) needs --jail-servers \(--jail\)"
        ):
            cli.parse_arguments(["--max-processes", "0"])


class ExitTable(unittest.TestCase):
    def test_one_meaning_per_number_and_per_name(self) -> None:
        statuses = [each.status for each in exits.TABLE]
        names = [each.name for each in exits.TABLE]
        self.assertEqual(len(set(statuses)), len(statuses))
        self.assertEqual(len(set(names)), len(names))
        for each in exits.TABLE:
            self.assertTrue(set(each.commands) <= set(exits.COMMANDS), each)

    def test_every_command_uses_the_table(self) -> None:
        self.assertEqual(
            (replay_run.EXIT_MATCHED, replay_run.EXIT_DIVERGED, replay_run.EXIT_USAGE),
            (exits.OK, exits.NO, exits.USAGE),
        )
        self.assertEqual(codemode_cli.EXIT_CHECK_FAILED, exits.NO)
        self.assertEqual((serve_cli.EXIT_USAGE, serve_cli.EXIT_NO_SERVER), (2, 3))
        self.assertEqual(cli.EXIT_CODES, exits.codes("mcp-client"))
        self.assertEqual(cli.EXIT_CODES["internal"], 70)
        self.assertNotIn(1, cli.EXIT_CODES.values())

    def test_the_help_says_them(self) -> None:
        self.assertIn("  143 SIGTERM", exits.summary("serve"))
        self.assertIn("    1 it diverged", exits.summary("replay", {"no": "it diverged"}))
        self.assertNotIn("124", exits.summary("mcp-client"))

    def test_docs_cli_md_has_the_table(self) -> None:
        rows = docs_table("Exit statuses")
        self.assertEqual(
            [(int(row[0]), row[1]) for row in rows],
            [(each.status, each.name) for each in exits.TABLE],
        )
        for row, each in zip(rows, exits.TABLE):
            shown = exits.COMMANDS if row[3] == "all" else tuple(row[3].split(", "))
            self.assertEqual(shown, each.commands, row)


class Vocabulary(unittest.TestCase):
    def test_docs_cli_md_has_every_shared_flag_and_its_aliases(self) -> None:
        rows = {row[1].split()[0].strip("`"): row for row in docs_table("The vocabulary")}
        for flag in arguments.VOCABULARY:
            with self.subTest(flag=flag.canonical):
                self.assertIn(flag.canonical, rows)
                aliases = re.findall(r"`(--[\w-]+)`", rows[flag.canonical][2])
                self.assertEqual(tuple(aliases), flag.aliases)

    def test_the_dest_is_the_canonical_spelling(self) -> None:
        self.assertEqual(arguments.SERVER_READ.dest, "server_read")
        self.assertEqual(arguments.SERVER_READ.spelled(), "--server-read (--allow-read)")


class WayOut(unittest.TestCase):
    """``exits.run_command``: every command's statuses for a signal and a bug."""

    def run_it(self, work: Callable[[], int]) -> "tuple[int, List[str]]":
        said: List[str] = []
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = exits.run_command(work, "test", said.append)
        return status, said + err.getvalue().splitlines()

    def test_a_bug_is_70_with_its_traceback(self) -> None:
        def bug() -> int:
            raise RuntimeError("a bug")

        status, lines = self.run_it(bug)
        self.assertEqual(status, exits.INTERNAL)
        self.assertEqual(lines[0], "Traceback (most recent call last):")
        self.assertIn("RuntimeError: a bug", lines)
        self.assertEqual(lines[-1], "test: internal error: a bug of mcp_client (exit 70)")

    def test_signals_are_128_plus_their_number(self) -> None:
        def interrupted() -> int:
            raise KeyboardInterrupt

        self.assertEqual(self.run_it(interrupted), (130, ["interrupted"]))
        self.assertEqual(self.run_it(lambda: os.kill(os.getpid(), signal.SIGTERM) or 0)[0], 143)
        self.assertEqual(self.run_it(lambda: 5), (5, []))

    def test_the_main_job_s_bug_is_70(self) -> None:
        err = io.StringIO()
        with mock.patch.object(cli, "run", side_effect=RuntimeError("boom")):
            with contextlib.redirect_stderr(err):
                self.assertEqual(cli.main(["--json"]), 70)
        self.assertIn("mcp_client: internal error", err.getvalue())


class Renamed(unittest.TestCase):
    """One class per name: the CLI's and the demo server's old names still answer, warning."""

    def check(self, module: Any, old: str, new: Any) -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertIs(getattr(module, old), new)
        self.assertEqual([w.category for w in caught], [DeprecationWarning])

    def test_old_names(self) -> None:
        self.check(cli, "Session", cli.main_job.Inspection)
        self.check(demo_server, "Server", demo_server.DemoServer)
        self.check(demo_server, "Tool", demo_server.DemoTool)
        self.assertNotIn("Session", vars(cli))
        with self.assertRaises(AttributeError):
            getattr(demo_server, "Nothing")

    def test_render_keeps_server_text_inert(self) -> None:
        self.assertIs(cli._name, render.name)
        self.assertEqual(render.terminal("a\x1b[2Jb"), "a\\x1b[2Jb")


if __name__ == "__main__":
    unittest.main()
