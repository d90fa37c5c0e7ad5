"""The jail's plan, without bubblewrap: :func:`mcp_client.jail.plan` is pure.

A fake :class:`Host` stands for the machine; the argv, the environment and
the seccomp program are checked as data. The seccomp program is run here on a
small classic-BPF interpreter, so what it allows and refuses is proved for each
ABI without loading it into a kernel (``test_jail.py`` does that for real).
"""

from __future__ import annotations

import struct
import unittest
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from mcp_client import DEFAULT_HIDDEN, Jail, Spawn
from mcp_client.errors import TransportFailed
from mcp_client.jail import (
    DIR,
    FILE,
    HOST_CONFIGS,
    MISSING,
    NOBODY,
    Channels,
    Host,
    Plan,
    default_entry,
    paths_to_probe,
    paths_to_reach,
    pids_max,
    plan,
    runs_as,
    seccomp_filter,
)

CHANNELS = Channels(lifeline=12, status=13, seccomp=14)
SPAWN = Spawn("/usr/bin/server", ("--flag", "value"))
ENV = {"PATH": "/usr/bin", "HOME": "/home/u", "TMPDIR": "/var/scratch"}


def host(paths: Optional[Mapping[str, Tuple[str, str]]] = None, **overrides: object) -> Host:
    fields: Dict[str, object] = dict(
        system="Linux",
        machine="x86_64",
        bwrap="/usr/bin/bwrap",
        python="/usr/bin/python3.11",
        python_home="/usr",
        init_source="# init",
        homes=("/home/u",),
        paths=paths or {},
        cwd=None,
    )
    fields.update(overrides)
    return Host(**fields)  # type: ignore[arg-type]


def make(
    jail: Jail = Jail(),
    spawn: Spawn = SPAWN,
    env: Mapping[str, str] = ENV,
    machine: Optional[Host] = None,
    channels: Channels = CHANNELS,
) -> Plan:
    return plan(jail, spawn, env, machine or host(), channels)


def split(argv: Sequence[str]) -> Tuple[List[str], List[str], List[str], List[str]]:
    """(bwrap's options, the init's interpreter argv, the init's arguments, the server's argv)."""
    first = list(argv).index("--")
    options, rest = list(argv[1:first]), list(argv[first + 1 :])
    second = rest.index("--")
    return options, rest[:6], rest[6:second], rest[second + 1 :]


def pairs(options: Sequence[str], flag: str) -> List[str]:
    """Every value that follows ``flag``."""
    return [options[i + 1] for i, value in enumerate(options[:-1]) if value == flag]


def index_of(options: Sequence[str], *sequence: str) -> int:
    for i in range(len(options) - len(sequence) + 1):
        if tuple(options[i : i + len(sequence)]) == sequence:
            return i
    raise AssertionError("%s not in %s" % (sequence, options))


class TheValue(unittest.TestCase):
    def test_defaults_are_the_safe_ones(self) -> None:
        jail = Jail()
        self.assertFalse(jail.network)
        self.assertEqual(jail.writable, ())
        self.assertEqual(jail.hidden, DEFAULT_HIDDEN)
        for name in (
            "memory_bytes",
            "cpu_seconds",
            "max_processes",
            "max_open_files",
            "file_size_bytes",
        ):
            self.assertIsNone(getattr(jail, name))

    def test_the_default_hidden_list_names_the_usual_credential_places(self) -> None:
        for place in (
            "~/.ssh",
            "~/.aws",
            "~/.gnupg",
            "~/.config/gcloud",
            "~/.kube",
            "~/.docker",
            "~/.netrc",
            "~/.git-credentials",
            "~/.pypirc",
            "~/.npmrc",
        ):
            self.assertIn(place, DEFAULT_HIDDEN)

    def test_it_is_frozen_hashable_and_takes_any_sequence(self) -> None:
        jail = Jail(writable=["/srv/data/"], hidden=["~/.secret//x"])  # type: ignore[arg-type]
        self.assertEqual(jail.writable, ("/srv/data",))
        self.assertEqual(jail.hidden, ("~/.secret/x",))
        self.assertEqual(hash(jail), hash(Jail(writable=("/srv/data",), hidden=("~/.secret/x",))))
        with self.assertRaises(AttributeError):
            jail.network = True  # type: ignore[misc]

    def test_bad_values_are_refused_at_construction(self) -> None:
        for bad in ({"writable": "/one/string"}, {"hidden": b"/bytes"}):
            with self.assertRaises(TypeError):
                Jail(**bad)  # type: ignore[arg-type]
        for bad in (
            {"writable": ("relative/path",)},
            {"hidden": ("",)},
            {"memory_bytes": 0},
            {"cpu_seconds": -1},
            {"max_processes": True},
            {"max_open_files": 1.5},
            {"file_size_bytes": "10"},
        ):
            with self.assertRaises(ValueError, msg=bad):
                Jail(**bad)  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            Jail(network=1)  # type: ignore[arg-type]

    def test_max_processes_does_not_count_the_init(self) -> None:
        self.assertIsNone(pids_max(Jail()))
        self.assertEqual(pids_max(Jail(max_processes=8)), 9)


class Namespaces(unittest.TestCase):
    def test_every_namespace_and_no_capability(self) -> None:
        options, _, _, _ = split(make().argv)
        for flag in (
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
            "--as-pid-1",
        ):
            self.assertIn(flag, options)
        self.assertEqual(pairs(options, "--cap-drop"), ["ALL"])
        self.assertEqual(pairs(options, "--seccomp"), ["14"])

    def test_network_true_keeps_the_hosts_network(self) -> None:
        options, _, _, _ = split(make(Jail(network=True)).argv)
        self.assertNotIn("--unshare-net", options)
        self.assertIn("--unshare-pid", options)

    def test_no_pdeathsig_and_no_new_session(self) -> None:
        # --die-with-parent would tie the jail to the thread that spawned bwrap;
        # --new-session would take the init out of the group retirement kills.
        options, _, _, _ = split(make().argv)
        self.assertNotIn("--die-with-parent", options)
        self.assertNotIn("--new-session", options)


class Filesystem(unittest.TestCase):
    def test_read_only_root_private_tmp_and_minimal_dev(self) -> None:
        options, _, _, _ = split(make().argv)
        self.assertEqual(
            options[index_of(options, "--ro-bind", "/", "/") - 1],
            "--as-pid-1",
            "the host's root comes first: every later mount covers part of it",
        )
        self.assertLess(
            index_of(options, "--ro-bind", "/", "/"), index_of(options, "--tmpfs", "/tmp")
        )
        self.assertLess(
            index_of(options, "--dev", "/dev"), index_of(options, "--remount-ro", "/dev")
        )
        index_of(options, "--tmpfs", "/dev/shm")
        self.assertNotIn("--bind", options)

    def test_proc_sys_is_read_only_over_the_new_proc(self) -> None:
        # bwrap leaves the new /proc's sys writable (its directory is not, so bwrap's
        # own check passes it by); with a root harness, that is the host's sysctls.
        options, _, _, _ = split(make().argv)
        self.assertEqual(
            index_of(options, "--proc", "/proc") + 2,
            index_of(options, "--ro-bind", "/proc/sys", "/proc/sys"),
        )
        self.assertNotIn("--size", options)

    def test_memory_bytes_caps_every_tmpfs_the_server_can_write(self) -> None:
        options, _, _, _ = split(make(Jail(memory_bytes=1 << 20)).argv)
        self.assertEqual(
            options[index_of(options, "--tmpfs", "/tmp") - 2 :][:2], ["--size", "1048576"]
        )
        self.assertEqual(
            options[index_of(options, "--tmpfs", "/dev/shm") - 2 :][:2], ["--size", "1048576"]
        )

    def test_writable_paths_are_bound_after_tmp(self) -> None:
        paths = {"/srv/out": ("/srv/out", DIR), "/tmp/work": ("/tmp/work", DIR)}
        options, _, _, _ = split(
            make(Jail(writable=("/srv/out", "/tmp/work"), hidden=()), machine=host(paths)).argv
        )
        tmp = index_of(options, "--tmpfs", "/tmp")
        self.assertGreater(index_of(options, "--bind", "/srv/out", "/srv/out"), tmp)
        self.assertGreater(index_of(options, "--bind", "/tmp/work", "/tmp/work"), tmp)

    def test_readable_paths_show_what_the_private_tmp_covers_read_only(self) -> None:
        paths = {"/tmp/ci/repo": ("/tmp/ci/repo", DIR)}
        spawn = Spawn("/tmp/ci/repo/server", ())
        with self.assertRaisesRegex(TransportFailed, "would not be visible.*Jail.readable"):
            make(Jail(hidden=()), spawn=spawn, machine=host(paths))
        jail = Jail(readable=("/tmp/ci/repo",), hidden=())
        self.assertEqual(paths_to_probe(jail, ("/home/u",)), ("/tmp/ci/repo",))
        options, _, _, _ = split(make(jail, spawn=spawn, machine=host(paths)).argv)
        shown = index_of(options, "--ro-bind", "/tmp/ci/repo", "/tmp/ci/repo")
        self.assertGreater(shown, index_of(options, "--tmpfs", "/tmp"))
        self.assertNotIn("/tmp/ci/repo", pairs(options, "--bind"))  # read-only, never writable

    def test_a_hidden_path_inside_a_readable_one_stays_hidden(self) -> None:
        paths = {"/srv/app": ("/srv/app", DIR), "/srv/app/keys": ("/srv/app/keys", DIR)}
        jail = Jail(readable=("/srv/app",), hidden=("/srv/app/keys",))
        options, _, _, _ = split(make(jail, machine=host(paths)).argv)
        self.assertGreater(
            index_of(options, "--tmpfs", "/srv/app/keys"),
            index_of(options, "--ro-bind", "/srv/app", "/srv/app"),
        )

    def test_a_missing_readable_path_is_refused(self) -> None:
        with self.assertRaisesRegex(TransportFailed, "cannot bind /srv/none readable"):
            make(Jail(readable=("/srv/none",)), machine=host({"/srv/none": ("/srv/none", MISSING)}))

    def test_a_writable_tilde_path_is_the_servers_home(self) -> None:
        paths = {"/home/u/work": ("/home/u/work", DIR), "/root/work": ("/root/work", DIR)}
        machine = host(paths, homes=("/home/u", "/root"))
        self.assertEqual(
            paths_to_probe(Jail(writable=("~/work",), hidden=()), machine.homes), ("/home/u/work",)
        )
        options, _, _, _ = split(make(Jail(writable=("~/work",), hidden=()), machine=machine).argv)
        self.assertEqual(pairs(options, "--bind"), ["/home/u/work"])

    def test_a_missing_writable_path_is_refused(self) -> None:
        with self.assertRaisesRegex(TransportFailed, "cannot bind /srv/none writable"):
            make(Jail(writable=("/srv/none",)), machine=host({"/srv/none": ("/srv/none", MISSING)}))

    def test_hidden_directories_files_and_absences(self) -> None:
        paths = {
            "/home/u/.ssh": ("/home/u/.ssh", DIR),
            "/home/u/.netrc": ("/home/u/.netrc", FILE),
            "/home/u/.aws": ("/home/u/.aws", MISSING),
            "/home/u/.kube": ("/tmp/kube-real", DIR),
        }  # a symlink into /tmp
        jail = Jail(hidden=("~/.ssh", "~/.netrc", "~/.aws", "~/.kube"))
        options, _, _, _ = split(make(jail, machine=host(paths)).argv)
        ssh = index_of(options, "--tmpfs", "/home/u/.ssh")
        self.assertEqual(options[ssh + 2 : ssh + 4], ["--remount-ro", "/home/u/.ssh"])
        index_of(options, "--dev-bind", "/dev/null", "/home/u/.netrc")
        self.assertNotIn("/home/u/.aws", options)  # nothing there: no mount point to make
        self.assertNotIn("/tmp/kube-real", options)  # under the private /tmp already

    def test_hidden_covers_every_home_and_wins_over_writable(self) -> None:
        paths = {
            "/home/u/.ssh": ("/home/u/.ssh", DIR),
            "/root/.ssh": ("/root/.ssh", DIR),
            "/srv/out": ("/srv/out", DIR),
            "/srv/out/keys": ("/srv/out/keys", DIR),
        }
        machine = host(paths, homes=("/home/u", "/root"))
        jail = Jail(writable=("/srv/out",), hidden=("~/.ssh", "/srv/out/keys"))
        self.assertEqual(set(paths_to_probe(jail, machine.homes)), set(paths))
        options, _, _, _ = split(make(jail, machine=machine).argv)
        for path in ("/home/u/.ssh", "/root/.ssh"):
            index_of(options, "--tmpfs", path)
        self.assertGreater(
            index_of(options, "--tmpfs", "/srv/out/keys"),
            index_of(options, "--bind", "/srv/out", "/srv/out"),
        )

    def test_the_working_directory(self) -> None:
        options, _, _, _ = split(make(machine=host(cwd="/srv/project")).argv)
        self.assertEqual(pairs(options, "--chdir"), ["/srv/project"])
        options, _, _, _ = split(make().argv)
        self.assertNotIn("--chdir", options)


#: A root harness whose interpreter lives under /root (mode 0700: nobody cannot search it).
ROOT_PYTHON = dict(
    python="/root/.pyenv/versions/3.11/bin/python3.11",
    python_home="/root/.pyenv/versions/3.11",
    homes=("/root",),
)


class NeverRoot(unittest.TestCase):
    """Issue 37 item 3: a root harness's jail with ``run_as`` is that uid's, no user
    namespace of root's (where the jail's uid, whatever it is called, is the host's root)."""

    def test_the_identity_is_the_callers_unless_root_with_run_as(self) -> None:
        self.assertIsNone(Jail().run_as, "a server's jail keeps root's unless asked")
        self.assertIsNone(runs_as(Jail(run_as=NOBODY), root=False), "not root: itself")
        self.assertIsNone(runs_as(Jail(), root=True))
        self.assertEqual(runs_as(Jail(run_as=NOBODY), root=True), 65534)
        for bad in (0, -1, True, "65534", 1 << 32):
            with self.assertRaises(ValueError, msg=bad):
                Jail(run_as=bad)  # type: ignore[arg-type]

    def test_a_root_harness_without_run_as_is_planned_as_before(self) -> None:
        options, _, config, _ = split(make(machine=host(root=True)).argv)
        self.assertIn("--unshare-user", options)
        self.assertEqual(pairs(options, "--cap-add"), [])
        self.assertEqual(config, ["12", "13", "-", "RLIMIT_CORE=0"])

    def test_no_user_namespace_three_capabilities_for_the_init_and_who_it_becomes(self) -> None:
        options, _, config, _ = split(make(Jail(run_as=NOBODY), machine=host(root=True)).argv)
        self.assertNotIn("--unshare-user", options)
        for flag in ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"):
            self.assertIn(flag, options)
        self.assertEqual(pairs(options, "--cap-drop"), ["ALL"])
        self.assertEqual(pairs(options, "--cap-add"), ["CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"])
        self.assertEqual(config, ["12", "13", "-", "USER=65534:65534", "RLIMIT_CORE=0"])

    def test_its_tmp_and_shm_are_everyones_and_its_own_cwd_too(self) -> None:
        made = plan(
            Jail(run_as=NOBODY, memory_bytes=1 << 20),
            SPAWN,
            ENV,
            host(root=True),
            CHANNELS,
            inside_cwd="/tmp/scratch",
        )
        options, _, _, _ = split(made.argv)
        tmp = index_of(options, "--tmpfs", "/tmp")
        self.assertEqual(options[tmp - 4 : tmp], ["--size", "1048576", "--perms", "1777"])
        shm = index_of(options, "--tmpfs", "/dev/shm")
        self.assertEqual(options[shm - 2 : shm], ["--perms", "1777"])
        scratch = index_of(options, "--dir", "/tmp/scratch")
        self.assertEqual(options[scratch - 2 : scratch], ["--perms", "0777"])

    def test_a_closed_directory_on_the_way_is_covered_and_what_is_needed_bound_back(self) -> None:
        program = "/tmp/mcp-codemode-x/run-1/program.py"
        paths = {program: (program, FILE), "/root/.ssh": ("/root/.ssh", DIR)}
        machine = host(paths, root=True, closed=("/root", "/tmp/mcp-codemode-x"), **ROOT_PYTHON)
        jail = Jail(run_as=NOBODY, readable=(program,), hidden=("~/.ssh",))
        spawn = Spawn(ROOT_PYTHON["python"], (program,))
        options, _, _, _ = split(make(jail, spawn=spawn, machine=machine).argv)
        cover = index_of(options, "--tmpfs", "/root")
        home = ROOT_PYTHON["python_home"]
        dirs = [index_of(options, "--dir", d) for d in ("/root/.pyenv", "/root/.pyenv/versions")]
        bound = index_of(options, "--ro-bind", home, home)
        self.assertLess(cover, min(dirs))
        self.assertLess(max(dirs), bound)
        self.assertGreater(index_of(options, "--remount-ro", "/root"), bound)
        self.assertNotIn("/root/.ssh", options, "under the cover: hidden already")
        # Under /tmp (a new tmpfs already): no cover, but the way to the file is made 0755
        # (bwrap would make it 0700 and root's, which nobody could not pass).
        self.assertNotIn("/tmp/mcp-codemode-x", pairs(options, "--tmpfs"))
        walk = [index_of(options, "--dir", d) for d in ("/tmp/mcp-codemode-x", program[:-11])]
        self.assertLess(max(walk), index_of(options, "--ro-bind", program, program))

    def test_not_root_nothing_changes_whatever_run_as_says(self) -> None:
        machine = host(closed=("/root",), **ROOT_PYTHON)
        self.assertEqual(
            make(Jail(run_as=NOBODY), machine=machine).argv, make(machine=machine).argv
        )

    def test_a_writable_path_its_uid_cannot_write_is_refused(self) -> None:
        paths = {"/srv/out": ("/srv/out", DIR)}
        machine = host(paths, root=True, unwritable=("/srv/out",))
        with self.assertRaisesRegex(
            TransportFailed, "runs as uid 65534.*cannot write /srv/out.*chown 65534:65534 /srv/out"
        ):
            make(Jail(run_as=NOBODY, writable=("/srv/out",)), machine=machine)
        make(Jail(writable=("/srv/out",)), machine=machine)  # root's jail: root's rights

    def test_what_the_jail_must_reach(self) -> None:
        paths = {"/srv/data": ("/srv/data", DIR), "/srv/out": ("/srv/out", MISSING)}
        jail = Jail(run_as=NOBODY, readable=("/srv/data",))
        machine = host(paths, cwd="/srv/work")
        self.assertEqual(
            paths_to_reach(jail, Spawn("/opt/server"), machine, ("/srv/script.py",)),
            (
                "/usr/bin/python3.11",
                "/usr",
                "/srv/work",
                "/opt/server",
                "/srv/data",
                "/srv/script.py",
            ),
        )


class HostConfigs(unittest.TestCase):
    """Issue 37 item 1: every MCP host's config and logs are hidden by default."""

    def test_every_hosts_config_is_hidden_by_default(self) -> None:
        for place in (
            "~/.claude.json",
            "~/.claude",
            "~/.config/Claude",
            "~/Library/Application Support/Claude",
            "~/.cursor",
            "~/.config/Code",
            "~/Library/Application Support/Code",
            "~/.codeium",
            "~/.continue",
            "~/.config/zed",
            "~/.config/goose",
            "~/.lmstudio",
            "~/.gemini",
            "~/.codex",
            "~/.config/opencode",
            "~/.mcp-auth",
        ):
            self.assertIn(place, HOST_CONFIGS)
        self.assertEqual(DEFAULT_HIDDEN[-len(HOST_CONFIGS) :], HOST_CONFIGS)
        Jail(hidden=HOST_CONFIGS)  # each a path the jail takes

    def test_an_entry_by_its_spelling_or_a_homes_path(self) -> None:
        homes = ("/home/u", "/root")
        self.assertEqual(default_entry("~/.cursor", homes), "~/.cursor")
        self.assertEqual(default_entry("~/.cursor/", homes), "~/.cursor")
        self.assertEqual(default_entry("/root/.cursor", homes), "~/.cursor")
        self.assertEqual(default_entry("/home/u/.config/Code", homes), "~/.config/Code")
        self.assertEqual(default_entry("/etc/claude-code", homes), "/etc/claude-code")
        for none in ("/srv/.cursor", "~/.cursor/mcp.json", "/home/u", "~/notes"):
            self.assertIsNone(default_entry(none, homes), none)


class Refusals(unittest.TestCase):
    def test_not_linux(self) -> None:
        with self.assertRaisesRegex(TransportFailed, "needs Linux.*Darwin"):
            make(machine=host(system="Darwin"))

    def test_no_bwrap_says_how_to_get_it(self) -> None:
        with self.assertRaisesRegex(
            TransportFailed, "bwrap.*not on PATH.*apt-get install bubblewrap"
        ):
            make(machine=host(bwrap=None))

    def test_an_unknown_machine(self) -> None:
        with self.assertRaisesRegex(TransportFailed, "seccomp.*riscv64"):
            make(machine=host(machine="riscv64"))

    def test_what_the_init_and_the_server_need_must_be_visible(self) -> None:
        cases = [
            (host(python="/tmp/venv/bin/python"), SPAWN, "interpreter that runs the jail's init"),
            (host(python_home="/tmp/py"), SPAWN, "standard library"),
            (host(cwd="/tmp/project"), SPAWN, "working directory, /tmp/project"),
            (host(), Spawn("/tmp/bin/server"), "executable, /tmp/bin/server"),
            (
                host({"/home/u/.pyenv": ("/home/u/.pyenv", DIR)}, python="/home/u/.pyenv/bin/py"),
                SPAWN,
                "/home/u/.pyenv/bin/py",
            ),
        ]
        for machine, spawn, message in cases:
            jail = Jail(hidden=("~/.pyenv",))
            with self.assertRaisesRegex(TransportFailed, message):
                make(jail, spawn=spawn, machine=machine)

    def test_a_writable_path_under_tmp_makes_it_visible_again(self) -> None:
        paths = {"/tmp/project": ("/tmp/project", DIR)}
        make(Jail(writable=("/tmp/project",)), machine=host(paths, cwd="/tmp/project"))


class TheInit(unittest.TestCase):
    def test_the_init_runs_isolated_then_the_server_argv(self) -> None:
        _, init, config, server = split(make().argv)
        self.assertEqual(init, ["/usr/bin/python3.11", "-I", "-S", "-B", "-c", "# init"])
        self.assertEqual(server, ["/usr/bin/server", "--flag", "value"])
        self.assertEqual(config, ["12", "13", "-", "RLIMIT_CORE=0"])

    def test_limits_become_rlimits_and_core_dumps_are_off(self) -> None:
        jail = Jail(
            memory_bytes=1 << 28,
            cpu_seconds=5,
            max_open_files=64,
            file_size_bytes=4096,
            max_processes=10,
        )
        channels = Channels(lifeline=12, status=13, seccomp=14, cgroups=(15, 16))
        _, _, config, _ = split(make(jail, channels=channels).argv)
        self.assertEqual(
            config,
            [
                "12",
                "13",
                "15,16",
                "RLIMIT_CORE=0",
                "RLIMIT_AS=%d" % (1 << 28),
                "RLIMIT_CPU=5",
                "RLIMIT_NOFILE=64",
                "RLIMIT_FSIZE=4096",
            ],
        )
        _, _, config, _ = split(make().argv)
        self.assertEqual(config[3:], ["RLIMIT_CORE=0"])

    def test_the_memory_cgroup_alone_without_an_address_space_limit(self) -> None:
        jail = Jail(memory_bytes=1 << 28, cpu_seconds=5, address_space_limit=False)
        _, _, config, _ = split(make(jail).argv)
        self.assertEqual(config[3:], ["RLIMIT_CORE=0", "RLIMIT_CPU=5"])
        with self.assertRaises(TypeError):
            Jail(address_space_limit=1)  # type: ignore[arg-type]

    def test_the_server_gets_its_environment_and_a_private_tmpdir(self) -> None:
        self.assertEqual(dict(make().env), dict(ENV, TMPDIR="/tmp"))
        told = Spawn("/usr/bin/server", env={"TMPDIR": "/srv/scratch"})
        self.assertEqual(
            make(spawn=told, env=dict(ENV, TMPDIR="/srv/scratch")).env["TMPDIR"], "/srv/scratch"
        )

    def test_the_probe_is_the_same_jail_without_descriptors(self) -> None:
        the_plan = make(machine=host(cwd="/srv/project"))
        options, _, _, _ = split(the_plan.argv)
        self.assertNotIn("--seccomp", the_plan.probe)
        self.assertEqual(
            list(the_plan.probe[-7:]), ["--", "/usr/bin/python3.11", "-I", "-S", "-B", "-c", "pass"]
        )
        self.assertEqual(
            [a for a in options if a not in ("--seccomp", "14")],
            list(the_plan.probe[1 : the_plan.probe.index("--")]),
        )


# ----------------------------------------------------------------------------- seccomp

ALLOW, KILL = 0x7FFF0000, 0x80000000
EPERM, ENOSYS, EAFNOSUPPORT = 0x00050000 | 1, 0x00050000 | 38, 0x00050000 | 97
X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028
AF_UNIX, AF_INET, AF_INET6, CLONE_NEWUSER, SIGCHLD = 1, 2, 10, 0x10000000, 17
TCGETS, TIOCSCTTY, TIOCSTI, TIOCLINUX = 0x5401, 0x540E, 0x5412, 0x541C


def run_filter(program: bytes, arch: int, nr: int, arg0: int = 0, arg1: int = 0) -> int:
    """Classic BPF, only the instructions seccomp filters here use, on one seccomp_data."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, arg1, 0, 0, 0, 0)
    code = [struct.unpack_from("<HBBI", program, i) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif op == 0x06:  # ret k
            return k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[op]
            pc += 1 + (jt if taken else jf)


class Seccomp(unittest.TestCase):
    def test_x86_64(self) -> None:
        program = seccomp_filter("x86_64", allow_unix=False)
        self.assertEqual(len(program) % 8, 0)
        cases = [
            (0, 0, ALLOW),  # read
            (41, AF_INET, ALLOW),
            (41, AF_UNIX, EPERM),  # socket
            (53, AF_UNIX, ALLOW),  # socketpair: no address to reach
            (56, SIGCHLD, ALLOW),
            (56, CLONE_NEWUSER | SIGCHLD, EPERM),  # clone
            (272, 0x00020000, ALLOW),
            (272, CLONE_NEWUSER, EPERM),  # unshare(NEWNS) / NEWUSER
            (435, 0, ENOSYS),
            (425, 0, ENOSYS),
            (426, 0, ENOSYS),
            (427, 0, ENOSYS),
            (0x40000000 | 41, AF_UNIX, ENOSYS),  # x32
        ]
        for nr, arg0, verdict in cases:
            self.assertEqual(run_filter(program, X86_64, nr, arg0), verdict, (nr, arg0))

    def test_i386_on_x86_64(self) -> None:
        program = seccomp_filter("x86_64", allow_unix=False)
        for nr, arg0, verdict in [
            (359, AF_UNIX, EPERM),
            (359, AF_INET, ALLOW),
            (102, 1, EPERM),
            (120, CLONE_NEWUSER, EPERM),
            (310, CLONE_NEWUSER, EPERM),
            (435, 0, ENOSYS),
            (3, 0, ALLOW),
        ]:
            self.assertEqual(run_filter(program, I386, nr, arg0), verdict, (nr, arg0))

    def test_aarch64(self) -> None:
        program = seccomp_filter("aarch64", allow_unix=False)
        for nr, arg0, verdict in [
            (198, AF_UNIX, EPERM),
            (198, AF_INET, ALLOW),
            (220, CLONE_NEWUSER, EPERM),
            (97, CLONE_NEWUSER, EPERM),
            (435, 0, ENOSYS),
            (63, 0, ALLOW),
        ]:
            self.assertEqual(run_filter(program, AARCH64, nr, arg0), verdict, (nr, arg0))
        self.assertEqual(run_filter(program, ARM, 281, AF_UNIX), KILL)

    def test_keyrings_and_other_processes_are_refused_on_every_abi(self) -> None:
        # keyctl, add_key, request_key; ptrace, process_vm_readv/writev; pidfd_getfd
        refused = {
            X86_64: (250, 248, 249, 101, 310, 311, 438),
            I386: (288, 286, 287, 26, 347, 348, 438),
            AARCH64: (219, 217, 218, 117, 270, 271, 438),
        }
        for allow_unix in (False, True):
            for machine, abis in (("x86_64", (X86_64, I386)), ("aarch64", (AARCH64,))):
                program = seccomp_filter(machine, allow_unix)
                for arch in abis:
                    for nr in refused[arch]:
                        self.assertEqual(run_filter(program, arch, nr), EPERM, (arch, nr))

    def test_tiocsti_and_tioclinux_are_refused_on_their_low_word(self) -> None:
        ioctl = {X86_64: 16, I386: 54, AARCH64: 29}
        for machine, abis in (("x86_64", (X86_64, I386)), ("aarch64", (AARCH64,))):
            program = seccomp_filter(machine, allow_unix=True)
            for arch in abis:
                nr = ioctl[arch]
                for request in (TIOCSTI, TIOCLINUX, TIOCSTI | 1 << 32, TIOCLINUX | 0xFFFF << 48):
                    self.assertEqual(
                        run_filter(program, arch, nr, 2, request), EPERM, (arch, hex(request))
                    )
                for request in (TCGETS, TIOCSCTTY, TIOCSTI + 1, 0):
                    self.assertEqual(
                        run_filter(program, arch, nr, 2, request), ALLOW, (arch, hex(request))
                    )
                self.assertEqual(
                    run_filter(program, arch, nr, TIOCSTI, TCGETS),
                    ALLOW,
                    "the descriptor is not the request",
                )

    def test_socket_families_are_an_allow_list_on_every_abi(self) -> None:
        # vsock (40) reaches the hypervisor's port space, packet (17) the wire, alg (38)
        # the kernel's crypto, bluetooth (31), tipc (30), netlink (16), can (29), xdp (44)
        refused = (0, 3, 4, 5, 16, 17, 29, 30, 31, 38, 40, 44, 45, 46, 0xFFFFFFFF)
        calls = {X86_64: (41, 53), I386: (359, 360), AARCH64: (198, 199)}
        for allow_unix in (False, True):
            for machine, abis in (("x86_64", (X86_64, I386)), ("aarch64", (AARCH64,))):
                program = seccomp_filter(machine, allow_unix)
                for arch in abis:
                    sock, pair = calls[arch]
                    for family in refused:
                        self.assertEqual(
                            run_filter(program, arch, sock, family), EAFNOSUPPORT, (arch, family)
                        )
                        self.assertEqual(
                            run_filter(program, arch, pair, family), EAFNOSUPPORT, (arch, family)
                        )
                    for family in (AF_INET, AF_INET6):
                        self.assertEqual(run_filter(program, arch, sock, family), ALLOW)
                        self.assertEqual(run_filter(program, arch, pair, family), EAFNOSUPPORT)
                    self.assertEqual(
                        run_filter(program, arch, sock, AF_UNIX), ALLOW if allow_unix else EPERM
                    )
                    self.assertEqual(run_filter(program, arch, pair, AF_UNIX), ALLOW)

    def test_a_family_is_read_from_its_low_word(self) -> None:
        # the kernel takes an int: a high word cannot turn vsock into AF_INET or back
        program = seccomp_filter("x86_64", allow_unix=False)
        self.assertEqual(run_filter(program, X86_64, 41, 40 | 1 << 32), EAFNOSUPPORT)
        self.assertEqual(run_filter(program, X86_64, 41, AF_INET | 1 << 32), ALLOW)

    def test_an_unknown_abi_is_killed(self) -> None:
        self.assertEqual(run_filter(seccomp_filter("x86_64", False), AARCH64, 0), KILL)

    def test_network_true_allows_unix_sockets_but_nothing_else_changes(self) -> None:
        program = seccomp_filter("x86_64", allow_unix=True)
        self.assertEqual(run_filter(program, X86_64, 41, AF_UNIX), ALLOW)
        # socketcall hides its family in memory: refused whatever the network
        self.assertEqual(run_filter(program, I386, 102, 1), EPERM)
        self.assertEqual(run_filter(program, X86_64, 272, CLONE_NEWUSER), EPERM)
        self.assertEqual(run_filter(program, X86_64, 435, 0), ENOSYS)
        self.assertIn(struct.pack("<HBBI", 0x06, 0, 0, ALLOW), program)

    def test_the_plan_carries_the_program_for_this_machine(self) -> None:
        self.assertEqual(make().seccomp, seccomp_filter("x86_64", allow_unix=False))
        self.assertEqual(
            make(Jail(network=True)).seccomp, seccomp_filter("x86_64", allow_unix=True)
        )
