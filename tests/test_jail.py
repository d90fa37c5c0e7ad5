"""Jailed servers, for real: bubblewrap, namespaces, seccomp, rlimits and a pids cgroup.

Every test starts real child processes through ``ProcessTransport(spawn,
jail=...)``, mostly ``tests/servers/jail_probe.py``, whose tools try to reach
past the jail and report what the kernel said. The leak check in
``conftest.py`` holds here too: bwrap (the direct child) reaped, its process
group empty, the ``mcp-jail-*`` watcher ended, no descriptor left.

These tests skip only where a jail cannot be had at all: not Linux, no
``bwrap`` (``.ci/run`` installs it), or a kernel that refuses bwrap its
namespaces. Directories a jailed server must see are made under ``/var/tmp``,
not ``/tmp``: every jail has a private, empty ``/tmp`` of its own.
"""

from __future__ import annotations

import errno
import importlib.util
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Any, Dict, List, Optional
from unittest import mock

from mcp_client import (
    DEFAULT_HIDDEN, Client, Exited, Jail, ProcessTransport, Spawn,
    cli, demo_server, jailer, start,
)
from mcp_client.errors import CallTimedOut, TransportFailed, Unavailable
from mcp_client.transport import CAPTURE

from servers import alive
from support import (
    JAIL_READABLE, LONG, OPTIONS, SHORT, jail_for_tests, jail_read_flags, server, server_argv,
    text_of, wait_until,
)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MIB = 1024 * 1024


def why_no_jail() -> Optional[str]:
    """Why a jail cannot be had on this machine at all, or ``None``."""
    if not sys.platform.startswith("linux"):
        return "jails need Linux (bubblewrap)"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed (apt-get install bubblewrap; .ci/run installs it)"
    done = subprocess.run([bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind",
                           "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return "bwrap cannot make namespaces on this machine: %s" % done.stderr.strip()
    return None


NO_JAIL = why_no_jail()
skip_without_jail = unittest.skipIf(NO_JAIL is not None, NO_JAIL or "")


# ----------------------------------------------------------------------------- helpers


def proc_pids() -> List[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def parent_of(pid: int) -> Optional[int]:
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def pid_namespace(pid: int) -> Optional[str]:
    try:
        return os.readlink("/proc/%d/ns/pid" % pid)
    except OSError:
        return None


def jail_namespace(bwrap: int) -> str:
    """The pid namespace of the jail bwrap ``bwrap`` made (its child is the jail's init)."""
    for pid in proc_pids():
        if parent_of(pid) == bwrap:
            namespace = pid_namespace(pid)
            if namespace is not None and namespace != pid_namespace(os.getpid()):
                return namespace
    raise AssertionError("bwrap %d has no child in a pid namespace of its own" % bwrap)


def jail_members(namespace: str) -> List[int]:
    """Live (not zombie) host pids of the processes in ``namespace``."""
    return [pid for pid in proc_pids() if pid_namespace(pid) == namespace and alive(pid)]


def host_pid(namespace: str, inner: int) -> int:
    """The host pid of the process that is ``inner`` inside the jail."""
    for pid in jail_members(namespace):
        with open("/proc/%d/status" % pid) as status:
            for line in status:
                if line.startswith("NSpid:") and int(line.split()[-1]) == inner:
                    return pid
    raise AssertionError("no process %d in %s" % (inner, namespace))


def our_cgroups() -> List[str]:
    parent = jailer._pids_parent()
    prefix = "mcp_client-%d-" % os.getpid()
    return [os.path.join(parent, name) for name in os.listdir(parent) if name.startswith(prefix)]


class JailCase(unittest.TestCase):
    def visible_dir(self) -> str:
        """A fresh directory a jailed server can see (``/tmp`` is private in a jail)."""
        base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else HERE
        path = os.path.realpath(tempfile.mkdtemp(prefix="mcp-jail-test-", dir=base))
        self.addCleanup(shutil.rmtree, path, True)
        return path

    def jailed(self, jail: Jail, spawn: Optional[Spawn] = None, **transport: Any) -> Client:
        client = start(ProcessTransport(spawn or server("jail_probe"), jail=jail, **transport),
                       OPTIONS)
        self.addCleanup(client.shutdown)
        return client

    def probe(self, client: Client, tool: str, **arguments: Any) -> Dict[str, Any]:
        answer: Dict[str, Any] = json.loads(text_of(client.call_tool(tool, arguments)))
        return answer


# ----------------------------------------------------------------------------- the basics


@skip_without_jail
class Basics(JailCase):
    def test_the_demo_server_works_jailed_and_retirement_is_sigkill(self) -> None:
        client = self.jailed(jail_for_tests(), Spawn(sys.executable, (demo_server.__file__,)))
        self.assertEqual(client.initialize_result.server_info.name, "mcp-client-demo")
        self.assertEqual(text_of(client.call_tool("add", {"a": 2, "b": 3})), "5")
        self.assertTrue(any(t.name == "mcp-jail-%d" % client.pid for t in threading.enumerate()))
        self.assertEqual(client.shutdown(), Exited(-9))

    def test_inside_no_capability_a_filter_and_namespaces_of_its_own(self) -> None:
        client = self.jailed(jail_for_tests())
        status = self.probe(client, "status")
        self.assertEqual(int(status["CapEff"], 16), 0)
        self.assertEqual(status["Seccomp"], "2")
        self.assertEqual(status["NSpid"], "2", "the server is pid 2, after the jail's init")
        self.assertEqual(status["uid"], os.getuid())
        self.assertEqual(status["hostname"], "jail")
        self.assertTrue(self.probe(client, "thread")["ok"], "clone3 refused must not break threads")

    def test_the_servers_own_exit_status_is_the_evidence_every_time(self) -> None:
        # bwrap holds the stdout pipe until it has exited, after the init and the
        # whole namespace: the client's EOF can never race a SIGKILL past bwrap's exit.
        for code in (7, 0, 3, 7):
            client = self.jailed(jail_for_tests())
            with self.assertRaises(Unavailable):
                client.call_tool("exit", {"code": code})
            self.assertEqual(client.shutdown(), Exited(code))

    def test_a_server_that_closes_stdout_but_lives_is_seen_at_the_deadline(self) -> None:
        # The price of exact evidence: bwrap's copy of stdout keeps it open.
        client = self.jailed(jail_for_tests(), server("close_stdout"))
        with self.assertRaises(CallTimedOut):
            client.call_tool("echo", {}, timeout=SHORT)
        self.assertEqual(client.shutdown(), Exited(-9))

    def test_a_missing_executable_is_transport_failed(self) -> None:
        for executable in ("/nonexistent/server", "no-such-mcp-server-anywhere"):
            with self.assertRaisesRegex(
                    TransportFailed, "cannot start %s in the jail: .*No such file" % executable):
                start(ProcessTransport(Spawn(executable), jail=jail_for_tests()), OPTIONS)

    def test_started_from_a_thread_that_then_ends(self) -> None:
        # bwrap's --die-with-parent would kill the jail here: PR_SET_PDEATHSIG fires
        # when the *thread* that forked bwrap ends. The lifeline is process-wide.
        held: List[Client] = []
        opener = threading.Thread(target=lambda: held.append(self.jailed(jail_for_tests())))
        opener.start()
        opener.join()
        time.sleep(0.2)
        held[0].ping()
        self.assertTrue(self.probe(held[0], "thread")["ok"])
        self.assertEqual(held[0].shutdown(), Exited(-9))


# ----------------------------------------------------------------------------- the filesystem


@skip_without_jail
class Filesystem(JailCase):
    def test_a_secret_under_a_hidden_directory_cannot_be_read(self) -> None:
        home = self.visible_dir()
        os.mkdir(os.path.join(home, ".ssh"))
        secret = os.path.join(home, ".ssh", "id_ed25519")
        with open(secret, "w") as stream:
            stream.write("PRIVATE KEY")
        with open(os.path.join(home, ".netrc"), "w") as stream:
            stream.write("machine example.com password hunter2")
        spawn = server("jail_probe", env={"HOME": home})
        client = self.jailed(jail_for_tests(), spawn)
        self.assertIn("No such file", self.probe(client, "read", path=secret)["error"])
        netrc = self.probe(client, "read", path=os.path.join(home, ".netrc"))
        self.assertEqual(netrc, {"ok": True, "text": ""}, "a hidden file reads empty")
        # The control: the same file, not hidden, is readable -- the test proves the hiding.
        open_client = self.jailed(jail_for_tests(hidden=()), spawn)
        self.assertEqual(self.probe(open_client, "read", path=secret)["text"], "PRIVATE KEY")

    def test_writes_land_only_inside_writable(self) -> None:
        inside, outside = self.visible_dir(), self.visible_dir()
        client = self.jailed(jail_for_tests(writable=(inside,)))
        self.assertTrue(self.probe(client, "write", path=os.path.join(inside, "out.txt"),
                                   text="made in the jail")["ok"])
        with open(os.path.join(inside, "out.txt")) as stream:
            self.assertEqual(stream.read(), "made in the jail")
        refused = self.probe(client, "write", path=os.path.join(outside, "out.txt"), text="x")
        self.assertIn("Read-only file system", refused["error"])
        self.assertFalse(os.path.exists(os.path.join(outside, "out.txt")))
        self.assertIn("Read-only", self.probe(client, "write", path=os.path.join(
            os.path.expanduser("~"), "mcp-jail-test.txt"), text="x")["error"])

    def test_tmp_is_private_and_empty(self) -> None:
        name = "/tmp/mcp-jail-test-%d" % os.getpid()
        client = self.jailed(jail_for_tests())
        self.assertTrue(self.probe(client, "write", path=name, text="private")["ok"])
        self.assertEqual(self.probe(client, "read", path=name)["text"], "private")
        self.assertFalse(os.path.exists(name), "the jail's /tmp is not ours")

    def test_a_hidden_path_inside_a_writable_one_stays_hidden(self) -> None:
        work = self.visible_dir()
        os.mkdir(os.path.join(work, "keys"))
        with open(os.path.join(work, "keys", "k"), "w") as stream:
            stream.write("key")
        client = self.jailed(jail_for_tests(writable=(work,), hidden=(os.path.join(work, "keys"),)))
        self.assertFalse(self.probe(client, "read", path=os.path.join(work, "keys", "k"))["ok"])
        self.assertTrue(self.probe(client, "write", path=os.path.join(work, "w"), text="x")["ok"])


# ----------------------------------------------------------------------------- the network


@skip_without_jail
class StderrFile(JailCase):
    """Issue 17 item 5: a jailed server given the stderr file itself read the
    harness's log back through ``/proc/self/fd/2`` and truncated it. It gets a
    pipe now, and the harness copies what comes out into the file."""

    def test_the_jail_holds_a_pipe_and_the_file_gets_what_it_wrote(self) -> None:
        path = os.path.join(self.visible_dir(), "server.log")
        with open(path, "w") as log:
            log.write("the harness's earlier line\n")
        with open(path, "ab") as handle:  # a path, and a file object the caller keeps
            for target in (path, handle):
                with self.subTest(target=type(target).__name__):
                    self.assert_kept_out(path, target)
            handle.write(b"the caller's handle still works\n")
        with open(path) as log:
            lines = log.read().splitlines()
        self.assertEqual(lines, ["the harness's earlier line", "written by the server",
                                 "written by the server", "the caller's handle still works"])

    def test_an_inherited_stderr_that_is_a_file_is_copied_too(self) -> None:
        path = os.path.join(self.visible_dir(), "harness.log")
        with open(path, "w") as log:
            log.write("the harness's earlier line\n")
        saved = os.dup(2)
        self.addCleanup(os.close, saved)
        with open(path, "ab") as handle:
            os.dup2(handle.fileno(), 2)  # as if the harness ran with 2>>harness.log
        try:
            self.assert_kept_out(path, None)
        finally:
            os.dup2(saved, 2)
        with open(path) as log:
            self.assertEqual(log.read(), "the harness's earlier line\nwritten by the server\n")

    def test_a_failed_start_leaves_nothing_open(self) -> None:
        # The pipe and the file are ours until the server runs (the leak check).
        path = os.path.join(self.visible_dir(), "server.log")
        for target in (path, CAPTURE):
            with self.subTest(target=target):
                with self.assertRaisesRegex(TransportFailed, "No such file"):
                    start(ProcessTransport(Spawn("/nonexistent/server"), stderr=target,
                                           jail=jail_for_tests()), OPTIONS)

    def test_a_copy_that_fails_is_one_warning_and_the_calls_go_on(self) -> None:
        path = os.path.join(self.visible_dir(), "server.log")

        def full(fd: int, data: bytes) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        with mock.patch("mcp_client._reader.write_all", full):
            with self.assertLogs("mcp_client.client", "WARNING") as logs:
                client = self.jailed(jail_for_tests(), server("diagnostics", "fd2_probe"),
                                     stderr=path)
                for _ in range(3):
                    self.assertEqual(json.loads(text_of(client.call_tool("probe", {})))["kind"],
                                     "fifo")
                self.assertEqual(client.shutdown(), Exited(-9))
        warned = [r.getMessage() for r in logs.records if "stderr file" in r.getMessage()]
        self.assertEqual(len(warned), 1, warned)
        self.assertIn("No space left on device", warned[0])

    def assert_kept_out(self, path: str, target: Any) -> None:
        client = self.jailed(jail_for_tests(), server("diagnostics", "fd2_probe"), stderr=target)
        facts = json.loads(text_of(client.call_tool("probe", {})))
        self.assertNotIn("earlier line", facts["read"] + facts["pread"])
        self.assertTrue(facts["truncate"].startswith("refused"), facts["truncate"])
        self.assertEqual(facts["kind"], "fifo")
        self.assertEqual(client.shutdown(), Exited(-9))


@skip_without_jail
class Network(JailCase):
    def test_no_tcp_even_to_loopback_unless_network_is_true(self) -> None:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            port = listener.getsockname()[1]
            refused = self.probe(self.jailed(jail_for_tests()), "tcp", port=port)
            self.assertIn("ConnectionRefusedError", refused["error"])
            self.assertEqual(self.probe(self.jailed(jail_for_tests(network=True)), "tcp", port=port),
                             {"ok": True})
            listener.settimeout(LONG)
            listener.accept()[0].close()  # the one that got through

    def test_no_unix_sockets_unless_network_is_true(self) -> None:
        # A network namespace does not cover a socket in the filesystem
        # (/run/docker.sock, a D-Bus bus); the seccomp filter does.
        path = os.path.join(self.visible_dir(), "listener.sock")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            listener.listen(4)
            refused = self.probe(self.jailed(jail_for_tests()), "unix", path=path)
            self.assertIn("Operation not permitted", refused["error"])
            self.assertEqual(self.probe(self.jailed(jail_for_tests(network=True)), "unix", path=path),
                             {"ok": True})

    def test_no_new_user_namespaces(self) -> None:
        client = self.jailed(jail_for_tests(network=True))
        self.assertEqual(self.probe(client, "userns"),
                         {"ok": False, "error": "Operation not permitted"})


# ----------------------------------------------------------------------------- lifetime


@skip_without_jail
class Lifetime(JailCase):
    def test_a_setsid_daemon_dies_with_retirement(self) -> None:
        work = self.visible_dir()
        client = self.jailed(jail_for_tests(writable=(work,)))
        pidfile = os.path.join(work, "daemon.pid")
        inner = self.probe(client, "daemon", pidfile=pidfile)["pid"]
        with open(pidfile) as stream:
            self.assertEqual(int(stream.read()), inner)
        namespace = jail_namespace(client.pid or 0)
        daemon = host_pid(namespace, inner)
        self.assertTrue(alive(daemon))
        bwrap = client.pid or 0
        self.assertNotEqual(os.getsid(daemon), os.getsid(bwrap), "it left the session")
        self.assertNotEqual(os.getpgid(daemon), bwrap, "out of the group retirement signals")
        os.kill(daemon, 0)
        self.assertEqual(client.shutdown(), Exited(-9))
        self.assertTrue(wait_until(lambda: not alive(daemon)), "the daemon outlived its jail")
        self.assertTrue(wait_until(lambda: not jail_members(namespace)))
        with self.assertRaises(ProcessLookupError):
            os.kill(daemon, 0)

    def test_a_harness_killed_by_sigkill_takes_its_jails_with_it(self) -> None:
        work = self.visible_dir()
        harness = subprocess.Popen(server_argv("jail_harness", work), stdout=subprocess.PIPE,
                                   text=True)
        try:
            assert harness.stdout is not None
            report = json.loads(harness.stdout.readline())
            namespace = jail_namespace(report["bwrap"])
            daemon = host_pid(namespace, report["daemon"])
            self.assertGreaterEqual(len(jail_members(namespace)), 3)  # init, server, daemon
            harness.send_signal(signal.SIGKILL)  # no atexit, no finally: only the kernel acts
            self.assertEqual(harness.wait(LONG), -signal.SIGKILL)
            self.assertTrue(wait_until(lambda: not jail_members(namespace)),
                            "jailed processes outlived their harness: %s" % jail_members(namespace))
            self.assertFalse(alive(daemon))
        finally:
            if harness.poll() is None:
                harness.kill()
                harness.wait()
            if harness.stdout is not None:
                harness.stdout.close()


# ----------------------------------------------------------------------------- limits


@skip_without_jail
class Limits(JailCase):
    def test_the_rlimits_are_set_on_the_server(self) -> None:
        client = self.jailed(jail_for_tests(memory_bytes=1 << 30, cpu_seconds=100, max_open_files=64,
                                  file_size_bytes=MIB))
        self.assertEqual(self.probe(client, "status")["limits"], {
            "RLIMIT_AS": 1 << 30, "RLIMIT_CPU": 100, "RLIMIT_NOFILE": 64, "RLIMIT_FSIZE": MIB,
            "RLIMIT_CORE": 0})

    def test_a_memory_hog_dies_and_the_harness_carries_on(self) -> None:
        log = os.path.join(self.visible_dir(), "stderr.log")
        client = self.jailed(jail_for_tests(memory_bytes=256 * MIB), stderr=log)
        with self.assertRaises(Unavailable):
            client.call_tool("hog", {"bytes": 1024 * MIB})
        self.assertEqual(client.shutdown(), Exited(1), "it died by itself, of its MemoryError")
        with open(log) as stream:
            self.assertIn("MemoryError", stream.read())
        self.assertTrue(self.probe(self.jailed(jail_for_tests(memory_bytes=256 * MIB)), "thread")["ok"])

    def test_a_fork_bomb_stays_at_max_processes(self) -> None:
        try:  # root with a cgroup v1 pids hierarchy (CI), or a delegated cgroup v2 subtree
            jailer.Cgroup.create(2).remove(LONG)
        except TransportFailed as e:
            self.skipTest("no pids cgroup can be made here, so max_processes is refused "
                          "(a test below proves that): %s" % e)
        client = self.jailed(jail_for_tests(max_processes=8))
        (group,) = our_cgroups()
        with open(os.path.join(group, "pids.max")) as stream:
            self.assertEqual(stream.read().strip(), "9", "8 for the server, 1 for the init")
        bombed = self.probe(client, "bomb")
        self.assertTrue(1 <= bombed["forked"] <= 7, bombed)  # the server itself is one of 8
        self.assertIn("Resource temporarily unavailable", bombed["error"])
        with open(os.path.join(group, "pids.current")) as stream:
            self.assertLessEqual(int(stream.read()), 9)
        client.ping()  # the server still answers, and the harness still works:
        self.assertEqual(subprocess.run(["true"]).returncode, 0)
        self.assertTrue(self.probe(self.jailed(jail_for_tests()), "thread")["ok"])
        namespace = jail_namespace(client.pid or 0)
        self.assertEqual(client.shutdown(), Exited(-9))
        self.assertTrue(wait_until(lambda: not jail_members(namespace)))
        self.assertTrue(wait_until(lambda: not os.path.exists(group)), "the cgroup was removed")

    def test_cpu_seconds_ends_a_spinning_server(self) -> None:
        client = self.jailed(jail_for_tests(cpu_seconds=1))
        with self.assertRaises(Unavailable):
            client.call_tool("spin", {})
        self.assertEqual(client.shutdown(), Exited(128 + signal.SIGKILL),
                         "the hard limit's SIGKILL")

    def test_file_size_bytes_stops_a_write_past_it(self) -> None:
        # The init restores SIGXFSZ's default for the server's exec, but Python
        # ignores it again at startup: a Python server meets EFBIG (another would die).
        work = self.visible_dir()
        client = self.jailed(jail_for_tests(writable=(work,), file_size_bytes=1000))
        big = os.path.join(work, "big")
        refused = self.probe(client, "write", path=big, text="x" * 5000)
        self.assertIn("File too large", refused["error"])
        self.assertLessEqual(os.path.getsize(big), 1000)
        self.assertEqual(client.shutdown(), Exited(-9))


# ----------------------------------------------------------------------------- no jail to be had


@skip_without_jail
class NeverSilentlyUnjailed(JailCase):
    def test_bwrap_missing(self) -> None:
        empty = self.visible_dir()
        with mock.patch.dict(os.environ, {"PATH": empty}):
            with self.assertRaisesRegex(TransportFailed, "bubblewrap.*apt-get install bubblewrap"):
                start(ProcessTransport(server("jail_probe"), jail=jail_for_tests()), OPTIONS)

    def test_a_limit_this_machine_cannot_enforce(self) -> None:
        with mock.patch.object(jailer, "_cgroup_mounts", lambda: {}):
            with self.assertRaisesRegex(TransportFailed, "pids cgroup.*max_processes"):
                start(ProcessTransport(server("jail_probe"), jail=jail_for_tests(max_processes=4)),
                      OPTIONS)

    def test_user_namespaces_off(self) -> None:
        # A harness inside a sandbox that forbids new user namespaces: its jail
        # cannot be built, and it must say so rather than start the server bare.
        bwrap = shutil.which("bwrap") or "bwrap"
        if "--disable-userns" not in subprocess.run([bwrap, "--help"], capture_output=True,
                                                    text=True).stdout:
            self.skipTest("this bwrap has no --disable-userns to take user namespaces away with")
        script = ("import sys; sys.path.insert(0, %r)\n"
                  "from mcp_client import Jail, ProcessTransport, Spawn, TransportFailed, start\n"
                  "try:\n"
                  "    start(ProcessTransport(%r, jail=Jail(readable=%r)))\n"
                  "except TransportFailed as e:\n"
                  "    print('TransportFailed:', e)\n"
                  % (REPO, server("jail_probe"), JAIL_READABLE))
        shown = [arg for path in JAIL_READABLE for arg in ("--ro-bind", path, path)]
        done = subprocess.run([bwrap, "--unshare-user", "--disable-userns", "--unshare-pid",
                               "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                               "--tmpfs", "/tmp", *shown, "--", sys.executable, "-c", script],
                              capture_output=True, text=True, timeout=120)
        self.assertIn("TransportFailed: bubblewrap could not build the jail", done.stdout,
                      done.stderr)
        self.assertIn("namespace", done.stdout)


# ----------------------------------------------------------------------------- real servers

TOO_OLD = sys.version_info < (3, 10)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Jail Tester", "GIT_AUTHOR_EMAIL": "jail@example.invalid",
    "GIT_COMMITTER_NAME": "Jail Tester", "GIT_COMMITTER_EMAIL": "jail@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


def require(module: str) -> None:
    """Fail (never skip) when a server the test extra installs is missing."""
    if importlib.util.find_spec(module) is None:
        raise AssertionError("%s is not installed; `pip install -e '.[test]'` installs it" % module)


@skip_without_jail
@unittest.skipIf(TOO_OLD, "mcp-server-time and mcp-server-git need Python >= 3.10")
class RealServers(JailCase):
    def test_mcp_server_time(self) -> None:
        require("mcp_server_time")
        client = self.jailed(jail_for_tests(), Spawn(sys.executable, ("-m", "mcp_server_time",
                                                            "--local-timezone", "UTC")))
        self.assertIn("get_current_time", [tool.name for tool in client.list_tools()])
        result = client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
        self.assertFalse(result.is_error)
        self.assertIn("+09:00", text_of(result))
        self.assertEqual(client.shutdown(), Exited(-9))

    def test_mcp_server_git_on_a_temporary_repository(self) -> None:
        require("mcp_server_git")
        repo = self.visible_dir()
        env = dict(os.environ, **GIT_ENV)
        for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "First, outside"]):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True, timeout=60)
        with open(os.path.join(repo, "notes.txt"), "w") as stream:
            stream.write("written outside the jail\n")
        spawn = Spawn(sys.executable, ("-m", "mcp_server_git", "--repository", repo), env=GIT_ENV)
        reader = self.jailed(jail_for_tests(), spawn)  # read-only: it can look, not commit
        self.assertIn("First, outside", self.call_text(reader, "git_log", repo_path=repo))
        self.assertIn("notes.txt", self.call_text(reader, "git_status", repo_path=repo))
        self.assertTrue(reader.call_tool("git_add", {"repo_path": repo, "files": ["notes.txt"]})
                        .is_error)
        writer = self.jailed(jail_for_tests(writable=(repo,)), spawn)
        self.call_text(writer, "git_add", repo_path=repo, files=["notes.txt"])
        self.call_text(writer, "git_commit", repo_path=repo, message="Second, from the jail")
        log = subprocess.run(["git", "log", "-1", "--format=%an|%s"], cwd=repo, env=env,
                             capture_output=True, text=True, check=True).stdout
        self.assertEqual(log, "Jail Tester|Second, from the jail\n")

    def call_text(self, client: Client, tool: str, **arguments: Any) -> str:
        """Call ``tool``, which must succeed; its text."""
        result = client.call_tool(tool, arguments)
        self.assertFalse(result.is_error, result)
        return text_of(result)


# ----------------------------------------------------------------------------- the command line


class CommandLine(unittest.TestCase):
    def test_the_flags_make_a_jail(self) -> None:
        settings = cli.parse_arguments([
            "--jail", "--allow-read", "/srv/r", "--allow-write", "/srv/a", "--allow-write",
            "/srv/b", "--allow-net",
            "--hide", "/srv/secret", "--memory", "512M", "--cpu-seconds", "30",
            "--max-processes", "64", "--", "server"])
        self.assertEqual(settings.jail, Jail(
            network=True, readable=("/srv/r",), writable=("/srv/a", "/srv/b"), hidden=DEFAULT_HIDDEN + ("/srv/secret",),
            memory_bytes=512 * MIB, cpu_seconds=30, max_processes=64))
        self.assertEqual(cli.parse_arguments(["--jail"]).jail, Jail())
        self.assertIsNone(cli.parse_arguments([]).jail)

    def test_a_jail_flag_without_jail_is_a_usage_error(self) -> None:
        for flags in (["--allow-net"], ["--memory", "1G"], ["--allow-write", "/srv"],
                      ["--allow-read", "/srv"]):
            with self.assertRaisesRegex(cli.UsageError, "needs --jail"):
                cli.parse_arguments(flags)
        for flags in (["--jail", "--memory", "lots"], ["--jail", "--max-processes", "0"],
                      ["--jail", "--cpu-seconds", "-1"], ["--jail", "--allow-write", "a\0b"]):
            with self.assertRaises(cli.UsageError, msg=flags):
                cli.parse_arguments(flags)
        relative = cli.parse_arguments(["--jail", "--allow-write", "out"]).jail
        self.assertEqual(relative and relative.writable, (os.path.abspath("out"),))

    @skip_without_jail
    def test_the_demo_server_jailed_from_the_command_line(self) -> None:
        out, err = io.StringIO(), io.StringIO()
        code = cli.run(cli.parse_arguments(["--jail", *jail_read_flags(), "--memory", "1G",
                                            "--json"]), out, err)
        self.assertEqual(code, 0, err.getvalue())
        report = json.loads(out.getvalue())
        self.assertEqual(report["server"]["name"], "mcp-client-demo")
        self.assertEqual(report["retirement"]["evidence"], "Exited")
