"""Calls that wait for a person's yes: asking, stopping, and resuming a run by replay.

``Policy(approve=...)`` (``--approve``, ``--approve-tool``) says which calls need a
person's yes, from the tools' annotations; a refusal wins over it. The decision is the
runner's: the program only ever sees its call block, then a value or ``CallRefused``.
Three parts:

* :class:`Gate`, one a run, consulted by the run's broker for each call: it numbers the
  calls, answers from a replay log the ones an approved run made already, asks an
  approver for a call that needs a yes (the run's wall clock does not count the wait,
  ``Limits.approval_timeout`` bounds it), or, with no approver, stops the run at that
  call and issues a token. It sends ``progress`` a line a call.
* :class:`Approvals`, one a runner: its secret, and the tokens it issued, each with the
  log of the answers its run got before the call it approves. A token is an HMAC-SHA256
  of the program's digest, the call's position, its server, wire name and arguments'
  digest, its expiry and a nonce, under a secret of this process; it works once, for
  ``Limits.approval_ttl`` seconds, and its log (at most :data:`LOG_BYTES`) is held only
  while it lives.
* :func:`elicitation`: an approver that asks the host's user (``elicitation/create``,
  one boolean), for ``mcp-client serve`` when the host declared the capability.

The values a caller sees: :class:`PendingCall` (what an approver is asked),
:class:`Decision` (what it may answer), :class:`Approval` (``RunResult.approval``).
"""

from __future__ import annotations

import base64
import collections
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from .. import protocol
from .._os import threads as _threads
from ..errors import TokenRefused
from ..text import sanitize
from ._values import Limits, Policy

LOGGER = logging.getLogger("mcp_client.codemode")

#: The arguments a question shows, at most (characters, all printable ASCII).
SHOWN_CHARS = 1024
#: The answers one replay log may hold (bytes of JSON): past it, a stop gives no token.
LOG_BYTES = 1 << 20
#: Tokens held at once by one runner; issuing one more forgets the oldest.
MAX_HELD = 16
#: A token longer than this is not read.
MAX_TOKEN_CHARS = 2048
#: Seconds between two progress lines while a person is being asked.
PROGRESS_EVERY = 10.0
#: What every token begins with (its format's version).
TOKEN_PREFIX = "mcpa1"

#: A call's outcome and the answer the program gets (as ``_broker.Outcome``).
Outcome = Tuple[str, Dict[str, Any]]
#: What identifies a call: its server's key, its wire name, its arguments' digest.
Identity = Tuple[str, str, str]


@dataclass(frozen=True)
class PendingCall:
    """A call that waits for a person's yes: what an approver is asked about."""

    server: str  # the config's key
    function: str  # its function in cap.mcp.<server>
    tool: str  # its name on the wire
    arguments: Dict[str, Any] = field(hash=False)  # as the program wrote them
    position: int  # the run's Nth call
    reason: str  # the rule that asks for a yes

    @property
    def name(self) -> str:
        """``server.function``, as a model and a person read it."""
        return "%s.%s" % (self.server, self.function)

    def shown_arguments(self, limit: int = SHOWN_CHARS) -> str:
        """The arguments as JSON, bounded (:func:`shown_arguments`)."""
        return shown_arguments(self.arguments, limit)


@dataclass(frozen=True)
class Decision:
    """An approver's answer. ``answer``: "approved", "declined", "cancelled",
    "timed_out" or "failed"; ``by``: who answered; ``reason``: a line for the program's
    ``CallRefused`` when it is no."""

    approved: bool
    by: str = "approver"
    answer: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.approved, bool):
            raise TypeError("Decision.approved must be a bool, not %r" % (self.approved,))
        if not self.answer:
            object.__setattr__(self, "answer", "approved" if self.approved else "declined")


#: What ``CodeMode.run(approver=...)`` takes: a pending call in, a yes or a no out.
Approver = Callable[[PendingCall], Union[bool, Decision]]


@dataclass(frozen=True)
class Approval:
    """``RunResult.approval``: the run stopped before ``call``, which waits for a yes.

    Ask the person; on a yes, run the same program again with ``approve=[token]``:
    every call before ``call`` is answered from this run's log (none is made again),
    and ``call`` is made. ``token`` is ``None`` when the run cannot be resumed
    (``note`` says why)."""

    call: PendingCall
    token: Optional[str]
    expires_in: float  # seconds the token lives, from when the run stopped
    replayed: int  # the calls before it, which a resumed run is answered from the log
    note: str = ""

    def question(self) -> str:
        """What to ask the person, in a line or two."""
        return "May the program call %s(%s)? (%s)" % (
            self.call.name,
            self.call.shown_arguments(),
            self.call.reason,
        )


# ----------------------------------------------------------------------------- showing a call


def canonical(arguments: Any) -> str:
    """One spelling of a JSON value: keys sorted, no spaces, ASCII (what digests read)."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def shown_arguments(arguments: Dict[str, Any], limit: int = SHOWN_CHARS) -> str:
    """``arguments`` as a person is shown them: JSON in printable ASCII (every control
    character, bidi override and non-ASCII character spelt ``\\uXXXX``), keys sorted,
    within about ``limit`` characters. A value too long is cut with ``[cut: N more
    characters]`` after it, but every key is shown (up to 32), so that nothing can hide
    behind a long first value."""
    whole = canonical_shown(arguments)
    if len(whole) <= limit:
        return whole
    keys = sorted(arguments)[:32]
    share = max((limit - sum(len(json.dumps(key)) + 2 for key in keys)) // max(len(keys), 1), 24)
    parts = []
    for key in keys:
        value = json.dumps(arguments[key], sort_keys=True, ensure_ascii=True)
        if len(value) > share:
            value = "%s [cut: %d more characters]" % (value[:share], len(value) - share)
        parts.append("%s: %s" % (json.dumps(key, ensure_ascii=True), value))
    more = len(arguments) - len(keys)
    if more:
        parts.append("[and %d more arguments not shown]" % more)
    return "{" + ", ".join(parts) + "}"


def canonical_shown(arguments: Dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, separators=(", ", ": "), ensure_ascii=True)


def question(pending: PendingCall) -> str:
    """The text an elicitation shows: framed as the runner's, the call by its name, its
    arguments bounded and inert (they are the program's: a model wrote them)."""
    return "\n".join(
        [
            "mcp-client code mode: a program asks to make this call, which needs your yes.",
            "",
            "call %d of the run: %s" % (pending.position, pending.name),
            "arguments: %s" % pending.shown_arguments(),
            "",
            "Why you are asked: %s." % pending.reason,
            "The arguments were written by the model's program: judge the call itself, not "
            "what its text says.",
        ]
    )


def _named(server: str, function: str) -> str:
    return "%s.%s" % (sanitize(server, 80), function)


# ----------------------------------------------------------------------------- tokens


@dataclass
class _Entry:
    """One call of a run, as its log holds it: what it was, and the answer it got."""

    identity: Identity
    name: str
    answer: str  # the JSON the program was answered with


@dataclass
class _Held:
    """A token's other half: what it approves, and the log of the answers before it."""

    nonce: str
    deadline: float  # monotonic
    program: str  # the program's digest
    position: int
    identity: Identity
    name: str
    log: Tuple[_Entry, ...]


class Approvals:
    """The tokens one runner issued, and their replay logs. Thread-safe."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._secret = secrets.token_bytes(32)  # this process's: no token outlives it
        self._held: "collections.OrderedDict[str, _Held]" = collections.OrderedDict()
        self._spent: "collections.deque[str]" = collections.deque(maxlen=256)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._sweeper: Optional[threading.Thread] = None
        self._closed = False
        self.asking = threading.Lock()  # held while a person is asked: one thing at a time

    @property
    def held(self) -> int:
        """How many tokens (and logs) are held now."""
        with self._lock:
            self._purge()
            return len(self._held)

    def issue(
        self, program: str, position: int, identity: Identity, name: str, log: Sequence[_Entry]
    ) -> str:
        """A token for the call at ``position`` of ``program`` (a digest), its log held."""
        nonce = secrets.token_hex(16)
        expires = int(time.time() + self.ttl) + 1
        payload = {
            "n": nonce,
            "p": program,
            "i": position,
            "s": identity[0],
            "t": identity[1],
            "a": identity[2],
            "e": expires,
        }
        body = _b64(canonical(payload).encode("ascii"))
        token = "%s.%s.%s" % (TOKEN_PREFIX, body, _b64(self._mac(body)))
        held = _Held(nonce, self._clock() + self.ttl, program, position, identity, name, tuple(log))
        with self._lock:
            if self._closed:
                raise TokenRefused("the runner is closed")
            self._purge()
            self._held[nonce] = held
            while len(self._held) > MAX_HELD:  # the oldest is forgotten: bounded memory
                self._held.popitem(last=False)
            self._arm()
        return token

    def redeem(self, token: object, program: str) -> _Held:
        """The held half of ``token``, taken (it works once) when it is this runner's
        for ``program`` (a digest), unspent and alive; else :class:`TokenRefused`, and a
        token for another program is left for its own."""
        payload = self._verified(token)
        nonce = payload["n"]
        with self._lock:
            self._purge()
            held = self._held.get(nonce)
            if held is None:
                if nonce in self._spent:
                    raise TokenRefused("the approval token was used already: a token works once")
                raise TokenRefused(
                    "the approval token expired (a token lives %g s) or was forgotten; run the "
                    "program again to be given a new one" % self.ttl
                )
            if held.program != program or payload["p"] != program:
                raise TokenRefused(
                    "the approval token is for another program: run the same code it was "
                    "given for, unchanged"
                )
            if (held.position, held.identity) != (payload["i"], (payload["s"], payload["t"],
                                                                   payload["a"])):  # fmt: skip
                raise TokenRefused("the approval token does not match what it approved")
            del self._held[nonce]
            self._spent.append(nonce)
        return held

    def close(self) -> None:
        """Forget every token and log; issue no more."""
        with self._lock:
            self._closed = True
            self._held.clear()
            self._changed.notify_all()

    def _verified(self, token: object) -> Dict[str, Any]:
        if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
            raise TokenRefused("not an approval token: a string this runner issued")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
            raise TokenRefused("not an approval token: a string this runner issued")
        body, mac = parts[1], parts[2]
        try:
            given, _ = _unb64(mac), _unb64(body)
        except ValueError:
            raise TokenRefused(
                "the approval token is forged or altered: it is not base64url"
            ) from None
        if not hmac.compare_digest(given, self._mac(body)):
            raise TokenRefused("the approval token is forged or altered: its signature is wrong")
        payload = json.loads(_unb64(body))  # ours: the signature says so
        if not int(payload["e"]) > time.time():
            raise TokenRefused("the approval token expired (a token lives %g s)" % self.ttl)
        return dict(payload)

    def _mac(self, body: str) -> bytes:
        return hmac.new(self._secret, (TOKEN_PREFIX + "." + body).encode("ascii"),
                        hashlib.sha256).digest()  # fmt: skip

    def _purge(self) -> None:
        """Drop what has expired (under the lock)."""
        now = self._clock()
        for nonce in [n for n, held in self._held.items() if held.deadline <= now]:
            del self._held[nonce]

    def _arm(self) -> None:
        """The sweeper, which forgets each token and its log when it expires (under the
        lock): one thread while anything is held, none after."""
        self._changed.notify_all()
        if self._sweeper is None:
            self._sweeper = _threads.named(self._sweep, "mcp-codemode-tokens")
            try:
                _threads.start(self._sweeper)
            except RuntimeError:  # no thread: expiry on the next use instead
                self._sweeper = None

    def _sweep(self) -> None:
        with self._lock:
            try:
                while self._held and not self._closed:
                    earliest = min(held.deadline for held in self._held.values())
                    self._changed.wait(max(earliest - self._clock(), 0.0) + 0.01)
                    self._purge()
            finally:
                self._sweeper = None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    if not text or any(c not in _B64 for c in text):
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as e:
        raise ValueError(str(e)) from None


_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


# ----------------------------------------------------------------------------- a run's gate


class Gate:
    """One run's approvals: each call numbered, replayed, asked about, or stopped at.

    The broker calls :meth:`replay` for every call line it reads (before anything
    else), :meth:`approve` for a call the policy lets through (before it is sent), and
    :meth:`settled` with its answer. Everything runs on the run's serving thread, one
    call at a time: at most one approval is ever pending in a run.
    """

    def __init__(
        self,
        policy: Policy,
        limits: Limits,
        program: str,
        store: Optional[Approvals],
        approver: Optional[Approver] = None,
        progress: Optional[Callable[[str], None]] = None,
        replay: Optional[_Held] = None,
    ) -> None:
        self.policy = policy
        self.limits = limits
        self.program = program  # the program's digest
        self.store = store
        self.approver = approver
        self.progress_to = progress
        self.replaying = replay
        self.position = 0  # calls read so far
        self.approval: Optional[Approval] = None  # the run stopped for a token
        self.stopped: Optional[str] = None  # why the gate ended the run
        self.over = threading.Event()  # the program is gone: no call may be sent now
        self._stop: Optional[Callable[[], None]] = None
        # A stop may follow (no approver): every answer is logged, for the next token.
        self._logging = approver is None and policy.approves and store is not None
        self._log: List[_Entry] = []
        self._log_bytes = 0
        self._log_full = False
        self._declined: Set[Identity] = set()
        self._asked = 0
        self._given_up: Optional[str] = None
        self._paused = 0.0
        self._waiting_since: Optional[float] = None
        self._pause_lock = threading.Lock()
        self._call: Optional[Tuple[Identity, str]] = None  # the call being answered
        self._note = ("", "")  # its record's (approval, by)
        self._approved_now = False

    def attach(self, stop: Callable[[], None]) -> None:
        """How the gate ends the run (kills the program): set once it is launched."""
        self._stop = stop

    # ------------------------------------------------------------------ the clock

    def paused(self) -> float:
        """Seconds this run has waited for people so far, the wait under way included:
        the wall clock does not count them."""
        with self._pause_lock:
            since = self._waiting_since
            return self._paused + (time.monotonic() - since if since is not None else 0.0)

    # ------------------------------------------------------------------ the calls

    def replay(
        self, server: str, function: str, tool: str, arguments: Dict[str, Any]
    ) -> Optional[Outcome]:
        """Number the call; the log's answer for a call an approved run made already (or
        the end of the run where the program went another way); ``None`` to go on."""
        self.position += 1
        self._note = ("", "")
        self._approved_now = False
        name = _named(server, function)
        identity = (server, tool, digest(canonical(arguments)))
        self._call = (identity, name)
        if self.stopped is not None:
            return "call_failed", _failure("call_failed", "%s: the run is ending" % name)
        held = self.replaying
        if held is None or self.position > held.position:
            return None
        if self.position < held.position:
            entry = held.log[self.position - 1]
            if entry.identity != identity:
                return self._diverge(name, entry.name, entry.identity, identity)
            self._progress("call %d: %s (answered from the approved run's log)"
                           % (self.position, name))  # fmt: skip
            return "replayed", json.loads(entry.answer)
        if held.identity != identity:  # the approved call itself, exactly, or nothing
            return self._diverge(name, held.name, held.identity, identity)
        self._approved_now = True
        return None

    def approve(
        self,
        server: str,
        function: str,
        tool: str,
        arguments: Dict[str, Any],
        names: Sequence[str],
        hints: Dict[str, object],
    ) -> Optional[Outcome]:
        """``None`` when the call is to be sent now (approved, or needing no yes); else
        the answer it gets instead (refused; or the run stopped here for a token)."""
        assert self._call is not None
        identity, name = self._call
        if self._approved_now:
            self._note = ("approved", "token")
            self._progress("call %d: %s (approved by its token)" % (self.position, name))
            return None
        reason = self.policy.approval(names, hints)
        if reason is None:
            self._progress("call %d: %s" % (self.position, name))
            return None
        pending = PendingCall(server, function, tool, arguments, self.position, reason)
        if self.approver is None:
            return self._stop_for(pending, identity, name)
        refused = self._unasked(identity, name)
        if refused is not None:
            self._note = ("not_asked", "runner")
            return "refused", _failure("refused", refused)
        decision = self._ask(pending, name)
        self._note = (decision.answer, decision.by)
        if self.over.is_set():  # the run ended while it waited: nothing is sent now
            return "call_failed", _failure("call_failed", "%s: the run ended" % name)
        if decision.approved:
            self._progress("call %d: %s (approved)" % (self.position, name))
            return None
        if decision.answer == "declined":
            self._declined.add(identity)
        else:  # cancelled, timed out, failed: no one is asked again in this run
            self._given_up = decision.answer
        return "refused", _failure("refused", _no(name, decision))

    def settled(self, kind: str, answer: Dict[str, Any]) -> Tuple[str, str]:
        """The call answered (``kind``, ``answer``): logged when a stop may follow; its
        record's (approval, by)."""
        if self._logging and self._call is not None and kind != "approval_required":
            identity, name = self._call
            text = json.dumps(answer)
            self._log_bytes += len(text)
            if self._log_bytes > LOG_BYTES:
                self._log_full = True
                self._log.clear()
            if not self._log_full:
                self._log.append(_Entry(identity, name, text))
        self._call = None
        return self._note

    def verdict(self) -> Optional[str]:
        """The run's error when the gate has one: it stopped the run, or the program
        ended before the call its token approved."""
        if self.stopped is not None:
            return self.stopped
        held = self.replaying
        if held is not None and self.position < held.position:
            return (
                "the program ended after %d calls, before call %d (%s), which its token "
                "approved: it did not do what the approved run did; nothing of it was sent, "
                "and the token is spent" % (self.position, held.position, held.name)
            )
        return None

    # ------------------------------------------------------------------ the ways

    def _unasked(self, identity: Identity, name: str) -> Optional[str]:
        """Why this call is refused without asking anyone, if it is."""
        if self._given_up is not None:
            return (
                "%s: refused without asking: an earlier approval in this run was %s, so "
                "no one is asked again in this run" % (name, self._given_up.replace("_", " "))
            )
        if identity in self._declined:
            return "%s: refused without asking: the same call was declined in this run" % name
        if self._asked >= self.limits.max_approvals:
            return (
                "%s: refused without asking: this run asked for its %d approvals "
                "(Limits.max_approvals)" % (name, self.limits.max_approvals)
            )
        return None

    def _ask(self, pending: PendingCall, name: str) -> Decision:
        """The approver's answer, the wall clock paused while it is awaited, at most
        ``Limits.approval_timeout`` seconds; progress every :data:`PROGRESS_EVERY`. A
        person is asked one thing at a time: runs that need a yes at once take turns
        (the runner's ``asking`` lock), the turn's wait inside the same bound."""
        assert self.approver is not None
        self._asked += 1
        started = time.monotonic()
        with self._pause_lock:
            self._waiting_since = started
        self._progress("call %d: %s waits for a person's yes" % (self.position, name))
        turn = self.store.asking if self.store is not None else threading.Lock()
        held = False
        try:
            deadline = started + self.limits.approval_timeout
            late = self._await(lambda: turn.acquire(timeout=0.05), started, deadline, name)
            if late is not None:
                return late
            held = True
            answered, decided = self._asking(pending)
            return self._await(answered, started, deadline, name) or decided()
        finally:
            if held:
                turn.release()
            with self._pause_lock:
                self._paused += time.monotonic() - started
                self._waiting_since = None

    def _asking(self, pending: PendingCall) -> Tuple[Callable[[], bool], Callable[[], Decision]]:
        """The approver started on a thread of its own: a look at whether it answered (a
        wait of 50 ms), and its decision once it has."""
        assert self.approver is not None
        approver, done = self.approver, threading.Event()
        box: List[Decision] = []

        def asking() -> None:
            try:
                box.append(_decision(approver(pending)))
            except Exception as e:  # the approver's bug is a no, never a yes
                LOGGER.warning("the approver failed: %r", e)
                box.append(Decision(False, "approver", "failed", "the approver failed: %r" % e))
            done.set()

        try:
            _threads.start(_threads.named(asking, "mcp-codemode-approve"))
        except RuntimeError as e:
            box.append(Decision(False, "runner", "failed", "no one could be asked: %s" % e))
            done.set()
        return lambda: done.wait(0.05), lambda: box[0]

    def _await(
        self, ready: Callable[[], bool], started: float, deadline: float, name: str
    ) -> Optional[Decision]:
        """``None`` once ``ready()`` (looked at in turns of 50 ms) is true; the runner's
        no when the run ends or the deadline passes first; progress meanwhile."""
        tick = started + PROGRESS_EVERY
        while not ready():
            now = time.monotonic()
            if self.over.is_set():
                return Decision(False, "runner", "failed", "the run ended while it waited")
            if now >= deadline:
                return Decision(
                    False,
                    "runner",
                    "timed_out",
                    "no answer within %g s "
                    "(Limits.approval_timeout)" % self.limits.approval_timeout,
                )
            if now >= tick:
                tick += PROGRESS_EVERY
                self._progress("call %d: %s still waits for a person's yes (%d s)"
                               % (self.position, name, now - started))  # fmt: skip
        return None

    def _stop_for(self, pending: PendingCall, identity: Identity, name: str) -> Outcome:
        """No one to ask: the run ends before this call, with a token that resumes it."""
        token, note = None, ""
        if self._log_full:
            note = (
                "the calls before it returned more than %d bytes, more than a replay log "
                "holds: this run cannot be resumed" % LOG_BYTES
            )
        elif self.store is not None:
            try:
                token = self.store.issue(self.program, self.position, identity, name, self._log)
            except TokenRefused as e:
                note = str(e)
        ttl = self.store.ttl if self.store is not None else 0.0
        self.approval = Approval(pending, token, ttl, self.position - 1, note)
        self._note = ("required", "")
        self.stopped = "the run stopped before call %d, %s, which waits for a person's yes (%s)" % (
            self.position,
            name,
            pending.reason,
        )
        self._progress("call %d: %s needs a person's yes: the run stops" % (self.position, name))
        self._halt()
        return "approval_required", _failure("call_failed", self.stopped)

    def _diverge(self, name: str, logged: str, was: Identity, now: Identity) -> Outcome:
        what = "other arguments" if was[:2] == now[:2] else "%s instead" % name
        self.stopped = (
            "the program went another way than the approved run: its call %d is %s where "
            "that run called %s (%s); nothing of it was sent, and the token is spent"
            % (self.position, name, logged, what)
        )
        self._note = ("", "")
        self._halt()
        return "diverged", _failure("call_failed", self.stopped)

    def _halt(self) -> None:
        if self._stop is not None:
            try:
                self._stop()
            except Exception:  # the program is killed by its run's end in any case
                LOGGER.exception("stopping a run for its approval failed")

    def _progress(self, message: str) -> None:
        if self.progress_to is None:
            return
        try:
            self.progress_to(message)
        except Exception:  # a host's progress is a courtesy: the run goes on
            LOGGER.exception("a progress note failed")


def _decision(answer: Union[bool, Decision]) -> Decision:
    if isinstance(answer, Decision):
        return answer
    if isinstance(answer, bool):
        return Decision(answer)
    return Decision(False, "approver", "failed", "the approver answered %r, not a bool" % (answer,))


def _no(name: str, decision: Decision) -> str:
    said = {
        "declined": "declined",
        "cancelled": "cancelled (no answer given)",
        "timed_out": "not answered in time",
        "failed": "not answered",
    }.get(decision.answer, decision.answer)
    text = "%s was not approved: %s by %s" % (name, said, decision.by)
    return text + ("; " + decision.reason if decision.reason else "")


def _failure(kind: str, message: str) -> Dict[str, Any]:
    return {"failure": kind, "message": message}


# ----------------------------------------------------------------------------- elicitation


#: The answer ``elicitation/create`` asks for: one boolean.
REQUESTED_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Allow this call",
            "description": "Yes to let the program make this call now; no to refuse it.",
            "default": False,
        }
    },
    "required": ["approve"],
}


def host_elicits(capabilities: Dict[str, Any]) -> bool:
    """Whether a host's ``initialize`` capabilities say it can ask its user a form."""
    declared = capabilities.get(protocol.ELICITATION_CAPABILITY)
    if not isinstance(declared, dict):
        return False
    modes = {key for key in ("form", "url") if key in declared}
    return not modes or "form" in modes  # {} is form (2025-06-18); {"url": {}} alone is not


def elicitation(ask: Callable[[str, Dict[str, Any], float], Any], timeout: float) -> Approver:
    """An approver that asks the host's user with ``elicitation/create`` (``ask``: the
    call's ``CallContext.ask``): a yes only for ``accept`` with ``approve: true``."""

    def approver(pending: PendingCall) -> Decision:
        params = {"message": question(pending), "requestedSchema": REQUESTED_SCHEMA}
        try:  # a little past the gate's own bound: the gate says "timed out" first
            result = ask(protocol.ELICITATION_CREATE, params, timeout + 5.0)
        except Exception as e:  # HostFailed: its error, none in time, cancelled, gone
            return Decision(False, "elicitation", "failed", sanitize(str(e), 200))
        return read_elicitation(result)

    return approver


def read_elicitation(result: Any) -> Decision:
    """The host's answer to ``elicitation/create``, as a decision."""
    if not isinstance(result, dict):
        return Decision(False, "elicitation", "failed", "the host's answer is not an object")
    action = result.get("action")
    if action == "accept":
        content = result.get("content")
        if isinstance(content, dict) and content.get("approve") is True:
            return Decision(True, "elicitation", "approved")
        return Decision(False, "elicitation", "declined", "the form was sent without approve: true")
    if action == "decline":
        return Decision(False, "elicitation", "declined")
    if action == "cancel":
        return Decision(False, "elicitation", "cancelled")
    return Decision(False, "elicitation", "failed", "the host answered no known action")
