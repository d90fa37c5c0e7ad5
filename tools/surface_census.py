#!/usr/bin/env python3
"""Surface census: what the generated surface makes of real servers' tools.

Starts each real server the tests start, lists its tools, generates its module
(``codegen.generate``, under the server's own name), and prints, per server and
in total, how faithfully the generated functions carry the tools' names and
input types. Standard library and ``mcp_client`` only; not a test (it exits 0
once every server was measured; 1 when one could not be started or read).

    python tools/surface_census.py [--server NAME ...] [--json] [--npm-bin DIR]

The table's columns: tools, tools renamed (``ren``) and of those needlessly
(``need``); parameters, renamed, needlessly; ``Any`` parameters and their
share; loose parameters; enums kept of enum parameters, and the share. The
lists under it name every needless rename, ``Any``, loose parameter and lost
enum member.

The servers (``--server`` picks some by these names): ``demo``
(``mcp_client/cli/demo_server.py``), ``time`` (``python -m mcp_server_time``),
``git`` (``python -m mcp_server_git`` on a fresh repository with one commit),
and from ``tests/npm`` (``npm ci --prefix tests/npm`` installs them):
``everything``, ``filesystem`` (one empty allowed directory), ``memory``
(``MEMORY_FILE_PATH`` a file in a temporary directory) and
``sequential-thinking``. Every temporary directory is removed at the end.

**The metrics.** Each one is computed from two things only: the tools'
``inputSchema``s as listed, and the generated module's source, parsed with
``ast`` (so the census reads today's generator and any later one alike; it
never asks the generator how it named something). A *wire parameter* of a
tool is a key of its schema's ``properties`` object, or a string of its
``required`` list that names no property (the order of neither matters).

* **tools**: the tools listed. The function of a tool is the module-level
  ``def`` whose body calls ``internal.invoke(<server>, "<tool>", ...)``.
* **tools renamed**: tools whose function's name is not the wire name.
  **needlessly**: of those, the ones whose wire name is *legal*: an ASCII
  identifier (``[A-Za-z_][A-Za-z0-9_]*``) that is not a hard keyword
  (``keyword.kwlist``). Soft keywords, builtins, long names and names the
  module binds are legal by this definition: renaming them is a design
  choice, and the census lists each one with the reason a rule would give.
* **parameters**: the wire parameters, summed over tools.
* **parameters renamed**: wire parameters that a function takes under a
  label differing from the wire name. A function's label for a wire
  parameter is read off its body: the parameter ``label`` sent as the key
  ``"wire"`` (``{"wire": label}`` in a dict display, or
  ``arguments["wire"] = label``). A function that takes the whole arguments
  object (one parameter sent unchanged) exposes none of its tool's wire
  parameters: they are not renamed (the caller writes the wire keys) but
  *whole-value*, and each counts as ``Any`` below. **needlessly**: renamed,
  and the wire name is legal (as above).
* **Any**: wire parameters whose label is annotated exactly ``Any``, or
  ``Optional[Any]`` (``Union[Any, None]``, ``Any | None``), after resolving
  module-level aliases; plus every whole-value parameter. ``List[Any]`` or a
  ``TypedDict`` with ``Any`` fields is typed, if loosely, and not counted.
* **loose** (beside the goals): parameters not ``Any`` by the rule above
  whose annotation still holds ``Any`` somewhere (``List[Any]``,
  ``Dict[str, Any]``, ``Union[int, Any]``), aliases resolved; the fields of a
  ``TypedDict`` it names are not looked into.
* **enum parameters**: wire parameters whose schema states its values: an
  ``enum`` list or a ``const``, on the property schema itself, in one of its
  ``anyOf``/``oneOf`` branches, or in its ``items`` (an array of members),
  local ``$ref``s (``#/$defs/..``, ``#/definitions/..``) followed up to
  ``_MAX_REFS`` times. Its *members* are those values, ``null`` left out
  (a schema whose only member is ``null`` states no enum).
* **enums kept**: enum parameters whose every member is kept in the surface
  a model reads: the label's annotation holds a ``Literal[...]`` (anywhere in
  it, aliases resolved) naming that member (``True`` is not ``1``), and the
  function's surface line shows the member as a Python literal (a string as
  ``"<codegen.escape(member)>"``). A member that is not a string, integer or
  boolean (a float, an object) is never kept: ``Literal`` cannot hold it.

**Results** (issue 24), beside the table: **tools renamed with a digest** (a
function named ``<stem>_<8 hex>``: only where two names would meet, or the name
is reserved); and from a few sample calls per server (``Target.samples``,
read-only or on scratch data, each through ``codegen.deliver``): the **tools
whose text results parse as JSON** (``ToolOutput.data``'s rule), and the
**results checked** against a declared ``outputSchema`` record, with each one
that broke it (``ResultMismatch``).

A percentage is of tools (tools renamed) or of parameters (the rest), and of
enum parameters for enums kept. The totals add each figure over the servers.
A tool whose body names a label that is no wire parameter, or a wire
parameter no label or whole value carries, is a census error (the module
would not be what it claims), never a silent figure.

Issue 19 measured 21 servers (281 tools, 1,066 parameters) and set the goals
this prints beside the totals: no tool and at most 1% of parameters renamed
needlessly; at most 2% of parameters renamed in all; ``Any`` at most 2%;
enums kept at least 90%.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import keyword
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:  # run as a script from a checkout: measure that checkout
    sys.path.insert(0, REPO)

from mcp_client import Client, Exited, Options, ProcessTransport, Spawn, codegen, start  # noqa: E402
from mcp_client.codegen import content  # noqa: E402
from mcp_client.errors import McpClientError, ResultMismatch, ToolFailed  # noqa: E402
from mcp_client.jsonvalue import JsonValue  # noqa: E402
from mcp_client.protocol import Text, ToolDescriptor  # noqa: E402
from mcp_client.transport import CAPTURE  # noqa: E402

__all__ = [
    "Census",
    "CensusError",
    "Target",
    "GOALS",
    "census",
    "legal",
    "why_renamed",
    "wire_parameters",
    "enum_members",
    "total",
    "figures",
    "targets",
    "measure",
    "render",
    "main",
]

NPM_BIN = os.path.join(REPO, "tests", "npm", "node_modules", ".bin")
#: Issue 19's goals, as fractions: (metric, at most / at least, bound).
GOALS = (
    ("tools renamed needlessly", "<=", 0.0),
    ("parameters renamed needlessly", "<=", 0.01),
    ("parameters renamed", "<=", 0.02),
    ("Any parameters", "<=", 0.02),
    ("enums kept", ">=", 0.90),
)
_MAX_REFS = 8
_SOFT_KEYWORDS = frozenset(("match", "case", "type", "_"))
_MODULE_NAMES = frozenset(("internal", "arguments", "cap", "mcp"))
_ALIAS_DEPTH = 16
_LEGAL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DIGESTED = re.compile(r".*_[0-9a-f]{8}")
_OPTIONS = Options(handshake_timeout=120.0, request_timeout=120.0, retire_timeout=30.0)
# A commit identity for git, isolated from any user or system configuration.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Census",
    "GIT_AUTHOR_EMAIL": "census@example.invalid",
    "GIT_COMMITTER_NAME": "Census",
    "GIT_COMMITTER_EMAIL": "census@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

Member = Tuple[str, object]  # (type name, value): True and 1 stay distinct


class CensusError(Exception):
    """The generated module could not be read as the census reads it."""


@dataclass
class Census:
    """The figures for one server (or, summed, for several): see the module doc."""

    server: str
    tools: int = 0
    tools_renamed: int = 0
    tools_renamed_needlessly: int = 0
    parameters: int = 0
    parameters_renamed: int = 0
    parameters_renamed_needlessly: int = 0
    whole_value_parameters: int = 0
    any_parameters: int = 0
    loose_parameters: int = 0
    enum_parameters: int = 0
    enums_kept: int = 0
    #: "<server>: <wire> -> <function> (<why a rule renamed it>)"
    needless_tool_renames: List[str] = field(default_factory=list)
    #: "<server>.<tool>: <wire> -> <label> (<why>)"
    needless_parameter_renames: List[str] = field(default_factory=list)
    #: "<server>.<tool>.<wire>: <annotation>"
    any_list: List[str] = field(default_factory=list)
    #: "<server>.<tool>.<wire>: <annotation>"
    loose_list: List[str] = field(default_factory=list)
    #: "<server>.<tool>.<wire>: <members lost>"
    enums_lost: List[str] = field(default_factory=list)
    #: Issue 24: tools whose function carries a digest; "<server>: <wire> -> <function>"
    digest_renames: List[str] = field(default_factory=list)
    #: Issue 24, from the sample calls (``Target.samples``): calls made, and how many
    #: ended in ``ToolFailed``; "<server>.<tool>" whose text result parsed as JSON
    #: (``ToolOutput.data``, or the text beside a structuredContent); results checked
    #: against a declared record (``GeneratedTool.check``), and those that broke it.
    sampled_calls: int = 0
    failed_calls: int = 0
    text_json: List[str] = field(default_factory=list)
    results_checked: int = 0
    mismatches: List[str] = field(default_factory=list)


# ------------------------------------------------------------------------ the metrics


def legal(name: str) -> bool:
    """Whether Python would take ``name`` as an identifier as it is (see the module doc)."""
    return bool(_LEGAL.match(name)) and not keyword.iskeyword(name)


def why_renamed(name: str) -> str:
    """Which rule might still rename a legal name, for the lists: all that apply."""
    reasons = [
        reason
        for reason, applies in (
            ("soft keyword", name in _SOFT_KEYWORDS),  # the union over 3.9-3.13, not this one's
            ("builtin", name in vars(builtins)),
            ("longer than 32", len(name) > 32),
            ("leading underscore", name.startswith("_")),
            ("a name the module binds", name in _MODULE_NAMES),
        )
        if applies
    ]
    return ", ".join(reasons) or "no rule needs it"


def census(server: str, tools: Sequence[ToolDescriptor], generated: codegen.Generated) -> Census:
    """The figures for ``server``'s ``tools`` and the module generated from them.

    ``server`` names the server in the census and its lists (the census name).
    """
    module = _Module(generated)
    counted = Census(server)
    functions = module.functions_by_tool()
    if len(functions) != len(tools):
        raise CensusError("%d functions for %d tools" % (len(functions), len(tools)))
    for tool in tools:
        if tool.name not in functions:
            raise CensusError("no function invokes tool %r" % tool.name)
        _count_tool(counted, server, tool, functions[tool.name], module)
    return counted


@dataclass(frozen=True)
class _Tool:
    """One tool beside its function: what each parameter's figures are read from."""

    server: str
    name: str
    schema: Dict[str, JsonValue]  # the inputSchema (an empty one when it is no object)
    function: ast.FunctionDef
    labels: Dict[str, str]  # wire parameter -> the label the function takes it by
    whole: bool  # the function sends one parameter as the whole arguments object
    module: "_Module"


def _count_tool(
    counted: Census, server: str, tool: ToolDescriptor, function: ast.FunctionDef, module: "_Module"
) -> None:
    counted.tools += 1
    if function.name != tool.name and _DIGESTED.fullmatch(function.name):
        counted.digest_renames.append("%s: %s -> %s" % (server, tool.name, function.name))
    if function.name != tool.name:
        counted.tools_renamed += 1
        if legal(tool.name):
            counted.tools_renamed_needlessly += 1
            counted.needless_tool_renames.append(
                "%s: %s -> %s (%s)" % (server, tool.name, function.name, why_renamed(tool.name))
            )
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    view = _Tool(
        server,
        tool.name,
        schema,
        function,
        _labels_by_wire(function),
        _takes_whole_value(function),
        module,
    )
    wires = wire_parameters(schema)
    stray = set(view.labels) - set(wires)
    if stray:
        raise CensusError("%s sends %s, not in its schema" % (tool.name, sorted(stray)))
    for wire in wires:
        _count_parameter(counted, view, wire)


def _count_parameter(counted: Census, tool: _Tool, wire: str) -> None:
    counted.parameters += 1
    where = "%s.%s.%s" % (tool.server, tool.name, wire)
    label = tool.labels.get(wire)
    annotation: Optional[ast.expr] = None
    if label is None:
        if not tool.whole:
            raise CensusError("%s reaches the wire under no label" % where)
        counted.whole_value_parameters += 1
    else:
        annotation = _annotation_of(tool.function, label)
        _count_rename(counted, where, wire, label)
    _count_type(counted, where, annotation, tool.module)
    members = enum_members(_property(tool.schema, wire), tool.schema)
    if members is not None:
        _count_enum(counted, where, members, annotation, tool)


def _count_type(
    counted: Census, where: str, annotation: Optional[ast.expr], module: "_Module"
) -> None:
    """Any (a whole value when ``annotation`` is None), loose, or neither."""
    if annotation is None or module.is_any(annotation):
        counted.any_parameters += 1
        counted.any_list.append(
            "%s: %s" % (where, "whole value" if annotation is None else ast.unparse(annotation))
        )
    elif module.mentions_any(annotation):
        counted.loose_parameters += 1
        counted.loose_list.append("%s: %s" % (where, ast.unparse(annotation)))


def _count_rename(counted: Census, where: str, wire: str, label: str) -> None:
    if label == wire:
        return
    counted.parameters_renamed += 1
    if legal(wire):
        counted.parameters_renamed_needlessly += 1
        counted.needless_parameter_renames.append(
            "%s -> %s (%s)" % (where, label, why_renamed(wire))
        )


def _count_enum(
    counted: Census, where: str, members: List[Member], annotation: Optional[ast.expr], tool: _Tool
) -> None:
    counted.enum_parameters += 1
    lost = _lost_members(members, annotation, tool.module, tool.function)
    if lost:
        counted.enums_lost.append("%s: %s" % (where, ", ".join(repr(m[1]) for m in lost)))
    else:
        counted.enums_kept += 1


def _lost_members(
    members: List[Member],
    annotation: Optional[ast.expr],
    module: "_Module",
    function: ast.FunctionDef,
) -> List[Member]:
    typed: Set[Member] = set()
    if annotation is not None:
        typed = module.literal_members(annotation)
    line = module.surface_line(function.name)
    return [member for member in members if member not in typed or _spelled(member) not in line]


def _spelled(member: Member) -> str:
    """How the surface spells ``member``: as a Python literal."""
    kind, value = member
    if kind == "str":
        return '"%s"' % codegen.escape(str(value))
    return repr(value)


def wire_parameters(schema: Dict[str, JsonValue]) -> List[str]:
    """The tool's wire parameters: ``properties`` keys, then unlisted ``required`` names."""
    properties = schema.get("properties")
    names = list(properties) if isinstance(properties, dict) else []
    required = schema.get("required")
    if isinstance(required, list):
        names += [
            name for name in dict.fromkeys(required) if isinstance(name, str) and name not in names
        ]
    return names


def _property(schema: Dict[str, JsonValue], wire: str) -> JsonValue:
    properties = schema.get("properties")
    return properties.get(wire) if isinstance(properties, dict) else None


def enum_members(schema: JsonValue, root: JsonValue) -> Optional[List[Member]]:
    """The members a parameter's schema states (see the module doc), or ``None``."""
    found: List[Member] = []
    for node in _enum_places(schema, root):
        values: List[JsonValue] = []
        if isinstance(node.get("enum"), list):
            values = list(node["enum"])  # type: ignore[arg-type]
        elif "const" in node:
            values = [node["const"]]
        for value in values:
            member = (type(value).__name__, value)
            if value is not None and member not in found:
                found.append(member)
    return found if found else None


def _enum_places(schema: JsonValue, root: JsonValue) -> Iterator[Dict[str, JsonValue]]:
    """The schema itself, its anyOf/oneOf branches, its items: each after its $refs."""
    top = _deref(schema, root)
    if top is None:
        return
    yield top
    for key in ("anyOf", "oneOf"):
        branches = top.get(key)
        for branch in branches if isinstance(branches, list) else []:
            node = _deref(branch, root)
            if node is not None:
                yield node
    items = _deref(top.get("items"), root)
    if items is not None:
        yield items


def _deref(schema: JsonValue, root: JsonValue) -> Optional[Dict[str, JsonValue]]:
    for _ in range(_MAX_REFS):
        if not isinstance(schema, dict):
            return None
        reference = schema.get("$ref")
        if not isinstance(reference, str):
            return schema
        schema = _resolve(reference, root)
    return None


def _resolve(reference: str, root: JsonValue) -> JsonValue:
    for prefix in ("#/$defs/", "#/definitions/"):
        if reference.startswith(prefix) and isinstance(root, dict):
            table = root.get(prefix[2:-1])
            if isinstance(table, dict):
                return table.get(reference[len(prefix) :])
    return None


# ------------------------------------------------------------------ reading the module


class _Module:
    """The generated source, parsed: functions, aliases, the surface's lines."""

    def __init__(self, generated: codegen.Generated) -> None:
        self.generated = generated
        self.tree = ast.parse(generated.source)
        self.aliases: Dict[str, ast.expr] = {}
        for node in self.tree.body:
            target, value = _assignment(node)
            if target is not None and value is not None and not isinstance(value, ast.Call):
                self.aliases[target] = value  # a TypedDict(...) call is a type, not an alias

    def functions_by_tool(self) -> Dict[str, ast.FunctionDef]:
        found: Dict[str, ast.FunctionDef] = {}
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef):
                tool = _invoked_tool(node)
                if tool is None or tool in found:
                    raise CensusError("function %s: no single internal.invoke" % node.name)
                found[tool] = node
        self._check_against_tools(found)
        return found

    def _check_against_tools(self, found: Dict[str, ast.FunctionDef]) -> None:
        # Where the generator reports its tools (issue 19's Generated.tools), it agrees.
        for reported in getattr(self.generated, "tools", ()):
            node = found.get(reported.wire_name)
            if node is None or node.name != reported.function:
                raise CensusError(
                    "Generated.tools says %s is %s; the source disagrees"
                    % (reported.wire_name, reported.function)
                )

    def surface_line(self, function: str) -> str:
        for reported in getattr(self.generated, "tools", ()):
            if reported.function == function:
                return str(reported.line)
        start = "%s.%s(" % (self.generated.module_name, function)
        for line in self.generated.surface.splitlines():
            if line.strip().startswith(start):
                return line
        raise CensusError("no surface line for %s" % function)

    def resolve(self, node: ast.expr, depth: int = 0) -> ast.expr:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:  # a string annotation (a forward reference)
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return node
        if isinstance(node, ast.Name) and node.id in self.aliases and depth < _ALIAS_DEPTH:
            return self.resolve(self.aliases[node.id], depth + 1)
        return node

    def is_any(self, annotation: ast.expr) -> bool:
        node = self.resolve(annotation)
        if _is_name(node, "Any"):
            return True
        return any(_is_name(self.resolve(arm), "Any") for arm in _optional_arm(node))

    def mentions_any(self, annotation: ast.expr, depth: int = 0) -> bool:
        node = self.resolve(annotation)
        if _is_name(node, "Any"):
            return True
        if isinstance(node, ast.Subscript) and _is_name(node.value, "Literal"):
            return False  # its members are values, not types
        return depth < _ALIAS_DEPTH and any(
            self.mentions_any(child, depth + 1)
            for child in ast.iter_child_nodes(node)
            if isinstance(child, ast.expr)
        )

    def literal_members(self, annotation: ast.expr, depth: int = 0) -> Set[Member]:
        members: Set[Member] = set()
        node = self.resolve(annotation)
        if depth > _ALIAS_DEPTH:
            return members
        if isinstance(node, ast.Subscript) and _is_name(node.value, "Literal"):
            inside = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for element in inside:
                if isinstance(element, ast.Constant):
                    members.add((type(element.value).__name__, element.value))
            return members
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                members |= self.literal_members(child, depth + 1)
        return members


def _assignment(node: ast.stmt) -> Tuple[Optional[str], Optional[ast.expr]]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        if isinstance(target, ast.Name):
            return target.id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None


def _is_name(node: ast.expr, name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or (
        isinstance(node, ast.Attribute) and node.attr == name
    )


def _optional_arm(node: ast.expr) -> List[ast.expr]:
    """``X`` of ``Optional[X]``, ``Union[X, None]`` or ``X | None``; else nothing."""
    if isinstance(node, ast.Subscript) and _is_name(node.value, "Optional"):
        return [node.slice]
    arms: List[ast.expr] = []
    if isinstance(node, ast.Subscript) and _is_name(node.value, "Union"):
        arms = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        arms = [node.left, node.right]
    rest = [arm for arm in arms if not (isinstance(arm, ast.Constant) and arm.value is None)]
    return rest if len(rest) == 1 and len(arms) == 2 else []


def _invoked_tool(function: ast.FunctionDef) -> Optional[str]:
    tools = [
        call.args[1].value
        for call in ast.walk(function)
        if isinstance(call, ast.Call)
        and _is_name(call.func, "invoke")
        and len(call.args) >= 2
        and isinstance(call.args[1], ast.Constant)
        and isinstance(call.args[1].value, str)
    ]
    return tools[0] if len(tools) == 1 else None


def _parameters(function: ast.FunctionDef) -> List[ast.arg]:
    arguments = function.args
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]


def _labels_by_wire(function: ast.FunctionDef) -> Dict[str, str]:
    """Each wire key the body sends a parameter under, with that parameter's label."""
    labels = {parameter.arg for parameter in _parameters(function)}
    found: Dict[str, str] = {}
    for node in ast.walk(function):
        for key, value in _sent_pairs(node):
            if isinstance(value, ast.Name) and value.id in labels:
                found[key] = value.id
    return found


def _sent_pairs(node: ast.AST) -> Iterator[Tuple[str, ast.expr]]:
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield key.value, value
    targets: List[ast.expr] = []
    sent: Optional[ast.expr] = None
    if isinstance(node, ast.Assign):
        targets, sent = list(node.targets), node.value
    elif isinstance(node, ast.AnnAssign):
        targets, sent = [node.target], node.value
    for target in targets:
        if (
            isinstance(target, ast.Subscript)
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
            and sent is not None
        ):
            yield target.slice.value, sent


def _takes_whole_value(function: ast.FunctionDef) -> bool:
    """Whether the function sends one of its parameters as the whole arguments object."""
    labels = {parameter.arg for parameter in _parameters(function)}
    for call in ast.walk(function):
        if isinstance(call, ast.Call) and _is_name(call.func, "invoke") and len(call.args) >= 3:
            sent = call.args[2]
            return isinstance(sent, ast.Name) and sent.id in labels
    return False


def _annotation_of(function: ast.FunctionDef, label: str) -> Optional[ast.expr]:
    for parameter in _parameters(function):
        if parameter.arg == label:
            return parameter.annotation
    return None


def total(censuses: Sequence[Census]) -> Census:
    """Every figure and list added over ``censuses``."""
    summed = Census("total")
    for one in censuses:
        for name, value in vars(one).items():
            if name != "server":
                setattr(summed, name, getattr(summed, name) + value)
    return summed


# ------------------------------------------------------------------------- the servers


@dataclass(frozen=True)
class Target:
    """A server the tests start, by its census name."""

    name: str
    spawn: Spawn
    #: Calls the census makes to see results: (wire tool, arguments), read-only or on
    #: scratch data; a tool the server does not list is passed over.
    samples: Tuple[Tuple[str, Dict[str, JsonValue]], ...] = ()


def targets(scratch: str, npm_bin: str = NPM_BIN) -> List[Target]:
    """The servers, each with what it needs made under ``scratch`` (a directory)."""
    python = sys.executable
    demo = os.path.join(REPO, "mcp_client", "cli", "demo_server.py")
    allowed = os.path.join(scratch, "allowed")
    os.mkdir(allowed)
    repository = _git_repository(scratch)
    return [
        Target("demo", Spawn(python, (demo,)), _DEMO_SAMPLES),
        Target(
            "time",
            Spawn(python, ("-m", "mcp_server_time", "--local-timezone", "UTC")),
            _TIME_SAMPLES,
        ),
        Target(
            "git",
            Spawn(python, ("-m", "mcp_server_git", "--repository", repository), env=_GIT_ENV),
            (("git_status", {"repo_path": repository}), ("git_log", {"repo_path": repository})),
        ),
        Target("everything", Spawn(os.path.join(npm_bin, "mcp-server-everything")), _EVERYTHING),
        Target(
            "filesystem",
            Spawn(os.path.join(npm_bin, "mcp-server-filesystem"), (allowed,)),
            (("list_allowed_directories", {}), ("list_directory", {"path": allowed})),
        ),
        Target(
            "memory",
            Spawn(
                os.path.join(npm_bin, "mcp-server-memory"),
                env={"MEMORY_FILE_PATH": os.path.join(scratch, "memory.jsonl")},
            ),
            _MEMORY_SAMPLES,
        ),
        Target(
            "sequential-thinking",
            Spawn(os.path.join(npm_bin, "mcp-server-sequential-thinking")),
            _THINKING_SAMPLES,
        ),
    ]


_DEMO_SAMPLES: Tuple[Tuple[str, Dict[str, JsonValue]], ...] = (
    ("add", {"a": 1, "b": 2}),
    ("divide", {"a": 1, "b": 4}),
    ("reverse-text", {"text": "census"}),
)
_TIME_SAMPLES: Tuple[Tuple[str, Dict[str, JsonValue]], ...] = (
    ("get_current_time", {"timezone": "UTC"}),
    ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
)
_EVERYTHING: Tuple[Tuple[str, Dict[str, JsonValue]], ...] = (
    ("echo", {"message": "census"}),
    ("get-sum", {"a": 1, "b": 2}),
    ("get-tiny-image", {}),
    ("get-structured-content", {"location": "Chicago"}),
)
_MEMORY_SAMPLES: Tuple[Tuple[str, Dict[str, JsonValue]], ...] = (
    (
        "create_entities",
        {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]},
    ),
    ("read_graph", {}),
    ("search_nodes", {"query": "Ada"}),
)
_THINKING_SAMPLES: Tuple[Tuple[str, Dict[str, JsonValue]], ...] = (
    (
        "sequentialthinking",
        {"thought": "census", "nextThoughtNeeded": False, "thoughtNumber": 1, "totalThoughts": 1},
    ),
)


def _git_repository(scratch: str) -> str:
    repository = os.path.join(scratch, "repository")
    os.mkdir(repository)
    with open(os.path.join(repository, "notes.txt"), "w") as stream:
        stream.write("census\n")
    for command in (["init", "-q"], ["add", "notes.txt"], ["commit", "-q", "-m", "census"]):
        subprocess.run(
            ["git", *command],
            cwd=repository,
            env=dict(os.environ, **_GIT_ENV),
            check=True,
            capture_output=True,
            timeout=60,
        )
    return repository


def measure(target: Target) -> Census:
    """Start ``target``, list, generate under the server's own name, retire, count."""
    # The server's stderr is kept (its tail, for a failure), not mixed into the table.
    client = start(ProcessTransport(target.spawn, stderr=CAPTURE), _OPTIONS)
    try:
        initialized = client.initialize_result
        if initialized is None:
            raise CensusError("%s: started, but no initialize result" % target.name)
        server = initialized.server_info.name
        tools = client.list_tools()
        generated = codegen.generate(server, tools, info=initialized)
        counted = census(target.name, tools, generated)
        _sample(counted, client, generated, target)
    finally:
        evidence = client.shutdown()
    if not isinstance(evidence, Exited):
        raise CensusError("%s retired with %r" % (target.name, evidence))
    return counted


def _sample(counted: Census, client: Client, generated: codegen.Generated, target: Target) -> None:
    """Make ``target``'s sample calls through ``codegen.deliver`` and count what came."""
    tools = {tool.wire_name: tool for tool in generated.tools}
    for wire, arguments in target.samples:
        if wire not in tools:
            continue
        result = client.call_tool(wire, arguments)
        counted.sampled_calls += 1
        where = "%s.%s" % (target.name, wire)
        text = "\n".join(block.text for block in result.content if isinstance(block, Text))
        if content.parse_data(text) is not None and where not in counted.text_json:
            counted.text_json.append(where)
        checked = tools[wire].check is not None and not result.is_error
        counted.results_checked += checked
        try:
            codegen.deliver(tools[wire], result)
        except ResultMismatch as mismatch:
            counted.mismatches.append("%s: %s" % (where, mismatch))
        except ToolFailed:
            counted.failed_calls += 1


# ----------------------------------------------------------------------------- output


def _percent(part: int, whole: int) -> str:
    return "%.1f%%" % (100.0 * part / whole) if whole else "-"


def _row(counted: Census) -> str:
    c = counted
    return "%-20s %5d %4d %4d  %6d %4d %4d  %4d %6s %5d  %5s %6s" % (
        c.server,
        c.tools,
        c.tools_renamed,
        c.tools_renamed_needlessly,
        c.parameters,
        c.parameters_renamed,
        c.parameters_renamed_needlessly,
        c.any_parameters,
        _percent(c.any_parameters, c.parameters),
        c.loose_parameters,
        "%d/%d" % (c.enums_kept, c.enum_parameters),
        _percent(c.enums_kept, c.enum_parameters),
    )


def figures(counted: Census) -> Dict[str, float]:
    """The goals' fractions for ``counted`` (see GOALS)."""

    def part(a: int, b: int) -> float:
        return a / b if b else 0.0

    return {
        "tools renamed needlessly": part(counted.tools_renamed_needlessly, counted.tools),
        "parameters renamed needlessly": part(
            counted.parameters_renamed_needlessly, counted.parameters
        ),
        "parameters renamed": part(counted.parameters_renamed, counted.parameters),
        "Any parameters": part(counted.any_parameters, counted.parameters),
        "enums kept": part(counted.enums_kept, counted.enum_parameters)
        if counted.enum_parameters
        else 1.0,
    }


_HEADINGS = (
    "server",
    "tools",
    "ren",
    "need",
    "params",
    "ren",
    "need",
    "Any",
    "",
    "loose",
    "enums",
    "kept",
)


def render(censuses: Sequence[Census]) -> str:
    """The table, the totals against the goals, and every needless rename, Any and lost enum."""
    summed = total(censuses)
    lines = [
        "%-20s %5s %4s %4s  %6s %4s %4s  %4s %6s %5s  %5s %6s" % _HEADINGS,
        *(_row(one) for one in censuses),
        _row(summed),
        "",
        "goals (issue 19):",
    ]
    lines += _goal_lines(figures(summed))
    lines += [
        "",
        "results (issue 24): %d sample calls (%d ToolFailed); %d results checked against "
        "a declared outputSchema, %d broke it"
        % (
            summed.sampled_calls,
            summed.failed_calls,
            summed.results_checked,
            len(summed.mismatches),
        ),
    ]
    for title, items in (
        ("tools renamed with a digest", summed.digest_renames),
        ("tools whose text results parse as JSON", summed.text_json),
        ("results that broke their outputSchema", summed.mismatches),
        ("tools renamed needlessly", summed.needless_tool_renames),
        ("parameters renamed needlessly", summed.needless_parameter_renames),
        ("Any parameters", summed.any_list),
        ("loose parameters (Any inside)", summed.loose_list),
        ("enum members lost", summed.enums_lost),
    ):
        lines += ["", "%s: %d" % (title, len(items)), *("  " + item for item in items)]
    return "\n".join(lines)


def _goal_lines(measured: Dict[str, float]) -> List[str]:
    lines = []
    for metric, sense, bound in GOALS:
        value = measured[metric]
        met = value <= bound if sense == "<=" else value >= bound
        lines.append(
            "  %-30s %6.1f%%  goal %s %.0f%%  %s"
            % (metric, 100 * value, sense, 100 * bound, "met" if met else "NOT MET")
        )
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--server",
        action="append",
        default=[],
        help="measure only this server (repeatable): demo, time, git, "
        "everything, filesystem, memory, sequential-thinking",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per server")
    parser.add_argument("--npm-bin", default=NPM_BIN, help="where the npm servers are")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="census-") as scratch:
        chosen = [
            t for t in targets(scratch, args.npm_bin) if not args.server or t.name in args.server
        ]
        if not chosen:
            parser.error("no server named %s" % ", ".join(args.server))
        try:
            censuses = [measure(target) for target in chosen]
        except (CensusError, OSError, McpClientError) as error:
            print(
                "census failed: %s: %s (the npm servers: npm ci --prefix tests/npm)"
                % (type(error).__name__, error),
                file=sys.stderr,
            )
            return 1
    everything = [*censuses, total(censuses)]
    print(
        json.dumps([asdict(one) for one in everything], indent=1) if args.json else render(censuses)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
