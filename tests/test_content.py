"""``content``: ToolOutput's data (the text parsed when it is one JSON object or array),
and the block types every generated module declares (the same as the module's own)."""

from __future__ import annotations

import json
import typing
import unittest
from typing import Any, Dict

from hypothesis import given
from hypothesis import strategies as st

from mcp_client.codegen import content
from mcp_client.jsonvalue import MAX_DEPTH
from mcp_client.protocol import CallToolResult, Text, decode_call_tool

from strategies import json_values, property_settings


class Data(unittest.TestCase):
    def test_an_object_or_an_array_is_parsed(self) -> None:
        self.assertEqual(content.parse_data('{"a": [1, 2]}'), {"a": [1, 2]})
        self.assertEqual(content.parse_data(' \n[{"b": null}]\t'), [{"b": None}])

    def test_scalars_are_not_parsed(self) -> None:
        for text in ("42", '"quoted"', "true", "null", "1.5", "", "   "):
            self.assertIsNone(content.parse_data(text), text)

    def test_anything_but_one_whole_json_value_is_none(self) -> None:
        for text in (
            "Result: {}",
            "{} trailing",
            '{"a": 1}\n{"b": 2}',  # JSON lines are two values, not one
            "{'at': datetime.date(2026, 1, 2)}",  # a repr of what is no literal
            "('a')",  # a repr in parentheses, of a scalar
            "[1, 2",
            "{NaN}",
            '{"n": NaN}',
            '{"n": 1e400}',
        ):
            self.assertIsNone(content.parse_data(text), text)

    def test_a_python_literal_is_read_without_evaluating_it(self) -> None:
        self.assertEqual(
            content.parse_data("{'id': 7, 'tags': ('a', 'b'), 'ok': True, 'note': None}"),
            {"id": 7, "tags": ["a", "b"], "ok": True, "note": None},
        )  # sqlite's rows, a dict printed: what a server sends where JSON was due
        self.assertEqual(content.parse_data("[('a', 1), ('b', 2)]"), [["a", 1], ["b", 2]])
        self.assertEqual(content.parse_data("(1, 2)"), [1, 2])
        self.assertIsNone(content.parse_data("[__import__('os').system('x')]"))

    def test_the_bounded_parser_refuses_what_a_result_line_could_not_hold(self) -> None:
        deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
        self.assertIsNone(content.parse_data(deep))
        self.assertIsNone(content.parse_data('{"n": %s}' % ("9" * 5000)))
        self.assertEqual(content.parse_data("[" * 10 + "]" * 10), [[[[[[[[[[]]]]]]]]]])

    def test_tool_output_joins_text_parses_it_and_keeps_every_block(self) -> None:
        image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        unknown = {"type": "hologram", "depth": 3}
        result = decode_call_tool(
            {
                "content": [
                    {"type": "text", "text": '{"a":'},
                    image,
                    {"type": "text", "text": "1}"},
                    unknown,
                ]
            }
        )
        output = content.tool_output(result)
        self.assertEqual(output["text"], '{"a":\n1}')
        self.assertEqual(output["data"], {"a": 1})
        self.assertEqual(output["content"][1], image)
        self.assertIs(output["content"][3], result.content[3].raw)  # type: ignore[union-attr]

    @property_settings(300)
    @given(st.text(max_size=300))
    def test_parse_data_is_total(self, text: str) -> None:
        value = content.parse_data(text)
        self.assertIn(type(value), (dict, list, type(None)))

    @property_settings(300)
    @given(json_values(20))
    def test_every_repr_of_a_container_comes_back(self, value: Any) -> None:
        parsed = content.parse_data(repr(value))
        self.assertEqual(parsed, value if isinstance(value, (dict, list)) else None)

    @property_settings(300)
    @given(json_values(20))
    def test_every_json_container_comes_back(self, value: Any) -> None:
        text = json.dumps(value)
        parsed = content.parse_data(text)
        if isinstance(value, (dict, list)):
            self.assertEqual(parsed, value)
        else:
            self.assertIsNone(parsed)

    def test_a_text_block_without_its_raw_is_rebuilt(self) -> None:
        output = content.tool_output(CallToolResult((Text("x"),)))
        self.assertEqual(
            output, {"text": "x", "data": None, "content": [{"type": "text", "text": "x"}]}
        )


class Declarations(unittest.TestCase):
    """The generated modules' declarations describe the same dicts as this module's types."""

    def declared(self) -> Dict[str, Any]:
        namespace: Dict[str, Any] = {"__name__": content.__name__}  # reprs alike
        imports = "from typing import %s\n" % ", ".join(content.DECLARATION_TYPING)
        exec(
            compile(imports + "\n".join(content.DECLARATIONS), "<declarations>", "exec"), namespace
        )
        return namespace

    def test_every_block_type_has_the_same_keys_and_requiredness(self) -> None:
        declared = self.declared()
        for name in content.NAMES:
            if name in ("Block", "ToolOutput"):
                continue
            ours, theirs = getattr(content, name), declared[name]
            with self.subTest(name):
                self.assertEqual(ours.__required_keys__, theirs.__required_keys__)
                self.assertEqual(ours.__optional_keys__, theirs.__optional_keys__)
                self.assertEqual(
                    {k: repr(v) for k, v in typing.get_type_hints(ours).items()},
                    {k: repr(v) for k, v in typing.get_type_hints(theirs).items()},
                )

    def test_the_union_names_the_five_kinds(self) -> None:
        kinds = [typing.get_type_hints(member)["type"] for member in typing.get_args(content.Block)]
        self.assertEqual(
            [typing.get_args(kind)[0] for kind in kinds],
            ["text", "image", "audio", "resource_link", "resource"],
        )
        self.assertEqual(
            [t.__name__ for t in typing.get_args(self.declared()["Block"])],
            [t.__name__ for t in typing.get_args(content.Block)],
        )

    def test_the_names_are_reserved_for_tools_and_types(self) -> None:
        from mcp_client.codegen.name import CONTENT_NAMES, RESERVED

        self.assertEqual(CONTENT_NAMES, frozenset(content.NAMES))
        self.assertLessEqual(CONTENT_NAMES, RESERVED)


if __name__ == "__main__":
    unittest.main()
