"""The fake ``cap.mcp``: the package generated modules are named under.

``load_generated(module_name, source)`` runs one generated module's source and
returns the module. It compiles the UTF-8 *bytes*, as an import from a written
file would, so the source's own coding declaration is the one that applies.
The module is not put in ``sys.modules``: tests stay independent of each other.

Compiling and executing is this fake runtime's job, in tests; the generator
itself never does either (SEED.md, Purpose).
"""

from __future__ import annotations

import sys
import types

__all__ = ["load_generated"]


def load_generated(module_name: str, source: str) -> types.ModuleType:
    """Execute generated ``source`` as a fresh module called ``module_name``."""
    module = types.ModuleType(module_name)
    # dont_inherit: this file's ``from __future__ import annotations`` must not
    # turn the generated module's annotations into strings.
    code = compile(
        source.encode("utf-8"), "<generated %s>" % module_name, "exec", dont_inherit=True
    )
    # Registered, as an import would: typing.get_type_hints on a TypedDict class
    # looks its module up in sys.modules (on 3.9 it fails without).
    sys.modules[module_name] = module
    exec(code, module.__dict__)
    return module
