"""``shapes``: what a tool was seen to return, as kinds and keys, never values; bounded;
merged; kept in a store keyed by server, version and the tool's inputSchema."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import unittest
from typing import Any, List

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client.codegen import shapes
from mcp_client.codegen.schema import AnyOf, Array, Field, Map, Nullable, Record, Simple, Structured
from mcp_client.errors import SymlinkRefused
from mcp_client.protocol import ToolDescriptor

from strategies import json_values, property_settings, with_json_text

TOOL = ToolDescriptor("resolve_time", {"type": "object", "properties": {"when": {}}})


def learned(*values: Any) -> shapes.Shape:
    shape = shapes.record(values[0])
    for value in values[1:]:
        shape = shapes.merge(shape, shapes.record(value))
    return shape


def strings_in(value: Any) -> List[str]:
    """Every string a JSON value holds (keys and values)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key] + strings_in(item)]
    return []


class Recording(unittest.TestCase):
    def test_keys_kinds_optional_keys_and_unions(self) -> None:
        shape = learned(
            {"resolved_local": "a", "n": 1, "tags": ["x"], "when": None},
            {"resolved_local": "b", "n": 1.5, "tags": [], "adjusted_local": "c", "when": 3},
        )
        self.assertEqual(
            shapes.to_type(shape),
            Record(
                (
                    Field("resolved_local", Simple("string"), False, None),
                    Field("n", Simple("number"), False, None),  # an integer and a number
                    Field("tags", Array(Simple("string")), False, None),
                    Field("when", Nullable(Simple("integer")), False, None),
                    Field("adjusted_local", Simple("string"), True, None),  # missing once
                ),
                True,  # learned records are open: other keys may come
            ),
        )

    def test_a_union_of_different_kinds_and_null_seen_sometimes(self) -> None:
        self.assertEqual(
            shapes.to_type(learned({"a": 1}, None, [1])),
            Nullable(
                AnyOf(
                    (
                        Record((Field("a", Simple("integer"), False, None),), True),
                        Array(Simple("integer")),
                    )
                )
            ),
        )
        self.assertIsInstance(shapes.to_type(learned(None)), Structured)
        self.assertEqual(
            shapes.to_type(learned([])), Array(Structured("only empty arrays were seen"))
        )

    def test_no_value_is_ever_kept(self) -> None:
        secret = {"token": "hunter2-SECRET", "n": 987654321, "ok": True, "list": ["PAYLOAD"]}
        dumped = json.dumps(shapes.dump_shape(shapes.record(secret)))
        for value in ("hunter2", "987654321", "PAYLOAD"):
            self.assertNotIn(value, dumped)

    def test_keys_that_look_like_data_make_a_map(self) -> None:
        many = {"user%d" % index: {"age": index} for index in range(shapes.MAX_KEYS + 1)}
        self.assertEqual(
            shapes.to_type(shapes.record(many)),
            Map(Record((Field("age", Simple("integer"), False, None),), True)),
        )
        long_key = {"k" * (shapes.MAX_KEY_CHARS + 1): 1}
        self.assertEqual(shapes.to_type(shapes.record(long_key)), Map(Simple("integer")))
        # Keys that change call by call: past MAX_KEYS merged, a map too.
        drifting = learned(*({"id-%d" % index: 1} for index in range(shapes.MAX_KEYS + 1)))
        self.assertIsInstance(drifting, shapes.MapOf)

    def test_depth_union_width_and_size_are_bounded(self) -> None:
        deep: Any = 1
        for _ in range(shapes.MAX_DEPTH + 5):
            deep = [deep]
        self.assertLessEqual(
            self.depth(shapes.dump_shape(shapes.record(deep))), shapes.MAX_DEPTH + 2
        )
        wide = learned(1, "s", True, [1], {"a": 1})  # five kinds, four kept at most
        self.assertEqual(wide, shapes.Opaque("more kinds than a union keeps"))
        huge = {"k%d" % i: {"k%d" % j: [1] for j in range(30)} for i in range(30)}
        self.assertEqual(shapes.record(huge), shapes.Opaque("too large a shape to learn"))
        self.assertLessEqual(shapes._size(shapes.record(huge["k0"])), shapes.MAX_NODES)

    def depth(self, value: Any) -> int:
        if isinstance(value, dict):
            return 1 + max([self.depth(v) for v in value.values()] + [0])
        if isinstance(value, list):
            return 1 + max([self.depth(v) for v in value] + [0])
        return 0

    @pytest.mark.slow
    @property_settings(300)
    @given(json_values(40, keys=5), json_values(40, keys=5))
    def test_record_merge_dump_and_load_are_total_and_round_trip(self, one: Any, two: Any) -> None:
        shape = shapes.merge(shapes.record(one), shapes.record(two))
        self.assertLessEqual(shapes._size(shape), shapes.MAX_NODES + 1)
        dumped = shapes.dump_shape(shape)
        self.assertEqual(shapes.load_shape(json.loads(json.dumps(dumped))), shape)
        shapes.to_type(shape)  # total
        kept = set(strings_in(dumped))
        values = set(strings_in(one) + strings_in(two)) - kept
        self.assertTrue(all(v not in kept for v in values))

    @pytest.mark.slow
    @property_settings(300)
    @given(json_values(30, keys=6))
    def test_load_shape_is_total_on_anything(self, raw: Any) -> None:
        shape = shapes.load_shape(raw)
        if shape is not None:
            self.assertEqual(shapes.load_shape(shapes.dump_shape(shape)), shape)

    @pytest.mark.slow
    @property_settings(200)
    @given(st.lists(json_values(20, keys=4), min_size=1, max_size=5))
    def test_merge_keeps_every_key_seen_within_the_bounds(self, values: List[Any]) -> None:
        shape = learned(*values)
        objects = [v for v in values if isinstance(v, dict)]
        if isinstance(shape, shapes.ObjectOf):
            keys = {key for key, _, _ in shape.keys}
            self.assertEqual(keys, {k for v in objects for k in v})
            self.assertEqual(shape.calls, len(objects))


class JsonTexts(unittest.TestCase):
    def test_a_string_of_json_text_is_learned_as_what_it_held(self) -> None:
        shape = learned({"result": '{"total": 3, "items": ["a"]}'}, {"result": '{"total": 1}'})
        assert isinstance(shape, shapes.ObjectOf)
        self.assertEqual(
            shape.keys[0][1],
            shapes.JsonText(
                shapes.ObjectOf(
                    (
                        ("total", shapes.Scalar("integer"), 2),
                        ("items", shapes.ListOf(shapes.Scalar("string")), 1),
                    ),
                    2,
                )
            ),
        )
        self.assertEqual(shapes.json_paths(shape), ((("key", "result"),),))
        self.assertEqual(
            shapes.to_type(shape),
            Record(
                (
                    Field(
                        "result",
                        Record(
                            (
                                Field("total", Simple("integer"), False, None),
                                Field("items", Array(Simple("string")), True, None),
                            ),
                            True,
                        ),
                        False,
                        shapes.JSON_TEXT_NOTE,
                    ),
                ),
                True,
            ),
        )

    def test_once_a_string_holds_no_json_it_is_a_string(self) -> None:
        for values in (
            ({"r": '{"a": 1}'}, {"r": "done"}),
            ({"r": "done"}, {"r": '{"a": 1}'}),
            ({"r": "[1]"}, {"r": "42"}),  # a scalar's text is no JSON object or array
        ):
            with self.subTest(values):
                shape = learned(*values)
                assert isinstance(shape, shapes.ObjectOf)
                self.assertEqual(shape.keys[0][1], shapes.Scalar("string"))
                self.assertEqual(shapes.json_paths(shape), ())

    def test_paths_go_into_lists_maps_and_what_a_string_held(self) -> None:
        inner = json.dumps({"deep": json.dumps([1, 2])})
        shape = learned([{"row": inner}], [{"row": inner}, {"row": inner}])
        self.assertEqual(
            shapes.json_paths(shape),
            ((("item",), ("key", "row")), (("item",), ("key", "row"), ("key", "deep"))),
        )
        mapped = shapes.record({"k%d" % i: "[%d]" % i for i in range(shapes.MAX_KEYS + 1)})
        self.assertEqual(shapes.json_paths(mapped), ((("value",),),))

    def test_what_a_string_holds_counts_against_the_bounds(self) -> None:
        deep: Any = 1
        for _ in range(shapes.MAX_DEPTH):
            deep = [deep]
        shape = shapes.record({"r": json.dumps(deep)})
        self.assertLessEqual(self.depth(shapes.dump_shape(shape)), shapes.MAX_DEPTH + 3)
        self.assertEqual(shapes.record("[" * 300 + "]" * 300), shapes.Scalar("string"))

    def depth(self, value: Any) -> int:
        if isinstance(value, dict):
            return 1 + max([self.depth(v) for v in value.values()] + [0])
        if isinstance(value, list):
            return 1 + max([self.depth(v) for v in value] + [0])
        return 0

    @property_settings(300)
    @given(with_json_text(20), with_json_text(20))
    def test_json_text_is_total_and_round_trips(self, one: Any, two: Any) -> None:
        shape = shapes.merge(shapes.record(one), shapes.record(two))
        dumped = json.loads(json.dumps(shapes.dump_shape(shape)))
        self.assertEqual(shapes.load_shape(dumped), shape)
        shapes.to_type(shape)
        for path in shapes.json_paths(shape):
            self.assertTrue(all(step[0] in ("key", "item", "value") for step in path))


class Store(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="shapes-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_observed_shapes_come_back_from_the_disk(self) -> None:
        store = shapes.Store(self.dir)
        for value in ({"resolved_local": "a"}, {"resolved_local": "b", "adjusted_local": "c"}):
            store.observe("calendar", "1.0", TOOL, value, None)
        store.flush()
        again = shapes.Store(self.dir).learned("calendar", "1.0", [TOOL])
        self.assertEqual(set(again), {"resolve_time"})
        self.assertEqual(again["resolve_time"].calls, 2)
        data = shapes.to_type(again["resolve_time"].data)  # type: ignore[arg-type]
        assert isinstance(data, Record)
        self.assertEqual(
            [(f.name, f.optional) for f in data.fields],
            [("resolved_local", False), ("adjusted_local", True)],
        )
        names = os.listdir(self.dir)
        self.assertEqual(len(names), 1)
        self.assertRegex(names[0], r"\Aserver-[0-9a-f]{32}\.json\Z")  # no server text in a name

    def test_a_new_version_or_a_changed_tool_starts_afresh(self) -> None:
        store = shapes.Store(self.dir)
        store.observe("calendar", "1.0", TOOL, {"a": 1}, None)
        store.flush()
        fresh = shapes.Store(self.dir)
        changed = ToolDescriptor("resolve_time", {"type": "object", "properties": {"zone": {}}})
        self.assertEqual(fresh.learned("calendar", "1.1", [TOOL]), {})
        self.assertEqual(fresh.learned("calendar", "1.0", [changed]), {})
        self.assertEqual(fresh.learned("other", "1.0", [TOOL]), {})
        self.assertEqual(set(fresh.learned("calendar", "1.0", [TOOL, changed])), {"resolve_time"})

    def test_a_file_is_keyed_by_what_the_operator_configured(self) -> None:
        mine = shapes.source("pay", ["node", "pay.js"], "/srv")
        self.assertNotEqual(mine, shapes.source("pay", ["node", "pay.js", "--v2"], "/srv"))
        self.assertNotEqual(mine, shapes.source("pay2", ["node", "pay.js"], "/srv"))
        self.assertNotEqual(mine, shapes.source("pay", ["node", "pay.js"], None))
        store = shapes.Store(self.dir)
        # Another server saying it is "pay" 1.0 teaches nothing to the configured "pay".
        store.observe(shapes.source("liar", ["node", "liar.js"]), "1.0", TOOL, {"note": 1})
        store.observe(mine, "1.0", TOOL, {"amount": 1.5})
        store.flush()
        learned = shapes.Store(self.dir).learned(mine, "1.0", [TOOL])["resolve_time"]
        data = shapes.to_type(learned.data)  # type: ignore[arg-type]
        assert isinstance(data, Record)
        self.assertEqual([(f.name, f.type) for f in data.fields], [("amount", Simple("number"))])

    def test_a_file_of_another_version_is_read_as_empty_and_replaced(self) -> None:
        store = shapes.Store(self.dir)
        store.observe("calendar", "1.0", TOOL, {"a": 1})
        store.flush()
        upgraded = shapes.Store(self.dir)
        self.assertEqual(upgraded.learned("calendar", "2.0", [TOOL]), {})
        upgraded.observe("calendar", "2.0", TOOL, {"b": 1})
        upgraded.flush()
        self.assertEqual(shapes.Store(self.dir).learned("calendar", "1.0", [TOOL]), {})
        again = shapes.Store(self.dir).learned("calendar", "2.0", [TOOL])["resolve_time"]
        self.assertEqual(again.calls, 1)

    def test_a_file_that_is_not_a_store_is_ignored(self) -> None:
        store = shapes.Store(self.dir)
        store.observe("calendar", "1.0", TOOL, {"a": 1}, None)
        store.flush()
        (name,) = os.listdir(self.dir)
        path = os.path.join(self.dir, name)
        bad_entry = {
            "format": "mcp_client.shapes/2",
            "version": "1.0",
            "tools": {"k": {"calls": 1, "data": 7}},
        }
        for junk in (b"\xff\xfe", b"[]", b"{" * 100000, json.dumps(bad_entry).encode()):
            with self.subTest(junk[:20]):
                with open(path, "wb") as out:
                    out.write(junk)
                if b"format" in junk:  # a store whose one entry is bad: that entry is dropped
                    found = shapes.Store(self.dir).learned("calendar", "1.0", [TOOL])
                else:
                    with self.assertLogs("mcp_client.shapes", "WARNING"):
                        found = shapes.Store(self.dir).learned("calendar", "1.0", [TOOL])
                self.assertEqual(found, {})

    def test_a_store_file_that_is_a_link_is_not_written_through(self) -> None:
        store = shapes.Store(self.dir)
        store.observe("calendar", "1.0", TOOL, {"a": 1}, None)
        name = shapes._file_name("calendar")
        victim = os.path.join(self.dir, "victim")
        open(victim, "w").close()
        os.symlink(victim, os.path.join(self.dir, name + ".%d.tmp" % os.getpid()))
        with self.assertLogs("mcp_client.shapes", "WARNING"):
            store.flush()
        with open(victim) as kept:
            self.assertEqual(kept.read(), "")
        self.assertRaises(SymlinkRefused, store._write, name)

    def test_an_unwritable_directory_is_a_warning_not_a_failure(self) -> None:
        store = shapes.Store(os.path.join(self.dir, "file", "below"))
        open(os.path.join(self.dir, "file"), "w").close()
        store.observe("calendar", "1.0", TOOL, {"a": 1}, None)
        with self.assertLogs("mcp_client.shapes", "WARNING"):
            store.flush()

    def test_overlapping_runs_observe_one_store(self) -> None:
        store = shapes.Store(self.dir)
        keys = ["k%d" % index for index in range(8)]

        def run(key: str) -> None:
            for _ in range(50):
                store.observe("s", "1", TOOL, {key: 1, "always": "x"}, None)
            store.flush()

        threads = [
            threading.Thread(target=run, args=(key,), name="mcp-test-%s" % key) for key in keys
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        learned = shapes.Store(self.dir).learned("s", "1", [TOOL])["resolve_time"]
        self.assertEqual(learned.calls, 400)
        data = shapes.to_type(learned.data)  # type: ignore[arg-type]
        assert isinstance(data, Record)
        self.assertEqual(
            {f.name: f.optional for f in data.fields}, dict({k: True for k in keys}, always=False)
        )

    def test_tools_a_file_keeps_are_bounded(self) -> None:
        store = shapes.Store(self.dir)
        for index in range(shapes.MAX_TOOLS + 10):
            tool = ToolDescriptor("t%d" % index, {"type": "object"})
            store.observe("s", "1", tool, {"a": 1}, None)
        store.flush()
        with open(os.path.join(self.dir, shapes._file_name("s"))) as stream:
            self.assertEqual(len(json.load(stream)["tools"]), shapes.MAX_TOOLS)


if __name__ == "__main__":
    unittest.main()
