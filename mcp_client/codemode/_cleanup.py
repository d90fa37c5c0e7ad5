"""Remove a tree someone else filled: a code-mode program's scratch, the runner's own.

What is in it was written by an untrusted program, so nothing about its shape
is assumed: any depth (no recursion, one directory descriptor open at a time,
every name relative to it, so no path ever grows past ``PATH_MAX``), any number
of entries, modes that forbid reading or writing (put right on the way down),
names of any bytes, and links that are removed, never followed. What cannot be
removed is counted and named once: :func:`remove_tree` returns one line, never
raises for what it finds, and leaves the caller's own outcome standing.
"""

from __future__ import annotations

import os
import stat
from typing import List, Optional, Tuple

from ..text import inert

__all__ = ["remove_tree"]

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: How a directory must be for us to list it and remove what it holds.
_OWNER_ALL = stat.S_IRWXU
#: How much of a name a failure line shows.
_NAME_CHARS = 120


def remove_tree(path: str) -> Optional[str]:
    """Remove ``path`` and everything under it. ``None`` when all of it is gone (or
    was never there), else one line: how many entries stayed, and the first one's why."""
    walk = _Walk()
    try:
        fd = _open_dir(path, None)
    except FileNotFoundError:
        return None
    except OSError as e:
        return "cannot remove %s: %s" % (inert(path), e.strerror or e)
    try:
        walk.run(fd)
    except OSError as e:  # the way back up failed: what is left stays, said once
        walk.failed(path, e)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        walk.failed(path, e)
    return walk.summary(path)


def _open_dir(name: str, parent: Optional[int]) -> int:
    """``name`` (under ``parent``) opened as a directory, made ours to empty."""
    try:
        fd = os.open(name, _DIRECTORY, dir_fd=parent)
    except PermissionError:  # mode 000: ours to change, as its owner
        os.chmod(name, _OWNER_ALL, dir_fd=parent)
        fd = os.open(name, _DIRECTORY, dir_fd=parent)
    try:
        if os.fstat(fd).st_mode & _OWNER_ALL != _OWNER_ALL:
            os.fchmod(fd, _OWNER_ALL)  # r-x only: its entries could not be unlinked
    except OSError:
        pass  # not ours: the unlinks below will say so
    return fd


class _Walk:
    """The walk's one open directory, the way back up, and what could not go."""

    def __init__(self) -> None:
        self.failures = 0
        self.first = ""

    def failed(self, name: str, error: OSError) -> None:
        self.failures += 1
        if not self.first:
            self.first = "%s: %s" % (inert(name[:_NAME_CHARS]), error.strerror or error)

    def summary(self, path: str) -> Optional[str]:
        if not self.failures:
            return None
        return "%d entr%s under %s could not be removed (first: %s)" % (
            self.failures,
            "y" if self.failures == 1 else "ies",
            inert(path),
            self.first,
        )

    def run(self, fd: int) -> None:
        """Depth first, iteratively: ``above`` holds, for each directory left to
        come back to, the name we entered by, its identity and its names still to do."""
        above: List[Tuple[str, Tuple[int, int], List[str]]] = []
        pending = self._names(fd)
        try:
            while True:
                while pending:
                    name = pending.pop()
                    child = self._remove_or_open(fd, name)
                    if child is not None:
                        above.append((name, _identity(fd), pending))
                        os.close(fd)
                        fd, pending = child, self._names(child)
                if not above:
                    return
                name, parent, pending = above.pop()
                # Back up by ``..`` (the program is gone: nothing moves), checked
                # against the identity the parent had: never outside the tree given.
                up = os.open("..", _DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = up
                if _identity(fd) != parent:
                    raise OSError("the tree moved while it was being removed")
                self._rmdir(fd, name)
        finally:
            os.close(fd)

    def _names(self, fd: int) -> List[str]:
        try:
            return os.listdir(fd)
        except OSError as e:
            self.failed("(a directory's listing)", e)
            return []

    def _remove_or_open(self, fd: int, name: str) -> Optional[int]:
        """Unlink ``name``; a directory is opened instead, to be emptied first."""
        try:
            os.unlink(name, dir_fd=fd)
            return None
        except IsADirectoryError:
            pass
        except FileNotFoundError:
            return None
        except OSError as e:  # EPERM where a kernel says so for a directory (POSIX)
            if not _is_directory(fd, name):
                self.failed(name, e)
                return None
        try:
            return _open_dir(name, fd)
        except OSError as e:
            self.failed(name, e)
            return None

    def _rmdir(self, fd: int, name: str) -> None:
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError as e:
            self.failed(name, e)


def _identity(fd: int) -> Tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _is_directory(fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
