"""The check's panel: programs a model writes against two servers, right ones and wrong ones.

The servers are the scripted calendar (``tests/servers/calendar_server.py``) and the demo
server that ships in the package: nothing to install. Each right program runs to its
end and must get no message from ``CodeMode.check``; each wrong one would fail when run
(or give wrong data) and must get the message named beside it, and no other.
``tests/test_check_panel.py`` holds the check to the panel; ``tools/bench_check.py``
times it, cold and warm.
"""

from __future__ import annotations

import os
import sys
import textwrap
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CALENDAR = os.path.join(REPO, "tests", "servers", "calendar_server.py")
DEMO = os.path.join(REPO, "mcp_client", "cli", "demo_server.py")


def config() -> Dict[str, object]:
    """The panel's config file, as JSON."""
    return {
        "mcpServers": {
            "calendar": {"command": sys.executable, "args": [CALENDAR]},
            "demo": {"command": sys.executable, "args": [DEMO]},
        }
    }


def _program(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


#: Right programs, as models write them: few annotations, bare generics, a name reused
#: for another type, helpers without types, a ToolOutput read by attribute and by key.
RIGHT: List[Tuple[str, str]] = [
    (
        "bare generics",
        """
        from cap.mcp import demo

        def total(pairs: list) -> dict:
            out = {}
            for a, b in pairs:
                out[f"{a}+{b}"] = demo.add(a=a, b=b)["sum"]
            return out

        print(total([(1, 2), (3, 4)]))
        """,
    ),
    (
        "a name reused",
        """
        import json
        from cap.mcp import calendar

        data = calendar.report()["text"]
        data = json.loads(data)
        result = json.loads(data["result"])
        print(result["total"], len(result["days"]))
        """,
    ),
    (
        "attributes",
        """
        from cap.mcp import calendar

        out = calendar.resolve_time(when="2026-12-02", zone="Europe/Paris")
        print(out.text)
        if isinstance(out.data, dict):
            print(out.data.get("resolved_local"))
        for block in out.content:
            print(block["type"])
        """,
    ),
    (
        "untyped helpers",
        """
        from collections import Counter
        from cap.mcp import demo

        def words_of(text):
            return text.split()

        counts = Counter(words_of(demo.reverse_text(text="b a a c").text))
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        for word, n in top[:2]:
            print(word, n)
        """,
    ),
    (
        "failures caught",
        """
        from cap.mcp import CallFailed, ToolFailed, demo

        try:
            demo.divide(a=1, b=0)
        except ToolFailed as e:
            print("refused:", e)
        except CallFailed as e:
            print("failed:", e)
        """,
    ),
    (
        "a list filled later",
        """
        from typing import Optional
        from cap.mcp import demo

        seen = []

        def remember(x):
            seen.append(x)

        def first_sum(xs) -> Optional[int]:
            for x in xs:
                return demo.add(a=x, b=x)["sum"]
            return None

        remember(first_sum([2, 3]))
        print(seen)
        """,
    ),
    (
        "records",
        """
        import json
        from typing import Dict, List
        from cap.mcp import demo

        records: List[Dict] = [{"k": "a"}, {"k": "b"}, {"k": "a"}]
        out = demo.count_by(records=records, key="k")
        print(json.dumps(out.data if out.data is not None else out.text))
        print(dict(out)["text"] == out["text"])
        """,
    ),
    (
        "json in a field",
        """
        import json
        from cap.mcp import calendar

        rows = json.loads(calendar.wrapped()["result"])
        print(sum(row["total"] for row in rows))
        print(calendar.kept_promise()["datetime"])
        """,
    ),
    (
        "a class",
        """
        from dataclasses import dataclass
        from cap.mcp import demo

        @dataclass
        class Pair:
            a: int
            b: int

            def total(self):
                return demo.add(a=self.a, b=self.b)["sum"]

        print([Pair(1, i).total() for i in range(3)])
        """,
    ),
    (
        "a repr read",
        """
        from cap.mcp import calendar

        busy = calendar.busy_days().data
        if isinstance(busy, dict):
            print(busy["days"], busy.get("count"))
        """,
    ),
]

#: Wrong programs: each fails when run (or reads what is not there), and the check's one
#: message says so (a fragment of it).
WRONG: List[Tuple[str, str, str]] = [
    (
        "an unknown function",
        "from cap.mcp import demo\nprint(demo.subtract(a=1, b=2))\n",
        'Module has no attribute "subtract"',
    ),
    (
        "a wrong keyword",
        "from cap.mcp import demo\nprint(demo.add(x=1, b=2))\n",
        'Unexpected keyword argument "x" for "add"',
    ),
    (
        "an argument's type",
        "from cap.mcp import demo\nprint(demo.add(a='1', b=2))\n",
        'Argument "a" to "add" has incompatible type "str"; expected "int"',
    ),
    (
        "a key the result does not have",
        "from cap.mcp import demo\nprint(demo.add(a=1, b=2)['total'])\n",
        'TypedDict "AddResult" has no key "total"',
    ),
    (
        "a ToolOutput attribute",
        "from cap.mcp import calendar\nprint(calendar.say(text='x').txt)\n",
        '"ToolOutput" has no attribute "txt"',
    ),
    (
        "a ToolOutput key",
        "from cap.mcp import calendar\nprint(calendar.say(text='x')['txt'])\n",
        'a ToolOutput has the keys "text", "data" and "content"',
    ),
    (
        "an undefined name",
        "from cap.mcp import demo\ntotal = demo.add(a=1, b=2)['sum']\nprint(totl)\n",
        'Name "totl" is not defined',
    ),
    (
        "a missing argument",
        "from cap.mcp import calendar\nprint(calendar.resolve_time(when='x'))\n",
        'Missing positional argument "zone" in call to "resolve_time"',
    ),
    (
        "an import of no function",
        "from cap.mcp.demo import subtract\nprint(subtract)\n",
        'Module "cap.mcp.demo" has no attribute "subtract"',
    ),
    (
        "inside an untyped helper",
        "from cap.mcp import demo\n\ndef f():\n    return demo.add(a=1, bb=2)\n\nprint(f())\n",
        'Unexpected keyword argument "bb" for "add"',
    ),
    (
        "a server that is not there",
        "from cap.mcp import calender\nprint(calender)\n",
        'Module "cap.mcp" has no attribute "calender"',
    ),
]

RIGHT = [(name, _program(text)) for name, text in RIGHT]
