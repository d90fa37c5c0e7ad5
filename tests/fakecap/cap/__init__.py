"""A stand-in for the capability runtime that generated modules import (tests only).

``mcp_client.codegen`` emits ``from cap.internal import mcp as internal`` as
text and never imports ``cap`` itself (SEED.md, Relationships). Tests put
``tests/fakecap`` on ``sys.path`` so that generated source can run here:

* ``cap.internal.mcp`` holds the fake seam, ``invoke``, which records every
  call and can route it to a handler (``recording``), and ``contract``, the
  handler that answers as every generated module's header says;
* ``cap.mcp`` is the package generated modules are named under, with
  ``load_generated`` to run one from its source text.
"""
