"""Checks every test of generated code shares: the cage holds, and calls carry wire names.

Lives beside the fake ``cap`` package because both serve the same purpose (running
and inspecting generated modules in tests); test modules put this directory on
``sys.path`` and import it as ``codegen_checks``.

* ``assert_caged`` reads the source statically: it parses, holds no decorator and
  no ``@`` token, has exactly one function per tool and nothing else but its
  imports and types, every function has a docstring and ends in ``return
  _typing.cast(<type>, internal.invoke(<server>, <wire name>, arguments))`` with
  both names as string constants, every comment starts a line, every string
  literal is printable ASCII, ``@`` appears on comment lines only (so
  ``scan_for_at`` proves the cage without a tokenizer run), and no removed
  codepoint survives anywhere. Every type is well formed (``Name =
  TypedDict("Name", {"key": type, ...}[, total=False])`` with distinct constant
  keys and types built of ``str``, ``int``, ``float``, ``bool``, ``Any``,
  ``List``, ``Optional``, ``Union``, ``Literal`` of constants and types declared
  before it, or ``class Name(_NameRequired, _NameOptional): pass`` joining two
  such halves) and used exactly once: by its tool's function, by the one key
  that holds it, or by its join (``ToolOutput`` by every tool without an
  outputSchema). A function returns a result type exactly when
  ``schema.plan_output`` reads its tool's ``outputSchema`` as a ``Record``, and
  that type has the record's keys; ``Dict[str, Any]`` for any other
  outputSchema, ``ToolOutput`` without one.
* ``assert_conforms`` checks a value (a tool's ``structuredContent``) against a
  generated result type at run time, recursively: every required key present,
  no key the type does not name (the records checked admit no other), and each
  value of its declared type.
* ``assert_sends_wire_names`` runs the module against the fake seam and calls
  every function: the server, the wire tool name and the wire parameter names
  arrive exactly, optional parameters left out when not given, and the function
  returns what the seam returns. A result type at run time has the record's keys,
  the required ones in ``__required_keys__``.
"""

from __future__ import annotations

import ast
import inspect
import io
import token
import tokenize
import typing
import unicodedata
import unittest
from collections import Counter
from typing import Any, Callable, Dict, List, Sequence, Tuple, Union

from cap.internal import mcp as seam
from cap.mcp import load_generated

from mcp_client.codegen import Generated, _inert_by_lines, content
from mcp_client.codegen.name import CONTENT_NAMES, Digest, mangle_all, mangle_label, sha256_digest
from mcp_client.codegen.schema import Record, plan_output
from mcp_client.protocol import ToolDescriptor

__all__ = ["assert_caged", "assert_sends_wire_names", "assert_conforms", "wire_params"]

_FORBIDDEN_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")
_TYPING_NAMES = {"Any", "Dict", "List", "Literal", "Optional", "TypedDict", "Union"}
# What a type's field types are built of, besides declared types.
_FIELD_NAMES = {"str", "int", "float", "bool", "Any"}
_FIELD_GENERICS = {"List", "Optional", "Union", "Literal", "Dict"}
_SEAM_IMPORTS = (
    "from cap.internal import mcp as internal",
    "import typing as _typing",
    "import builtins as _builtins",
)


class _Builtins(ast.NodeTransformer):
    """``_builtins.str`` read as ``str``, once checked: it names a builtin the source
    spells, and only in a module where a function takes that name (``def str``)."""

    def __init__(self, test: unittest.TestCase, tree: ast.Module) -> None:
        self.test = test
        self.functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == "_builtins":
            self.test.assertIn(node.attr, {"str", "int", "float", "bool"})
            self.test.assertIn(node.attr, self.functions)
            return ast.copy_location(ast.Name(node.attr, node.ctx), node)
        return self.generic_visit(node)


def assert_caged(
    test: unittest.TestCase, generated: Generated, server: str, tools: Sequence[ToolDescriptor]
) -> None:
    """The static half: see the module doc."""
    source = generated.source
    tree = ast.parse(source)
    _assert_tokens(test, source)
    _assert_characters(test, source)
    _assert_no_decorator(test, tree)
    tree = _Builtins(test, tree).visit(tree)
    functions, declared = _assert_module_body(test, tree)
    test.assertEqual(len(functions), len(tools))
    wires = [_assert_ends_in_invoke(test, function, server) for function in functions]
    test.assertEqual(Counter(wires), Counter(tool.name for tool in tools))
    by_wire = {tool.name: tool for tool in tools}
    for function, wire in zip(functions, wires):
        _assert_returns(test, function, by_wire[wire], declared)
    _assert_each_used_once(test, functions, declared)
    test.assertTrue(_inert_by_lines(source), "scan_for_at needed its tokenizer")
    test.assertEqual(
        source.splitlines()[:2],
        [
            "# -*- coding: utf-8 -*-",
            "# Generated by mcp_client.codegen; do not edit: regenerate it instead.",
        ],
    )


def _assert_tokens(test: unittest.TestCase, source: str) -> None:
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        test.assertNotIn(tok.exact_type, (token.AT, token.ATEQUAL, token.ERRORTOKEN))
        if tok.type == token.COMMENT:
            test.assertEqual(tok.start[1], 0, "comment not at the start of its line")
        if tok.type == token.STRING:
            test.assertRegex(tok.string, r'\A"[ -~]*"\Z')


def _assert_characters(test: unittest.TestCase, source: str) -> None:
    for line in source.split("\n"):  # escape turns every other @ into \x40
        test.assertTrue("@" not in line or line.startswith("#"), line)
    for char in set(source) - {"\n"}:
        test.assertNotIn(unicodedata.category(char), _FORBIDDEN_CATEGORIES, "U+%04X" % ord(char))


def _assert_no_decorator(test: unittest.TestCase, tree: ast.Module) -> None:
    for node in ast.walk(tree):
        test.assertNotIsInstance(node, (ast.MatMult, ast.Lambda))
        if isinstance(node, ast.FunctionDef):
            test.assertEqual(node.decorator_list, [])


def _assert_module_body(
    test: unittest.TestCase, tree: ast.Module
) -> Tuple[List[ast.FunctionDef], Dict[str, ast.Dict]]:
    """The functions, and each result type's name with its fields, in source order."""
    functions: List[ast.FunctionDef] = []
    declared: Dict[str, ast.Dict] = {}
    fixed = {ast.dump(node) for node in ast.parse("\n".join(content.DECLARATIONS)).body}
    for index, node in enumerate(tree.body):
        if ast.dump(node) in fixed:  # the block types: generator text, the same in every module
            continue
        if index == 0 and isinstance(node, ast.Expr):  # the module docstring
            test.assertIsInstance(getattr(node.value, "value", None), str)
            continue
        if isinstance(node, ast.FunctionDef):
            functions.append(node)
        elif isinstance(node, ast.ImportFrom) and node.module == "typing":
            test.assertTrue({alias.name for alias in node.names} <= _TYPING_NAMES)
        elif isinstance(node, ast.Assign):
            name, fields = _assert_result_type(test, node, declared)
            declared[name] = fields
        elif isinstance(node, ast.ClassDef):
            name, fields = _assert_join(test, node, declared)
            declared[name] = fields
        else:
            test.assertIn(
                ast.dump(node), [ast.dump(ast.parse(text).body[0]) for text in _SEAM_IMPORTS]
            )
    names = [f.name for f in functions] + list(declared)
    test.assertEqual(len(set(names)), len(names), "duplicate name")
    return functions, declared


def _assert_result_type(
    test: unittest.TestCase, node: ast.Assign, declared: Dict[str, ast.Dict]
) -> Tuple[str, ast.Dict]:
    """``Name = TypedDict("Name", {...}[, total=False])``, its types declared before it."""
    test.assertEqual(len(node.targets), 1)
    target, call = node.targets[0], node.value
    assert isinstance(target, ast.Name) and isinstance(call, ast.Call), ast.dump(node)
    test.assertNotIn(target.id, declared, "declared twice")
    test.assertEqual(ast.dump(call.func), ast.dump(ast.Name("TypedDict", ast.Load())))
    name, fields = call.args
    assert isinstance(name, ast.Constant) and isinstance(fields, ast.Dict), ast.dump(call)
    test.assertEqual(name.value, target.id)
    test.assertIn(
        [(k.arg, ast.literal_eval(k.value)) for k in call.keywords], ([], [("total", False)])
    )
    keys = [key.value for key in fields.keys if isinstance(key, ast.Constant)]
    test.assertEqual(len(keys), len(fields.keys), "a key that is not a constant")
    test.assertTrue(keys and all(isinstance(key, str) for key in keys))
    test.assertEqual(len(set(keys)), len(keys), "duplicate key")
    for value in fields.values:
        _assert_field_type(test, value, declared)
    return target.id, fields


def _assert_join(
    test: unittest.TestCase, node: ast.ClassDef, declared: Dict[str, ast.Dict]
) -> Tuple[str, ast.Dict]:
    """``class Name(_NameRequired, _NameOptional): pass``: its halves declared before it."""
    name = node.name
    halves = ["_%sRequired" % name, "_%sOptional" % name]
    test.assertEqual([getattr(base, "id", None) for base in node.bases], halves)
    test.assertEqual(node.keywords, [])
    test.assertEqual(len(node.body), 1)
    test.assertIsInstance(node.body[0], ast.Pass)
    test.assertNotIn(name, declared, "declared twice")
    both = ast.Dict(
        keys=declared[halves[0]].keys + declared[halves[1]].keys,
        values=declared[halves[0]].values + declared[halves[1]].values,
    )
    return name, both


def _assert_field_type(
    test: unittest.TestCase, node: ast.expr, declared: Dict[str, ast.Dict]
) -> None:
    if isinstance(node, ast.Subscript):
        assert isinstance(node.value, ast.Name), ast.dump(node)
        test.assertIn(node.value.id, _FIELD_GENERICS)
        inner = node.slice  # Python 3.9+: no ast.Index
        parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        for part in parts:
            if node.value.id == "Literal":  # constants; a negative integer is -<constant>
                if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.USub):
                    part = part.operand
                    assert isinstance(part, ast.Constant) and type(part.value) is int
                assert isinstance(part, ast.Constant), ast.dump(part)
                test.assertIn(type(part.value), (str, int, bool))
            else:
                _assert_field_type(test, part, declared)
        return
    assert isinstance(node, ast.Name), ast.dump(node)
    test.assertTrue(
        node.id in _FIELD_NAMES or node.id in declared or node.id in CONTENT_NAMES, node.id
    )


def _assert_returns(
    test: unittest.TestCase,
    function: ast.FunctionDef,
    tool: ToolDescriptor,
    declared: Dict[str, ast.Dict],
) -> None:
    """A result type exactly for a tool whose outputSchema reads as a record; its keys."""
    returns = function.returns
    assert returns is not None
    if tool.output_schema is None:  # ToolOutput, or one whose data has a shape learned
        name = ast.unparse(returns)
        if name != "ToolOutput":
            test.assertTrue(name.endswith("Output") and name in declared, name)
        return
    output = plan_output(tool.output_schema)
    if not isinstance(output, Record):
        test.assertEqual(ast.unparse(returns), "Dict[str, Any]")
        return
    assert isinstance(returns, ast.Name), ast.dump(function)
    test.assertIn(returns.id, declared)
    keys = [ast.literal_eval(key) for key in declared[returns.id].keys]  # type: ignore[arg-type]
    # Required keys first when a record mixes both (its two halves), else in order.
    test.assertEqual(sorted(keys), sorted(field.name for field in output.fields))


def _assert_each_used_once(
    test: unittest.TestCase, functions: List[ast.FunctionDef], declared: Dict[str, ast.Dict]
) -> None:
    used: Counter[str] = Counter()
    for function in functions:
        annotations = [function.returns] + [
            a.annotation for a in function.args.args + function.args.kwonlyargs
        ]
        for annotation in annotations:
            used.update(
                n.id
                for n in ast.walk(annotation)  # type: ignore[arg-type]
                if isinstance(n, ast.Name)
            )
    halves = set()
    for name in declared:
        halves |= {"_%sRequired" % name, "_%sOptional" % name}
    for name, fields in declared.items():
        if name in halves:
            continue  # a join's fields are its halves'
        for value in fields.values:
            used.update(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
    once = {name: used[name] for name in declared if name not in CONTENT_NAMES}
    test.assertEqual(once, {name: 0 if name in halves else 1 for name in once})


def _assert_ends_in_invoke(test: unittest.TestCase, function: ast.FunctionDef, server: str) -> str:
    calls = [node for node in ast.walk(function) if isinstance(node, ast.Call)]
    test.assertEqual(len(calls), 2, "a cast and the seam's call, nothing else")
    test.assertIsInstance(ast.get_docstring(function), str)
    last = function.body[-1]
    assert isinstance(last, ast.Return) and isinstance(last.value, ast.Call), ast.dump(last)
    cast = last.value
    test.assertEqual(ast.unparse(cast.func), "_typing.cast")
    test.assertEqual(len(cast.args), 2)
    target = ast.unparse(cast.args[0])
    returns = ast.unparse(function.returns)  # type: ignore[arg-type]
    if returns == "Dict[str, Any]":  # a label may be called str: the body says Any
        test.assertEqual(target, "_typing.Dict[_typing.Any, _typing.Any]")
    else:
        test.assertEqual(target, returns)
    call = cast.args[1]
    assert isinstance(call, ast.Call), ast.dump(call)
    test.assertEqual(ast.dump(call.func), ast.dump(ast.parse("internal.invoke").body[0].value))
    test.assertEqual(len(call.args), 3)
    test.assertEqual(call.keywords, [])
    server_node, wire_node, arguments_node = call.args
    assert isinstance(server_node, ast.Constant) and isinstance(wire_node, ast.Constant)
    test.assertEqual(server_node.value, server)
    test.assertIsInstance(arguments_node, ast.Name)
    test.assertEqual(getattr(arguments_node, "id", None), "arguments")
    wire: str = wire_node.value
    test.assertIsInstance(wire, str)
    return wire


def wire_params(tool: ToolDescriptor) -> List[str]:
    """Every wire parameter name a typed function for ``tool`` can send, from the raw schema."""
    schema: Dict[str, Any] = tool.input_schema  # type: ignore[assignment]
    properties = list(schema.get("properties", {}))
    required = dict.fromkeys(schema.get("required", []))
    return properties + [name for name in required if name not in properties]


def assert_sends_wire_names(
    test: unittest.TestCase,
    generated: Generated,
    server: str,
    tools: Sequence[ToolDescriptor],
    digest: Digest = sha256_digest,
) -> None:
    """The dynamic half: see the module doc."""
    module = load_generated(generated.module_name, generated.source)
    functions = [
        value
        for value in vars(module).values()
        if inspect.isfunction(value) and value.__module__ == generated.module_name
    ]
    test.assertEqual(len(functions), len(tools))
    by_wire = {tool.name: tool for tool in tools}
    sent: List[str] = []
    for function in functions:
        sent.append(_check_function(test, function, server, by_wire, digest))
    test.assertEqual(Counter(sent), Counter(tool.name for tool in tools))


def _check_function(
    test: unittest.TestCase,
    function: Callable[..., Any],
    server: str,
    by_wire: Dict[str, ToolDescriptor],
    digest: Digest,
) -> str:
    parameters = inspect.signature(function).parameters
    if list(parameters) == ["arguments"]:  # a label is never "arguments": reserved
        return _check_whole_value(test, function, server, by_wire)
    defaulted = set()  # required first; optional keyword-only: None or the server's default
    for label, parameter in parameters.items():
        keyword_only = parameter.kind is inspect.Parameter.KEYWORD_ONLY
        test.assertIn(
            parameter.kind,
            (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY),
        )
        if not keyword_only:
            test.assertEqual(parameter.default, parameter.empty)
        elif parameter.default is not None:
            test.assertIn(type(parameter.default), (str, int, float, bool))
            defaulted.add(label)
    everything = _invoke(test, function, server, parameters, optional=True)
    tool = by_wire[everything.tool]
    test.assertEqual(sorted(everything.arguments), sorted(wire_params(tool)))
    wires = wire_params(tool)
    labels = dict(zip(wires, mangle_all(wires, digest, mangle_label)))
    for wire, value in everything.arguments.items():
        test.assertEqual(value, "value of " + labels[wire])
    required_only = _invoke(test, function, server, parameters, optional=False)
    test.assertEqual(required_only.tool, tool.name)
    always = _required(tool) + [wire for wire in wires if labels[wire] in defaulted]
    test.assertEqual(sorted(required_only.arguments), sorted(set(always)))
    _check_result_type(test, function, tool)
    return tool.name


def _check_result_type(
    test: unittest.TestCase, function: Callable[..., Any], tool: ToolDescriptor
) -> None:
    """The return annotation at run time: the record's keys; required ones when total."""
    returns = typing.get_type_hints(function)["return"]
    if tool.output_schema is None:  # a ToolOutput: the module's TypedDict of its three keys
        test.assertEqual(list(returns.__annotations__), ["text", "data", "content"])
        return
    output = plan_output(tool.output_schema)
    if not isinstance(output, Record):
        test.assertEqual(returns, Dict[str, Any])
        return
    keys = [field.name for field in output.fields]
    test.assertEqual(sorted(returns.__annotations__), sorted(keys))
    required = frozenset(field.name for field in output.fields if not field.optional)
    test.assertEqual(returns.__required_keys__, required)


def _required(tool: ToolDescriptor) -> List[str]:
    schema: Dict[str, Any] = tool.input_schema  # type: ignore[assignment]
    return list(dict.fromkeys(schema.get("required", [])))


def _invoke(
    test: unittest.TestCase,
    function: Callable[..., Any],
    server: str,
    parameters: Any,
    optional: bool,
) -> seam.Invocation:
    positional = [
        "value of " + label
        for label, p in parameters.items()
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]
    keywords = {
        label: "value of " + label
        for label, p in parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and optional
    }
    with seam.recording(lambda *_: "answer") as calls:
        test.assertEqual(function(*positional, **keywords), "answer")
    test.assertEqual(len(calls), 1)
    test.assertEqual(calls[0].server, server)
    return calls[0]


def _check_whole_value(
    test: unittest.TestCase,
    function: Callable[..., Any],
    server: str,
    by_wire: Dict[str, ToolDescriptor],
) -> str:
    payload = {"anything": ["goes", 1]}
    with seam.recording() as calls:
        function(payload)
    test.assertEqual(len(calls), 1)
    test.assertEqual(calls[0].server, server)
    test.assertIs(calls[0].arguments, payload, "a whole value is sent unchanged")
    _check_result_type(test, function, by_wire[calls[0].tool])
    return calls[0].tool


def assert_conforms(test: unittest.TestCase, value: Any, hint: Any, where: str = "result") -> None:
    """``value`` is what ``hint`` (a generated result type, or a type inside one) says."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return
    if origin is Union:  # Optional[X]
        if value is not None:
            assert_conforms(test, value, args[0], where)
        return
    if origin is dict:  # Dict[str, X]: an object that names no keys
        test.assertIs(type(value), dict, where)
        for key, item in value.items():
            assert_conforms(test, item, args[1], "%s[%r]" % (where, key))
        return
    if origin is list:
        test.assertIs(type(value), list, where)
        for index, item in enumerate(value):
            assert_conforms(test, item, args[0], "%s[%d]" % (where, index))
        return
    if isinstance(hint, type) and issubclass(hint, dict):  # a TypedDict
        test.assertIs(type(value), dict, where)
        test.assertLessEqual(set(hint.__required_keys__), set(value), where)
        test.assertLessEqual(set(value), set(hint.__annotations__), where)
        for key, item in value.items():
            assert_conforms(test, item, hint.__annotations__[key], "%s[%r]" % (where, key))
        return
    if hint is float:  # JSON has one number type; 2 is a float here too
        test.assertIn(type(value), (int, float), where)
        return
    test.assertIs(type(value), hint, where)
