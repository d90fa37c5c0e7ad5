"""remove_tree over what a hostile program leaves: depth, numbers, modes, names, links."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import pytest

from mcp_client.codemode._cleanup import remove_tree


class HostileTrees(unittest.TestCase):
    def setUp(self) -> None:
        self.root = tempfile.mkdtemp(prefix="cleanup-test-")
        self.addCleanup(self.last_resort)
        self.tree = os.path.join(self.root, "tree")
        os.mkdir(self.tree)

    def last_resort(self) -> None:
        subprocess.run(["chattr", "-R", "-i", self.root], capture_output=True, check=False)
        subprocess.run(["rm", "-rf", self.root], check=False)

    def test_1500_nested_directories_that_rmtree_cannot(self) -> None:
        # The issue's 1,500 levels: the recursive removal (Python 3.11's rmtree) dies.
        self.nest(self.tree, 1500, "d")
        if sys.version_info < (3, 12):
            with self.assertRaises(RecursionError):
                shutil.rmtree(self.tree)
        self.assertIsNone(remove_tree(self.tree))
        self.assertFalse(os.path.lexists(self.tree))

    def test_paths_longer_than_path_max(self) -> None:
        self.nest(self.tree, 40, "n" * 250)  # 10,000 bytes of path: every name is relative
        self.assertIsNone(remove_tree(self.tree))
        self.assertFalse(os.path.lexists(self.tree))

    @pytest.mark.slow
    def test_many_files(self) -> None:
        for n in range(20000):
            os.close(os.open(os.path.join(self.tree, str(n)), os.O_CREAT | os.O_WRONLY, 0o600))
        self.assertIsNone(remove_tree(self.tree))
        self.assertFalse(os.path.lexists(self.tree))

    def test_modes_that_forbid_reading_and_writing(self) -> None:
        locked = os.path.join(self.tree, "locked")
        inner = os.path.join(locked, "inner")
        os.makedirs(inner)
        with open(os.path.join(inner, "file"), "w") as stream:
            stream.write("x")
        os.chmod(os.path.join(inner, "file"), 0)
        os.chmod(inner, 0o500)  # r-x: its file could not be unlinked as it is
        os.chmod(locked, 0)
        os.chmod(self.tree, 0o100)
        self.assertIsNone(remove_tree(self.tree))
        self.assertFalse(os.path.lexists(self.tree))

    def test_odd_names_and_links_that_are_never_followed(self) -> None:
        outside = os.path.join(self.root, "outside")
        os.mkdir(outside)
        keep = os.path.join(outside, "keep")
        with open(keep, "w") as stream:
            stream.write("not the tree's")
        raw = os.fsencode(self.tree)
        for name in (b"-rf", b"\n", b"...", b"\xff\xfe", b" ", b"\x1b[31m", b"a\\b"):
            with open(os.path.join(raw, name), "wb") as stream:
                stream.write(b"x")
        os.symlink(outside, os.path.join(self.tree, "to-outside"))
        os.symlink(keep, os.path.join(self.tree, "to-keep"))
        os.mkfifo(os.path.join(self.tree, "fifo"))
        self.assertIsNone(remove_tree(self.tree))
        self.assertFalse(os.path.lexists(self.tree))
        with open(keep) as stream:
            self.assertEqual(stream.read(), "not the tree's")

    def test_a_missing_tree_is_nothing_to_do(self) -> None:
        self.assertIsNone(remove_tree(os.path.join(self.root, "never")))

    def test_what_cannot_be_removed_is_one_line_and_the_rest_goes(self) -> None:
        stuck = os.path.join(self.tree, "deep", "stuck\nname")
        os.makedirs(os.path.dirname(stuck))
        with open(stuck, "w") as stream:
            stream.write("x")
        for n in range(5):
            with open(os.path.join(self.tree, "gone%d" % n), "w") as stream:
                stream.write("x")
        immutable = subprocess.run(["chattr", "+i", stuck], capture_output=True, check=False)
        if immutable.returncode != 0:
            self.skipTest("no immutable files here (chattr +i: %s)" % immutable.stderr)
        said = remove_tree(self.tree)
        assert said is not None
        self.assertEqual(len(said.splitlines()), 1, said)
        self.assertIn("3 entries under %s could not be removed" % self.tree, said)
        self.assertIn("stuck\\x0aname", said)  # the name inert: no line break of its own
        self.assertEqual(sorted(os.listdir(self.tree)), ["deep"])

    def nest(self, top: str, depth: int, name: str) -> None:
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for _ in range(depth):
                os.mkdir(name, dir_fd=fd)
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = inner
        finally:
            os.close(fd)
