"""What a user installs or unpacks is whole: the license the metadata names, and an sdist
that carries everything its tests need (MANIFEST.in), checked against the files git keeps.
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import subprocess
import unittest
from typing import List, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tracked(*folders: str) -> List[str]:
    done = subprocess.run(
        ["git", "ls-files", *folders], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise unittest.SkipTest("not a git checkout (an unpacked sdist): %s" % done.stderr)
    return done.stdout.split()


def manifest_rules() -> List[Tuple[str, str, List[str]]]:
    """MANIFEST.in's ``include`` and ``recursive-include`` lines: (verb, folder, patterns)."""
    rules = []
    with open(os.path.join(REPO, "MANIFEST.in"), encoding="utf-8") as manifest:
        for line in manifest:
            words = line.split("#", 1)[0].split()
            if words and words[0] == "include":
                rules += [("include", "", [each]) for each in words[1:]]
            elif words and words[0] == "recursive-include":
                rules.append(("recursive-include", words[1], words[2:]))
    return rules


def carried(path: str, rules: List[Tuple[str, str, List[str]]]) -> bool:
    name = os.path.basename(path)
    for verb, folder, patterns in rules:
        if verb == "include" and path in patterns:
            return True
        if verb == "recursive-include" and path.startswith(folder + "/"):
            if any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
                return True
    return False


class Sdist(unittest.TestCase):
    def test_every_file_the_tests_docs_and_tools_need_is_carried(self) -> None:
        rules = manifest_rules()
        left_out = [
            path for path in tracked("tests", "tools", "docs", ".ci") if not carried(path, rules)
        ]
        self.assertEqual(left_out, [], "add them to MANIFEST.in")

    def test_the_check_sees_a_file_left_out(self) -> None:
        self.assertFalse(carried("tests/data.bin", manifest_rules()))
        self.assertTrue(carried("tests/servers/__init__.py", manifest_rules()))


class License(unittest.TestCase):
    def test_the_license_file_is_the_one_the_metadata_names(self) -> None:
        config = configparser.ConfigParser()
        config.read(os.path.join(REPO, "setup.cfg"))
        self.assertEqual(config["metadata"]["license"], "MIT")
        self.assertEqual(config["metadata"]["license_files"].split(), ["LICENSE"])
        with open(os.path.join(REPO, "LICENSE"), encoding="utf-8") as license_file:
            text = license_file.read()
        self.assertTrue(text.startswith("MIT License\n"))
        self.assertIn("Permission is hereby granted, free of charge", text)


if __name__ == "__main__":
    unittest.main()
