"""Code mode's values: what a run may take (:class:`Limits`), which calls are sent
(:class:`Policy`), and what a run, a search and a check return; the constants they name.

Pure: nothing here starts, reads or writes anything. :mod:`mcp_client.codemode` gives
every name (this module is its part, not a place to import from).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

#: ``RunResult.exit_status`` when the wall clock ended the program (as ``timeout(1)``).
WALL_CLOCK = 124
#: The policies ``Policy.allow`` takes.
ALLOW = ("all", "non-destructive", "read-only")
#: ``RunResult.error`` of a run that close() ended.
CLOSED = "the runner was closed while the program ran: it was killed"
#: ``RunResult.error`` of a run its caller cancelled (``run(cancelled=...)``).
CANCELLED = "the run was cancelled by its caller while the program ran: it was killed"


@dataclass(frozen=True)
class Limits:
    """What a run may take; every one is enforced (see :mod:`mcp_client.codemode`).

    The jail's four (``memory_bytes``, ``max_tasks``, ``scratch_bytes``,
    ``cpu_seconds``) hold by default; a machine that cannot enforce one (no memory
    or pids cgroup to be had) refuses the run with :class:`JailUnavailable` naming
    what is missing, and ``enforced=False`` (``--no-limits``) is the explicit way out:
    then the jail has none of the four, only the wall clock, the calls and the output.
    """

    wall_clock: float = 300.0  # seconds a run may take, whole
    call_timeout: float = 60.0  # seconds per tool call
    max_calls: int = 50  # tool calls a run may make (FastMCP caps at 50)
    max_output_bytes: int = 64 * 1024  # stdout and stderr each; the rest is cut, with a marker
    memory_bytes: int = 512 * 1024 * 1024  # the program jail's memory cgroup
    max_tasks: int = 64  # processes and threads of the jail at once: a pids cgroup
    scratch_bytes: int = 256 * 1024 * 1024  # the scratch tmpfs (inside memory_bytes)
    cpu_seconds: int = 120  # CPU time of each of the program's processes (RLIMIT_CPU)
    enforced: bool = True  # False: none of the jail's four (--no-limits)

    def __post_init__(self) -> None:
        for name in ("wall_clock", "call_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError("Limits.%s must be a positive number, not %r" % (name, value))
        for name in ("max_calls", "max_output_bytes", "memory_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError("Limits.%s must be an int >= 0, not %r" % (name, value))
        for name in ("max_tasks", "scratch_bytes", "cpu_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError("Limits.%s must be a positive int, not %r" % (name, value))
        if not isinstance(self.enforced, bool):
            raise TypeError("Limits.enforced must be a bool, not %r" % (self.enforced,))
        if self.memory_bytes < 1 << 20:
            raise ValueError("Limits.memory_bytes must be at least 1 MiB (a Python needs more)")


@dataclass(frozen=True)
class Policy:
    """Which calls are sent, from the tools' annotations (the server's claims)."""

    allow: str = "all"  # "all" | "non-destructive" | "read-only"
    allow_tools: Tuple[str, ...] = ()  # "server.function" always allowed
    deny_tools: Tuple[str, ...] = ()  # "server.function" always refused (wins over allow)

    def __post_init__(self) -> None:
        if self.allow not in ALLOW:
            raise ValueError(
                "Policy.allow must be one of %s, not %r" % (", ".join(ALLOW), self.allow)
            )
        for name in ("allow_tools", "deny_tools"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise TypeError("Policy.%s takes a sequence of names, not one string" % name)
            object.__setattr__(self, name, tuple(value))
            for each in getattr(self, name):
                if not isinstance(each, str) or "." not in each:
                    raise ValueError("Policy.%s: %r is not server.function" % (name, each))

    def refusal(self, names: Sequence[str], hints: Dict[str, object]) -> Optional[str]:
        """``None`` when the call may be sent, else the rule that refuses it.

        ``names`` are the tool's ``server.function`` spellings (its Python name and its
        wire name); ``hints`` its annotations as the server sent them.
        """
        shown = names[0]
        if any(name in self.deny_tools for name in names):
            return "%s is refused by the policy: it is in deny_tools" % shown
        if self.allow == "all" or any(name in self.allow_tools for name in names):
            return None
        read_only = hints.get("readOnlyHint") is True  # MCP's default: false
        destructive = hints.get("destructiveHint") is not False  # MCP's default: true
        if self.allow == "read-only" and not read_only:
            return (
                "%s is refused by the policy allow=read-only: the server does not say "
                "readOnlyHint: true" % shown
            )
        if self.allow == "non-destructive" and not read_only and destructive:
            return (
                "%s is refused by the policy allow=non-destructive: the server says neither "
                "readOnlyHint: true nor destructiveHint: false" % shown
            )
        return None


@dataclass(frozen=True)
class CallRecord:
    """One call a program made."""

    server: str
    tool: str  # the function's name in cap.mcp.<server>
    ms: float
    outcome: str  # "ok" | "tool_failed" | "call_failed" | "refused" | "mismatch" | "abandoned"


@dataclass(frozen=True)
class RunResult:
    """How a run ended."""

    exit_status: int  # the program's, 128+N for a signal; WALL_CLOCK for the wall clock
    stdout: str  # cut to Limits.max_output_bytes, with a marker
    stderr: str  # likewise; the runner's own lines ("codemode: ...") follow the program's
    calls: Tuple[CallRecord, ...]
    error: Optional[str]  # None, or one line: why the run failed (timeout, limit, ...)
    truncated: bool  # stdout or stderr was cut
    restarted: Tuple[str, ...] = ()  # servers started again during this run


@dataclass(frozen=True)
class Match:
    """One tool found by :meth:`CodeMode.search`."""

    server: str
    function: str  # "server.function" is how describe() names it
    line: str  # the surface line
    doc: str  # the whole doc a model reads (codegen.described)
    brief: str = ""  # one line: the signature, types by name, and the first sentence


@dataclass(frozen=True)
class SearchResult:
    """What :meth:`CodeMode.search` found: the best ``matches``, how many matched."""

    matches: Tuple[Match, ...]
    total: int  # how many tools matched, shown or not
    truncated: bool  # more matched than ``limit``


@dataclass(frozen=True)
class CheckResult:
    """What :meth:`CodeMode.check` found: ``ok``, and one message a fault."""

    ok: bool
    messages: Tuple[str, ...]  # "line N: <mypy's / compile's own words>"
    mypy: bool = False  # whether mypy ran (it is optional: the ``check`` extra)
