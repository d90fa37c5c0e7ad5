"""``Options`` refuses every duration and count it could not honour (issue 17 item 13).

``retire_grace=float("nan")`` once made the first ``shutdown()`` raise
``RetirementTimedOut`` at once: every comparison with NaN is false, so the
grace "ended" before it began and the deadline had passed before it was set.
Now the options are checked when they are made, with a ``TypeError`` or
``ValueError`` that names the field.
"""

from __future__ import annotations

import math
import unittest
from typing import Any, Dict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_client import Exited, Options, start
from mcp_client.protocol import ClientInfo

from strategies import property_settings
from support import LONG, server

NAN, INF = float("nan"), float("inf")

#: Per field: whether a value is legal, as the docstring of ``Options`` states it.
SECONDS = ("handshake_timeout", "request_timeout", "retire_timeout", "retire_grace")
COUNTS = ("max_tool_pages", "tolerated_noise_lines")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def legal(field: str, value: Any) -> bool:
    """The oracle: the rules of the ``Options`` docstring, written out again."""
    if field in COUNTS:
        least = 1 if field == "max_tool_pages" else 0
        return isinstance(value, int) and not isinstance(value, bool) and value >= least
    if not _number(value) or math.isnan(value):
        return False
    if field == "retire_grace":
        return 0 <= value < INF
    if field == "retire_timeout":
        return 0 < value < INF
    return value > 0


class OptionsChecks(unittest.TestCase):
    def test_a_nan_grace_is_refused_naming_the_field(self) -> None:
        with self.assertRaises(ValueError) as caught:
            Options(retire_grace=NAN)
        self.assertIn("retire_grace", str(caught.exception))

    def test_each_bad_value_is_refused_naming_its_field(self) -> None:
        bad: Dict[str, Any] = {
            "handshake_timeout": [NAN, 0, -1.0, -INF, "30", None, True],
            "request_timeout": [NAN, 0.0, -0.5, "60", None, False, [1]],
            "retire_timeout": [NAN, 0, -2, INF, "10", None, True],
            "retire_grace": [NAN, -0.1, INF, -INF, "1", None, True],
            "max_tool_pages": [0, -1, 1.0, 64.0, NAN, "64", None, True],
            "tolerated_noise_lines": [-1, 0.0, 2.5, INF, "3", None, False],
        }
        for field, values in bad.items():
            for value in values:
                with self.subTest(field=field, value=value):
                    error = ValueError if _number(value) else TypeError
                    if field in COUNTS and isinstance(value, float):
                        error = TypeError  # a count is an int, whatever its value
                    with self.assertRaises(error) as caught:
                        Options(**{field: value})
                    self.assertIn("Options.%s" % field, str(caught.exception))

    def test_the_documented_boundaries_are_accepted(self) -> None:
        Options(
            handshake_timeout=INF,
            request_timeout=INF,
            retire_timeout=1e-3,
            retire_grace=0,
            max_tool_pages=1,
            tolerated_noise_lines=0,
        )
        Options(
            handshake_timeout=1,
            request_timeout=30 * 86400,
            retire_timeout=3600,
            retire_grace=2.5,
            max_tool_pages=10**6,
            tolerated_noise_lines=10**6,
        )

    def test_client_info_must_be_a_client_info(self) -> None:
        with self.assertRaises(TypeError) as caught:
            Options(client_info=("name", "1.0"))  # type: ignore[arg-type]
        self.assertIn("client_info", str(caught.exception))
        Options(client_info=ClientInfo("harness", "2.0"))

    def test_a_legal_grace_still_retires_a_real_server(self) -> None:
        # The field NaN once broke, at its smallest legal value, against a real child.
        options = Options(retire_grace=0, retire_timeout=LONG, handshake_timeout=LONG)
        client = start(server("good"), options)
        self.assertEqual(client.shutdown(), Exited(-9))

    @pytest.mark.slow
    @property_settings(400)
    @given(
        st.dictionaries(
            st.sampled_from(SECONDS + COUNTS),
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats()
            | st.text(max_size=3)
            | st.lists(st.integers(), max_size=1),
            max_size=3,
        )
    )
    def test_any_construction_validates_or_names_a_bad_field(self, fields: Dict[str, Any]) -> None:
        try:
            Options(**fields)
        except (TypeError, ValueError) as error:
            named = [field for field in fields if "Options.%s " % field in str(error)]
            self.assertEqual(len(named), 1, error)
            self.assertFalse(legal(named[0], fields[named[0]]), error)
        else:
            for field, value in fields.items():
                self.assertTrue(legal(field, value), (field, value))


if __name__ == "__main__":
    unittest.main()
