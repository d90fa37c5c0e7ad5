"""Hypothesis strategies and settings the property tests share."""

from __future__ import annotations

import json
from typing import Any, Optional

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def examples(count: int) -> int:
    """A property's own count of examples under the loaded profile (``HYPOTHESIS_PROFILE``,
    see ``conftest.py``): ``count`` under ``ci``, whose default is hypothesis's 100, and
    scaled with the profile's default elsewhere (a tenth under ``dev``); at least one."""
    return max(1, count * settings.default.max_examples // 100)


def property_settings(count: int = 300) -> Any:
    """Settings for a property: ``examples(count)`` of them, no per-example deadline
    (shared machines are slow)."""
    return settings(
        max_examples=examples(count), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


def json_values(
    leaves: int, width: int = 4, text: Optional[int] = None, keys: Optional[int] = None
) -> Any:
    """Any JSON value (finite floats): ``width`` items a container, ``text`` and
    ``keys`` characters a string and a key at most (``None``: any length)."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=text)
    )
    return st.recursive(
        scalars,
        lambda kids: (
            st.lists(kids, max_size=width)
            | st.dictionaries(st.text(max_size=keys), kids, max_size=width)
        ),
        max_leaves=leaves,
    )


def with_json_text(leaves: int) -> Any:
    """JSON values some of whose strings are JSON text (of a value of their own), as a
    server sends where it wraps one result in another (``{"result": "{...}"}``)."""
    texts = json_values(8, keys=4).map(json.dumps)
    return st.recursive(
        st.none() | st.integers() | st.text(max_size=6) | texts,
        lambda kids: (
            st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3)
        ),
        max_leaves=leaves,
    )
