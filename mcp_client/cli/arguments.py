"""The commands' one vocabulary: the argument types, the shared flags, and their parser.

Every command -- ``mcp-client`` (:mod:`mcp_client.cli`), ``codemode``, ``serve`` and
``replay`` -- reads its values with these types, so a value is spelt the same way
everywhere:

* a size (:func:`size`): bytes, or a whole number with ``K``, ``M`` or ``G`` after it
  (powers of 1024; ``KiB``, ``MiB``, ``GiB`` too): ``4096``, ``64K``, ``512M``, ``1G``;
* a duration (:func:`duration`): seconds, or a number with ``ms``, ``s``, ``m`` or ``h``
  after it: ``1.5``, ``90s``, ``2m``, ``500ms``;
* a count (:func:`count`): a whole number, 0 or more (:func:`positive_count`: 1 or more).

An idea that more than one command has is one :class:`Flag` of :data:`VOCABULARY`, added
by each of them with :func:`add`: one canonical spelling, which ``--help`` lists, and
aliases, other spellings of the same flag that every command taking it accepts
(``--allow-read`` is ``--server-read``; the table of them is ``docs/cli.md``). The help
lists the canonical one and names the aliases on its last line (:class:`HelpFormatter`,
:func:`note_aliases`).

The demo server (:mod:`mcp_client.cli.demo_server`) reads its one flag by itself: it is a
server run by its path, and imports nothing of the package.
"""

from __future__ import annotations

import argparse
import copy
import math
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

__all__ = [
    "CONFIG",
    "CPU_SECONDS",
    "DURATION_FORMS",
    "Flag",
    "HelpFormatter",
    "JAIL_LIMITS",
    "JAIL_SERVERS",
    "MAX_TASKS",
    "MEMORY",
    "SERVER",
    "PATHS",
    "SERVER_JAIL",
    "SERVER_NETWORK",
    "SERVER_READ",
    "SERVER_WRITE",
    "SIZE_FORMS",
    "TIMEOUT",
    "VOCABULARY",
    "add",
    "add_all",
    "bytes_argument",
    "count",
    "count_argument",
    "duration",
    "note_aliases",
    "positive_count",
    "seconds_argument",
    "shown",
    "shown_size",
    "size",
    "whole_seconds",
]

#: How a size may be written, for the error that refuses one.
SIZE_FORMS = "bytes, or a whole number with K, M or G (powers of 1024): 4096, 64K, 512M, 1G"
#: How a duration may be written, for the error that refuses one.
DURATION_FORMS = "seconds, or a number with ms, s, m or h: 1.5, 90s, 2m, 500ms"

_SIZE = re.compile(r"(\d+)\s*(?:([KMG])(?:I?B)?)?", re.IGNORECASE)
_SCALE = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)", re.IGNORECASE)
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}

# ----------------------------------------------------------------------------- the types


def size(text: str) -> int:
    """argparse type for a number of bytes, 0 or more: ``4096``, ``64K``, ``512M``, ``1G``."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError("not a size: %r (give %s)" % (text, SIZE_FORMS))
    return int(match.group(1)) * _SCALE[(match.group(2) or "").upper()]


def duration(text: str) -> float:
    """argparse type for a positive, finite number of seconds: ``1.5``, ``90s``, ``2m``,
    ``500ms``."""
    match = _DURATION.fullmatch(text.strip())
    try:
        value = float(match.group(1)) * _SECONDS[match.group(2).lower()] if match else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "not a duration: %r (give %s)" % (text, DURATION_FORMS)
        ) from None
    if not value > 0 or value == math.inf:
        raise argparse.ArgumentTypeError("must be a positive number of seconds, not %r" % text)
    return value


def whole_seconds(text: str) -> int:
    """argparse type for a duration in whole seconds (``RLIMIT_CPU``'s unit): ``30``, ``2m``."""
    value = duration(text)
    if value != int(value):
        raise argparse.ArgumentTypeError("must be whole seconds, not %r" % text)
    return int(value)


def count(text: str) -> int:
    """argparse type for a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a whole number: %r" % text) from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more, not %r" % text)
    return value


def positive_count(text: str) -> int:
    """argparse type for a whole number, 1 or more."""
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("not a positive integer: %r" % text)
    return value


#: The types under their other names, which the commands' code imported.
seconds_argument = duration
bytes_argument = size
count_argument = positive_count


def shown_size(value: int) -> str:
    """A size as a user writes it: ``512M`` for 536870912, bytes when no unit divides it."""
    for unit in ("G", "M", "K"):
        if value and value % _SCALE[unit] == 0:
            return "%d%s" % (value // _SCALE[unit], unit)
    return str(value)


# ----------------------------------------------------------------------------- the flags


@dataclass(frozen=True)
class Flag:
    """One idea's flag: its spellings (the canonical one first, then the aliases), its
    help, and how its value is read: a ``switch`` takes none, a ``value`` one, and a
    ``repeated`` flag one each time it is given (a list)."""

    names: Tuple[str, ...]
    help: str
    kind: str = "value"
    type: Optional[Callable[[str], Any]] = None
    metavar: Optional[str] = None
    choices: Optional[Tuple[str, ...]] = None

    @property
    def canonical(self) -> str:
        """The spelling ``--help`` shows and the documentation uses."""
        return self.names[0]

    @property
    def aliases(self) -> Tuple[str, ...]:
        """The older spellings, still accepted."""
        return self.names[1:]

    @property
    def dest(self) -> str:
        """The attribute of the parsed namespace: the canonical spelling's."""
        return self.canonical[2:].replace("-", "_")

    def spelled(self) -> str:
        """``--server-read (--allow-read)``: the flag as a message names it."""
        if not self.aliases:
            return self.canonical
        return "%s (%s)" % (self.canonical, ", ".join(self.aliases))


def add(
    group: "argparse._ActionsContainer",
    flag: Flag,
    default: Any = None,
    help: Optional[str] = None,
    required: bool = False,
) -> None:
    """``flag`` added to ``group`` (a parser or an argument group) under every spelling;
    ``help`` in place of the flag's own (what it bounds, in this command)."""
    options: Dict[str, Any] = {"dest": flag.dest, "help": flag.help if help is None else help}
    if flag.kind == "switch":
        options["action"] = "store_true"
    else:
        options.update(type=flag.type, metavar=flag.metavar, default=default, required=required)
        options.update(choices=flag.choices)
    if flag.kind == "repeated":
        options.update(action="append", default=[] if default is None else default)
    group.add_argument(*flag.names, **options)


def shown(flag: Flag, value: Any) -> str:
    """A default as the flag would be given it: ``512M``, ``300s``, ``50``."""
    if flag.type is size:
        return shown_size(value)
    if flag.type in (duration, whole_seconds):
        return "%gs" % value
    return str(value)


def add_all(group: "argparse._ActionsContainer", flags: Iterable[Flag]) -> None:
    """Each of ``flags`` added to ``group`` with its own help and no default."""
    for flag in flags:
        add(group, flag)


#: A repeated flag of paths: ``Flag(names, help, **PATHS)``.
PATHS: Dict[str, Any] = {"kind": "repeated", "type": str, "metavar": "PATH"}

CONFIG = Flag(
    ("--config",),
    'the servers of FILE ({"mcpServers": ...} or VS Code\'s {"servers": ...})',
    metavar="FILE",
)
SERVER = Flag(
    ("--server",), "with --config: only the server NAME (repeatable)", "repeated", str, "NAME"
)
TIMEOUT = Flag(
    ("--timeout", "--call-timeout"),
    "deadline of each request to a server",
    type=duration,
    metavar="DURATION",
)
JAIL_SERVERS = Flag(
    ("--jail-servers", "--jail"),
    "run the servers in a jail: no network, read-only filesystem, credentials hidden, private /tmp",
    "switch",
)
SERVER_READ = Flag(
    ("--server-read", "--allow-read"),
    "jailed servers read PATH, even where the jail covers it (under /tmp); repeatable",
    **PATHS,
)
SERVER_WRITE = Flag(
    ("--server-write", "--allow-write"), "jailed servers write under PATH; repeatable", **PATHS
)
SERVER_NETWORK = Flag(
    ("--server-network", "--allow-net"), "jailed servers keep the network", "switch"
)
HIDE = Flag(("--hide",), "hide PATH too (besides ~/.ssh, ~/.aws, ...); repeatable", **PATHS)
MEMORY = Flag(("--memory",), "memory of the jail", type=size, metavar="SIZE")
CPU_SECONDS = Flag(
    ("--cpu-seconds",),
    "CPU time of each process in the jail",
    type=whole_seconds,
    metavar="DURATION",
)
MAX_TASKS = Flag(
    ("--max-tasks", "--max-processes"),
    "processes and threads in the jail at once, all counted",
    type=count,
    metavar="N",
)

#: What jailed servers may reach, beyond what the jail shows.
SERVER_JAIL = (SERVER_READ, SERVER_WRITE, SERVER_NETWORK)
#: The limits of a jail (the main job's server's; code mode's program's).
JAIL_LIMITS = (MEMORY, CPU_SECONDS, MAX_TASKS)
#: Every flag more than one command takes, canonical spelling first (docs/cli.md).
VOCABULARY: Tuple[Flag, ...] = (
    CONFIG,
    SERVER,
    TIMEOUT,
    JAIL_SERVERS,
    SERVER_READ,
    SERVER_WRITE,
    SERVER_NETWORK,
    HIDE,
    MEMORY,
    CPU_SECONDS,
    MAX_TASKS,
)


def note_aliases(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with a line at the end of its ``--help`` naming the older spellings of
    its flags, which the list of flags does not show (:class:`HelpFormatter`)."""
    pairs = [
        "%s for %s" % (alias, action.option_strings[0])
        for action in parser._actions
        if _aliased(action)
        for alias in action.option_strings[1:]
    ]
    if pairs:
        line = "Older spellings still work: %s (docs/cli.md)." % ", ".join(pairs)
        parser.epilog = line if not parser.epilog else parser.epilog + "\n" + line
    return parser


def _aliased(action: argparse.Action) -> bool:
    names = action.option_strings
    return len(names) > 1 and all(name.startswith("--") for name in names)


# ----------------------------------------------------------------------------- the help


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """``--help`` with each flag under its canonical spelling alone (the aliases are in
    docs/cli.md); the description and epilog line by line as written, a line too long
    for the terminal wrapped."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if _aliased(action):
            shown = copy.copy(action)
            shown.option_strings = action.option_strings[:1]
            return super()._format_action_invocation(shown)
        return super()._format_action_invocation(action)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(_wrapped(line, width, indent) for line in text.splitlines())


def _wrapped(line: str, width: int, indent: str) -> str:
    if len(indent + line) <= width:
        return indent + line if line else ""
    inner = indent + " " * (len(line) - len(line.lstrip()))
    return textwrap.fill(
        line.strip(), width, initial_indent=inner, subsequent_indent=inner, break_on_hyphens=False
    )
