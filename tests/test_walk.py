"""A listing walked by the reader thread (``_requests.Walk``): each answered page
asks for the next from the reader, and the caller wakes once. These tests drive
every way a walk can end other than its last page -- a page the reader cannot
write, a deadline or an interrupt while the reader holds a page, a server error,
a death, an unencodable cursor, a bug of ours -- and check that the caller is
woken once with the right error, that no page is asked for after the walk
ended, and that nothing is left in the table."""

from __future__ import annotations

import signal
import threading
import unittest
from typing import Any, Callable, Dict, List, Optional

from mcp_client import Options, State, start
from mcp_client.errors import (
    CallTimedOut,
    ClientBroken,
    EncodeRefused,
    ServerError,
)
from mcp_client.protocol import TOOLS_LISTING, Listing
from mcp_client.transport import ChannelPeer

from support import LONG, OPTIONS, SHORT, answer, channel, wait_until, writes_idle

Handler = Callable[[Dict[str, Any], ChannelPeer], None]


def body(names: List[str], next_cursor: Optional[str]) -> Dict[str, Any]:
    page: Dict[str, Any] = {"tools": [{"name": n, "inputSchema": {}} for n in names]}
    if next_cursor is not None:
        page["nextCursor"] = next_cursor
    return page


def pages_of(
    seen: List[Optional[str]], special: Optional[Dict[Optional[str], Handler]] = None
) -> Handler:
    """Page ``c`` (the cursor, ``None`` first) lists ``t<c>`` and points to ``c + 1``,
    for ever; ``special`` answers some cursors its own way."""

    def tools_list(request: Dict[str, Any], peer: ChannelPeer) -> None:
        cursor = (request.get("params") or {}).get("cursor")
        seen.append(cursor)
        if special and cursor in special:
            special[cursor](request, peer)
            return
        index = int(cursor or 0)
        answer(peer, request, body(["t%d" % index], str(index + 1) if index < 3 else None))

    return tools_list


class _Tap:
    """Wraps one method of an object, recording what it returned and signalling."""

    def __init__(self, owner: Any, name: str) -> None:
        self.results: List[Any] = []
        self.called = threading.Event()
        original = getattr(owner, name)

        def tapped(*args: Any) -> Any:
            result = original(*args)
            self.results.append(result)
            self.called.set()
            return result

        setattr(owner, name, tapped)


class HandedBack(unittest.TestCase):
    def test_a_page_the_reader_cannot_write_is_written_by_its_caller(self) -> None:
        # The writer's lock is held here while the first page is answered: the
        # reader must not wait for it, so the second page goes back to the caller,
        # who writes it once the lock is free; the listing comes out whole.
        # Pages 2 and 3 are answered only once nobody holds the writing turn or the
        # writer's lock (the caller writing page 2 may still hold them when its answer
        # comes): then the reader writes pages 3 and 4 itself, for certain.
        seen: List[Optional[str]] = []
        go = threading.Event()
        held: List[Any] = []

        def when_idle(request: Dict[str, Any], peer: ChannelPeer) -> None:
            wait_until(lambda: writes_idle(held[0]))
            index = int(request["params"]["cursor"])
            answer(peer, request, body(["t%d" % index], str(index + 1)))

        special: Dict[Optional[str], Handler] = {
            None: lambda request, peer: (go.wait(LONG), answer(peer, request, body(["t0"], "1"))),
            "1": when_idle,
            "2": when_idle,
        }
        with start(channel({"tools/list": pages_of(seen, special)}), OPTIONS) as client:
            held.append(client)
            outbox = client._requests._outbox
            tap = _Tap(outbox, "try_send")
            writer_lock = client._session.conn._writer._lock
            listed: List[Any] = []
            lister = threading.Thread(target=lambda: listed.append(client.list_tools()))
            lister.start()
            self.assertTrue(wait_until(lambda: seen == [None]))
            with writer_lock:
                go.set()
                self.assertTrue(tap.called.wait(LONG))
                self.assertEqual(tap.results, [False], "the reader could not write page 2")
                self.assertEqual(seen, [None])
            lister.join(LONG)
            self.assertEqual([t.name for t in listed[0]], ["t0", "t1", "t2", "t3"])
            self.assertEqual(seen, [None, "1", "2", "3"])
            self.assertEqual(tap.results, [False, True, True], "pages 3 and 4 by the reader")
            self.assertEqual(client.in_flight, 0)


class Deadline(unittest.TestCase):
    def test_a_silent_page_times_the_walk_out_and_its_late_answer_is_dropped(self) -> None:
        seen: List[Optional[str]] = []
        late: List[Any] = []
        silent = {"2": lambda request, peer: late.append((request, peer))}
        with start(channel({"tools/list": pages_of(seen, silent)}), OPTIONS) as client:
            with self.assertRaises(CallTimedOut) as caught:
                client.list_tools(timeout=SHORT)
            self.assertEqual(caught.exception.method, "tools/list")
            self.assertEqual(client.in_flight, 0)
            request, peer = late[0]
            answer(peer, request, body(["t2"], "3"))  # late: no page 4 may follow it
            client.ping()
            self.assertEqual(seen, [None, "1", "2"])
            self.assertIs(client.state, State.READY)

    def test_a_deadline_while_the_reader_holds_a_page_asks_for_no_more(self) -> None:
        # The reader holds page 1 (its listing's params() blocks) past the
        # deadline: the timer finds nothing to time out, the caller's backstop
        # gives the walk up, and the reader, seeing that, times page 1 out
        # instead of asking for page 2.
        seen: List[Optional[str]] = []
        abandoned = threading.Event()

        def params(cursor: Optional[str]) -> Any:
            if cursor is not None:
                abandoned.wait(LONG)
            return TOOLS_LISTING.params(cursor)

        slow = Listing(TOOLS_LISTING.method, params, TOOLS_LISTING.items)
        with start(channel({"tools/list": pages_of(seen)}), OPTIONS) as client:
            requests = client._requests
            give_up = requests._abandon

            def abandon(walk: Any, timed_out: bool) -> None:
                give_up(walk, timed_out)
                abandoned.set()

            requests._abandon = abandon
            with self.assertRaises(CallTimedOut):
                requests.list_all(slow, SHORT, 10)
            self.assertTrue(abandoned.is_set())
            client.ping()
            self.assertEqual(seen, [None])
            self.assertEqual(client.in_flight, 0)


class Interrupted(Exception):
    pass


class Interrupt(unittest.TestCase):
    def setUp(self) -> None:
        def handler(signum: int, frame: Any) -> None:
            raise Interrupted()

        self.previous = signal.signal(signal.SIGUSR1, handler)

    def tearDown(self) -> None:
        signal.signal(signal.SIGUSR1, self.previous)

    def test_an_interrupted_listing_asks_for_no_more_pages(self) -> None:
        seen: List[Optional[str]] = []
        held: List[Any] = []
        main = threading.get_ident()

        def interrupt(request: Dict[str, Any], peer: ChannelPeer) -> None:
            if held:  # the second listing: answered as any other
                answer(peer, request, body(["t1"], "2"))
                return
            held.append((request, peer))
            signal.pthread_kill(main, signal.SIGUSR1)

        with start(channel({"tools/list": pages_of(seen, {"1": interrupt})}), OPTIONS) as client:
            with self.assertRaises(Interrupted):
                client.list_tools()
            self.assertEqual(client.in_flight, 0, "nobody awaits page 2 any more")
            request, peer = held[0]
            answer(peer, request, body(["t1"], "2"))  # dropped: no page 3 follows it
            client.ping()
            self.assertEqual(seen, [None, "1"])
            self.assertEqual([t.name for t in client.list_tools()], ["t0", "t1", "t2", "t3"])
            self.assertEqual(seen, [None, "1", None, "1", "2", "3"])


class Endings(unittest.TestCase):
    def test_an_error_answer_to_a_middle_page_fails_the_walk(self) -> None:
        seen: List[Optional[str]] = []

        def refuse(request: Dict[str, Any], peer: ChannelPeer) -> None:
            error = {"code": -32602, "message": "bad cursor"}
            peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

        with start(channel({"tools/list": pages_of(seen, {"2": refuse})}), OPTIONS) as client:
            with self.assertRaises(ServerError) as caught:
                client.list_tools()
            self.assertIn("bad cursor", str(caught.exception))
            self.assertEqual(client.in_flight, 0)
            client.ping()
            self.assertEqual(seen, [None, "1", "2"])

    def test_a_server_dying_mid_walk_breaks_it_at_once(self) -> None:
        seen: List[Optional[str]] = []
        die = {"1": lambda request, peer: peer.close_output()}
        with start(channel({"tools/list": pages_of(seen, die)}), OPTIONS) as client:
            with self.assertRaises(ClientBroken) as caught:
                client.list_tools()
            self.assertIn("closed its stdout", str(caught.exception))
            self.assertIs(client.state, State.BROKEN)

    def test_an_unencodable_cursor_is_raised_after_its_page_is_decoded(self) -> None:
        seen: List[Optional[str]] = []
        # "\ud800" is valid JSON text, but a lone surrogate has no UTF-8: no frame.
        lone = {
            None: lambda request, peer: peer.write(
                b'{"jsonrpc":"2.0","id":%d,"result":{"tools":[],"nextCursor":"\\ud800"}}\n'
                % request["id"]
            )
        }
        with start(channel({"tools/list": pages_of(seen, lone)}), OPTIONS) as client:
            with self.assertRaises(EncodeRefused):
                client.list_tools()
            self.assertEqual(client.in_flight, 0)
            client.ping()
            self.assertEqual(seen, [None])

    def test_a_bug_in_a_page_decoder_breaks_the_client_and_wakes_the_caller(self) -> None:
        def items(raw: Any) -> Any:
            raise RuntimeError("a bug of ours")

        buggy = Listing(TOOLS_LISTING.method, TOOLS_LISTING.params, items)
        seen: List[Optional[str]] = []
        options = Options(handshake_timeout=LONG, request_timeout=LONG, retire_timeout=LONG)
        with start(channel({"tools/list": pages_of(seen)}), options) as client:
            with self.assertLogs("mcp_client", "ERROR"):
                with self.assertRaises(ClientBroken) as caught:
                    client._requests.list_all(buggy, float("inf"), 10)
            self.assertIn("internal error in a listing", str(caught.exception))
            self.assertTrue(wait_until(lambda: client.state is State.BROKEN))


if __name__ == "__main__":
    unittest.main()
