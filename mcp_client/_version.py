"""The package's version, in a module of its own.

Modules inside the package import it from here, never from ``mcp_client``
itself: the package's ``__init__`` imports ``client`` and ``cli``, so importing
back from it would read a half-loaded module. ``setup.cfg`` reads it from here
too (``attr: mcp_client._version.__version__``), statically.
"""

__version__ = "0.1.0"
