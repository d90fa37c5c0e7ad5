"""``mcp-client codemode``: a model's program run against the servers of a config file.

::

    mcp-client codemode --config FILE [--server NAME]... [options] [PROGRAM.py | -]
    mcp-client codemode --config FILE --surface | --search QUERY | --describe NAME
    mcp-client codemode --config FILE --check PROGRAM.py

(``python -m mcp_client codemode`` is the same command.) Every server of FILE (or
only the ``--server`` ones) is started at once; one that fails is named with its
stderr tail and left out. PROGRAM (``-``: read from stdin) runs in a jailed child
Python (:mod:`mcp_client.codemode`), its stdout and stderr streamed to ours (each
cut past ``--max-output`` bytes, with a marker; every control character but ``\\n``
and ``\\t``, and every byte that is not UTF-8, spelt ``\\xNN``/``\\uNNNN``, so that an
ANSI escape of the program's reaches no terminal; ``--raw-output`` passes the bytes
unchanged to a file or a pipe, never to a terminal), its calls served by the servers;
the exit status is the program's. Every server is retired at the end, whatever
happened, Ctrl-C and SIGTERM included.

With ``--approve`` (or ``--approve-tool``), a call that waits for a person's yes is
asked on the terminal (``/dev/tty``), the program paused in its call, for at most
``--approval-timeout``; with no terminal to ask on, it is refused (``CallRefused``). A
terminal on our stdin is then not the program's stdin (EOF): its lines are the answers.

:func:`add_runner_arguments` and :func:`runner_options` are the flags this command
shares with ``mcp-client serve`` (the servers, the jails, the policy, the limits).
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import stat
import sys
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple

from .. import config
from ..codemode import (
    ALLOW,
    APPROVE,
    CodeMode,
    Decision,
    Limits,
    PendingCall,
    Policy,
    RunResult,
    _approval,
    _serve_tools,
)
from ..errors import CodeModeError, ConfigError, NoServerStarted, UnknownServer
from . import arguments, exits
from .arguments import CONFIG, HIDE, JAIL_SERVERS, SERVER, SERVER_JAIL, TIMEOUT, Flag
from .render import Tee

__all__ = [
    "EXIT_CHECK_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_NO_SERVER",
    "EXIT_OUTPUT_CLOSED",
    "EXIT_USAGE",
    "EXIT_WALL_CLOCK",
    "RunnerOptions",
    "add_runner_arguments",
    "main",
    "open_runner",
    "runner_files",
    "runner_options",
]

#: Exit statuses of the command's own (the program's otherwise): :mod:`mcp_client.cli.exits`.
EXIT_CHECK_FAILED = exits.NO  # --check found a fault; --describe or --search found nothing
EXIT_USAGE = exits.USAGE  # usage, config, or a jail that cannot be had
EXIT_NO_SERVER = exits.SPAWN
EXIT_WALL_CLOCK = exits.WALL_CLOCK
EXIT_INTERRUPTED = exits.INTERRUPTED  # SIGINT; SIGTERM is 143 (128 + 15)
EXIT_OUTPUT_CLOSED = exits.OUTPUT_CLOSED  # our stdout was closed under us (| head)

NAME = "codemode"

#: Where the command's own lines go (``codemode: ...`` on stderr, in the command).
Say = Callable[[str], None]

EPILOG = """\
%s
A program that runs gives its own exit status instead (128+N when signal N
ended it).

The program's output is escaped on its way to ours: every control character
but newline and tab (ANSI escapes, carriage returns, C1 controls, bidi
overrides) and every byte that is not UTF-8 is spelt \\xNN / \\uNNNN, on a
terminal, a file or a pipe alike. --raw-output passes the bytes unchanged
where the destination is a file or a pipe (data for another program); a
terminal gets them escaped whatever is asked.

The policy reads each tool's annotations, which are the server's own claims:
a server that lies about a tool gets it called. The jail is what holds then
(--jail-servers jails the servers too).

Sizes are 4096, 64K, 512M, 1G; durations 1.5, 90s, 2m, 500ms.""" % (
    exits.summary(
        "codemode",
        {
            "no": "--check found a fault, or --describe / --search found nothing",
            "usage": "usage, config, or no jail to be had",
            "wall-clock": "the program ran past --wall-clock",
            "output": "our stdout was closed (--surface | head)",
        },
    ),
)


@dataclass(frozen=True)
class RunnerOptions:
    """What the shared flags say: which servers, how jailed, the policy, the limits."""

    config: str
    servers: Tuple[str, ...]
    jail_program: bool
    jail_servers: bool
    server_readable: Tuple[str, ...]
    server_writable: Tuple[str, ...]
    server_network: bool
    policy: Policy
    limits: Limits
    scratch: Optional[str] = None  # --scratch DIR: the programs' cwd on the host
    shapes: Optional[str] = None  # the store of learned shapes (--shapes DIR); None: --no-shapes
    hide: Tuple[str, ...] = ()  # --hide PATH: hidden from the program too
    show: Tuple[str, ...] = ()  # --show PATH: a default-hidden place the program sees


# ----------------------------------------------------------------------------- the flags

_JAILS = (
    Flag(("--no-jail",), "run the program unjailed", "switch"),
    JAIL_SERVERS,
    *SERVER_JAIL,
    Flag(
        ("--scratch",),
        "the program's working directory, on the host, bound writable (default: a tmpfs of "
        "--scratch-bytes inside its jail, gone with it)",
        metavar="DIR",
    ),
    HIDE,
    Flag(
        ("--show",),
        "show the program PATH, one of the places hidden by default (~/.cursor...); never "
        "the runner's own files (--config, --shapes); repeatable",
        **arguments.PATHS,
    ),
)
_JAIL_HELP = {
    JAIL_SERVERS: "run every server jailed too",
    HIDE: "hide PATH from the program too (besides credentials and every MCP host's config "
    "and logs: docs/jail.md); repeatable",
}
_TOOLS = dict(arguments.PATHS, metavar="SERVER.FUNCTION")
_POLICY = (
    Flag(("--allow",), "which calls are sent (all)", choices=ALLOW),
    Flag(("--allow-tool",), "always sent", **_TOOLS),
    Flag(("--deny-tool",), "never sent", **_TOOLS),
    Flag(("--approve",), "which calls wait for a person's yes (none)", choices=APPROVE),
    Flag(("--approve-tool",), "always waits for a person's yes", **_TOOLS),
)
#: The limits' flags: each with the field of :class:`Limits` it sets and what it bounds.
_LIMITS = (
    (Flag(("--wall-clock",), "", type=arguments.duration, metavar="DURATION"), "wall_clock"),
    (TIMEOUT, "call_timeout"),
    (Flag(("--max-calls",), "", type=arguments.count, metavar="N"), "max_calls"),
    (Flag(("--max-output",), "", type=arguments.size, metavar="SIZE"), "max_output_bytes"),
    (arguments.MEMORY, "memory_bytes"),
    (arguments.MAX_TASKS, "max_tasks"),
    (Flag(("--scratch-bytes",), "", type=arguments.size, metavar="SIZE"), "scratch_bytes"),
    (arguments.CPU_SECONDS, "cpu_seconds"),
    (Flag(("--approval-timeout",), "", type=arguments.duration, metavar="DURATION"),
     "approval_timeout"),
    (Flag(("--max-approvals",), "", type=arguments.count, metavar="N"), "max_approvals"),
    (Flag(("--approval-ttl",), "", type=arguments.duration, metavar="DURATION"),
     "approval_ttl"),
)  # fmt: skip
_BOUNDS = {
    "wall_clock": "time a run may take",
    "call_timeout": "time a tool call may take",
    "max_calls": "tool calls a run may make",
    "max_output_bytes": "stdout, and stderr, kept",
    "memory_bytes": "memory the program's jail may use",
    "max_tasks": "processes and threads of the program's jail at once",
    "scratch_bytes": "size of the program's scratch tmpfs",
    "cpu_seconds": "CPU time of each of the program's processes",
    "approval_timeout": "time a person has to answer an approval",
    "max_approvals": "approvals a run may ask for",
    "approval_ttl": "time an approval token lives (serve)",
}
_NO_LIMITS = Flag(
    ("--no-limits",),
    "the program's jail without memory, task, scratch and CPU limits (for a machine that "
    "cannot enforce them: no memory or pids cgroup to be had)",
    "switch",
)
_SHAPES = (
    Flag(
        ("--shapes",),
        "keep the result shapes learned (never values) in DIR (default: the per-user store, "
        "in the platform's cache directory); the surface types what was observed",
        metavar="DIR",
    ),
    Flag(("--no-shapes",), "learn no result shapes, and show none", "switch"),
)


def add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags ``codemode`` and ``serve`` share, added to ``parser``."""
    servers = parser.add_argument_group("servers")
    arguments.add(servers, CONFIG, help="mcpServers / servers JSON", required=True)
    arguments.add(servers, SERVER, help="only this one (repeatable)")
    jails = parser.add_argument_group("jails")
    for flag in _JAILS:
        arguments.add(jails, flag, help=_JAIL_HELP.get(flag))
    policy = parser.add_argument_group("policy (from the tools' annotations: claims)")
    arguments.add(policy, _POLICY[0], "all")
    arguments.add_all(policy, _POLICY[1:3])
    arguments.add(policy, _POLICY[3], "none")
    arguments.add_all(policy, _POLICY[4:])
    limits = parser.add_argument_group("limits")
    default = Limits()
    for flag, field in _LIMITS:
        value = getattr(default, field)
        help = "%s (%s)" % (_BOUNDS[field], arguments.shown(flag, value))
        arguments.add(limits, flag, value, help)
    arguments.add(limits, _NO_LIMITS)
    arguments.add_all(parser.add_mutually_exclusive_group(), _SHAPES)


def runner_options(namespace: argparse.Namespace) -> RunnerOptions:
    """The shared flags of a parsed command line. Raises ``ValueError`` for a bad value."""
    limits = {field: getattr(namespace, flag.dest) for flag, field in _LIMITS}
    return RunnerOptions(
        config=namespace.config,
        servers=tuple(namespace.server),
        jail_program=not namespace.no_jail,
        jail_servers=namespace.jail_servers,
        server_readable=_absolute(namespace.server_read),
        server_writable=_absolute(namespace.server_write),
        server_network=namespace.server_network,
        policy=Policy(
            namespace.allow,
            tuple(namespace.allow_tool),
            tuple(namespace.deny_tool),
            namespace.approve,
            tuple(namespace.approve_tool),
        ),
        limits=Limits(enforced=not namespace.no_limits, **limits),
        scratch=None if namespace.scratch is None else os.path.abspath(namespace.scratch),
        shapes=_shapes(namespace),
        hide=tuple(
            os.path.abspath(os.path.expanduser(path)) for path in getattr(namespace, "hide", ())
        ),
        show=_shown(namespace),
    )


def _shapes(namespace: argparse.Namespace) -> Optional[str]:
    """The store of learned shapes the flags name: ``--shapes DIR``, else the per-user one;
    ``None`` with ``--no-shapes``. Always a path the runner knows, so that it can hide it."""
    if getattr(namespace, "no_shapes", False):
        return None
    from ..codegen.shapes import default_directory

    return os.path.abspath(getattr(namespace, "shapes", None) or default_directory())


def _absolute(paths: Sequence[str]) -> Tuple[str, ...]:
    return tuple(os.path.abspath(path) for path in paths)


def _shown(namespace: argparse.Namespace) -> Tuple[str, ...]:
    """--show's paths, each the entry of the default hidden list it names. Raises
    ``ValueError`` for one that names none, or a file the runner was given by name."""
    from ..jail import default_entry

    homes = [home for home in (os.environ.get("HOME"), os.path.expanduser("~")) if home]
    own = [namespace.config] + [getattr(namespace, "shapes", None) or ""]
    shown = []
    for path in getattr(namespace, "show", ()):
        entry = default_entry(path if path.startswith("~") else os.path.abspath(path), homes)
        if entry is None:
            raise ValueError(
                "--show %s: not a place hidden by default (the list: docs/jail.md); "
                "anything else the program sees already, or is the runner's" % path
            )
        named = [name for name in own if name and _under(os.path.abspath(name), entry, homes)]
        if named:
            raise ValueError(
                "--show %s: it holds %s, which the program never sees" % (path, named[0])
            )
        shown.append(entry)
    return tuple(shown)


def _under(path: str, entry: str, homes: Sequence[str]) -> bool:
    from ..jail import expand

    places = expand(entry, homes)
    return any(path == place or path.startswith(place.rstrip("/") + "/") for place in places)


def chosen_servers(
    options: RunnerOptions,
) -> Tuple[Tuple[config.ConfiguredServer, ...], Tuple[str, ...]]:
    """The config's servers (the ``--server`` ones, when given) and its warning lines.
    Raises ``ConfigError`` and :class:`UnknownServer`."""
    loaded = config.load(options.config)
    if not options.servers:
        return loaded.servers, loaded.skipped
    known = {server.name: server for server in loaded.servers}
    missing = [name for name in options.servers if name not in known]
    if missing:
        raise UnknownServer(
            "no server %s in %s (it has: %s)"
            % (", ".join(missing), options.config, ", ".join(known) or "none")
        )
    return tuple(known[name] for name in dict.fromkeys(options.servers)), loaded.skipped


def open_runner(
    options: RunnerOptions,
    say: "Say",
    *,
    jail_program: Optional[bool] = None,
    hidden: Sequence[str] = (),
) -> CodeMode:
    """A :class:`CodeMode` for ``options``; every warning and left-out server is ``say``'d.
    ``hidden``: more of the command's own files, hidden from the program as those of
    ``options`` are. Raises ``ConfigError`` and :class:`CodeModeError`'s leaves."""
    servers, warnings = chosen_servers(options)
    for warning in warnings:
        say(warning)
    jailed = options.jail_program if jail_program is None else jail_program
    if jailed and options.scratch is not None:
        _check_scratch(options.scratch)
    runner = CodeMode.open(
        servers,
        jail_program=options.jail_program if jail_program is None else jail_program,
        jail_servers=options.jail_servers,
        policy=options.policy,
        limits=options.limits,
        server_readable=options.server_readable,
        server_writable=options.server_writable,
        server_network=options.server_network,
        scratch=options.scratch,
        hidden=runner_files(options) + tuple(hidden),
        shapes=options.shapes,
        shown=options.show,
    )
    for line in runner.left_out:
        say(line)
    return runner


def runner_files(options: RunnerOptions) -> Tuple[str, ...]:
    """What the program's jail hides besides its defaults: every file the runner was given
    by name -- the config (keys, tokens), the shapes store (what earlier runs' results
    taught it), what jailed servers write (theirs: a program reaches a server through its
    calls, under the policy) -- and ``--hide``'s."""
    named = (options.config, options.shapes) + options.server_writable + options.hide
    return tuple(os.path.abspath(path) for path in named if path)


def _check_scratch(scratch: str) -> None:
    """--scratch DIR refused now, not at the first run, when the program's jail could not
    write it: as root, that jail runs as nobody (never root), and DIR must be its."""
    from ..codemode._program import interpreter_under_tmp
    from ..errors import JailUnavailable, TransportFailed
    from ..jail import NOBODY, Jail
    from ..jail import spawn as jailer

    # The program's jail as to DIR, and as to this interpreter (which it shows, where a
    # venv under /tmp would otherwise be hidden by the jail's private /tmp).
    jail = Jail(writable=(scratch,), run_as=NOBODY, readable=interpreter_under_tmp())
    try:
        jailer.preflight(jail)
    except TransportFailed as e:
        raise JailUnavailable("--scratch %s: %s" % (scratch, e)) from e


# ----------------------------------------------------------------------------- the command


def _say(text: str) -> None:
    sys.stderr.write("%s: %s\n" % (NAME, text))
    sys.stderr.flush()


_PROGRAM = (
    Flag(
        ("--raw-output",),
        "the program's bytes unchanged on our stdout/stderr when that is a file or a pipe "
        "(default: controls but \\n and \\t escaped; a terminal always gets that)",
        "switch",
    ),
)
#: What the command does instead of running a program (one of them).
_INSTEAD = (
    Flag(("--surface",), "print the surface", "switch"),
    Flag(("--search",), "print the tools that match QUERY", metavar="QUERY"),
    Flag(("--describe",), "print one tool's doc", metavar="SERVER.FUNCTION"),
    Flag(("--check",), "compile() and mypy PROGRAM: what would fail when it runs", "switch"),
)
_LIMIT = Flag(("--limit",), "--search: N (10)", type=arguments.count, metavar="N")
_KEEP_CAP = Flag(
    ("--keep-cap",), "write the cap package into DIR (for mypy, an editor)", metavar="DIR"
)


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        usage="%(prog)s --config FILE [--server NAME]... [options] [PROGRAM.py | -]",
        description="Run a model's Python program against the generated cap.mcp modules of "
        "the servers of a config file: jailed, bounded, its calls served by the servers.",
        epilog=EPILOG,
        formatter_class=arguments.HelpFormatter,
    )
    parser.add_argument("program", nargs="?", metavar="PROGRAM.py | -", help="the program to run")
    actions = parser.add_argument_group("instead of running it")
    arguments.add_all(actions.add_mutually_exclusive_group(), _INSTEAD)
    arguments.add(actions, _LIMIT, 10)
    arguments.add_all(parser, _PROGRAM)
    arguments.add(actions, _KEEP_CAP)
    add_runner_arguments(parser)
    return arguments.note_aliases(parser)


def _parse(argv: Sequence[str], prog: str) -> Tuple[argparse.Namespace, RunnerOptions]:
    parser = _parser(prog)
    args = parser.parse_args(argv)
    looks = args.surface or args.search is not None or args.describe is not None
    if args.program is None and not looks and args.keep_cap is None:
        parser.error("give a PROGRAM to run (or -), or --surface, --search, --describe, --keep-cap")
    if args.check and args.program is None:
        parser.error("--check needs a PROGRAM")
    try:
        return args, runner_options(args)
    except (TypeError, ValueError) as e:
        parser.error(str(e))


def _read_program(args: argparse.Namespace) -> str:
    if args.program == "-":
        return sys.stdin.read()
    with open(args.program, encoding="utf-8") as source:
        return source.read()


def main(argv: Optional[Sequence[str]] = None, prog: str = "mcp-client codemode") -> int:
    """The command; returns its exit status (argparse exits 2 on bad usage)."""
    args, options = _parse(sys.argv[1:] if argv is None else argv, prog)
    return exits.run_command(lambda: _read_and_act(args, options), NAME, _say)


def _read_and_act(args: argparse.Namespace, options: RunnerOptions) -> int:
    try:
        program = None if args.program is None else _read_program(args)
    except (OSError, UnicodeDecodeError) as e:
        _say("cannot read the program %s: %s" % (args.program, e))
        return EXIT_USAGE
    return _open_and_act(args, options, program)


def _open_and_act(args: argparse.Namespace, options: RunnerOptions, program: Optional[str]) -> int:
    runs = program is not None and not args.check
    kept = () if args.keep_cap is None else (os.path.join(args.keep_cap, "cap"),)
    try:
        runner = open_runner(options, _say, jail_program=options.jail_program and runs, hidden=kept)
    except (ConfigError, UnknownServer) as e:
        _say(str(e))
        return EXIT_USAGE
    except NoServerStarted as e:
        _say(str(e))
        return EXIT_NO_SERVER
    except CodeModeError as e:  # no jail to be had: never an unjailed run instead
        _say("%s; or pass --no-jail to run the program unjailed" % e)
        return EXIT_USAGE
    with runner:
        return _act(runner, args, program)


def _act(runner: CodeMode, args: argparse.Namespace, program: Optional[str]) -> int:
    if args.keep_cap is not None and not _keep_cap(runner, args.keep_cap):
        return EXIT_USAGE
    if args.surface:
        print(runner.surface())
        return 0
    if args.search is not None:
        return _search(runner, args.search, args.limit)
    if args.describe is not None:
        text = runner.describe(args.describe)
        print(text)
        return 0 if text.startswith("cap.mcp.") else EXIT_CHECK_FAILED
    if program is None:
        return 0
    if args.check:
        return _check(runner, program)
    return _run(runner, program, stdin=None if args.program == "-" else 0, raw=args.raw_output)


def _keep_cap(runner: CodeMode, directory: str) -> bool:
    """``DIR/cap`` written (one written here before is replaced); one line and ``False``
    when it cannot be: a link there is never followed, anything else never replaced."""
    target = os.path.join(directory, "cap")
    if os.path.islink(target):
        _say("--keep-cap: %s is a link; not followed, not replaced" % target)
        return False
    if os.path.lexists(target) and not _written_here(target):
        _say("--keep-cap: %s exists and is not a cap package written here; not replaced" % target)
        return False
    try:
        if os.path.lexists(target):
            shutil.rmtree(target)  # by descriptors: a link inside is removed, not followed
        shutil.copytree(os.path.join(runner.cap_dir, "cap"), target, symlinks=True)
    except OSError as e:
        _say("--keep-cap: cannot write %s: %s" % (target, e))
        return False
    _say("the cap package is in %s (MYPYPATH=%s)" % (target, os.path.abspath(directory)))
    return True


def _written_here(target: str) -> bool:
    """Whether ``target`` is a cap package as written here: a directory (not a link)
    holding ``internal/mcp.py``, none of them a link."""
    path = target
    for part, kind in (("", stat.S_ISDIR), ("internal", stat.S_ISDIR), ("mcp.py", stat.S_ISREG)):
        path = os.path.join(path, part) if part else path
        try:
            if not kind(os.lstat(path).st_mode):
                return False
        except OSError:
            return False
    return True


def _search(runner: CodeMode, query: str, limit: int) -> int:
    found = runner.search(query, limit=limit)
    if not found.matches:  # what search_tools says, not silence
        print(_serve_tools.no_match(query))
    for match in found.matches:
        print(match.line)
    if found.truncated:
        print("# %d of %d shown; --limit N for more" % (len(found.matches), found.total))
    return 0 if found.total else EXIT_CHECK_FAILED


def _check(runner: CodeMode, program: str) -> int:
    checked = runner.check(program)
    print(_serve_tools.check_text(checked))  # "ok" on success, as check_program says
    if not checked.mypy:
        _say("mypy is not installed: compile() only (pip install 'mcp-client[check]')")
    return 0 if checked.ok else EXIT_CHECK_FAILED


def _run(runner: CodeMode, program: str, stdin: Optional[int], raw: bool) -> int:
    tee = Tee(raw)
    approver = None
    if runner.policy.approves:
        approver = _terminal(runner.limits.approval_timeout)
        if stdin is not None and os.isatty(stdin):  # the terminal's lines are the answers
            stdin = None
    try:
        result: RunResult = runner.run(program, stdin=stdin, tee=tee, approver=approver)
    finally:
        tee.flush()
    return result.exit_status


def _terminal(timeout: float) -> Callable[[PendingCall], Decision]:
    return lambda pending: _ask_on_the_terminal(pending, timeout)


def _ask_on_the_terminal(pending: PendingCall, timeout: float) -> Decision:
    """A call that waits for a yes, asked on the controlling terminal (``/dev/tty``: not
    our stdin, which may be the program's); no terminal is a no. The runner bounds the
    wait (``--approval-timeout``); an answer after it is not read."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return Decision(False, "terminal", "failed", "no terminal to ask on (/dev/tty)")
    try:
        os.write(tty, ("\n%s\nAllow it? [y/N] " % _approval.question(pending)).encode("utf-8"))
        ready, _, _ = select.select([tty], [], [], timeout)
        answer = os.read(tty, 1024).decode("utf-8", "replace").strip().lower() if ready else ""
    except OSError as e:
        return Decision(False, "terminal", "failed", "the terminal failed: %s" % e)
    finally:
        os.close(tty)
    return Decision(answer in ("y", "yes"), "terminal")
