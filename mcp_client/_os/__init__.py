"""The package's bottom layer for the operating system: threads, files, processes.

Every impure module of the package reaches the operating system through here:
:mod:`.threads` (every thread of ours, named, its signals blocked; the one clamp of
every wait), :mod:`.files` (every file written by name, never through a link),
:mod:`.process` (every child started in a group of its own, the group killed while
its leader is unreaped, the leader reaped), :mod:`.lifeline` (an unjailed child's
lifeline, with the script it runs, :mod:`.lifeline_script`), :mod:`.bounded` (short-lived
helper children, through their lifeline, that their owner ends at once). Nothing here imports
anything of the package above :mod:`mcp_client.errors`.

Every module that logs imports this package first, so the package's logger gets its
``NullHandler`` here: a library never configures logging, it only makes sure that
nothing is printed when the application has not configured it either.
"""

import logging

logging.getLogger(__package__.rpartition(".")[0]).addHandler(logging.NullHandler())
