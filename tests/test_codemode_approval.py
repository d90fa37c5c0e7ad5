"""Calls that wait for a person's yes, in the library: ``Policy(approve=...)``, an
approver asked while the program waits in its call, and, with none, a run stopped at
the call and resumed by its token, every earlier call answered from the first run's
log.

The program is hostile: it tries to approve itself (a forged or altered token, a token
used twice or for another program), to change its calls once a call is approved, to
hide a destructive call behind an approved read-only one, to flood the approver. The
notes server logs every call it receives (``calls.log``), so a test counts the side
effects: none may happen twice, and none that was not approved.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import subprocess
import sys
import termios
import textwrap
import threading
import time
import unittest
from typing import Any, List, Optional, Tuple
from unittest import mock

from mcp_client.codemode import (
    Approval,
    CodeMode,
    Decision,
    Limits,
    PendingCall,
    Policy,
    RunResult,
    _approval,
)
from mcp_client.errors import TokenRefused

from codemode_support import RunnerCase
from support import LONG, SHORT, server_argv, wait_until

#: A program that writes, reads, then deletes a note (the delete waits for a yes under
#: approve="destructive"), catching the refusal.
DELETE = """\
from cap.mcp import CallRefused, notes
notes.write_note(name="a", text="one")
print(notes.read_note(name="a")["text"])
try:
    notes.delete_note(name="a")
    print("deleted")
except CallRefused as e:
    print("refused:", e)
"""
#: Two calls that wait for a yes under approve="destructive", one read between them.
TWO = """\
from cap.mcp import notes
notes.delete_note(name="a")
print(notes.read_note(name="b")["text"])
notes.delete_note(name="b")
print("both deleted")
"""


class PolicyOfApproval(unittest.TestCase):
    """Which calls wait for a yes, read from the annotations (MCP's defaults where a
    server says nothing: not read-only, destructive)."""

    READ = {"readOnlyHint": True}
    ADDS = {"destructiveHint": False}
    NOTHING: dict = {}

    def test_each_level_reads_the_annotations(self) -> None:
        names = ("notes.x",)
        table = {
            "none": (False, False, False),
            "destructive": (False, False, True),
            "non-read-only": (False, True, True),
            "all": (True, True, True),
        }
        for level, expected in table.items():
            policy = Policy(approve=level)
            got = tuple(
                policy.approval(names, hints) is not None
                for hints in (self.READ, self.ADDS, self.NOTHING)
            )
            self.assertEqual(got, expected, level)
        self.assertIn("destructiveHint: false", Policy(approve="destructive").approval(names, {}))

    def test_approve_tools_by_either_name_and_independent_of_allow_tools(self) -> None:
        policy = Policy(allow_tools=("notes.read_note",), approve_tools=("notes.read-note",))
        self.assertTrue(policy.approves)
        self.assertEqual(policy.approval(("notes.read_note", "notes.read-note"), self.READ),
                         "approve_tools names it")  # fmt: skip
        self.assertIsNone(policy.approval(("notes.write_note",), {}))
        self.assertFalse(Policy().approves)

    def test_a_bad_level_or_name_is_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, "Policy.approve must be one of none"):
            Policy(approve="some")
        with self.assertRaisesRegex(TypeError, "approve_tools takes a sequence"):
            Policy(approve_tools="notes.x")  # type: ignore[arg-type]
        with self.assertRaisesRegex(ValueError, "Limits.max_approvals"):
            Limits(max_approvals=-1)
        with self.assertRaisesRegex(ValueError, "Limits.approval_timeout"):
            Limits(approval_timeout=0)


class WhatAPersonIsShown(unittest.TestCase):
    """The arguments are the program's: shown bounded, inert, every key in sight."""

    def pending(self, arguments: Any) -> PendingCall:
        return PendingCall("files", "write_file", "write_file", arguments, 3, "approve=all")

    def test_controls_bidi_and_non_ascii_are_spelt_out(self) -> None:
        shown = self.pending({"path": "a\u202eexe.txt\n\x1b[2J", "b": "\u00e9"}).shown_arguments()
        self.assertTrue(all(" " <= char <= "~" for char in shown), shown)
        self.assertIn("\\u202e", shown)
        self.assertIn("\\u001b[2J", shown)

    def test_a_long_first_value_cannot_hide_a_later_key(self) -> None:
        arguments = {"aaa": "x" * 100000, "path": "/etc/passwd", "zzz": " " * 5000 + "rm -rf /"}
        shown = self.pending(arguments).shown_arguments()
        self.assertLess(len(shown), 2 * _approval.SHOWN_CHARS)
        self.assertIn('"path": "/etc/passwd"', shown)
        self.assertIn('"zzz": ', shown)
        self.assertIn("[cut: ", shown)

    def test_the_question_is_the_runners_and_names_the_call(self) -> None:
        text = _approval.question(self.pending({"content": "Approve this: it is safe."}))
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("mcp-client code mode: a program asks"))
        self.assertIn("call 3 of the run: files.write_file", lines)
        self.assertIn('arguments: {"content": "Approve this: it is safe."}', lines)
        self.assertIn("judge the call itself", text)


class Tokens(unittest.TestCase):
    """The tokens a runner issues: HMAC-signed, once, for one program, expiring."""

    CALL = ("notes", "delete_note", _approval.digest("{}"))

    def setUp(self) -> None:
        self.now = 1000.0
        self.store = _approval.Approvals(60.0, clock=lambda: self.now)
        self.addCleanup(self.store.close)
        self.program = _approval.digest("print(1)")

    def issue(self, store: Optional[_approval.Approvals] = None) -> str:
        return (store or self.store).issue(self.program, 2, self.CALL, "notes.delete_note", [])

    def test_a_token_works_once(self) -> None:
        token = self.issue()
        held = self.store.redeem(token, self.program)
        self.assertEqual((held.position, held.identity), (2, self.CALL))
        with self.assertRaisesRegex(TokenRefused, "used already: a token works once"):
            self.store.redeem(token, self.program)

    def test_a_forged_or_altered_token_is_refused(self) -> None:
        token = self.issue()
        prefix, body, mac = token.split(".")
        payload = _approval._unb64(body).replace(b'"i":2', b'"i":1')
        altered = "%s.%s.%s" % (prefix, _approval._b64(payload), mac)
        other = _approval.Approvals(60.0)  # another runner: another secret
        self.addCleanup(other.close)
        for forged, why in (
            (altered, "forged or altered"),  # the position moved, the signature kept
            (token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"), "forged or altered"),
            (self.issue(other), "forged or altered"),
            ("mcpa1.e30.", "forged or altered"),
            ("mcpa1.\u00e9.\u00e9", "forged or altered"),
            ("approved", "not an approval token"),
            (None, "not an approval token"),
            ("mcpa1." + "A" * 5000, "not an approval token"),
        ):
            with self.subTest(forged=str(forged)[:40]):
                with self.assertRaisesRegex(TokenRefused, why):
                    self.store.redeem(forged, self.program)
        self.assertEqual(self.store.held, 1, "the real token is still good")
        self.store.redeem(token, self.program)

    def test_a_token_for_another_program_is_refused_and_kept_for_its_own(self) -> None:
        token = self.issue()
        with self.assertRaisesRegex(TokenRefused, "for another program"):
            self.store.redeem(token, _approval.digest("print(2)"))
        self.store.redeem(token, self.program)

    def test_an_expired_token_is_refused_and_its_log_forgotten(self) -> None:
        token = self.issue()
        self.now += 61.0
        self.assertEqual(self.store.held, 0)
        with self.assertRaisesRegex(TokenRefused, "expired"):
            self.store.redeem(token, self.program)

    def test_held_tokens_are_bounded(self) -> None:
        tokens = [self.issue() for _ in range(_approval.MAX_HELD + 3)]
        self.assertEqual(self.store.held, _approval.MAX_HELD)
        with self.assertRaisesRegex(TokenRefused, "expired .* or was forgotten"):
            self.store.redeem(tokens[0], self.program)
        self.store.redeem(tokens[-1], self.program)

    def test_a_token_is_forgotten_when_it_expires_without_any_use(self) -> None:
        store = _approval.Approvals(SHORT)
        self.addCleanup(store.close)
        self.issue(store)
        self.assertEqual(len(store._held), 1)
        self.assertTrue(wait_until(lambda: not store._held), "the sweeper forgot it")


class ApprovalCase(RunnerCase):
    PREFIX = "codemode-approval-"
    JAIL_PROGRAM = False  # the attacks here are on the runner, not on the jail

    def open_notes(self, approve: str = "destructive", **options: Any) -> CodeMode:
        options.setdefault("policy", Policy(approve=approve))
        return self.open({"notes": self.notes()}, **options)

    def sent(self) -> List[str]:
        """Every call the notes server received, in order."""
        try:
            with open(self.path("calls.log")) as log:
                return log.read().split()
        except FileNotFoundError:
            return []

    def outcomes(self, result: RunResult) -> List[tuple]:
        return [(c.tool, c.outcome, c.approval, c.by) for c in result.calls]


class Asking(ApprovalCase):
    """``run(program, approver=...)``: the approver decides; the program waits."""

    def test_a_yes_sends_the_call_and_a_no_is_call_refused_the_program_catches(self) -> None:
        code = self.open_notes()
        asked: List[PendingCall] = []
        said_no = code.run(DELETE, approver=lambda p: asked.append(p) or False)
        self.assertEqual(
            said_no.stdout.splitlines()[1],
            "refused: notes.delete_note was not approved: declined by approver",
        )
        self.assertEqual(said_no.exit_status, 0)
        [pending] = asked
        self.assertEqual((pending.name, pending.tool, pending.arguments, pending.position),
                         ("notes.delete_note", "delete_note", {"name": "a"}, 3))  # fmt: skip
        self.assertEqual(self.sent(), ["write_note", "read_note"])
        said_yes = code.run(DELETE, approver=lambda p: Decision(True, by="ada"))
        self.assertEqual(said_yes.stdout, "one\ndeleted\n")
        self.assertEqual(self.outcomes(said_yes)[2], ("delete_note", "ok", "approved", "ada"))
        self.assertEqual(self.outcomes(said_no)[2],
                         ("delete_note", "refused", "declined", "approver"))  # fmt: skip
        self.assertEqual(self.sent()[2:], ["write_note", "read_note", "delete_note"])

    def test_a_refusal_wins_no_one_is_asked(self) -> None:
        policy = Policy(approve="all", deny_tools=("notes.delete_note",))
        code = self.open_notes(policy=policy)
        asked: List[PendingCall] = []
        result = code.run(DELETE, approver=lambda p: asked.append(p) or True)
        self.assertIn("refused: notes.delete_note is refused by the policy", result.stdout)
        self.assertEqual([p.function for p in asked], ["write_note", "read_note"])
        self.assertNotIn("delete_note", self.sent())

    def test_an_approver_that_fails_or_answers_nonsense_is_a_no(self) -> None:
        code = self.open_notes()

        def fails(pending: PendingCall) -> bool:
            raise RuntimeError("the approver broke")

        for approver, said in ((fails, "the approver failed"), (lambda p: "yes", "not a bool")):
            with self.subTest(said=said):
                result = code.run(DELETE, approver=approver)  # type: ignore[arg-type]
                self.assertIn("refused: notes.delete_note was not approved", result.stdout)
                self.assertIn(said, result.stdout)
                self.assertEqual(result.calls[2].approval, "failed")
        self.assertNotIn("delete_note", self.sent())

    def test_no_answer_in_time_is_a_no_and_no_one_is_asked_again_in_the_run(self) -> None:
        code = self.open_notes(limits=Limits(approval_timeout=SHORT))
        asked: List[str] = []
        release = threading.Event()
        self.addCleanup(release.set)

        def never(pending: PendingCall) -> bool:
            asked.append(pending.arguments["name"])
            release.wait(LONG)
            return True

        twice = textwrap.dedent("""\
            from cap.mcp import CallRefused, notes
            for name in ("a", "b"):
                try:
                    notes.delete_note(name=name)
                except CallRefused as e:
                    print(e)
            """)
        result = code.run(twice, approver=never)
        self.assertEqual(result.exit_status, 0)
        first, second = result.stdout.splitlines()
        self.assertIn("notes.delete_note was not approved: not answered in time by runner", first)
        self.assertIn("refused without asking: an earlier approval in this run was timed out",
                      second)  # fmt: skip
        self.assertEqual(asked, ["a"])
        self.assertEqual([c.approval for c in result.calls], ["timed_out", "not_asked"])
        self.assertEqual(self.sent(), [])

    def test_the_wall_clock_does_not_count_a_wait_for_a_person(self) -> None:
        code = self.open_notes(limits=Limits(wall_clock=SHORT * 2, approval_timeout=LONG))

        def slow(pending: PendingCall) -> bool:
            time.sleep(SHORT * 5)  # past the whole wall clock
            return True

        result = code.run(DELETE, approver=slow)
        self.assertEqual((result.exit_status, result.error), (0, None), result.stderr)
        self.assertEqual(result.stdout, "one\ndeleted\n")

    def test_a_flood_of_approvals_is_bounded_and_a_declined_call_is_not_asked_again(self) -> None:
        code = self.open_notes(limits=Limits(max_approvals=3))
        asked: List[str] = []
        flood = textwrap.dedent("""\
            from cap.mcp import CallRefused, notes
            for i in range(20):
                try:
                    notes.delete_note(name=NAME)
                except CallRefused as e:
                    print(e)
            """)
        many = code.run(flood.replace("NAME", '"n%d" % i'),
                        approver=lambda p: asked.append(p.arguments["name"]) or False)  # fmt: skip
        self.assertEqual(asked, ["n0", "n1", "n2"])
        self.assertEqual(many.stdout.count("this run asked for its 3 approvals"), 17)
        same = code.run(flood.replace("NAME", '"same"'),
                        approver=lambda p: asked.append(p.arguments["name"]) or False)  # fmt: skip
        self.assertEqual(asked[3:], ["same"])
        self.assertEqual(same.stdout.count("the same call was declined in this run"), 19)
        self.assertEqual([c.approval for c in same.calls][:2], ["declined", "not_asked"])
        self.assertEqual(self.sent(), [])

    def test_calls_from_many_threads_put_one_question_at_a_time(self) -> None:
        code = self.open_notes()
        waiting = [0]
        most = [0]
        lock = threading.Lock()

        def slow(pending: PendingCall) -> bool:
            with lock:
                waiting[0] += 1
                most[0] = max(most[0], waiting[0])
            time.sleep(SHORT / 3)
            with lock:
                waiting[0] -= 1
            return False

        threads = textwrap.dedent("""\
            import threading
            from cap.mcp import CallRefused, notes
            def delete(i):
                try:
                    notes.delete_note(name="t%d" % i)
                except CallRefused:
                    pass
            ts = [threading.Thread(target=delete, args=(i,)) for i in range(6)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            """)
        runs = [threading.Thread(target=code.run, args=(threads,), kwargs={"approver": slow})
                for _ in range(2)]  # fmt: skip
        for run in runs:
            run.start()
        for run in runs:
            run.join(LONG * 4)
        self.assertEqual(most[0], 1, "one question at a time, across runs too")
        self.assertEqual(self.sent(), [])

    def test_progress_names_each_call_and_the_wait(self) -> None:
        code = self.open_notes()
        notes: List[str] = []
        code.run(DELETE, approver=lambda p: True, progress=notes.append)
        self.assertEqual(
            notes,
            [
                "call 1: notes.write_note",
                "call 2: notes.read_note",
                "call 3: notes.delete_note waits for a person's yes",
                "call 3: notes.delete_note (approved)",
            ],
        )


class StopAndResume(ApprovalCase):
    """No approver: the run stops at the call; its token resumes it, by replay."""

    def stopped(self, code: CodeMode, program: str, **options: Any) -> Approval:
        result = code.run(program, **options)
        self.assertEqual(result.calls[-1].outcome, "approval_required", result)
        self.assertIn("which waits for a person's yes", result.error or "")
        self.assertIsNotNone(result.approval)
        assert result.approval is not None and result.approval.token is not None
        return result.approval

    def test_a_run_stops_before_the_call_and_its_token_resumes_it(self) -> None:
        code = self.open_notes()
        progress: List[str] = []
        approval = self.stopped(code, DELETE, progress=progress.append)
        self.assertEqual((approval.call.name, approval.call.position, approval.replayed),
                         ("notes.delete_note", 3, 2))  # fmt: skip
        self.assertIn("notes.delete_note({\"name\": \"a\"})", approval.question())
        self.assertEqual(self.sent(), ["write_note", "read_note"], "stopped before the call")
        self.assertEqual(progress[-1], "call 3: notes.delete_note needs a person's yes: the run "
                         "stops")  # fmt: skip
        resumed = code.run(DELETE, approve=[approval.token], progress=progress.append)
        self.assertEqual((resumed.exit_status, resumed.error), (0, None), resumed.stderr)
        self.assertEqual(resumed.stdout, "one\ndeleted\n")
        self.assertEqual(
            self.outcomes(resumed),
            [
                ("write_note", "replayed", "", ""),
                ("read_note", "replayed", "", ""),
                ("delete_note", "ok", "approved", "token"),
            ],
        )
        self.assertEqual(self.sent(), ["write_note", "read_note", "delete_note"], "each once")
        self.assertIn("call 1: notes.write_note (answered from the approved run's log)", progress)

    def test_each_approval_is_a_step_and_no_call_is_made_twice(self) -> None:
        code = self.open_notes()
        for name in ("a", "b"):
            with open(self.path(name), "w") as note:
                note.write(name * 3)
        first = self.stopped(code, TWO)
        self.assertEqual(self.sent(), [])
        second = self.stopped(code, TWO, approve=[first.token])
        self.assertEqual((second.call.position, second.replayed), (3, 2))
        self.assertEqual(self.sent(), ["delete_note", "read_note"])
        done = code.run(TWO, approve=[second.token])
        self.assertEqual((done.exit_status, done.stdout), (0, "bbb\nboth deleted\n"), done.stderr)
        self.assertEqual(
            [c.outcome for c in done.calls], ["replayed", "replayed", "ok"], "the first delete "
            "answered from the log, not sent again"
        )  # fmt: skip
        self.assertEqual(self.sent(), ["delete_note", "read_note", "delete_note"])
        with self.assertRaisesRegex(TokenRefused, "used already"):
            code.run(TWO, approve=[first.token])

    def test_a_token_is_spent_by_the_run_that_uses_it_even_when_that_run_fails(self) -> None:
        code = self.open_notes()
        crash = DELETE + "raise SystemExit(3)\n"
        approval = self.stopped(code, crash)
        self.assertEqual(code.run(crash, approve=[approval.token]).exit_status, 3)
        with self.assertRaisesRegex(TokenRefused, "used already"):
            code.run(crash, approve=[approval.token])
        self.assertEqual(self.sent(), ["write_note", "read_note", "delete_note"])

    def test_a_token_is_for_its_program_alone(self) -> None:
        code = self.open_notes()
        approval = self.stopped(code, DELETE)
        with self.assertRaisesRegex(TokenRefused, "for another program"):
            code.run(DELETE + "notes.delete_note(name='b')\n", approve=[approval.token])
        with self.assertRaisesRegex(TokenRefused, "forged or altered"):
            code.run(DELETE, approve=[approval.token[:-2] + "xx"])
        with self.assertRaisesRegex(TokenRefused, "one approval token a run"):
            code.run(DELETE, approve=[approval.token, approval.token])
        self.assertEqual(self.sent(), ["write_note", "read_note"], "nothing ran")
        self.assertEqual(code.run(DELETE, approve=[approval.token]).exit_status, 0)

    def stdin(self, text: str) -> int:
        path = self.path("stdin-%d" % len(os.listdir(self.dir)))
        with open(path, "w") as out:
            out.write(text)
        fd = os.open(path, os.O_RDONLY)
        self.addCleanup(os.close, fd)
        return fd

    def test_a_program_that_goes_another_way_after_approval_fails_there_sending_nothing(
        self,
    ) -> None:
        code = self.open_notes()
        sly = textwrap.dedent("""\
            import sys
            from cap.mcp import notes
            way = sys.stdin.read()
            notes.write_note(name="a", text=way)
            notes.delete_note(name="a")
            """)
        approval = self.stopped(code, sly, stdin=self.stdin("first"))
        self.assertEqual(self.sent(), ["write_note"])
        other = code.run(sly, approve=[approval.token], stdin=self.stdin("second"))
        self.assertEqual(other.calls[0].outcome, "diverged")
        self.assertIn("its call 1 is notes.write_note where that run called notes.write_note "
                      "(other arguments); nothing of it was sent", other.error or "")  # fmt: skip
        self.assertEqual(self.sent(), ["write_note"], "nothing sent, the delete least of all")
        with self.assertRaisesRegex(TokenRefused, "used already"):
            code.run(sly, approve=[approval.token], stdin=self.stdin("first"))

    def test_the_approved_call_with_other_arguments_is_not_sent(self) -> None:
        code = self.open_notes()
        swap = textwrap.dedent("""\
            import sys
            from cap.mcp import notes
            notes.write_note(name="a", text="one")
            notes.delete_note(name=sys.stdin.read())
            """)
        approval = self.stopped(code, swap, stdin=self.stdin("a"))
        swapped = code.run(swap, approve=[approval.token], stdin=self.stdin("precious"))
        self.assertEqual([c.outcome for c in swapped.calls], ["replayed", "diverged"])
        self.assertIn("its call 2 is notes.delete_note", swapped.error or "")
        self.assertEqual(self.sent(), ["write_note"])

    def test_a_destructive_call_cannot_hide_behind_an_approved_read_only_one(self) -> None:
        code = self.open_notes(approve="all")
        hide = textwrap.dedent("""\
            import sys
            from cap.mcp import notes
            if sys.stdin.read() == "now":
                notes.delete_note(name="a")
            else:
                notes.read_note(name="a")
            """)
        approval = self.stopped(code, hide, stdin=self.stdin("not yet"))
        self.assertEqual(approval.call.name, "notes.read_note")
        hidden = code.run(hide, approve=[approval.token], stdin=self.stdin("now"))
        self.assertEqual(hidden.calls[0].outcome, "diverged")
        self.assertIn("its call 1 is notes.delete_note where that run called notes.read_note "
                      "(notes.delete_note instead)", hidden.error or "")  # fmt: skip
        self.assertEqual(self.sent(), [])

    def test_a_program_that_ends_before_the_approved_call_says_so(self) -> None:
        code = self.open_notes()
        early = textwrap.dedent("""\
            import sys
            from cap.mcp import notes
            notes.write_note(name="a", text="one")
            if sys.stdin.read() == "go":
                notes.delete_note(name="a")
            """)
        approval = self.stopped(code, early, stdin=self.stdin("go"))
        ended = code.run(early, approve=[approval.token], stdin=self.stdin("stop"))
        self.assertEqual(ended.exit_status, 0)
        self.assertIn("ended after 1 calls, before call 2 (notes.delete_note)", ended.error or "")
        self.assertEqual(self.sent(), ["write_note"])

    def test_a_log_too_large_to_hold_gives_no_token(self) -> None:
        code = self.open_notes()
        with mock.patch.object(_approval, "LOG_BYTES", 100):
            result = code.run(DELETE.replace('text="one"', 'text="x" * 300'))
        assert result.approval is not None
        self.assertIsNone(result.approval.token)
        self.assertIn("more than a replay log holds", result.approval.note)

    def test_close_forgets_every_token(self) -> None:
        code = self.open_notes()
        approval = self.stopped(code, DELETE)
        self.assertEqual(code._approvals.held, 1)
        code.close()
        self.assertEqual(code._approvals.held, 0)
        self.assertTrue(approval.token)


class Jailed(ApprovalCase):
    JAIL_PROGRAM = True

    def test_a_jailed_program_is_stopped_at_the_call_and_resumed(self) -> None:
        code = self.open_notes()
        result = code.run(DELETE)
        assert result.approval is not None and result.approval.token is not None
        self.assertEqual(result.stdout, "one\n", "what it printed before the stop is kept")
        resumed = code.run(DELETE, approve=[result.approval.token])
        self.assertEqual((resumed.exit_status, resumed.stdout), (0, "one\ndeleted\n"))
        self.assertEqual(self.sent(), ["write_note", "read_note", "delete_note"])


class Elicitation(unittest.TestCase):
    """serve's approver: the question it puts, and the answers it takes for a yes."""

    def test_only_accept_with_approve_true_is_a_yes(self) -> None:
        read = _approval.read_elicitation
        self.assertTrue(read({"action": "accept", "content": {"approve": True}}).approved)
        for answer, said in (
            ({"action": "accept", "content": {"approve": False}}, "declined"),
            ({"action": "accept", "content": {"approve": "true"}}, "declined"),
            ({"action": "accept", "content": {"approve": 1}}, "declined"),
            ({"action": "accept"}, "declined"),
            ({"action": "decline", "content": {"approve": True}}, "declined"),
            ({"action": "cancel"}, "cancelled"),
            ({"action": "yes"}, "failed"),
            (["accept"], "failed"),
            (None, "failed"),
        ):
            with self.subTest(answer=answer):
                decision = read(answer)
                self.assertFalse(decision.approved)
                self.assertEqual((decision.answer, decision.by), (said, "elicitation"))

    def test_the_host_declares_form_elicitation(self) -> None:
        elicits = _approval.host_elicits
        self.assertTrue(elicits({"elicitation": {}}))
        self.assertTrue(elicits({"elicitation": {"form": {}, "url": {}}}))
        self.assertFalse(elicits({"elicitation": {"url": {}}}))
        self.assertFalse(elicits({"elicitation": True}))
        self.assertFalse(elicits({}))

    def test_the_request_is_one_boolean_and_a_host_failure_is_a_no(self) -> None:
        asked: List[Any] = []

        def ask(method: str, params: Any, timeout: float) -> Any:
            asked.append((method, params, timeout))
            return {"action": "accept", "content": {"approve": True}}

        pending = PendingCall("git", "git_commit", "git_commit", {"message": "m"}, 2, "approve=all")
        self.assertTrue(_approval.elicitation(ask, 30.0)(pending).approved)
        [(method, params, timeout)] = asked
        self.assertEqual(method, "elicitation/create")
        self.assertEqual(params["requestedSchema"]["required"], ["approve"])
        self.assertEqual(params["requestedSchema"]["properties"]["approve"]["type"], "boolean")
        self.assertIn("call 2 of the run: git.git_commit", params["message"])
        self.assertGreater(timeout, 30.0)

        def gone(method: str, params: Any, timeout: float) -> Any:
            raise RuntimeError("the host went away")

        failed = _approval.elicitation(gone, 30.0)(pending)
        self.assertEqual((failed.approved, failed.answer), (False, "failed"))


class ServeTools(unittest.TestCase):
    """run_program's side of the approvals, over test_serve_tools' stand-in runner."""

    def tools(self, policy: Policy) -> Any:
        from test_serve_tools import StandIn

        from mcp_client.codemode import _serve_tools

        self.mode = StandIn()
        made = _serve_tools.tools(self.mode, _serve_tools.Terms(Limits(), policy))  # type: ignore[arg-type]
        return {tool.name: tool for tool in made}, _serve_tools.instructions(
            self.mode,  # type: ignore[arg-type]
            _serve_tools.Terms(Limits(), policy),
        )

    def test_approve_and_its_line_are_there_only_when_something_waits(self) -> None:
        tools, said = self.tools(Policy())
        self.assertNotIn("approve", tools["run_program"].descriptor["inputSchema"]["properties"])
        self.assertNotIn("yes", said)
        tools, said = self.tools(Policy(approve="destructive", approve_tools=("time.x",)))
        schema = tools["run_program"].descriptor["inputSchema"]["properties"]["approve"]
        self.assertEqual(schema, {"type": "array", "items": {"type": "string"}})
        last = said.splitlines()[-1]
        self.assertIn("not marked read-only or non-destructive (and time.x) wait", last)
        self.assertIn("approve=[its token]", last)

    def test_the_approve_argument_is_checked_before_anything_runs(self) -> None:
        from mcp_client.codemode._mcp_server import Refused

        tools, _ = self.tools(Policy(approve="all"))
        run = tools["run_program"]
        for bad in ("mcpa1.x", [1], ["a", "b"], {"t": "a"}):
            with self.subTest(bad=bad):
                answer = run.call({"code": "print(1)", "approve": bad})
                self.assertIsInstance(answer, Refused)
        self.assertEqual(self.mode.asked, [])
        plain, _ = self.tools(Policy())
        refused = plain["run_program"].call({"code": "", "approve": ["t"]})
        self.assertIn("unknown argument 'approve'", refused.message)

    def test_a_stopped_run_answers_approval_required_with_what_to_do(self) -> None:
        from mcp_client.codemode import _serve_tools

        pending = PendingCall("git", "git_add", "git_add", {"files": ["a"]}, 2, "approve=all")
        ran = RunResult(137, "", "", (), "the run stopped", False, (),
                        Approval(pending, "mcpa1.abc.def", 600.0, 1))  # fmt: skip
        value = _serve_tools.run_value(ran)
        self.assertEqual(
            value["approval_required"],
            {"call": "git.git_add", "position": 2, "arguments": '{"files": ["a"]}',
             "why": "approve=all", "token": "mcpa1.abc.def", "expires_in_s": 600.0,
             "replayed_calls": 1},
        )  # fmt: skip
        text = _serve_tools.run_text(ran)
        self.assertIn('approval_required: call 2, git.git_add({"files": ["a"]}), waits', text)
        self.assertIn('approve=["mcpa1.abc.def"] (once, within 600 s)', text)
        self.assertIn("the call before it is answered from this run's log", text)


class TheCommand(ApprovalCase):
    """``mcp-client codemode --approve``: the person is asked on the terminal."""

    def command(self, *flags: str) -> List[str]:
        argv = server_argv("codemode_tools", self.dir)
        with open(self.path("servers.json"), "w") as out:
            json.dump({"mcpServers": {"notes": {"command": argv[0], "args": argv[1:]}}}, out)
        with open(self.path("program.py"), "w") as out:
            out.write(DELETE)
        return [sys.executable, "-m", "mcp_client", "codemode", "--no-jail", *flags,
                "--config", self.path("servers.json"), self.path("program.py")]  # fmt: skip

    def env(self) -> dict:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        return dict(os.environ, PYTHONPATH=repo)

    def test_with_no_terminal_to_ask_on_the_call_is_refused(self) -> None:
        done = subprocess.run(
            self.command("--approve", "destructive"),
            capture_output=True,
            text=True,
            env=self.env(),
            start_new_session=True,  # no controlling terminal: /dev/tty cannot be opened
            timeout=LONG * 4,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("refused: notes.delete_note was not approved: not answered by terminal; no "
                      "terminal to ask on (/dev/tty)", done.stdout)  # fmt: skip
        self.assertEqual(self.sent(), ["write_note", "read_note"])

    def test_a_yes_on_the_terminal_makes_the_call(self) -> None:
        for answer, said in ((b"y\n", "deleted"), (b"\n", "refused: notes.delete_note")):
            with self.subTest(answer=answer):
                out, status = self.on_a_terminal(self.command("--approve", "all"), answer)
                self.assertEqual(status, 0, out)
                self.assertIn(b"call 3 of the run: notes.delete_note", out)
                self.assertIn(b'arguments: {"name": "a"}', out)
                self.assertIn(said.encode(), out)
        self.assertEqual(self.sent().count("delete_note"), 1)

    def on_a_terminal(self, argv: List[str], answer: bytes) -> Tuple[bytes, int]:
        """Run ``argv`` with a pty as its controlling terminal, answering the third
        question with ``answer`` (the first two: yes); all it wrote there, its status."""
        master, slave = pty.openpty()

        def controlling() -> None:  # after the new session: the pty becomes its terminal
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        try:
            child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     env=self.env(), start_new_session=True,
                                     preexec_fn=controlling)  # fmt: skip
        finally:
            os.close(slave)
        data, asked = bytearray(), 0
        try:
            while True:
                ready, _, _ = select.select([master], [], [], LONG * 4)
                if not ready:
                    raise AssertionError("the terminal stayed silent: %r" % bytes(data))
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every holder of the slave closed it
                    break
                if not chunk:
                    break
                data += chunk
                while data.count(b"Allow it? [y/N]") > asked:
                    asked += 1
                    os.write(master, answer if asked == 3 else b"y\n")
            return bytes(data), child.wait(LONG * 4)
        finally:
            os.close(master)


if __name__ == "__main__":
    unittest.main()
