"""Code mode's values: what a run may take (:class:`Limits`), which calls are sent
(:class:`Policy`), and what a run, a search and a check return; the constants they name.

Pure: nothing here starts, reads or writes anything. :mod:`mcp_client.codemode` gives
every name (this module is its part, not a place to import from).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover - annotations only: the approvals' values are theirs
    from ._approval import Approval

#: ``RunResult.exit_status`` when the wall clock ended the program (as ``timeout(1)``).
WALL_CLOCK = 124
#: The policies ``Policy.allow`` takes.
ALLOW = ("all", "non-destructive", "read-only")
#: The approval policies ``Policy.approve`` takes: which calls wait for a person's yes.
APPROVE = ("none", "destructive", "non-read-only", "all")
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
    approval_timeout: float = 300.0  # seconds a person has to answer one approval
    max_approvals: int = 8  # approvals one run may ask for; past it, refused unasked
    approval_ttl: float = 600.0  # seconds an approval token (and its replay log) lives

    def __post_init__(self) -> None:
        for name in ("wall_clock", "call_timeout", "approval_timeout", "approval_ttl"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError("Limits.%s must be a positive number, not %r" % (name, value))
        for name in ("max_calls", "max_output_bytes", "memory_bytes", "max_approvals"):
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
    """Which calls are sent, and which wait for a person's yes first, from the tools'
    annotations (the server's claims). A refusal wins over an approval: a refused call
    is never put to anyone."""

    allow: str = "all"  # "all" | "non-destructive" | "read-only"
    allow_tools: Tuple[str, ...] = ()  # "server.function" always allowed
    deny_tools: Tuple[str, ...] = ()  # "server.function" always refused (wins over allow)
    approve: str = "none"  # "none" | "destructive" | "non-read-only" | "all"
    approve_tools: Tuple[str, ...] = ()  # "server.function" always waits for a yes

    def __post_init__(self) -> None:
        if self.allow not in ALLOW:
            raise ValueError(
                "Policy.allow must be one of %s, not %r" % (", ".join(ALLOW), self.allow)
            )
        if self.approve not in APPROVE:
            raise ValueError(
                "Policy.approve must be one of %s, not %r" % (", ".join(APPROVE), self.approve)
            )
        for name in ("allow_tools", "deny_tools", "approve_tools"):
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

    @property
    def approves(self) -> bool:
        """Whether any call may wait for a person's yes."""
        return self.approve != "none" or bool(self.approve_tools)

    def approval(self, names: Sequence[str], hints: Dict[str, object]) -> Optional[str]:
        """``None`` when the call needs no one's yes, else the rule that asks for it
        (``names`` and ``hints`` as :meth:`refusal` takes them; ask it first: a refused
        call is never put to anyone)."""
        if any(name in self.approve_tools for name in names):
            return "approve_tools names it"
        read_only = hints.get("readOnlyHint") is True  # MCP's default: false
        destructive = hints.get("destructiveHint") is not False  # MCP's default: true
        if self.approve == "all":
            return "approve=all"
        if self.approve == "non-read-only" and not read_only:
            return "approve=non-read-only: the server does not say readOnlyHint: true"
        if self.approve == "destructive" and not read_only and destructive:
            return (
                "approve=destructive: the server says neither readOnlyHint: true nor "
                "destructiveHint: false"
            )
        return None


@dataclass(frozen=True)
class CallRecord:
    """One call a program made."""

    server: str
    tool: str  # the function's name in cap.mcp.<server>
    ms: float
    # "ok" | "tool_failed" | "call_failed" | "refused" | "mismatch" | "abandoned"; with
    # approvals also "replayed" (answered from an approved run's log, not sent), "approval_required"
    # (the run stopped there for a token), "diverged" (not the call the log holds)
    outcome: str
    # "" (no one was asked) | "approved" | "declined" | "cancelled" | "timed_out" |
    # "failed" | "not_asked" (refused without asking: a repeat, the cap, given up)
    approval: str = ""
    by: str = ""  # who answered: "elicitation" (the host's user), "token", "approver"


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
    # The run stopped at a call that waits for a person's yes: that call, and the token
    # that resumes the run (``CodeMode.run(program, approve=[token])``)
    approval: Optional["Approval"] = None


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
