"""Replaying a wire capture: the log read as a script, and the answers a peer owes.

Pure: no I/O, no threads, no clocks (:mod:`mcp_client.replay_run` does those). A
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

:func:`plan` turns the recorded requests into the calls a driver makes on a
fresh client: ``initialize`` (``connect``), ``tools/list`` (one
``list_tools`` per first page; the recorded cursor pages belong to it),
``tools/call`` and ``ping``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union

from .capture import Event, LogEntry, LogError, WireLine, read_log
from .errors import BadMessage, CorruptionReport, MalformedMessage, MessageFault
from .jsonrpc import INTERNAL_ERROR, decode, error_response, result_response
from .jsonvalue import JsonValue, encode, parse
from .stdio import MAX_LINE_BYTES

__all__ = [
    "LogError", "Recorded", "Overflow", "Eof", "Write", "Close", "Action", "ServerStep",
    "Script",
    "parse_log", "script_of", "Responder", "Call", "plan", "client_info", "max_pages", "same",
    "DRIVEN_METHODS",
]

#: The requests a driver can make a client send again.
DRIVEN_METHODS = ("initialize", "tools/list", "tools/call", "ping")

#: How much of a line a divergence message shows.
_SHOWN = 300

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
        return _method(self.message)

    @property
    def ident(self) -> JsonValue:
        return None if self.message is None else self.message.get("id")

    def show(self) -> str:
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
    calls timed out. ``lost``: one note per ``dropped`` event.
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
        reading.lost.append("the capture lost entries before seq %d (%s): the recording is "
                            "incomplete" % (entry.seq, entry.detail))
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
    return Script(tuple(client), tuple(groups[0]), tuple(tuple(g) for g in groups[1:]),
                  tuple(timeline), tuple(position),
                  _ends_in_death(timeline, client, reading.tolerated, reading.ended),
                  reading.tolerated, _timed_out(timeline, position, holds),
                  tuple(reading.lost))


def _keys(idents: Iterable[JsonValue]) -> Set[Tuple[str, Union[int, str]]]:
    return {key for key in map(_id_key, idents) if key is not None}


def _timed_out(timeline: Sequence[ServerStep], position: Sequence[int],
               holds: Dict[int, List[Event]]) -> FrozenSet[int]:
    """The client indices of the requests the timed-out events name (for each
    event, the last request before it with its id and method)."""
    found: Set[int] = set()
    for index, events in holds.items():
        for event in events:
            found.update(_requested(timeline, position, index, event)[-1:])
    return frozenset(found)


def _requested(timeline: Sequence[ServerStep], position: Sequence[int], before: int,
               event: Event) -> List[int]:
    return [number for number, at in enumerate(position)
            if at < before and _asked(timeline[at], event)]


def _asked(step: ServerStep, event: Event) -> bool:
    return isinstance(step, Recorded) and step.kind == "request" \
        and step.method == event.method and same(step.ident, event.ident)


def _ends_in_death(timeline: Sequence[ServerStep], client: Sequence[Recorded],
                   tolerated: int, ended: bool) -> bool:
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
    requests = [line for line in client if line.kind == "request"]
    return bool(requests) and _response_index(timeline, requests[-1]) is None


def _fault(data: bytes) -> Optional[MessageFault]:
    try:
        decode(data)
    except MessageFault as fault:
        return fault
    return None


def _response_index(timeline: Sequence[ServerStep], request: Recorded) -> Optional[int]:
    """Where in ``timeline`` the first response to ``request`` sits, if anywhere after it."""
    start = timeline.index(request)
    for index in range(start + 1, len(timeline)):
        step = timeline[index]
        if (isinstance(step, Recorded) and step.direction == "recv" and step.kind == "response"
                and same(step.ident, request.ident)):
            return index
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
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


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


def _rank(kind: str, recorded: Message, live: Message) -> Optional[int]:
    """How well a recorded client line fits a live one: 0 best, ``None`` not at all."""
    if kind == "response":
        return 0 if same(recorded.get("id"), live.get("id")) else None
    if _method(recorded) != _method(live):
        return None
    if same(recorded.get("params"), live.get("params")):
        return 0
    if _method(live) == "tools/call":  # another tool's answer is never the right one
        name = _tool_name(live)
        return 1 if name is not None and _tool_name(recorded) == name else None
    return 1


def _tool_name(message: Message) -> Optional[str]:
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return name if _method(message) == "tools/call" and isinstance(name, str) else None


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
            self._diverge("the client sent a line that is not a JSON-RPC message: %s"
                          % _show(line))
            return []
        index = self._find(kind, live)
        if index is None:
            self._diverge("the client sent %s that the recording does not have (or has no "
                          "more of): %s" % (_describe(live), _show(line)))
            return self._unmatched(kind, live)
        return self._replay(index, kind, live)

    def finish(self) -> List[str]:
        """Every divergence, including each recorded client line never sent."""
        missing = ["the client never sent recorded line seq %d: %s" % (line.seq, line.show())
                   for line, done in zip(self._script.client, self._matched) if not done]
        return self.divergences + missing

    # -------------------------------------------------------------- matching

    def _find(self, kind: str, live: Message) -> Optional[int]:
        """The best unmatched candidate: equal params first, then the first of the same
        method (``tools/call``: of the same tool); for answers, the same id."""
        best: Optional[Tuple[int, int]] = None
        for index, recorded in enumerate(self._script.client):
            if self._matched[index] or recorded.kind != kind or recorded.message is None:
                continue
            rank = _rank(kind, recorded.message, live)
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, index)
                if rank == 0:
                    break
        return None if best is None else best[1]

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
        answers = kind == "response"
        for earlier in range(index):
            recorded = self._script.client[earlier]
            if not self._matched[earlier] and (recorded.kind == "response") == answers:
                self._diverge("out of order: the recording has seq %d (%s) before seq %d"
                              % (recorded.seq, recorded.show(), self._script.client[index].seq))
                return

    def _compare(self, recorded: Recorded, message: Message, live: Message, kind: str) -> None:
        expected, actual = message, live
        if kind == "request":
            expected, actual = _without_id(message), _without_id(live)
        if same(expected, actual):
            return
        # Served, a call with other arguments still gets the recorded answer (the
        # same tool's, never another's): say so, or the answer reads as the truth.
        answered = ("tools/call %s with other arguments than recorded, answered with the "
                    "recorded answer: " % _show(encode(_tool_name(live))) if kind == "request"
                    and _tool_name(live) is not None else "")
        self._diverge("seq %d differs: %sthe client sent %s; the recording has %s"
                      % (recorded.seq, answered, _show(encode(live)), recorded.show()))

    def _unmatched(self, kind: str, live: Message) -> List[Action]:
        ident = live.get("id")
        if kind != "request" or (type(ident) is not int and type(ident) is not str):
            return []
        if _method(live) == "ping":  # the spec's MUST, even beyond the recording
            return [Write(encode(result_response(ident, {})) + b"\n")]
        reply = error_response(ident, INTERNAL_ERROR, "replay: the recording has no answer "
                               "left for %s" % _method(live))
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
        self.divergences.append(text)


# ----------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Call:
    """One call a driver makes: its method and params as recorded.

    ``index`` is its (first) request in ``Script.client``. ``answered``: the
    recording holds a response to that request, and no ``timed-out`` event
    for it (a late answer does not count). ``overlaps``: that response is
    not recorded before the next call's request, so the next call must not
    wait for this one (it was concurrent, or this one timed out).
    ``pages``: for ``tools/list``, how many page requests the recording holds,
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
        if self.method == "tools/call" and isinstance(self.params, dict):
            name = self.params.get("name")
            return "tools/call %s" % (name if isinstance(name, str) else _show(encode(name)))
        return self.method


def plan(script: Script) -> Tuple[List[Call], List[str]]:
    """The calls to drive, and a note for each recorded request no call can reproduce
    and for each loss the capture recorded."""
    calls: List[Call] = []
    notes: List[str] = list(script.lost)
    for index, line in enumerate(script.client):
        if line.kind != "request" or line.message is None:
            continue
        params = line.message.get("params")
        if line.method == "tools/list" and _is_cursor_page(params) and calls \
                and calls[-1].method == "tools/list":
            calls[-1] = _next_page(script, calls[-1], index)
        elif line.method in DRIVEN_METHODS and _drivable(line.method, params):
            calls.append(_call(script, index, str(line.method), params))
        else:
            notes.append("cannot drive recorded request seq %d: %s" % (line.seq, line.show()))
    return _with_overlaps(script, calls), notes


def _is_cursor_page(params: JsonValue) -> bool:
    return isinstance(params, dict) and "cursor" in params


def _drivable(method: Optional[str], params: JsonValue) -> bool:
    if method == "tools/call":
        return (isinstance(params, dict) and isinstance(params.get("name"), str)
                and isinstance(params.get("arguments", {}), dict))
    return method != "tools/list" or not _is_cursor_page(params)


def _call(script: Script, index: int, method: str, params: JsonValue) -> Call:
    answer = _response_index(script.timeline, script.client[index])
    capped = method == "tools/list" and _has_cursor(script, answer)
    answered = answer is not None and index not in script.timed_out
    return Call(method, params, index, answered, False, 1, capped)


def _next_page(script: Script, call: Call, index: int) -> Call:
    answer = _response_index(script.timeline, script.client[index])
    answered = call.answered and answer is not None and index not in script.timed_out
    return Call(call.method, call.params, call.index, answered, False, call.pages + 1,
                _has_cursor(script, answer))


def _has_cursor(script: Script, answer: Optional[int]) -> bool:
    step = None if answer is None else script.timeline[answer]
    if not isinstance(step, Recorded) or step.message is None:
        return False
    result = step.message.get("result")
    return isinstance(result, dict) and isinstance(result.get("nextCursor"), str) \
        and bool(result.get("nextCursor"))


def _with_overlaps(script: Script, calls: List[Call]) -> List[Call]:
    done: List[Call] = []
    for number, call in enumerate(calls):
        overlaps = False
        if number + 1 < len(calls) and call.method != "tools/list":
            answer = _response_index(script.timeline, script.client[call.index])
            next_request = script.position[calls[number + 1].index]
            overlaps = answer is None or answer > next_request
        done.append(Call(call.method, call.params, call.index, call.answered, overlaps,
                         call.pages, call.capped))
    return done


def client_info(script: Script) -> Optional[Tuple[str, str]]:
    """The ``clientInfo`` (name, version) of the recorded ``initialize``, if readable."""
    for line in script.client:
        if line.method == "initialize" and line.message is not None:
            params = line.message.get("params")
            info = params.get("clientInfo") if isinstance(params, dict) else None
            if isinstance(info, dict):
                name, version = info.get("name"), info.get("version")
                if isinstance(name, str) and isinstance(version, str):
                    return name, version
    return None


def max_pages(calls: Sequence[Call]) -> Optional[int]:
    """The ``max_tool_pages`` the recorded client must have had, when a listing shows it."""
    capped = [call.pages for call in calls if call.method == "tools/list" and call.capped]
    return min(capped) if capped else None
