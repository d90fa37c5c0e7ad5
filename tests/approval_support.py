"""What the approval tests of ``mcp-client serve`` share: a git repository whose commits
are the trace of a side effect (``mcp-server-git``, PyPI), a directory of files the
filesystem server writes (npm), and programs against them.

A commit made twice is two commits; a file written again after the test removed it is
there again. So a test counts side effects by looking at the repository and the files.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import unittest
from typing import Any, Dict

#: A commit identity for git, in the server's environment, apart from any user's config.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Approval Tester",
    "GIT_AUTHOR_EMAIL": "approval@example.invalid",
    "GIT_COMMITTER_NAME": "Approval Tester",
    "GIT_COMMITTER_EMAIL": "approval@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

#: Status (read-only), add and commit (each waits for a yes under approve=non-read-only);
#: a refused commit is caught and said.
COMMIT = """\
from cap.mcp import CallRefused, git
repo = {repo!r}
print("modified:", "notes.txt" in git.git_status(repo_path=repo)["text"])
git.git_add(repo_path=repo, files=["notes.txt"])
try:
    git.git_commit(repo_path=repo, message={message!r})
    print("committed")
except CallRefused as e:
    print("refused:", e)
"""


def require_git() -> None:
    """Fail (never skip) when what the test extra installs is missing; skip where the
    extra does not install it (the servers from PyPI need Python 3.10+)."""
    if sys.version_info < (3, 10):
        raise unittest.SkipTest(
            "mcp-server-git needs Python >= 3.10; the test extra does not install it on "
            "%d.%d" % sys.version_info[:2]
        )
    if importlib.util.find_spec("mcp_server_git") is None:
        raise AssertionError("mcp-server-git is not installed: pip install -e '.[test]'")
    if shutil.which("git") is None:
        raise AssertionError("git is not on PATH; mcp-server-git and these tests need it")


class GitRepo:
    """A repository with one commit and ``notes.txt`` modified since."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(path)
        self.git("init", "-q")
        self.write("notes.txt", "first line\n")
        self.git("add", "notes.txt")
        self.git("commit", "-q", "-m", "the first commit")
        self.write("notes.txt", "first line\nsecond line\n")

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", *args],
            cwd=self.path,
            env=dict(os.environ, **GIT_ENV),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0:
            raise AssertionError("git %s: %s" % (" ".join(args), done.stderr))
        return done.stdout

    def write(self, name: str, text: str) -> None:
        with open(os.path.join(self.path, name), "w") as out:
            out.write(text)

    def commits(self) -> int:
        return int(self.git("rev-list", "--count", "HEAD"))

    def messages(self) -> list:
        return self.git("log", "--format=%s").splitlines()

    def staged(self) -> list:
        return self.git("diff", "--cached", "--name-only").split()

    def committed(self, name: str) -> str:
        return self.git("show", "HEAD:" + name)

    def server(self) -> Dict[str, Any]:
        """Its entry in a config: ``mcp-server-git`` on this repository."""
        return {
            "command": sys.executable,
            "args": ["-m", "mcp_server_git", "--repository", self.path],
            "env": GIT_ENV,
        }

    def program(self, message: str) -> str:
        return COMMIT.format(repo=self.path, message=message)
