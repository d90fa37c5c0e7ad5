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

import ctypes
import errno
import importlib.util
import io
import json
import os
import platform
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

import pytest

from mcp_client import DEFAULT_HIDDEN, Client, Exited, Jail, ProcessTransport, Spawn, cli, start
from mcp_client.cli import demo_server
from mcp_client.errors import CallTimedOut, TransportFailed, Unavailable
from mcp_client.jail import NOBODY
from mcp_client.jail import spawn as jailer
from mcp_client.transport import CAPTURE

from servers import alive
from support import (
    JAIL_READABLE,
    LONG,
    OPTIONS,
    SHORT,
    jail_for_tests,
    jail_read_flags,
    server,
    server_argv,
    text_of,
    wait_until,
)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MIB = 1024 * 1024
#: add_key and keyctl's system-call numbers (glibc wraps neither).
SYS_KEYS = {"x86_64": (248, 250), "aarch64": (217, 219)}
KEYCTL_JOIN_SESSION_KEYRING, KEY_SPEC_SESSION_KEYRING = 1, -3


def why_no_jail() -> Optional[str]:
    """Why a jail cannot be had on this machine at all, or ``None``."""
    if not sys.platform.startswith("linux"):
        return "jails need Linux (bubblewrap)"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed (apt-get install bubblewrap; .ci/run installs it)"
    done = subprocess.run(
        [
            bwrap,
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "true",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        return "bwrap cannot make namespaces on this machine: %s" % done.stderr.strip()
    return None


NO_JAIL = why_no_jail()
skip_without_jail = unittest.skipIf(NO_JAIL is not None, NO_JAIL or "")


def why_no_memory_cgroup() -> Optional[str]:
    """Why ``memory_bytes`` is refused here (no memory cgroup to be made), or ``None``."""
    try:
        jailer.jail_cgroups(Jail(memory_bytes=64 * MIB))[0].remove(LONG)
    except TransportFailed as e:
        return str(e)
    return None


NO_MEMORY_CGROUP = why_no_memory_cgroup() if NO_JAIL is None else NO_JAIL


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
    def memory_refused(self, jail: Jail) -> bool:
        """Where no memory cgroup can be had, prove ``jail`` (with ``memory_bytes``) is
        refused rather than run with a bound it would not have, and say so."""
        if NO_MEMORY_CGROUP is None:
            return False
        with self.assertRaisesRegex(TransportFailed, "memory cgroup.*memory_bytes"):
            start(ProcessTransport(server("jail_probe"), jail=jail), OPTIONS)
        return True

    def visible_dir(self) -> str:
        """A fresh directory a jailed server can see (``/tmp`` is private in a jail)."""
        base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else HERE
        path = os.path.realpath(tempfile.mkdtemp(prefix="mcp-jail-test-", dir=base))
        self.addCleanup(shutil.rmtree, path, True)
        return path

    def jailed(self, jail: Jail, spawn: Optional[Spawn] = None, **transport: Any) -> Client:
        client = start(
            ProcessTransport(spawn or server("jail_probe"), jail=jail, **transport), OPTIONS
        )
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
                TransportFailed, "cannot start %s in the jail: .*No such file" % executable
            ):
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
        self.assertTrue(
            self.probe(
                client, "write", path=os.path.join(inside, "out.txt"), text="made in the jail"
            )["ok"]
        )
        with open(os.path.join(inside, "out.txt")) as stream:
            self.assertEqual(stream.read(), "made in the jail")
        refused = self.probe(client, "write", path=os.path.join(outside, "out.txt"), text="x")
        self.assertIn("Read-only file system", refused["error"])
        self.assertFalse(os.path.exists(os.path.join(outside, "out.txt")))
        self.assertIn(
            "Read-only",
            self.probe(
                client,
                "write",
                path=os.path.join(os.path.expanduser("~"), "mcp-jail-test.txt"),
                text="x",
            )["error"],
        )

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
        self.assertEqual(
            lines,
            [
                "the harness's earlier line",
                "written by the server",
                "written by the server",
                "the caller's handle still works",
            ],
        )

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
                    start(
                        ProcessTransport(
                            Spawn("/nonexistent/server"), stderr=target, jail=jail_for_tests()
                        ),
                        OPTIONS,
                    )

    def test_a_copy_that_fails_is_one_warning_and_the_calls_go_on(self) -> None:
        path = os.path.join(self.visible_dir(), "server.log")

        def full(fd: int, data: bytes) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        with mock.patch("mcp_client._core._reader.write_all", full):
            with self.assertLogs("mcp_client.client", "WARNING") as logs:
                client = self.jailed(
                    jail_for_tests(), server("diagnostics", "fd2_probe"), stderr=path
                )
                for _ in range(3):
                    self.assertEqual(
                        json.loads(text_of(client.call_tool("probe", {})))["kind"], "fifo"
                    )
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
            networked = self.jailed(jail_for_tests(network=True))
            self.assertEqual(self.probe(networked, "tcp", port=port), {"ok": True})
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
            networked = self.jailed(jail_for_tests(network=True))
            self.assertEqual(self.probe(networked, "unix", path=path), {"ok": True})

    def test_socket_families_are_an_allow_list(self) -> None:
        # vsock is the hypervisor's port space (on a VM, the host's), packet the wire,
        # alg the kernel's crypto: none is covered by the network namespace.
        refused = [40, 17, 38, 16, 30]  # vsock, packet, alg, netlink, tipc
        for network in (False, True):
            client = self.jailed(jail_for_tests(network=network))
            for number in refused:
                said = self.probe(client, "family", family=number, kind=int(socket.SOCK_DGRAM))
                self.assertIn("Address family not supported", said["error"], (network, number))
            for number in (int(socket.AF_INET), int(socket.AF_INET6)):
                self.assertEqual(self.probe(client, "family", family=number), {"ok": True})
            pair = self.probe(client, "family", family=int(socket.AF_UNIX), pair=True)
            self.assertEqual(pair, {"ok": True}, "asyncio and libuv need a socketpair")
            self.assertIn(
                "Address family not supported",
                self.probe(client, "family", family=int(socket.AF_INET), pair=True)["error"],
            )
            client.stop()

    def test_vsock_would_reach_out_of_the_jail_but_for_the_filter(self) -> None:
        # The regression the allow list closes: on this machine the kernel has vsock.
        try:
            socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()
        except (OSError, AttributeError) as e:
            self.skipTest("this kernel has no vsock to refuse: %s" % e)
        said = self.probe(self.jailed(jail_for_tests()), "family", family=int(socket.AF_VSOCK))
        self.assertIn("Address family not supported", said["error"])

    def test_no_new_user_namespaces(self) -> None:
        client = self.jailed(jail_for_tests(network=True))
        self.assertEqual(
            self.probe(client, "userns"), {"ok": False, "error": "Operation not permitted"}
        )


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
        self.kill_the_harness()

    def test_a_server_cannot_stop_the_init_and_outlive_a_sigkilled_harness(self) -> None:
        # A stopped init (PTRACE_ATTACH sends it SIGSTOP) never sees its lifeline
        # break; a rewritten one (/proc/1/mem) might never look. Both are refused:
        # seccomp for ptrace, the init's PR_SET_DUMPABLE 0 for its memory.
        seized = self.kill_the_harness("seize")["seized"]
        self.assertEqual(seized["attach"], "Operation not permitted", seized)
        self.assertIn("Permission denied", seized["mem"])

    def kill_the_harness(self, *how: str) -> Dict[str, Any]:
        """Run ``jail_harness.py``, SIGKILL it, and prove its jail went with it; its report."""
        work = self.visible_dir()
        harness = subprocess.Popen(
            server_argv("jail_harness", work, *how), stdout=subprocess.PIPE, text=True
        )
        namespace = ""
        try:
            assert harness.stdout is not None
            report: Dict[str, Any] = json.loads(harness.stdout.readline())
            namespace = jail_namespace(report["bwrap"])
            daemon = host_pid(namespace, report["daemon"])
            self.assertGreaterEqual(len(jail_members(namespace)), 3)  # init, server, daemon
            harness.send_signal(signal.SIGKILL)  # no atexit, no finally: only the kernel acts
            self.assertEqual(harness.wait(LONG), -signal.SIGKILL)
            self.assertTrue(
                wait_until(lambda: not jail_members(namespace)),
                "jailed processes outlived their harness: %s" % jail_members(namespace),
            )
            self.assertFalse(alive(daemon))
            return report
        finally:
            if harness.poll() is None:
                harness.kill()
                harness.wait()
            if harness.stdout is not None:
                harness.stdout.close()
            for pid in jail_members(namespace) if namespace else []:
                os.kill(pid, signal.SIGKILL)  # a failed check leaves no jail running


# ----------------------------------------------------------------------------- never root


@skip_without_jail
class NeverRoot(JailCase):
    """Issue 37 item 3: in a user namespace of a root harness's, the jail's uid -- whatever
    bwrap's --uid calls it -- is the host's root, the owner of /etc/shadow and of every
    mode-0600 file of root's: no capability is needed to read what one owns. A root
    harness's ``Jail(run_as=NOBODY)`` is nobody's, outside as inside, with no capability."""

    def setUp(self) -> None:
        if os.geteuid() != 0:
            self.skipTest("a root harness is what this is about (not root: the jail is ours)")

    def secret(self) -> str:
        """A mode-0600 file of root's, in a directory anyone may search."""
        where = self.visible_dir()
        os.chmod(where, 0o755)
        path = os.path.join(where, "root-only")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as out:
            out.write("hunter2")
        return path

    def test_nobody_reads_no_file_of_roots_and_holds_no_capability(self) -> None:
        secret = self.secret()
        control = self.jailed(jail_for_tests())  # root's jail: the break, as it was
        self.assertEqual(self.probe(control, "read", path=secret)["text"], "hunter2")
        client = self.jailed(jail_for_tests(run_as=NOBODY))
        for path in (secret, "/etc/shadow"):
            refused = self.probe(client, "read", path=path)
            self.assertIn("Permission denied", refused.get("error", "read"), path)
        status = self.probe(client, "status")
        self.assertEqual(status["ids"], [[NOBODY] * 3, [NOBODY] * 3, []])
        for name in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"):
            self.assertEqual(int(status[name], 16), 0, name)
        self.assertEqual(status["NSpid"], "2", "still the init's pid namespace")
        self.assertIn("Operation not permitted", self.probe(client, "userns")["error"])

    def test_what_it_writes_is_nobodys_on_the_host(self) -> None:
        work = self.visible_dir()
        os.chown(work, NOBODY, NOBODY)
        client = self.jailed(jail_for_tests(run_as=NOBODY, writable=(work,)))
        made = os.path.join(work, "made")
        self.assertTrue(self.probe(client, "write", path=made, text="x")["ok"])
        self.assertEqual((os.stat(made).st_uid, os.stat(made).st_gid), (NOBODY, NOBODY))

    def test_a_writable_directory_nobody_cannot_write_is_refused(self) -> None:
        work = self.visible_dir()
        with self.assertRaisesRegex(TransportFailed, "uid 65534.*cannot write %s.*chown" % work):
            self.jailed(jail_for_tests(run_as=NOBODY, writable=(work,)))

    def test_the_init_stays_out_of_reach_and_the_limits_hold(self) -> None:
        seized = self.probe(self.jailed(jail_for_tests(run_as=NOBODY)), "seize_init")
        self.assertEqual(seized["attach"], "Operation not permitted", seized)
        self.assertIn("Permission denied", seized["mem"])
        jail = jail_for_tests(run_as=NOBODY, memory_bytes=128 * MIB, max_processes=8)
        if self.memory_refused(jail):
            return
        client = self.jailed(jail)
        bombed = self.probe(client, "bomb")
        self.assertTrue(1 <= bombed["forked"] <= 7, bombed)
        try:  # /tmp and /dev/shm are nobody's to write now, and the cgroup bounds them
            answer = self.probe(client, "tmpfs", bytes=512 * MIB)
        except Unavailable:  # the kernel's OOM killer, inside the jail's cgroup
            self.assertEqual(client.shutdown(), Exited(128 + signal.SIGKILL))
        else:
            self.assertFalse(answer["ok"], answer)
            self.assertGreater(answer["written"], 0, "it could write there at all")
            self.assertLess(answer["written"], 128 * MIB, answer)


# ----------------------------------------------------------------------------- limits


@skip_without_jail
class Limits(JailCase):
    def test_the_rlimits_are_set_on_the_server(self) -> None:
        jail = jail_for_tests(
            memory_bytes=1 << 30, cpu_seconds=100, max_open_files=64, file_size_bytes=MIB
        )
        if self.memory_refused(jail):
            return
        client = self.jailed(jail)
        self.assertEqual(
            self.probe(client, "status")["limits"],
            {
                "RLIMIT_AS": 1 << 30,
                "RLIMIT_CPU": 100,
                "RLIMIT_NOFILE": 64,
                "RLIMIT_FSIZE": MIB,
                "RLIMIT_CORE": 0,
            },
        )

    def test_a_memory_hog_dies_and_the_harness_carries_on(self) -> None:
        if self.memory_refused(jail_for_tests(memory_bytes=256 * MIB)):
            return
        log = os.path.join(self.visible_dir(), "stderr.log")
        client = self.jailed(jail_for_tests(memory_bytes=256 * MIB), stderr=log)
        with self.assertRaises(Unavailable):
            client.call_tool("hog", {"bytes": 1024 * MIB})
        self.assertEqual(client.shutdown(), Exited(1), "it died by itself, of its MemoryError")
        with open(log) as stream:
            self.assertIn("MemoryError", stream.read())
        roomy = self.jailed(jail_for_tests(memory_bytes=256 * MIB))
        self.assertTrue(self.probe(roomy, "thread")["ok"])

    def test_a_fork_bomb_stays_at_max_processes(self) -> None:
        try:  # root with a cgroup v1 pids hierarchy (CI), or a delegated cgroup v2 subtree
            jailer.Cgroup.create(2).remove(LONG)
        except TransportFailed as e:
            self.skipTest(
                "no pids cgroup can be made here, so max_processes is refused "
                "(a test below proves that): %s" % e
            )
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
        self.assertEqual(
            client.shutdown(), Exited(128 + signal.SIGKILL), "the hard limit's SIGKILL"
        )

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


@skip_without_jail
class MemoryBound(JailCase):
    """``memory_bytes`` holds for what an ``RLIMIT_AS`` never sees: pages with no
    mapping (a memfd written to), pages mapped and unmapped in turns (SysV shm)."""

    LIMIT = 128 * MIB

    def test_a_memfd_past_memory_bytes_is_stopped(self) -> None:
        self.assert_stopped("memfd")

    def test_sysv_shared_memory_past_memory_bytes_is_stopped(self) -> None:
        self.assert_stopped("sysv_shm")

    def test_posix_shm_and_tmp_together_past_memory_bytes_are_stopped(self) -> None:
        # Each tmpfs is capped at memory_bytes on its own; the cgroup bounds them together.
        self.assert_stopped("tmpfs")

    def test_the_jail_cgroup_is_limited_and_then_removed(self) -> None:
        if self.memory_refused(jail_for_tests(memory_bytes=self.LIMIT)):
            return
        client = self.jailed(jail_for_tests(memory_bytes=self.LIMIT))
        version, parent = jailer._parent("memory", "")
        prefix = "mcp_client-%d-" % os.getpid()
        (group,) = [os.path.join(parent, n) for n in os.listdir(parent) if n.startswith(prefix)]
        limit = "memory.limit_in_bytes" if version == "v1" else "memory.max"
        with open(os.path.join(group, limit)) as stream:
            self.assertEqual(int(stream.read()), self.LIMIT)
        self.assertEqual(client.shutdown(), Exited(-9))
        self.assertTrue(wait_until(lambda: not os.path.exists(group)), "the cgroup was removed")

    def test_no_memory_cgroup_is_transport_failed_not_a_bound_claimed(self) -> None:
        with mock.patch.object(jailer, "_cgroup_mounts", lambda: {}):
            self.assertTrue(NO_MEMORY_CGROUP is None or "memory" in NO_MEMORY_CGROUP)
            with self.assertRaisesRegex(TransportFailed, "memory cgroup.*memory_bytes"):
                start(
                    ProcessTransport(
                        server("jail_probe"), jail=jail_for_tests(memory_bytes=self.LIMIT)
                    ),
                    OPTIONS,
                )

    def assert_stopped(self, tool: str) -> None:
        jail = jail_for_tests(memory_bytes=self.LIMIT)
        if self.memory_refused(jail):
            return
        client = self.jailed(jail)
        try:
            answer = self.probe(client, tool, bytes=5 * self.LIMIT)
        except Unavailable:  # the kernel's OOM killer, inside the jail's cgroup
            self.assertEqual(client.shutdown(), Exited(128 + signal.SIGKILL))
        else:
            held = "%s held %d MiB under a %d MiB limit (%s)" % (
                tool,
                answer["written"] // MIB,
                self.LIMIT // MIB,
                answer.get("error"),
            )
            self.assertFalse(answer["ok"], held)
            self.assertLess(answer["written"], self.LIMIT, held)
        self.assertTrue(self.probe(self.jailed(jail), "thread")["ok"], "the next jail works")


class CgroupPlaces(unittest.TestCase):
    """Where a jail's cgroups are made, on machines unlike this one: a fake cgroupfs
    (a directory) and the ``/proc/self`` files that point there."""

    def fake_machine(self, mounts: str, cgroup: str) -> str:
        root = os.path.realpath(tempfile.mkdtemp(prefix="mcp-cgroupfs-"))
        self.addCleanup(shutil.rmtree, root, True)
        files = {"/proc/self/mountinfo": mounts.replace("ROOT", root), "/proc/self/cgroup": cgroup}
        read = jailer._read
        patcher = mock.patch.object(jailer, "_read", lambda path: files.get(path) or read(path))
        patcher.start()
        self.addCleanup(patcher.stop)
        return root

    def made(self, jail: Jail) -> Dict[str, Dict[str, str]]:
        """What :func:`jailer.jail_cgroups` wrote: directory -> file -> content."""
        groups = jailer.jail_cgroups(jail)
        for group in groups:
            self.addCleanup(jailer._active.pop, group.path, None)
        found: Dict[str, Dict[str, str]] = {}
        for group in groups:
            found[group.path] = {}
            for name in os.listdir(group.path):
                with open(os.path.join(group.path, name)) as stream:
                    found[group.path][name] = stream.read()
        return found

    def test_cgroup_v2_holds_both_limits_in_one_group(self) -> None:
        root = self.fake_machine("41 31 0:38 / ROOT rw - cgroup2 cgroup2 rw\n", "0::/me\n")
        os.mkdir(os.path.join(root, "me"))
        with open(os.path.join(root, "me", "cgroup.controllers"), "w") as stream:
            stream.write("cpu memory pids\n")
        (files,) = self.made(Jail(max_processes=4, memory_bytes=MIB)).values()
        self.assertEqual(
            files,
            {"pids.max": "5", "memory.max": str(MIB)},
            "swap.max and oom.group only where the kernel has them",
        )

    def test_cgroup_v2_without_the_memory_controller_is_refused(self) -> None:
        root = self.fake_machine("41 31 0:38 / ROOT rw - cgroup2 cgroup2 rw\n", "0::/\n")
        with open(os.path.join(root, "cgroup.controllers"), "w") as stream:
            stream.write("cpu pids\n")
        with self.assertRaisesRegex(TransportFailed, "no memory cgroup controller.*memory_bytes"):
            jailer.jail_cgroups(Jail(max_processes=4, memory_bytes=MIB))
        self.assertEqual(os.listdir(root), ["cgroup.controllers"], "no pids group made either")
        self.assertEqual(list(self.made(Jail(max_processes=4)).values()), [{"pids.max": "5"}])

    def test_cgroup_v1_makes_one_group_per_hierarchy(self) -> None:
        root = self.fake_machine(
            "35 31 0:32 / ROOT/memory rw - cgroup cgroup rw,memory\n"
            "39 31 0:36 / ROOT/pids rw - cgroup cgroup rw,pids\n"
            "41 31 0:38 / ROOT/unified rw - cgroup2 cgroup2 rw\n",
            "8:pids:/\n4:memory:/sandbox/me\n0::/\n",
        )
        for path in ("memory/sandbox/me", "pids", "unified"):
            os.makedirs(os.path.join(root, path))
        made = self.made(Jail(max_processes=4, memory_bytes=MIB))
        self.assertEqual(
            sorted(os.path.dirname(path) for path in made),
            [os.path.join(root, "memory/sandbox/me"), os.path.join(root, "pids")],
        )
        self.assertEqual(
            sorted(made.values(), key=len), [{"pids.max": "5"}, {"memory.limit_in_bytes": str(MIB)}]
        )


@skip_without_jail
class Keyrings(JailCase):
    def test_a_key_in_the_harness_session_keyring_cannot_be_read(self) -> None:
        description = "mcp-jail-test-%d" % os.getpid()
        clients: Dict[str, Client] = {}
        # A session keyring is a thread's credential: a thread of our own joins a
        # new one, keeps a secret there, and starts the servers, which inherit it.
        opener = threading.Thread(target=self.keep_a_secret_and_start, args=(description, clients))
        opener.start()
        opener.join()
        self.assertEqual(set(clients), {"bare", "jailed"}, "the opener thread failed")
        bare = self.probe(clients["bare"], "keyring", description=description)
        self.assertEqual(bare, {"ok": True, "text": "hunter2"}, "the control: unjailed, it reads")
        jailed = self.probe(clients["jailed"], "keyring", description=description)
        self.assertEqual(jailed, {"ok": False, "error": "search: Operation not permitted"})

    def keep_a_secret_and_start(self, description: str, clients: Dict[str, Client]) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        add_key, keyctl = SYS_KEYS[platform.machine()]
        if (
            libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None)
            < 0
        ):
            raise OSError(ctypes.get_errno(), "keyctl(KEYCTL_JOIN_SESSION_KEYRING)")
        if (
            libc.syscall(
                ctypes.c_long(add_key),
                b"user",
                description.encode(),
                b"hunter2",
                ctypes.c_size_t(7),
                ctypes.c_long(KEY_SPEC_SESSION_KEYRING),
            )
            < 0
        ):
            raise OSError(ctypes.get_errno(), "add_key")
        clients["bare"] = start(ProcessTransport(server("jail_probe")), OPTIONS)
        self.addCleanup(clients["bare"].shutdown)
        clients["jailed"] = self.jailed(jail_for_tests())


@skip_without_jail
class Terminal(JailCase):
    def test_a_server_given_a_terminal_cannot_type_into_it(self) -> None:
        # The server's stderr is a terminal no session controls (the operator's,
        # say): it can make it its controlling terminal, but not push input into it.
        master, slave = os.openpty()
        self.addCleanup(os.close, master)
        self.addCleanup(os.close, slave)
        with os.fdopen(slave, "wb", closefd=False) as terminal:
            client = self.jailed(jail_for_tests(), stderr=terminal)
        tried = self.probe(client, "tty_inject", text="id\n")
        self.assertEqual(tried["ctty"], "ok", "the server did get the terminal")
        self.assertEqual(tried["sti"], "[Errno 1] Operation not permitted")
        os.set_blocking(slave, False)  # TIOCSTI is synchronous: anything typed is there now
        with self.assertRaises(BlockingIOError, msg="a byte reached the terminal's reader"):
            os.read(slave, 64)
        self.assertEqual(client.shutdown(), Exited(-9))


@skip_without_jail
class Sysctls(JailCase):
    def test_proc_sys_is_read_only(self) -> None:
        # With a root harness, the jail's uid 0 is the host's: a writable /proc/sys
        # would take the host's sysctls (vm.*, kernel.core_pattern). Writing back the
        # value just read changes nothing, even where the refusal would not hold.
        client = self.jailed(jail_for_tests())
        path = "/proc/sys/vm/overcommit_ratio"
        value = self.probe(client, "read", path=path)["text"]
        refused = self.probe(client, "write", path=path, text=value)
        self.assertIn("Read-only file system", refused.get("error", "written"))
        self.assertEqual(
            self.probe(client, "read", path="/proc/sys/kernel/hostname")["text"],
            "jail\n",
            "each sysctl still answers for the reader's namespaces",
        )


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
                start(
                    ProcessTransport(server("jail_probe"), jail=jail_for_tests(max_processes=4)),
                    OPTIONS,
                )

    def test_user_namespaces_off(self) -> None:
        # A harness inside a sandbox that forbids new user namespaces: its jail
        # cannot be built, and it must say so rather than start the server bare.
        bwrap = shutil.which("bwrap") or "bwrap"
        if (
            "--disable-userns"
            not in subprocess.run([bwrap, "--help"], capture_output=True, text=True).stdout
        ):
            self.skipTest("this bwrap has no --disable-userns to take user namespaces away with")
        script = (
            "import sys; sys.path.insert(0, %r)\n"
            "from mcp_client import Jail, ProcessTransport, Spawn, TransportFailed, start\n"
            "try:\n"
            "    start(ProcessTransport(%r, jail=Jail(readable=%r)))\n"
            "except TransportFailed as e:\n"
            "    print('TransportFailed:', e)\n" % (REPO, server("jail_probe"), JAIL_READABLE)
        )
        shown = [arg for path in JAIL_READABLE for arg in ("--ro-bind", path, path)]
        done = subprocess.run(
            [
                bwrap,
                "--unshare-user",
                "--disable-userns",
                "--unshare-pid",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--tmpfs",
                "/tmp",
                *shown,
                "--",
                sys.executable,
                "-c",
                script,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertIn(
            "TransportFailed: bubblewrap could not build the jail", done.stdout, done.stderr
        )
        self.assertIn("namespace", done.stdout)


# ----------------------------------------------------------------------------- real servers

TOO_OLD = sys.version_info < (3, 10)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Jail Tester",
    "GIT_AUTHOR_EMAIL": "jail@example.invalid",
    "GIT_COMMITTER_NAME": "Jail Tester",
    "GIT_COMMITTER_EMAIL": "jail@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def require(module: str) -> None:
    """Fail (never skip) when a server the test extra installs is missing."""
    if importlib.util.find_spec(module) is None:
        raise AssertionError("%s is not installed; `pip install -e '.[test]'` installs it" % module)


@pytest.mark.slow
@skip_without_jail
@unittest.skipIf(TOO_OLD, "mcp-server-time and mcp-server-git need Python >= 3.10")
class RealServers(JailCase):
    def test_mcp_server_time(self) -> None:
        require("mcp_server_time")
        client = self.jailed(
            jail_for_tests(),
            Spawn(sys.executable, ("-m", "mcp_server_time", "--local-timezone", "UTC")),
        )
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
        self.assertTrue(
            reader.call_tool("git_add", {"repo_path": repo, "files": ["notes.txt"]}).is_error
        )
        writer = self.jailed(jail_for_tests(writable=(repo,)), spawn)
        self.call_text(writer, "git_add", repo_path=repo, files=["notes.txt"])
        self.call_text(writer, "git_commit", repo_path=repo, message="Second, from the jail")
        log = subprocess.run(
            ["git", "log", "-1", "--format=%an|%s"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        self.assertEqual(log, "Jail Tester|Second, from the jail\n")

    def call_text(self, client: Client, tool: str, **arguments: Any) -> str:
        """Call ``tool``, which must succeed; its text."""
        result = client.call_tool(tool, arguments)
        self.assertFalse(result.is_error, result)
        return text_of(result)


# ----------------------------------------------------------------------------- the command line


class CommandLine(unittest.TestCase):
    def test_the_flags_make_a_jail(self) -> None:
        settings = cli.parse_arguments(
            [
                "--jail",
                "--allow-read",
                "/srv/r",
                "--allow-write",
                "/srv/a",
                "--allow-write",
                "/srv/b",
                "--allow-net",
                "--hide",
                "/srv/secret",
                "--memory",
                "512M",
                "--cpu-seconds",
                "30",
                "--max-processes",
                "64",
                "--",
                "server",
            ]
        )
        self.assertEqual(
            settings.jail,
            Jail(
                network=True,
                readable=("/srv/r",),
                writable=("/srv/a", "/srv/b"),
                hidden=DEFAULT_HIDDEN + ("/srv/secret",),
                memory_bytes=512 * MIB,
                cpu_seconds=30,
                max_processes=64,
            ),
        )
        self.assertEqual(cli.parse_arguments(["--jail"]).jail, Jail())
        self.assertIsNone(cli.parse_arguments([]).jail)

    def test_a_jail_flag_without_jail_is_a_usage_error(self) -> None:
        for flags in (
            ["--allow-net"],
            ["--memory", "1G"],
            ["--allow-write", "/srv"],
            ["--allow-read", "/srv"],
        ):
            with self.assertRaisesRegex(cli.UsageError, "needs --jail"):
                cli.parse_arguments(flags)
        for flags in (
            ["--jail", "--memory", "lots"],
            ["--jail", "--max-processes", "0"],
            ["--jail", "--cpu-seconds", "-1"],
            ["--jail", "--allow-write", "a\0b"],
        ):
            with self.assertRaises(cli.UsageError, msg=flags):
                cli.parse_arguments(flags)
        relative = cli.parse_arguments(["--jail", "--allow-write", "out"]).jail
        self.assertEqual(relative and relative.writable, (os.path.abspath("out"),))

    @skip_without_jail
    def test_the_demo_server_jailed_from_the_command_line(self) -> None:
        out, err = io.StringIO(), io.StringIO()
        code = cli.run(
            cli.parse_arguments(["--jail", *jail_read_flags(), "--memory", "1G", "--json"]),
            out,
            err,
        )
        if NO_MEMORY_CGROUP is not None:  # --memory is refused, never run unbounded
            self.assertEqual(code, 3, err.getvalue())
            self.assertIn("memory cgroup", err.getvalue())
            return
        self.assertEqual(code, 0, err.getvalue())
        report = json.loads(out.getvalue())
        self.assertEqual(report["server"]["name"], "mcp-client-demo")
        self.assertEqual(report["retirement"]["evidence"], "Exited")
