"""The runner's root directory, claimed by its owner; the roots whose owner is gone, swept.

A runner's root (``mcp-codemode-*``, under ``/tmp`` or the temporary directory) holds
the ``cap`` package, the runs' directories and mypy's cache; ``close()`` removes it.
A runner killed by SIGKILL (a host that kills ``serve``, as many do) never gets to,
so every root carries its owner's claim: a file, :data:`CLAIM`, on which the owner
holds an ``flock`` for as long as it lives -- the kernel drops the lock when the
owner dies, however it dies. :func:`make` stages the claim under another name, locks
it and only then renames it into place, so a root's claim is locked from the moment
it can be seen; :func:`sweep`, at every start, removes each root of ours whose claim
it can lock (its owner is gone), holding the lock while it removes it. A root with
no claim (being made, or made by a version that did not claim it) is left alone, as
is anything not a directory of ours.
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import tempfile
import threading
from typing import Dict, List, Optional

from ._cleanup import remove_tree

LOGGER = logging.getLogger("mcp_client.codemode")

#: The roots' names begin so.
PREFIX = "mcp-codemode-"
#: The owner's claim in its root, locked (``flock``) while the owner lives.
CLAIM = "owner.lock"
_STAGED = "owner.staged"
_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW


#: Each root of this process and the descriptor that holds its claim.
_CLAIMS: Dict[str, int] = {}
_LOCK = threading.Lock()


def make(parent: Optional[str]) -> str:
    """A new root under ``parent`` (``None``: the temporary directory), claimed until
    :func:`release` (or the owner's death)."""
    root = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
    staged = os.path.join(root, _STAGED)
    fd = os.open(staged, os.O_CREAT | os.O_EXCL | os.O_RDWR | _FLAGS, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a file nobody else has seen: at once
        os.rename(staged, os.path.join(root, CLAIM))
    except BaseException:
        os.close(fd)
        remove_tree(root)
        raise
    with _LOCK:
        _CLAIMS[root] = fd
    return root


def release(root: str) -> None:
    """The claim on ``root`` given up, once ``root`` is removed (what is left of it
    is then the next sweep's)."""
    with _LOCK:
        fd = _CLAIMS.pop(root, -1)
    if fd >= 0:
        os.close(fd)


def sweep(parent: Optional[str]) -> List[str]:
    """Remove every root under ``parent`` (``None``: the temporary directory) whose
    owner is gone; their paths (a warning is logged for each not removed whole)."""
    parent = tempfile.gettempdir() if parent is None else parent
    try:
        names = [name for name in os.listdir(parent) if name.startswith(PREFIX)]
    except OSError:
        return []
    swept = []
    for name in names:
        path = os.path.join(parent, name)
        if _ownerless(path):
            swept.append(path)
    return swept


def _ownerless(path: str) -> bool:
    """Remove ``path`` if it is a root of ours whose owner is gone; whether it was."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        return False
    try:
        claim = os.open(os.path.join(path, CLAIM), os.O_RDONLY | _FLAGS)
    except OSError:  # no claim: being made, or by a runner that made none
        return False
    try:
        try:
            fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its owner lives
            return False
        left = remove_tree(path)  # the lock held throughout: no second sweeper meets it
    finally:
        os.close(claim)
    if left is not None:
        LOGGER.warning("cleanup of %s, left by a runner that is gone: %s", path, left)
    else:
        LOGGER.info("removed %s, left by a runner that is gone", path)
    return True
