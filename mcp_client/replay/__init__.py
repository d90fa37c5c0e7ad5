"""Replaying a wire capture: the log read as a script, and the answers a peer owes.

Pure: no I/O, no threads, no clocks (:mod:`mcp_client.replay.run` does those). A
capture (see :mod:`mcp_client.capture`, whose :func:`~mcp_client.capture.read_log`
validates it) is read by :func:`parse_log` into a
:class:`Script`: the client's recorded lines in order, and after each of them
the server's recorded lines that followed it, up to the client's next line.

A :class:`Responder` plays the server's part from a script. Each live client
line is matched to an unmatched recorded client line -- a request or a
notification to the first one with the same method and equal params, else the
first with the same method (for ``tools/call``: calling the same tool); an
answer (a response to a server's request) to the first with the same id --
and answered with the server lines that followed the match in the
recording. Requests may carry other ids live than recorded: a recorded
response is rewritten to the id of the live request it answers (only then is a
recorded line re-encoded; otherwise its bytes go out exactly as recorded,
invalid UTF-8 included). A ``framing-fault`` event is replayed as an
over-long line (:class:`Overflow`), an ``eof`` event as the peer closing its
output (:class:`Close`) where it was recorded, and a recording whose server
sent a line that killed the client ends with :class:`Close` once every
recorded client line has been matched. A log that records its end (``eof``,
``died``) is taken at its word; an older one, without those events, is taken
to end in the server's death when its last request was never answered.

A call that timed out (a ``timed-out`` event names its request) is replayed
unanswered, so it times out again: an answer to it recorded after its timeout
is held back until the client's next line. A ``dropped`` event (the capture
fell behind and lost entries) is a divergence: the recording is incomplete.

Every way the live client differs from the recording is kept as a
*divergence*, one line of text each:

* a line that matches no recorded line (nothing of that method or id is left);
* a matched line whose JSON differs from the recorded one (compared as JSON
  values: key order and spacing do not matter, but ``1``, ``1.0`` and ``true``
  are three different values). A request's ``id`` is the one member ignored,
  since ids are remapped; an answer's id is the server's and is compared;
* a line sent out of the recorded order, within its stream: the client's own
  requests and notifications are one stream, its answers to the server's
  requests another (the two are written by different threads, so their
  interleaving may legitimately vary);
* at the end (:meth:`Responder.finish`), a recorded client line never sent.

Nothing of the client's is ignored beyond request ids: in particular
``clientInfo`` is compared, and the replay driver makes the client send the
recorded one (:func:`client_info`), so a capture from an older version of the
package still replays.

:func:`schedule` turns the recorded requests into the calls a driver makes on a
fresh client: ``initialize`` (``connect``), ``tools/list`` (one
``list_tools`` per first page; the recorded cursor pages belong to it),
``tools/call`` and ``ping``; it refuses (:class:`LogError`) a log with more
than :data:`MAX_CONCURRENT_CALLS` calls in flight at once, since a driver runs
each overlapping call in a thread of its own.

A log can be anyone's, and large: reading, planning and matching are each
linear in it (one pass with a dict keyed by request id, never a search per
request), and every divergence is :func:`printable`, whatever the log holds.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import (
    Dict,
    FrozenSet,
    Hashable,
    Iterable,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from ..capture import Event, LogEntry, LogError, WireLine, read_log
from ..errors import BadMessage, CorruptionReport, MalformedMessage, MessageFault
from ..jsonrpc import INTERNAL_ERROR, decode, error_response, result_response
from ..jsonvalue import JsonValue, encode, parse
from ..protocol import INITIALIZE, LISTINGS, PING, TOOLS_CALL, TOOLS_LIST
from ..stdio import MAX_LINE_BYTES
from ..text import inert

__all__ = [
    "LogError",
    "Recorded",
    "Overflow",
    "Eof",
    "Write",
    "Close",
    "Action",
    "ServerStep",
    "Script",
    "parse_log",
    "script_of",
    "Responder",
    "Call",
    "schedule",
    "plan",
    "client_info",
    "max_pages",
    "same",
    "DRIVEN_METHODS",
    "MAX_CONCURRENT_CALLS",
    "printable",
]

#: The requests a driver can make a client send again.
DRIVEN_METHODS = (INITIALIZE, TOOLS_LIST, TOOLS_CALL, PING)

#: How much of a line a divergence message shows.
_SHOWN = 300
#: The most calls a replay drives at once: each runs in a thread of its own, so a
#: log with more calls in flight at once than this is refused (:func:`schedule`).
MAX_CONCURRENT_CALLS = 64

Message = Dict[str, JsonValue]


# ----------------------------------------------------------------------------- the script


@dataclass(frozen=True)
class Recorded:
    """One recorded wire line: who sent it, its exact bytes, and its JSON object if any."""

    seq: int
    direction: str  # "send" (the client's) or "recv" (the server's)
    data: bytes
    message: Optional[Message]  # None when the line is not a JSON object

    @property
    def kind(self) -> str:
        """``request``, ``notification``, ``response`` or ``other``."""
        return _kind(self.message)

    @property
    def method(self) -> Optional[str]:
        """The recorded message's ``method``, or ``None`` (a response, or not JSON)."""
        return _method(self.message)

    @property
    def ident(self) -> JsonValue:
        """The recorded message's ``id``, or ``None``."""
        return None if self.message is None else self.message.get("id")

    def show(self) -> str:
        """The recorded line, every unprintable character escaped, for a terminal."""
        return _show(self.data)


@dataclass(frozen=True)
class Overflow:
    """A line too long to frame: ``size`` bytes with no newline (a recorded framing fault)."""

    size: int = MAX_LINE_BYTES + 2


@dataclass(frozen=True)
class Eof:
    """The recorded server closed its stdout here (an ``eof`` event)."""


@dataclass(frozen=True)
class Write:
    """Bytes for the peer to write, newline included."""

    data: bytes


@dataclass(frozen=True)
class Close:
    """The peer closes its output: the recorded server died here."""


Action = Union[Write, Overflow, Close]
ServerStep = Union[Recorded, Overflow, Eof]


@dataclass(frozen=True)
class Script:
    """A capture, arranged for replay.

    ``client[k]`` is the k-th recorded client line; ``after[k]`` the server
    steps between it and the next client line (a late answer to a call that
    timed out is held for the next one); ``prelude`` those before the first.
    ``position[k]`` is where ``client[k]`` sits in ``timeline``, every step in
    recorded order. ``ends_in_death``: the recording shows the server failing
    the client (a line the client could not accept, a framing fault; in a log
    that does not record its end, a last request never answered), so a replay
    ends with :class:`Close`. ``tolerated``: how many lines that are not JSON
    the recorded client skipped (its ``noise-skipped`` events): the first that
    many such lines are no death, and a replaying client is given that
    tolerance. ``timed_out``: the indices in ``client`` of the requests whose
    calls timed out. ``lost``: one note per ``dropped`` event. ``answers[k]``:
    where in ``timeline`` the first response to ``client[k]`` sits, when it is
    a request answered after it (``None`` otherwise), found in one pass.
    """

    client: Tuple[Recorded, ...]
    prelude: Tuple[ServerStep, ...]
    after: Tuple[Tuple[ServerStep, ...], ...]
    timeline: Tuple[ServerStep, ...]
    position: Tuple[int, ...]
    ends_in_death: bool
    tolerated: int = 0
    timed_out: FrozenSet[int] = frozenset()
    lost: Tuple[str, ...] = ()
    answers: Tuple[Optional[int], ...] = ()


@dataclass
class _Reading:
    """What :func:`parse_log` gathers besides the timeline."""

    tolerated: int = 0
    holds: Dict[int, List[Event]] = field(default_factory=dict)  # index -> timed-out events
    lost: List[str] = field(default_factory=list)  # notes of dropped entries
    ended: bool = False  # the log records its end (eof, died)


def parse_log(lines: Iterable[str]) -> Script:
    """Read the lines of a capture log; :class:`LogError` names the first bad one."""
    return script_of(read_log(lines))


def script_of(entries: Iterable[LogEntry]) -> Script:
    """The script of a capture's entries (as :func:`~mcp_client.capture.read_log` gives them)."""
    timeline: List[ServerStep] = []
    reading = _Reading()
    for entry in entries:
        step = _step(entry, len(timeline), reading)
        if step is not None:
            timeline.append(step)
    return _arrange(timeline, reading)


def _step(entry: LogEntry, index: int, reading: _Reading) -> Optional[ServerStep]:
    """The timeline step of ``entry`` (at ``index``), if it is one; events are noted."""
    if isinstance(entry, WireLine):
        return Recorded(entry.seq, entry.direction, entry.data, _message(entry.data))
    if entry.kind == "framing-fault":
        return Overflow()
    if entry.kind == "eof":
        reading.ended = True
        return Eof()
    if entry.kind == "died":
        reading.ended = True
    elif entry.kind == "noise-skipped":
        reading.tolerated += 1
    elif entry.kind == "timed-out":
        reading.holds.setdefault(index, []).append(entry)
    elif entry.kind == "dropped":
        reading.lost.append(
            "the capture lost entries before seq %d (%s): the recording is "
            "incomplete" % (entry.seq, printable(entry.detail[:_SHOWN]))
        )
    return None


def _arrange(timeline: List[ServerStep], reading: _Reading) -> Script:
    holds = reading.holds
    client: List[Recorded] = []
    position: List[int] = []
    groups: List[List[ServerStep]] = [[]]  # groups[0] is the prelude
    late: Set[Tuple[str, Union[int, str]]] = set()  # ids of requests that timed out
    held: List[ServerStep] = []  # their late answers, for the next client line
    for index, step in enumerate(timeline):
        if index in holds:
            late.update(_keys([event.ident for event in holds[index]]))
        if isinstance(step, Recorded) and step.direction == "send":
            client.append(step)
            position.append(index)
            groups.append(held)
            held = []
        elif isinstance(step, Recorded) and step.kind == "response" and _keys([step.ident]) & late:
            late -= _keys([step.ident])
            held.append(step)
        else:
            groups[-1].append(step)
    answers = _answers(timeline, client)
    return Script(
        tuple(client),
        tuple(groups[0]),
        tuple(tuple(g) for g in groups[1:]),
        tuple(timeline),
        tuple(position),
        _ends_in_death(timeline, client, answers, reading.tolerated, reading.ended),
        reading.tolerated,
        _timed_out(timeline, holds),
        tuple(reading.lost),
        answers,
    )


def _keys(idents: Iterable[JsonValue]) -> Set[Tuple[str, Union[int, str]]]:
    return {key for key in map(_id_key, idents) if key is not None}


# Planning is one pass over the timeline each (a dict keyed by request id),
# never a search per request: a log of 8,000 pings once took 25 s to plan.


def _answers(
    timeline: Sequence[ServerStep], client: Sequence[Recorded]
) -> Tuple[Optional[int], ...]:
    """For each client line, where the first response to it sits after it (requests only)."""
    found: List[Optional[int]] = [None] * len(client)
    waiting: Dict[Hashable, List[int]] = {}  # request id -> client numbers not yet answered
    number = 0
    for index, step in enumerate(timeline):
        if not isinstance(step, Recorded):
            continue
        if step.direction == "send":
            if step.kind == "request":
                waiting.setdefault(_canonical(step.ident), []).append(number)
            number += 1
        elif step.kind == "response":
            for asked in waiting.pop(_canonical(step.ident), ()):
                found[asked] = index
    return tuple(found)


def _timed_out(timeline: Sequence[ServerStep], holds: Dict[int, List[Event]]) -> FrozenSet[int]:
    """The client indices of the requests the timed-out events name (for each
    event, the last request before it with its id and method)."""
    found: Set[int] = set()
    latest: Dict[Tuple[Optional[str], Hashable], int] = {}  # (method, id) -> client number
    number = 0
    for index in range(len(timeline) + 1):  # an event is noted before the step at its index
        for event in holds.get(index, ()):
            asked = latest.get((event.method, _canonical(event.ident)))
            if asked is not None:
                found.add(asked)
        step = timeline[index] if index < len(timeline) else None
        if isinstance(step, Recorded) and step.direction == "send":
            if step.kind == "request":
                latest[(step.method, _canonical(step.ident))] = number
            number += 1
    return frozenset(found)


def _canonical(value: JsonValue) -> Hashable:
    """A hashable key, equal for two values exactly when :func:`same` says so."""
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    return (type(value).__name__, value)


def _ends_in_death(
    timeline: Sequence[ServerStep],
    client: Sequence[Recorded],
    answers: Sequence[Optional[int]],
    tolerated: int,
    ended: bool,
) -> bool:
    noise = 0
    for step in timeline:
        if isinstance(step, Overflow):
            return True
        if isinstance(step, Eof):  # replayed where it was recorded
            continue
        fault = _fault(step.data) if step.direction == "recv" else None
        if isinstance(fault, MalformedMessage):
            noise += 1
        if isinstance(fault, BadMessage) or noise > tolerated:
            return True
    if ended:  # the log says how it ended: no guessing
        return False
    requests = [number for number, line in enumerate(client) if line.kind == "request"]
    return bool(requests) and answers[requests[-1]] is None


def _fault(data: bytes) -> Optional[MessageFault]:
    try:
        decode(data)
    except MessageFault as fault:
        return fault
    return None


# ----------------------------------------------------------------------------- messages


def _message(data: bytes) -> Optional[Message]:
    try:
        value = parse(data)
    except CorruptionReport:
        return None
    return value if type(value) is dict else None


def _method(message: Optional[Message]) -> Optional[str]:
    method = None if message is None else message.get("method")
    return method if type(method) is str else None


def _kind(message: Optional[Message]) -> str:
    if message is None:
        return "other"
    if "method" in message:
        if _method(message) is None:
            return "other"
        return "request" if "id" in message else "notification"
    return "response" if "id" in message else "other"


def _show(data: bytes) -> str:
    text = data.decode("utf-8", "backslashreplace")
    return printable(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")


def printable(text: str) -> str:
    """``text`` fit for a terminal: every character that is not printable (an
    escape, a newline, a bidi override) spelt ``\\xNN``/``\\uNNNN``/``\\UNNNNNNNN``.
    A divergence quotes the log, and the log is whatever its writer put there."""
    return inert(text)


def same(a: JsonValue, b: JsonValue) -> bool:
    """JSON equality: key order ignored, but ``1``, ``1.0`` and ``true`` all differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def _without_id(message: Message) -> Message:
    return {key: value for key, value in message.items() if key != "id"}


def _id_key(ident: JsonValue) -> Optional[Tuple[str, Union[int, str]]]:
    if type(ident) is int or type(ident) is str:
        return (type(ident).__name__, ident)
    return None


def _exact_key(kind: str, message: Message) -> Hashable:
    """Equal for a recorded and a live line that fit best: an answer by its id,
    anything else by its method and params (compared as :func:`same` does)."""
    if kind == "response":
        return (kind, _canonical(message.get("id")))
    return (kind, _method(message), _canonical(message.get("params")))


def _alike_key(kind: str, message: Message) -> Optional[Hashable]:
    """Equal for lines that fit at all, if not best: the same method; for
    ``tools/call`` the same tool (another tool's answer is never the right one)."""
    if kind == "response":
        return None
    if _method(message) == TOOLS_CALL:
        name = _tool_name(message)
        return None if name is None else (kind, TOOLS_CALL, name)
    return (kind, _method(message))


class _Unmatched:
    """Client line indices in recorded order, and the first not yet matched."""

    __slots__ = ("_indices", "_next")

    def __init__(self) -> None:
        self._indices: List[int] = []
        self._next = 0  # every index before it is matched: matches are never undone

    def add(self, index: int) -> None:
        self._indices.append(index)

    def first(self, matched: Sequence[bool]) -> Optional[int]:
        while self._next < len(self._indices) and matched[self._indices[self._next]]:
            self._next += 1
        return self._indices[self._next] if self._next < len(self._indices) else None


def _tool_name(message: Message) -> Optional[str]:
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return name if _method(message) == TOOLS_CALL and isinstance(name, str) else None


def _describe(message: Message) -> str:
    kind = _kind(message)
    if kind == "response":
        return "an answer to the server's request %s" % _show(encode(message.get("id")))
    return "%s %s" % (kind, _method(message))


# ----------------------------------------------------------------------------- the responder


class Responder:
    """The server's side of a replay: for each live client line, what to write back.

    Not thread-safe: one peer drives it (a driver reading :meth:`matched` from
    another thread must hold its own lock around both).
    """

    def __init__(self, script: Script) -> None:
        self._script = script
        self._matched = [False] * len(script.client)
        self._ids: Dict[Tuple[str, Union[int, str]], JsonValue] = {}  # recorded -> live
        self.divergences: List[str] = []
        # The candidates of each match, in recorded order, so that a match costs
        # what it skips, once: an exact one (same params, or an answer's id) and,
        # failing it, the first of the same method (of the same tool).
        self._exact: Dict[Hashable, _Unmatched] = {}
        self._alike: Dict[Hashable, _Unmatched] = {}
        self._streams = {False: _Unmatched(), True: _Unmatched()}  # answers or not
        for index, recorded in enumerate(script.client):
            self._streams[recorded.kind == "response"].add(index)
            if recorded.message is not None and recorded.kind != "other":
                self._index(index, recorded.kind, recorded.message)

    def _index(self, index: int, kind: str, message: Message) -> None:
        self._exact.setdefault(_exact_key(kind, message), _Unmatched()).add(index)
        alike = _alike_key(kind, message)
        if alike is not None:
            self._alike.setdefault(alike, _Unmatched()).add(index)

    def opening(self) -> List[Action]:
        """What the server wrote before the client's first line."""
        return [self._action(step) for step in self._script.prelude]

    def matched(self, index: int) -> bool:
        """Whether recorded client line ``index`` has been matched by a live line."""
        return self._matched[index]

    def answer(self, line: bytes) -> List[Action]:
        """Match one live client line and return the recorded server steps that followed."""
        live = _message(line)
        kind = _kind(live)
        if live is None or kind == "other":
            self._diverge("the client sent a line that is not a JSON-RPC message: %s" % _show(line))
            return []
        index = self._find(kind, live)
        if index is None:
            self._diverge(
                "the client sent %s that the recording does not have (or has no "
                "more of): %s" % (_describe(live), _show(line))
            )
            return self._unmatched(kind, live)
        return self._replay(index, kind, live)

    def finish(self) -> List[str]:
        """Every divergence, including each recorded client line never sent."""
        missing = [
            "the client never sent recorded line seq %d: %s" % (line.seq, line.show())
            for line, done in zip(self._script.client, self._matched)
            if not done
        ]
        return self.divergences + missing

    # -------------------------------------------------------------- matching

    def _find(self, kind: str, live: Message) -> Optional[int]:
        """The best unmatched candidate: equal params first, then the first of the same
        method (``tools/call``: of the same tool); for answers, the same id."""
        exact = self._exact.get(_exact_key(kind, live))
        found = None if exact is None else exact.first(self._matched)
        alike_key = _alike_key(kind, live)
        if found is None and alike_key is not None and alike_key in self._alike:
            found = self._alike[alike_key].first(self._matched)
        return found

    def _replay(self, index: int, kind: str, live: Message) -> List[Action]:
        recorded = self._script.client[index]
        assert recorded.message is not None
        self._check_order(index, kind)
        self._matched[index] = True
        self._compare(recorded, recorded.message, live, kind)
        if kind == "request":
            key = _id_key(recorded.ident)
            if key is not None:
                self._ids[key] = live.get("id")
        actions = [self._action(step) for step in self._script.after[index]]
        if self._script.ends_in_death and all(self._matched):
            actions.append(Close())
        return actions

    def _check_order(self, index: int, kind: str) -> None:
        earlier = self._streams[kind == "response"].first(self._matched)
        if earlier is not None and earlier < index:
            recorded = self._script.client[earlier]
            self._diverge(
                "out of order: the recording has seq %d (%s) before seq %d"
                % (recorded.seq, recorded.show(), self._script.client[index].seq)
            )

    def _compare(self, recorded: Recorded, message: Message, live: Message, kind: str) -> None:
        expected, actual = message, live
        if kind == "request":
            expected, actual = _without_id(message), _without_id(live)
        if same(expected, actual):
            return
        # Served, a call with other arguments still gets the recorded answer (the
        # same tool's, never another's): say so, or the answer reads as the truth.
        answered = (
            "tools/call %s with other arguments than recorded, answered with the "
            "recorded answer: " % _show(encode(_tool_name(live)))
            if kind == "request" and _tool_name(live) is not None
            else ""
        )
        self._diverge(
            "seq %d differs: %sthe client sent %s; the recording has %s"
            % (recorded.seq, answered, _show(encode(live)), recorded.show())
        )

    def _unmatched(self, kind: str, live: Message) -> List[Action]:
        ident = live.get("id")
        if kind != "request" or (type(ident) is not int and type(ident) is not str):
            return []
        if _method(live) == PING:  # the spec's MUST, even beyond the recording
            return [Write(encode(result_response(ident, {})) + b"\n")]
        reply = error_response(
            ident, INTERNAL_ERROR, "replay: the recording has no answer left for %s" % _method(live)
        )
        return [Write(encode(reply) + b"\n")]

    def _action(self, step: ServerStep) -> Action:
        if isinstance(step, Overflow):
            return step
        if isinstance(step, Eof):
            return Close()
        if step.kind == "response" and step.message is not None:
            key = _id_key(step.ident)
            if key is not None and key in self._ids and not same(self._ids[key], step.ident):
                return Write(encode(dict(step.message, id=self._ids[key])) + b"\n")
        return Write(step.data + b"\n")

    def _diverge(self, text: str) -> None:
        self.divergences.append(printable(text))  # it may quote a live line: --serve's client


# ----------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Call:
    """One call a driver makes: its method and params as recorded.

    ``index`` is its (first) request in ``Script.client``. ``answered``: the
    recording holds a response to that request, and no ``timed-out`` event
    for it (a late answer does not count). ``overlaps``: that response is
    not recorded before the next call's request, so the next call must not
    wait for this one (it was concurrent, or this one timed out).
    ``pages``: for a listing (``protocol.LISTINGS``), how many page requests it holds,
    and ``capped`` whether the last one still had a ``nextCursor``.
    """

    method: str
    params: JsonValue
    index: int
    answered: bool
    overlaps: bool
    pages: int = 1
    capped: bool = False

    def label(self) -> str:
        """``tools/call NAME`` for a tool call, the method otherwise."""
        if self.method == TOOLS_CALL and isinstance(self.params, dict):
            name = self.params.get("name")
            return "tools/call %s" % (name if isinstance(name, str) else _show(encode(name)))
        return self.method


def schedule(script: Script) -> Tuple[List[Call], List[str]]:
    """The calls to drive, and a note for each recorded request no call can reproduce
    and for each loss the capture recorded.

    :class:`LogError` when the recording has more than
    :data:`MAX_CONCURRENT_CALLS` calls in flight at once.
    """
    calls: List[Call] = []
    notes: List[str] = list(script.lost)
    for index, line in enumerate(script.client):
        if line.kind != "request" or line.message is None:
            continue
        params = line.message.get("params")
        if (
            line.method in LISTINGS
            and _is_cursor_page(params)
            and calls
            and calls[-1].method == line.method
        ):
            calls[-1] = _next_page(script, calls[-1], index)
        elif line.method in DRIVEN_METHODS and _drivable(line.method, params):
            calls.append(_call(script, index, str(line.method), params))
        else:
            notes.append("cannot drive recorded request seq %d: %s" % (line.seq, line.show()))
    calls = _with_overlaps(script, calls)
    _check_concurrency(script, calls)
    return calls, notes


#: The old name of :func:`schedule` (a word the package now spends on one thing:
#: ``schema.plan``), kept for those who call it.
plan = schedule


def _check_concurrency(script: Script, calls: Sequence[Call]) -> None:
    """Refuse a log a driver would need too many threads for.

    A driver waits for each call before the next unless the call overlaps it
    (:attr:`Call.overlaps`); an overlapping call stays in flight until its
    recorded answer, or for good when it has none (it waits for its timeout).
    """
    ends: List[float] = []  # a heap: where the calls still in flight end
    for call in calls:
        start = script.position[call.index]
        while ends and ends[0] < start:
            heapq.heappop(ends)
        if len(ends) + 1 > MAX_CONCURRENT_CALLS:
            raise LogError(
                "the log has more than %d calls in flight at once (at seq %d); a "
                "replay drives at most %d at once, each in a thread of its own"
                % (MAX_CONCURRENT_CALLS, script.client[call.index].seq, MAX_CONCURRENT_CALLS)
            )
        if call.overlaps:
            answer = script.answers[call.index]
            heapq.heappush(
                ends, float("inf") if answer is None or not call.answered else float(answer)
            )


def _is_cursor_page(params: JsonValue) -> bool:
    return isinstance(params, dict) and "cursor" in params


def _drivable(method: Optional[str], params: JsonValue) -> bool:
    if method == TOOLS_CALL:
        return (
            isinstance(params, dict)
            and isinstance(params.get("name"), str)
            and isinstance(params.get("arguments", {}), dict)
        )
    return method not in LISTINGS or not _is_cursor_page(params)


def _call(script: Script, index: int, method: str, params: JsonValue) -> Call:
    answer = script.answers[index]
    capped = method in LISTINGS and _has_cursor(script, answer)
    answered = answer is not None and index not in script.timed_out
    return Call(method, params, index, answered, False, 1, capped)


def _next_page(script: Script, call: Call, index: int) -> Call:
    answer = script.answers[index]
    answered = call.answered and answer is not None and index not in script.timed_out
    return Call(
        call.method,
        call.params,
        call.index,
        answered,
        False,
        call.pages + 1,
        _has_cursor(script, answer),
    )


def _has_cursor(script: Script, answer: Optional[int]) -> bool:
    step = None if answer is None else script.timeline[answer]
    if not isinstance(step, Recorded) or step.message is None:
        return False
    result = step.message.get("result")
    return (
        isinstance(result, dict)
        and isinstance(result.get("nextCursor"), str)
        and bool(result.get("nextCursor"))
    )


def _with_overlaps(script: Script, calls: List[Call]) -> List[Call]:
    done: List[Call] = []
    for number, call in enumerate(calls):
        overlaps = False
        if number + 1 < len(calls) and call.method not in LISTINGS:
            answer = script.answers[call.index]
            next_request = script.position[calls[number + 1].index]
            overlaps = answer is None or answer > next_request
        done.append(
            Call(
                call.method,
                call.params,
                call.index,
                call.answered,
                overlaps,
                call.pages,
                call.capped,
            )
        )
    return done


def client_info(script: Script) -> Optional[Tuple[str, str]]:
    """The ``clientInfo`` (name, version) of the recorded ``initialize``, if readable."""
    for line in script.client:
        if line.method == INITIALIZE and line.message is not None:
            params = line.message.get("params")
            info = params.get("clientInfo") if isinstance(params, dict) else None
            if isinstance(info, dict):
                name, version = info.get("name"), info.get("version")
                if isinstance(name, str) and isinstance(version, str):
                    return name, version
    return None


def max_pages(calls: Sequence[Call]) -> Optional[int]:
    """The ``max_tool_pages`` the recorded client must have had, when a listing shows it."""
    capped = [call.pages for call in calls if call.method == TOOLS_LIST and call.capped]
    return min(capped) if capped else None
