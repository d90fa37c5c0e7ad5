"""What is made on first use: public type aliases, and the old names of moved modules.

**Aliases.**
An alias such as ``jsonvalue.JsonValue`` is a ``typing.Union``: building it
imports :mod:`typing`, which the client's import otherwise never needs (its
annotations are strings). A module declares its aliases for the type checker
under ``TYPE_CHECKING`` and gives them at run time through a module
``__getattr__`` (PEP 562) made here: the first read builds the alias (with
:mod:`typing` passed in), stores it in the module, and later reads find it
there. ``from mcp_client.jsonvalue import JsonValue`` keeps working.

**Old names.** Modules that moved into a subpackage (``mcp_client.jailer`` is now
``mcp_client.jail.spawn``) are still importable by their old dotted names: a finder
last on ``sys.meta_path`` (:func:`keep_old_names`) answers for the names of
:data:`MOVED` alone, with the module at its new home (one object under both names,
so a patch through either is seen by both). Only the import system sees these names:
a type checker knows the new ones.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import types
    from typing import Any, Callable, Dict, List, Optional

    Maker = Callable[[types.ModuleType], Any]

__all__ = ["lazy_aliases", "keep_old_names", "MOVED"]

#: Each moved module's old dotted name -> its home now.
MOVED = {
    "mcp_client._record": "mcp_client._frozen",
    "mcp_client._aliases": "mcp_client._lazy",
    "mcp_client._core._threads": "mcp_client._os.threads",
    "mcp_client._core._files": "mcp_client._os.files",
    "mcp_client._supervised": "mcp_client._os.lifeline",
    "mcp_client.lifeline": "mcp_client._os.lifeline_script",
    "mcp_client.noise": "mcp_client._core._noise",
    "mcp_client.tail": "mcp_client._core._tail",
    "mcp_client._model": "mcp_client.codegen._model",
    "mcp_client._surface": "mcp_client.codegen._surface",
    "mcp_client._docstring": "mcp_client.codegen._docstring",
    "mcp_client.schema": "mcp_client.codegen.schema",
    "mcp_client.name": "mcp_client.codegen.name",
    "mcp_client.checker": "mcp_client.codegen.validate",
    "mcp_client.shapes": "mcp_client.codegen.shapes",
    "mcp_client.content": "mcp_client.codegen.content",
    "mcp_client.interchange": "mcp_client.codegen.interchange",
    "mcp_client.jailer": "mcp_client.jail.spawn",
    "mcp_client.jail_init": "mcp_client.jail.init_script",
    "mcp_client._program": "mcp_client.codemode._program",
    "mcp_client._fleet": "mcp_client.codemode._fleet",
    "mcp_client._feed": "mcp_client.codemode._feed",
    "mcp_client._pipe": "mcp_client.codemode._pipe",
    "mcp_client._catalog": "mcp_client.codemode._catalog",
    "mcp_client._check": "mcp_client.codemode._typecheck",
    "mcp_client._imports": "mcp_client.codemode._imports",
    "mcp_client._cleanup": "mcp_client.codemode._cleanup",
    "mcp_client._mcp_server": "mcp_client.codemode._mcp_server",
    "mcp_client._serve_tools": "mcp_client.codemode._serve_tools",
    "mcp_client.replay_run": "mcp_client.replay.run",
    "mcp_client.codemode_cli": "mcp_client.cli.codemode",
    "mcp_client.serve": "mcp_client.cli.serve",
    "mcp_client._arguments": "mcp_client.cli.arguments",
    "mcp_client.demo_server": "mcp_client.cli.demo_server",
}


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


class _OldName:
    """The loader of one old name: the module is its new home's, imported there; its
    ``__spec__`` stays the new home's (the import system writes the old name's over
    it, and :meth:`exec_module` puts it back). ``python -m <old name>`` runs the new
    home's code (:meth:`get_code`)."""

    def __init__(self, home: str, home_spec: Any) -> None:
        self.home = home
        self.home_spec = home_spec
        self.spec: Any = None

    def create_module(self, spec: Any) -> Any:
        import importlib

        module = importlib.import_module(self.home)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: Any) -> None:
        module.__spec__ = self.spec

    def get_code(self, fullname: str) -> Any:
        return self.home_spec.loader.get_code(self.home)

    def is_package(self, fullname: str) -> bool:
        return False


class _OldNames:
    """A meta path finder for the names of :data:`MOVED` alone."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        home = MOVED.get(fullname)
        if home is None:
            return None
        import importlib.util
        from importlib.machinery import ModuleSpec

        home_spec = importlib.util.find_spec(home)
        # A loader by its methods (importlib.abc would cost an import).
        loader: Any = _OldName(home, home_spec)
        return ModuleSpec(fullname, loader, origin=home_spec.origin if home_spec else None)


def keep_old_names(meta_path: List[Any]) -> None:
    """Put the old names' finder last on ``meta_path`` (once)."""
    if not any(isinstance(finder, _OldNames) for finder in meta_path):
        meta_path.append(_OldNames())
