"""Public type aliases made on first use, so that ``import mcp_client`` needs no ``typing``.

An alias such as ``jsonvalue.JsonValue`` is a ``typing.Union``: building it
imports :mod:`typing`, which the client's import otherwise never needs (its
annotations are strings). A module declares its aliases for the type checker
under ``TYPE_CHECKING`` and gives them at run time through a module
``__getattr__`` (PEP 562) made here: the first read builds the alias (with
:mod:`typing` passed in), stores it in the module, and later reads find it
there. ``from mcp_client.jsonvalue import JsonValue`` keeps working.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import types
    from typing import Any, Callable, Dict, Optional

    Maker = Callable[[types.ModuleType], Any]

__all__ = ["lazy_aliases"]


def lazy_aliases(
    namespace: Dict[str, Any],
    fallback: Optional[Callable[[str, str], Any]] = None,
    **makers: Maker,
) -> Callable[[str], Any]:
    """A module ``__getattr__`` giving each of ``makers``' names, built once from
    :mod:`typing`; any other name goes to ``fallback(module, name)`` (e.g.
    ``errors.deprecated``) or is the usual ``AttributeError``."""
    module = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        maker = makers.get(name)
        if maker is None:
            if fallback is not None:
                return fallback(module, name)
            raise AttributeError("module %r has no attribute %r" % (module, name))
        import typing

        value = namespace[name] = maker(typing)  # once: later reads find it
        return value

    return __getattr__
