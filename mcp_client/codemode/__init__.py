"""Code mode as a library: a model's program runs jailed against generated modules.

::

    from mcp_client import config
    from mcp_client.codemode import CodeMode, Limits, Policy

    with CodeMode.open(config.load("servers.json").servers,
                       policy=Policy(allow="non-destructive")) as code:
        print(code.surface())                       # what the model is shown
        print(code.search("time zone").matches[0].line)
        result = code.run("from cap.mcp import time\\nprint(time.get_current_time(timezone='UTC'))")
        print(result.exit_status, result.stdout, result.calls)

:meth:`CodeMode.open` starts every server at once (one that fails is named in
``left_out`` with its stderr tail, and the others serve), generates a module
``cap.mcp.<key>`` for each and writes the ``cap`` package once into a private
directory (``cap_dir``) that lives until :meth:`CodeMode.close`; each run is shown
its own copy of the runtime and of the modules its source imports by name (hard
links: ``mcp_client.codemode._imports``, ``_program.show_cap``). Servers stay up
across runs; one that died is started again, from the same spawn, by the next run
that calls it (``RunResult.restarted`` names it, and its stderr says why).

:meth:`CodeMode.run` writes the program into a run directory, starts a child Python
(jailed unless ``jail_program=False``: it sees its package, its file and this
interpreter, writes only its scratch directory, its working directory; no network;
a memory cgroup of ``Limits.memory_bytes``), serves its calls on a thread of its own,
multiplexed on the shared clients (runs may overlap: each has its child and its
thread), and returns a :class:`RunResult` once the child and its jail are gone.

**Limits** (:class:`Limits`, every one enforced): the wall clock (the child's process
group is killed past it: exit status 124); each call's timeout (``CallFailed``); the
calls a run may make (the call past the cap is refused with ``CallFailed`` naming
the limit, and never sent); the bytes of stdout and stderr kept (each cut with a
marker giving the bytes dropped; the program is never blocked on its output); the
jail's memory (unjailed, the child's address space is capped instead, a weaker bound).

**Policy** (:class:`Policy`): ``allow="all"``, ``"non-destructive"`` or
``"read-only"``, read from each tool's annotations with MCP's defaults where a
server says nothing (``readOnlyHint`` false, ``destructiveHint`` true), plus names
(``server.function``) allowed or denied outright; a denial wins. A refused call is
never sent: the program gets ``cap.mcp.CallRefused`` (a ``CallFailed``) naming the
rule, and its record's outcome is ``refused``. **Annotations are the server's own
claims**: a server that lies about a tool gets it called. What holds then is the
jail: run the servers jailed too (``jail_servers=True``) when they are not trusted.

**Approvals** (``Policy(approve="destructive" | "non-read-only" | "all",
approve_tools=...)``): a call the annotations say may change something waits for a
person's yes (a refusal wins: a refused call is put to no one). ``run(program,
approver=...)`` asks the approver (a :class:`PendingCall` in, a bool or a
:class:`Decision` out) while the program waits in its call, the wall clock paused;
a no is ``CallRefused``. With no approver the run stops before that call, and
``RunResult.approval`` (an :class:`Approval`) holds a token: ``run(program,
approve=[token])`` runs it again, every earlier call answered from the first run's
log (no side effect twice), then makes that call. A token is an HMAC under this
runner's secret, bound to the program's text and the call; it works once and
expires (:class:`TokenRefused` otherwise).

**Errors a model can act on**: a failed program's traceback is cut to the
program's own frames (none of the ``cap`` package's), and a ``cap`` name that is
not there (``AttributeError``, ``ImportError``, ``NameError``) ends with a hint
naming the closest real ones ("`cap.mcp.files` has no `read`; did you mean
`read_file`, `read_text_file`?").

:meth:`CodeMode.describe` of an unknown name does not raise: it returns a message
that names the closest tools, which is what a model needs to go on.
"""

from __future__ import annotations

# The manual's names (``__all__``); and, each imported as itself, names this module held
# before code mode was split into its parts (constants the tests reach, the errors its
# calls raise, its own imports then): importable from here still.
from .._os import process as process
from ..client import Options as Options
from ..config import ConfiguredServer as ConfiguredServer
from ..errors import CodeModeError, TokenRefused
from ..errors import JailUnavailable as JailUnavailable
from ..errors import McpClientError as McpClientError
from ..errors import NoServerStarted as NoServerStarted
from ..errors import ResultMismatch as ResultMismatch
from ..errors import ToolFailed as ToolFailed
from ..errors import TransportFailed as TransportFailed
from ..errors import Unavailable as Unavailable
from ..jsonvalue import parse as parse
from ._approval import Approval, Decision, PendingCall
from ._broker import EXTRA_RECORDS as EXTRA_RECORDS
from ._cleanup import remove_tree as remove_tree
from ._program import TAKEN_NAMES
from ._runner import LINGER as LINGER
from ._runner import LOGGER as LOGGER
from ._runner import MAX_UNKNOWN_NOTES as MAX_UNKNOWN_NOTES
from ._runner import CodeMode
from ._values import (
    ALLOW,
    APPROVE,
    CANCELLED,
    CLOSED,
    WALL_CLOCK,
    CallRecord,
    CheckResult,
    Limits,
    Match,
    Policy,
    RunResult,
    SearchResult,
)

__all__ = [
    "Approval",
    "CallRecord",
    "CheckResult",
    "CodeMode",
    "CodeModeError",
    "Decision",
    "Limits",
    "Match",
    "PendingCall",
    "Policy",
    "RunResult",
    "SearchResult",
    "TokenRefused",
    "WALL_CLOCK",
    "CLOSED",
    "CANCELLED",
    "ALLOW",
    "APPROVE",
    "TAKEN_NAMES",
]
