"""MCP servers for the client's tests (standard library only); ``support.server`` starts them.

Besides ``scripted.py``, whose catalogue is the rest of this docstring, the scripts here
document their own behaviours: ``reliability.py``, ``diagnostics.py`` and ``stress.py``
are each its correct server with one handler replaced, while ``trickle.py`` and the
scripts ``jail_probe.py``, ``codemode_tools.py`` (annotated tools for code mode's
policy, restart and jail tests) and ``codemode_hostile.py`` (crash loops, a tool listed
twice, a second life that lists one twice, a loud failure: the red-team tests) are servers of their own (the jail tests also run the harness
in ``jail_harness.py``, and ``pipes.py`` drives any server on raw pipes). Each behaviour
of ``scripted.py`` is one run of it::

    support.server(BEHAVIOUR, *ARGS)      # [sys.executable, scripted.py, BEHAVIOUR, *ARGS]

Each is the correct server below with one thing changed at one point. Unless
noted, the server exits with status 0 when its stdin reaches EOF. Echo tools
answer ``tools/call`` with one text block holding the call's ``arguments`` as
compact JSON with sorted keys (``{"a":1}``). Catalogue (behaviour -- what the
server does; what the client is expected to do):

``good [--tools M] [--pages N]`` -- correct: handshake, M echo tools (default 2: ``echo``, ``echo_1``, ...) split evenly over exactly N ``tools/list`` pages (default 1; cursors ``page-1``, ...), ``tools/call`` echoes, ``ping`` -> ``{}``, unknown tool -> -32602, unknown method -> -32601; client: everything succeeds (N > max_tool_pages -> TooManyPages).
``garbage_before_handshake`` -- writes a non-JSON stdout line just before the initialize answer; client: the line is a death path, connect fails (HandshakeFailed).
``notify_before_init`` -- before the initialize answer sends ``notifications/tools/list_changed`` and a ``ping`` request (id ``"early-ping"``); any tools/call answers ``{"ping": <the client's answer without jsonrpc/id>}`` as text; client: connects, and the text is ``{"ping": {"result": {}}}``.
``wrong_version`` -- answers initialize with protocolVersion ``1999-01-01``; client: VersionUnsupported.
``no_tools_capability`` -- answers initialize with ``capabilities: {}``; client: ToolsNotDeclared.
``huge_line BYTES`` -- answers tools/call with one valid response line of exactly BYTES bytes (newline excluded), a single text block of ``x``; client: 15728640 succeeds, 17825792 is a framing fault (LineTooLong -> Unavailable).
``deep_nesting [DEPTH]`` -- answers tools/call with a DEPTH-deep (default 100000) nested array in ``structuredContent``; client: refuses the line without RecursionError (Unavailable).
``invalid_utf8`` -- answers tools/call with a line holding bytes that are not UTF-8 (``\\xff\\xfe``, a cut ``\\xc3``); client: death path (Unavailable).
``batch`` -- answers tools/call with a one-element JSON-RPC batch array; client: BadMessage, death path (Unavailable).
``null_id_error`` -- answers tools/call with ``{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`` and nothing else; client: a null id is a fault (Unavailable), never a hang.
``float_id`` -- answers tools/call with the request's id as a float (``7.0``); client: fault (Unavailable).
``duplicate_response`` -- answers tools/call twice with the same id: text ``first``, then text ``second``; client: the call gets ``first``, the second is dropped, the channel stays open.
``unknown_ids`` -- before the real (echo) answer sends responses with id 987654321 and id ``"never-requested"``; client: drops both, gets the echo, stays open.
``out_of_order [K]`` -- holds tools/call requests until K (default 2) have arrived, then answers them (echo) newest first; client: each caller gets its own echo.
``exit_mid_call`` -- on tools/call exits with ``os._exit(3)`` without answering; client: Unavailable, shutdown -> Exited(3).
``close_stdout`` -- on tools/call closes its stdout (fd 1) and sleeps 300 s; client: EOF is a death path (Unavailable), shutdown SIGKILLs it (Exited(-9)).
``fork_grandchild [PIDFILE]`` -- while answering initialize forks a grandchild in its process group that sleeps 300 s holding the pipes; writes its pid to PIDFILE (atomically, before the answer) and answers any tools/call with the pid as text; client: after shutdown the grandchild is gone (see :func:`alive`).
``never_answer`` -- handshakes, answers ping, never answers tools/call (keeps reading); client: CallTimedOut, channel stays usable.
``never_read`` -- answers initialize, then never reads stdin again (sleeps 300 s); client: a multi-megabyte call's write blocks on the full pipe and still times out at its deadline.
``loop_cursor`` -- every tools/list page is one tool and ``nextCursor: "same-cursor"``; client: TooManyPages after max_tool_pages.
``slow [SECONDS]`` -- answers each tools/call (echo) after ``arguments["delay"]`` seconds if given, else SECONDS (default 1.0), one timer thread per call; client: fast and slow calls settle independently.
``costly_listing`` -- tools/list is issue 25's hostile listing (``costly_tools``: three tools, 3.6 MB, one ``$defs`` key description of 200k control characters referenced 255 times a tool); otherwise ``good``; client: generating its module reads a bounded window of that text, once, not 765 times whole.
``server_requests`` -- on tools/call first sends the client ``ping`` (int id) and ``sampling/createMessage`` (string id), waits for both answers, and reports them as text ``{"ping": ..., "sampling/createMessage": ...}`` (answers without jsonrpc/id); client: ``{"result": {}}`` and an error with code -32601.
``lying_tools`` -- tools/list returns ``echo`` and an entry ``liar`` without inputSchema; client: the whole listing fails (ResultMalformed naming ``tools[1]``).
``stderr_noise [BYTES]`` -- writes about BYTES (default 1 MiB) of banner text to stderr before reading, and a stderr line per request; otherwise ``good``; client: unaffected.
``handshake_error`` -- answers initialize with a JSON-RPC error (-32603); client: HandshakeFailed.
``handshake_silent`` -- never answers initialize (keeps reading); client: HandshakeFailed after the handshake timeout.
``exit_immediately`` -- exits with status 7 before reading anything; client: connect fails, shutdown -> Exited(7).
``noisy [--banner N]`` -- writes N (default 2) banner lines to stdout that are not JSON (the first coloured with ANSI escapes) before its initialize answer, and a log line ``[Mock SDK Server] Executing METHOD with id ID`` before every other answer; otherwise ``good``; client: strict (the default) dies on the first banner line (HandshakeFailed naming the line and ``tolerated_noise_lines``), tolerant skips each with a WARNING record.
``json_noise`` -- before each tools/call answer (echo) writes ``{"hello": 1}``, JSON but not JSON-RPC; client: death path (Unavailable) whatever it tolerates.
``binary_noise BYTES`` -- before its initialize answer writes one line of BYTES bytes of binary garbage (not UTF-8 from its first byte, control bytes, no newline inside); client: strict dies, tolerant skips it up to 16 MiB; 17825792 is a framing fault (LineTooLong -> HandshakeFailed).
``hostile_text`` -- every string it chooses holds ``HOSTILE`` (terminal escapes, a carriage return, a bidi override, a newline that starts a forged log line): its ``serverInfo`` name and version, a notification's and a server request's method (sent before the initialize answer), its one tool's (``echo``) description, a stderr line at initialize and on each call, its call results, and the message of the -32602 error that answers any tool but ``echo``; client: no log record, error message or line the CLI prints holds a control character, and ``initialize_result`` keeps the name raw.
"""

from __future__ import annotations

import os

__all__ = ["alive"]


def alive(pid: int) -> bool:
    """Whether ``pid`` names a running (not zombie) process.

    ``os.kill(pid, 0)`` alone is not enough: a killed grandchild whose parent is
    gone stays a zombie until whoever adopted it reaps it, and a zombie still
    answers signal 0. On Linux ``/proc`` tells the two apart.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, but belongs to someone else
    try:
        with open("/proc/%d/stat" % pid) as handle:
            # The state follows the parenthesised command name, which may itself hold ") ".
            return handle.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True  # no /proc (macOS): signal 0 is the best evidence there is
