"""The one way the package opens a file for writing by name.

Every such file (a server's stderr file, the capture log, the CLI's
``--capture``) may sit in a directory a server can write: a server could
replace it with a symbolic link before the next session, which would then
write -- with the harness's rights, root's perhaps -- into a crontab or an
``authorized_keys`` of the server's choosing. So the last component is never
followed (``O_NOFOLLOW``: the kernel refuses the link, ``ELOOP``, in the same
system call that opens, so no check can be raced), and the descriptor is
never inherited (``O_CLOEXEC``; a child gets only what is handed to it).

A link is :class:`~mcp_client.errors.SymlinkRefused` naming it; any other
failure is the ``OSError`` itself. Links in the directories above the file
are followed: they are the operator's to choose, and a server able to
replace one could as well replace the directory.
"""

from __future__ import annotations

import errno
import os

from ..errors import SymlinkRefused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Union

__all__ = ["open_for_writing"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: What ``open`` says for a link under ``O_NOFOLLOW``: ELOOP (Linux, macOS), EMLINK (FreeBSD).
_LINK_ERRNOS = (errno.ELOOP, errno.EMLINK)

if TYPE_CHECKING:
    Path = Union[str, "os.PathLike[str]"]


def open_for_writing(path: Path, flags: int, role: str) -> int:
    """``os.open(path, O_WRONLY | flags)``, never through a link, never inherited.

    ``role`` names the file in the error (``"the stderr file"``). The caller
    owns the descriptor (wrap it with ``os.fdopen`` for a file object).
    """
    try:
        return os.open(path, os.O_WRONLY | flags | _NOFOLLOW | _CLOEXEC, 0o666)
    except OSError as e:
        if e.errno in _LINK_ERRNOS and os.path.islink(path):
            raise SymlinkRefused(os.fspath(path), role) from e
        raise
