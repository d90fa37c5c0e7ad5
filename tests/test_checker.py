"""``checker``: a result against the shape its tool declared, compiled once; total."""

from __future__ import annotations

import unittest
from typing import Any

import pytest
from hypothesis import given

from mcp_client.codegen import validate as checker
from mcp_client.codegen.schema import Record, plan_output

from strategies import json_values, property_settings

ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "count": {"type": "integer"},
        "total": {"type": "number"},
        "paid": {"type": "boolean"},
        "status": {"enum": ["open", "shipped", 1]},
        "note": {"type": ["string", "null"]},
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["sku"],
            },
        },
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "anything": {},
    },
    "required": ["id", "count"],
}
GOOD = {
    "id": "o-1",
    "count": 2,
    "total": 3,
    "paid": True,
    "status": "open",
    "note": None,
    "lines": [{"sku": "a", "qty": 1}, {"sku": "b"}],
    "tags": {"x": "y"},
    "either": 4,
    "anything": [{"deep": None}],
    "extra": "keys the schema does not name pass",
}


def order() -> Record:
    record = plan_output(ORDER)
    assert isinstance(record, Record)
    return record


class Checks(unittest.TestCase):
    def setUp(self) -> None:
        self.check = checker.compile(order())

    def mismatch(self, **changes: Any) -> checker.Mismatch:
        value = dict(GOOD, **changes)
        for key, change in changes.items():
            if change is KeyError:
                del value[key]
        found = self.check(value)
        assert found is not None, changes
        return found

    def test_a_value_of_the_shape_passes(self) -> None:
        self.assertIsNone(self.check(GOOD))
        self.assertIsNone(self.check({"id": "x", "count": 0}))  # optional keys may be absent

    def test_each_break_names_its_path_what_was_expected_and_what_came(self) -> None:
        cases = [
            ({"id": KeyError}, ("$", 'an object with "id", "count"', "object")),
            ({"count": True}, ('$["count"]', "integer", "boolean true")),
            ({"count": 1.5}, ('$["count"]', "integer", "number 1.5")),
            ({"total": "3"}, ('$["total"]', "number", 'string "3"')),
            ({"paid": 1}, ('$["paid"]', "boolean", "integer 1")),
            ({"status": "lost"}, ('$["status"]', 'one of "open", "shipped", 1', 'string "lost"')),
            ({"status": True}, ('$["status"]', 'one of "open", "shipped", 1', "boolean true")),
            ({"note": 5}, ('$["note"]', "string or null", "integer 5")),
            (
                {"lines": [{"sku": "a"}, {"qty": 1}]},
                ('$["lines"][1]', 'an object with "sku"', "object"),
            ),
            (
                {"lines": [{"sku": "a", "qty": "1"}]},
                ('$["lines"][0]["qty"]', "integer", 'string "1"'),
            ),
            ({"tags": {"x": 1}}, ('$["tags"]["x"]', "string", "integer 1")),
            ({"either": 1.5}, ('$["either"]', "one of 2 alternatives", "number 1.5")),
            ({"lines": {}}, ('$["lines"]', "array", "object")),
        ]
        for changes, expected in cases:
            with self.subTest(changes):
                self.assertEqual(tuple(self.mismatch(**changes)), expected)
        self.assertEqual(self.check([1]), ("$", "object", "array"))

    def test_hostile_keys_and_text_come_back_escaped(self) -> None:
        schema = {
            "type": "object",
            "properties": {"\x1b[2J\n@k": {"type": "integer"}},
            "required": ["\x1b[2J\n@k"],
        }
        record = plan_output(schema)
        assert isinstance(record, Record)
        found = checker.compile(record)({"\x1b[2J\n@k": "\u202eRLO\x07"})
        assert found is not None
        for part in found:
            self.assertTrue(part.isprintable() and "\x1b" not in part, part)
        self.assertEqual(found.path, '$["\\x1b[2J\\x0a\\x40k"]')

    def test_deferred_compiles_once_on_first_use(self) -> None:
        deferred = checker.Deferred(order())
        self.assertIsNone(deferred._check)
        self.assertIsNone(deferred(GOOD))
        first = deferred._check
        self.assertIsNotNone(deferred({"id": 1, "count": 1}))
        self.assertIs(deferred._check, first)

    @pytest.mark.slow
    @property_settings(400)
    @given(json_values(30, keys=4))
    def test_total_on_any_json_value(self, value: Any) -> None:
        found = self.check(value)
        if found is not None:
            self.assertTrue(found.path.startswith("$"))
            self.assertTrue(all(part.isprintable() for part in found))

    @property_settings(200)
    @given(json_values(30, keys=4))
    def test_total_on_any_value_inside_a_good_one(self, value: Any) -> None:
        for key in ("lines", "tags", "either", "note", "anything"):
            found = self.check(dict(GOOD, **{key: value}))
            if key == "anything":
                self.assertIsNone(found)
            elif found is not None:
                self.assertTrue(found.path.startswith('$["%s"]' % key))

    def test_not_json_at_all_is_a_mismatch_not_an_exception(self) -> None:
        found = self.check({"id": b"x", "count": 1})
        self.assertEqual(found, ('$["id"]', "string", "a Python bytes"))


if __name__ == "__main__":
    unittest.main()
