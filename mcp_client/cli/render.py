"""What the commands print: the main job's report as text and as JSON, its failure lines,
and the program's output of ``codemode`` on its way to ours.

Server text is never printed raw: a name is shown as is when printable and escaped when
not (:func:`name`), longer text keeps its newlines and tabs and has every other control
character escaped (:func:`terminal`), and a reason is sanitized; so a hostile server
cannot drive the terminal. A program's output is escaped the same way (:class:`Tee`)
unless ``--raw-output`` sends its bytes to a file or a pipe.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import sys
from typing import IO, TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from ..errors import StderrTail
from ..protocol import CallToolResult, InitializeResult, Text, ToolDescriptor
from ..text import escape, inert, sanitize, truncate
from ..transport import Exited

if TYPE_CHECKING:
    from ..codegen import Generated
    from ..jsonvalue import JsonValue
    from ..transport import Retirement
    from .main_job import Failure, Inspection

__all__ = [
    "NAME",
    "Tee",
    "call_text",
    "failure_lines",
    "json_configured",
    "json_out",
    "json_report",
    "name",
    "noise_warning",
    "server_text",
    "show",
    "source_text",
    "surface_text",
    "terminal",
    "tools_text",
]

#: How the main job's stderr lines start.
NAME = "mcp_client"
#: Characters of a tool's title and description shown on its line.
_TOOL_TEXT = 72
#: Characters of a failure's reason shown on the one stderr line.
REASON = 500
#: Lines of the server's stderr printed under a failure it explains.
_TAIL_LINES = 10
#: Characters of a wire name or a server name shown.
_NAME = 64
#: A server's stderr line that reads as its reason for failing.
_READS_AS_ERROR = re.compile(r"error|fatal|exception|traceback", re.IGNORECASE)


def name(text: str) -> str:
    """A server-chosen name, shown as is when printable, escaped when not."""
    shown = text if text.isprintable() else escape(text)
    return truncate(shown, _NAME)


def terminal(text: str, limit: Optional[int] = None) -> str:
    """Server text for a terminal: newlines and tabs kept, every other unprintable
    character escaped (so an ANSI escape or a bidi override arrives inert)."""
    return inert(text, keep="\n\t", limit=limit)  # cut before it is read


def show(out: Optional[IO[str]], text: str) -> None:
    """``text`` on ``out`` (nothing when it is ``None``), flushed at once."""
    if out is not None:
        out.write(text)
        out.flush()  # progress shows as it happens, even through a pipe


# ----------------------------------------------------------------------------- failures


def _who(label: Optional[str]) -> str:
    return NAME if label is None else "%s: %s" % (NAME, name(label))


def _headline(error: BaseException) -> str:
    """An error's text without the stderr tail its ``str()`` may end with."""
    return error.headline() if isinstance(error, StderrTail) else str(error)


def failure_lines(failure: Failure, label: Optional[str] = None) -> List[str]:
    """The failure's one line, ``mcp_client: <what> failed: <error class>: <reason>``
    (``mcp_client: <label>: ...`` for a server of a config file), then the server's
    stderr lines that explain it."""
    who = _who(label)
    if failure.what == "interrupt":
        return ["%s: interrupted; the server was shut down" % who]
    if failure.what == "usage":
        return ["%s: usage failed: %s" % (who, sanitize(str(failure.error), REASON))]
    detail = "%s: %s" % (type(failure.error).__name__, _headline(failure.error))
    return ["%s: %s failed: %s" % (who, failure.what, sanitize(detail, REASON))] + _tail(
        failure.error, who
    )


def _tail(error: BaseException, who: str) -> List[str]:
    """The lines that read as an error anywhere in the server's stderr tail, then the last few."""
    if not isinstance(error, StderrTail) or not error.stderr_tail:
        return []
    lines = error.stderr_tail.split("\n")
    last = lines[-_TAIL_LINES:]
    # The reason is often logged early and followed by a stack of noise (dbhub:
    # line 5 of 20), so the lines that read as one are shown wherever they are.
    earlier = [line for line in lines[:-_TAIL_LINES] if _READS_AS_ERROR.search(line)]
    shown: List[str] = []
    if earlier:
        earlier = earlier[-_TAIL_LINES:]
        one = len(earlier) == 1
        shown.append(
            "%s: server stderr, %d earlier line%s that read%s as an error:"
            % (who, len(earlier), "" if one else "s", "s" if one else "")
        )
        shown += ["  | " + line for line in earlier]
    shown.append("%s: server stderr, last %d lines:" % (who, len(last)))
    return shown + ["  | " + line for line in last]


def noise_warning(noise: Tuple[int, Optional[str]]) -> Optional[str]:
    """The warning line for the stdout lines that were not JSON and were skipped, if any."""
    skipped, first = noise
    if not skipped:
        return None
    return (
        '%s: warning: skipped %d line%s the server wrote to stdout that %s not JSON, '
        'the first: "%s"; the MCP spec forbids them (--strict refuses them)'
        % (NAME, skipped, "" if skipped == 1 else "s", "is" if skipped == 1 else "are", first or "")
    )


# ----------------------------------------------------------------------------- text


def server_text(inspection: Inspection) -> str:
    """The report's head: the config key, the server, its protocol and its command."""
    result = inspection.initialized
    assert result is not None
    info = result.server_info
    label = inspection.settings.label
    return "%s%sserver    %s %s\nprotocol  %s\ncommand   %s\n" % (
        "\n" if inspection.apart else "",
        "" if label is None else "config    %s\n" % name(label),
        name(info.name),
        name(info.version) or "(no version)",
        result.protocol_version,
        terminal(" ".join(inspection.settings.spawn.argv()), 400),
    )


def tools_text(tools: Sequence[ToolDescriptor]) -> str:
    """One line per tool: its wire name, then its title and description, cut to fit."""
    if not tools:
        return "\nno tools\n"
    names = [name(tool.name) for tool in tools]
    width = min(max(len(each) for each in names), 32)
    lines = ["  %-*s  %s" % (width, each, _about(tool)) for each, tool in zip(names, tools)]
    return "\n%d tool%s\n%s\n" % (len(tools), "" if len(tools) == 1 else "s", "\n".join(lines))


def _about(tool: ToolDescriptor) -> str:
    parts = [part for part in (tool.title, tool.description) if part]
    if len(parts) == 2 and sanitize(parts[0], 200) == sanitize(parts[1], 200):
        parts = parts[:1]
    return sanitize(": ".join(parts), _TOOL_TEXT)


def surface_text(generated: Generated) -> str:
    """The generated module's surface, indented under its name."""
    body = "".join("  " + line + "\n" for line in generated.surface.splitlines())
    return "\nsurface of %s\n%s" % (generated.module_name, body or "  (no functions)\n")


def source_text(generated: Generated) -> str:
    """The generated module's source, under its name."""
    return "\nsource of %s\n%s" % (generated.module_name, generated.source)


def call_text(tool: str, result: CallToolResult, leading: bool = True) -> str:
    """A ``--call``'s outcome: text blocks, other blocks by kind, ``structuredContent``."""
    lines = [""] if leading else []
    lines.append("call %s: isError=%s" % (name(tool), "true" if result.is_error else "false"))
    for block in result.content:
        if isinstance(block, Text):
            lines.append(_indented("text: ", terminal(block.text)))
        else:
            lines.append("  %s block (not shown)" % name(block.kind))
    if result.structured_content is not None:
        lines.append(
            _indented("structuredContent: ", terminal(json.dumps(result.structured_content)))
        )
    if not result.content and result.structured_content is None:
        lines.append("  (no content)")
    return "\n".join(lines) + "\n"


def _indented(label: str, text: str) -> str:
    pad = " " * (len(label) + 2)
    return "  " + label + ("\n" + pad).join(text.split("\n"))


# ----------------------------------------------------------------------------- JSON


def json_out(out: IO[str], report: Dict[str, Any]) -> None:
    """``report`` as indented JSON on ``out``."""
    out.write(json.dumps(report, indent=2) + "\n")
    out.flush()


def json_configured(inspections: Sequence[Inspection]) -> Dict[str, Any]:
    """The one object of ``--config --json``: each server's report with its name."""
    return {
        "ok": all(each.failure is None for each in inspections),
        "servers": [dict(json_report(each), name=each.settings.label) for each in inspections],
    }


def json_report(inspection: Inspection) -> Dict[str, Any]:
    """The ``--json`` object: whatever was learned, and the failure if there was one."""
    settings = inspection.settings
    report: Dict[str, Any] = {
        "ok": inspection.failure is None,
        "command": list(settings.spawn.argv()),
    }
    if inspection.initialized is not None:
        report["server"] = _json_server(inspection.initialized)
    if inspection.tools is not None:
        report["tools"] = [_json_tool(tool) for tool in inspection.tools]
    if inspection.generated is not None:
        report.update(_json_module(inspection.generated, settings.source))
    if inspection.called is not None and settings.call is not None:
        report["call"] = _json_call(settings.call, inspection.called, inspection.called_tool)
    if inspection.retirement is not None:
        report["retirement"] = _json_retirement(inspection.retirement)
    if settings.capture is not None:
        lost = inspection.capture_lost
        report["capture"] = {"file": settings.capture, "complete": lost is None, "incomplete": lost}
    if inspection.failure is not None:
        report["error"] = _json_error(inspection.failure)
    return report


def _json_module(generated: Generated, source: bool) -> Dict[str, Any]:
    module = {"module": generated.module_name, "surface": generated.surface}
    if source:
        module["source"] = generated.source
    return module


def _json_server(result: InitializeResult) -> Dict[str, Any]:
    info = result.server_info
    return {
        "name": info.name,
        "version": info.version,
        "title": info.title,
        "protocolVersion": result.protocol_version,
        "capabilities": result.capabilities,
        "instructions": result.instructions,
    }


def _json_tool(tool: ToolDescriptor) -> Dict[str, Any]:
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": tool.annotations,
    }


def _json_call(
    call: Tuple[str, Dict[str, JsonValue]], result: CallToolResult, tool: Optional[str]
) -> Dict[str, Any]:
    content = [
        {"type": "text", "text": block.text} if isinstance(block, Text) else {"type": block.kind}
        for block in result.content
    ]
    return {
        "name": tool or call[0],
        "arguments": call[1],
        "isError": result.is_error,
        "content": content,
        "structuredContent": result.structured_content,
    }


def _json_retirement(retirement: Retirement) -> Dict[str, Any]:
    report: Dict[str, Any] = {"evidence": type(retirement).__name__}
    if isinstance(retirement, Exited):
        report["returncode"] = retirement.returncode
    return report


def _json_error(failure: Failure) -> Dict[str, Any]:
    return {
        "what": failure.what,
        "exit": failure.code,
        "type": type(failure.error).__name__,
        "message": str(failure.error),
    }


# ----------------------------------------------------------------------------- a program's output


class Tee:
    """``codemode``'s program output streamed to ours, escaped on the way: every control
    character but newline and tab, and every byte that is not UTF-8, spelt ``\\xNN`` /
    ``\\uNNNN``; with ``raw``, the bytes unchanged where the stream is not a terminal.

    Escaping needs whole characters: a UTF-8 sequence cut between two chunks waits
    in its stream's decoder; a byte that can never be UTF-8 comes out ``\\xNN``.
    """

    def __init__(self, raw: bool) -> None:
        self._streams = {each: _Escaped(each, raw) for each in ("stdout", "stderr")}

    def __call__(self, stream: str, data: bytes) -> None:
        self._streams[stream].write(data)

    def flush(self) -> None:
        """What the decoders still hold, written out."""
        for each in self._streams.values():
            each.write(b"", final=True)


class _Escaped:
    """One of our streams; ``raw`` is honoured only where it is not a terminal."""

    def __init__(self, stream: str, raw: bool) -> None:
        self.out: IO[bytes] = sys.stdout.buffer if stream == "stdout" else sys.stderr.buffer
        self.raw = raw and not _is_terminal(self.out)
        self.decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")

    def write(self, data: bytes, final: bool = False) -> None:
        if not self.raw:
            data = inert(self.decoder.decode(data, final), keep="\n\t").encode("utf-8")
        if not data:
            return
        try:
            self.out.write(data)
            self.out.flush()
        except (OSError, ValueError):  # our reader went away: the program still runs to its end
            pass


def _is_terminal(stream: IO[bytes]) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (OSError, ValueError):  # no descriptor (a test's buffer): not a terminal
        return False
