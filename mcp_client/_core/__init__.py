"""The client's private parts, kept apart from the public modules (as trio keeps ``_core``).

Nothing here is API: :mod:`mcp_client.client` is the public face of what these
modules do together. The modules keep their leading underscore inside the
package (trio's ``_core/_run.py`` does too): a name such as ``_threads`` or
``_reader`` reads as private wherever it is imported, and a moved module keeps
the name its history, its importers and its patching tests know it by.
"""
