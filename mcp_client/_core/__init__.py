"""The client's private parts, kept apart from the public modules (as trio keeps ``_core``).

Nothing here is API: :mod:`mcp_client.client` is the public face of what these
modules do together. The modules keep their leading underscore inside the
package (trio's ``_core/_run.py`` does too): a name such as ``_threads`` or
``_reader`` reads as private wherever it is imported, and a moved module keeps
the name its history, its importers and its patching tests know it by.
"""

__all__ = ["LOGGER"]

#: The logger of every module here: the client's, whose work they do. The
#: package's scheme is ``logging.getLogger(__name__)`` in every public module
#: (``mcp_client.client``, ``mcp_client.transport``, ``mcp_client.capture``,
#: ``mcp_client.jailer``...), plus ``mcp_client.server`` for a server's own
#: stderr lines; a private module's name is no name for a user to configure
#: (it moves), so these log as the public module they serve.
LOGGER = "mcp_client.client"
