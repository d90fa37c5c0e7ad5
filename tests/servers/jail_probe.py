"""A stdlib MCP server whose tools try to reach past a jail: ``python jail_probe.py``.

Every tool answers one text block holding a JSON object: ``{"ok": true, ...}``
when the attempt succeeded, ``{"ok": false, "error": "..."}`` when the system
refused it. Tools (arguments in brackets):

``read [path]`` -- read a file; ``text`` is its content.
``write [path, text]`` -- create or truncate a file and write ``text``.
``tcp [port]`` -- connect to 127.0.0.1:``port`` over TCP.
``unix [path]`` -- connect to a Unix stream socket.
``userns`` -- ``unshare(CLONE_NEWUSER)`` through ctypes.
``thread`` -- start a thread and join it (``clone3`` refused must not matter).
``status`` -- ``/proc/self/status`` lines (``CapEff``, ``Seccomp``, ``NSpid``), uid,
hostname, and ``limits``: the soft rlimits by name (``-1``: none).
``spin`` -- burn CPU until something stops it.
``daemon [pidfile]`` -- double-fork; the grandchild calls ``setsid``, writes its
pid (in the jail's pid namespace) to ``pidfile`` and sleeps; answers that pid.
``hog [bytes]`` -- allocate and touch ``bytes`` bytes; a ``MemoryError`` is not
caught (the server dies with it, as a careless server would).
``bomb`` -- fork sleeping children until the system refuses; ``forked`` is how
many it got, ``error`` why it stopped.
``memfd [bytes]`` -- write ``bytes`` bytes into a ``memfd_create`` file, a MiB at
a time (``written``: how many got there); ``sysv_shm [bytes]`` -- the same into
SysV shared memory, in 16 MiB segments that are attached, touched and detached
in turn (so no one mapping meets ``RLIMIT_AS``), never removed; ``tmpfs [bytes]``
-- the same, half into POSIX shared memory (``shm_open``), half into ``/tmp``.
``keyring [description]`` -- ``KEYCTL_SEARCH`` the session keyring for a ``user``
key, then ``KEYCTL_READ`` it; ``text`` is its payload.
``seize_init`` -- open ``/proc/1/mem`` for writing, then ``PTRACE_ATTACH`` to the
jail's init; ``mem`` and ``attach`` say ``ok`` or why not. An attached init stays
stopped while this server lives.
``tty_inject [text]`` -- a forked child calls ``setsid``, makes its stderr (a
terminal) its controlling terminal with ``TIOCSCTTY``, and pushes ``text`` into
its input with ``TIOCSTI``; ``ctty`` and ``sti`` say ``ok`` or why not.
``exit [code]`` -- ``os._exit(code)`` without answering.

The server exits with status 0 when its stdin reaches EOF.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import platform
import resource
import socket
import sys
import termios
import threading
import time
from typing import Any, Callable, Dict, List, Optional

Message = Dict[str, Any]
Result = Dict[str, Any]
SLEEP = 300.0  # "forever" for a test: the jail's end is what stops it
CLONE_NEWUSER = 0x10000000
MIB = 1 << 20
SEGMENT = 16 * MIB
IPC_PRIVATE, IPC_CREAT, PTRACE_ATTACH = 0, 0o1000, 16
KEYCTL_SEARCH, KEYCTL_READ, KEY_SPEC_SESSION_KEYRING = 10, 11, -3
#: keyctl's system-call number (glibc has no wrapper; libkeyutils is not here).
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}


def libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def errno_text() -> str:
    return os.strerror(ctypes.get_errno())


def send(message: Message) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def refused(error: BaseException) -> Result:
    return {"ok": False, "error": "%s: %s" % (type(error).__name__, error)}


def read(args: Message) -> Result:
    with open(args["path"]) as stream:
        return {"ok": True, "text": stream.read()}


def write(args: Message) -> Result:
    with open(args["path"], "w") as stream:
        stream.write(args["text"])
    return {"ok": True}


def tcp(args: Message) -> Result:
    socket.create_connection(("127.0.0.1", args["port"]), timeout=5).close()
    return {"ok": True}


def unix(args: Message) -> Result:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(args["path"])
    return {"ok": True}


def family(args: Message) -> Result:
    """socket(family, kind) and, with "pair", socketpair: whether the kernel gave one."""
    make = socket.socketpair if args.get("pair") else socket.socket
    made = make(args["family"], args.get("kind", socket.SOCK_STREAM))
    for sock in made if isinstance(made, tuple) else (made,):
        sock.close()
    return {"ok": True}


def userns(args: Message) -> Result:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER) != 0:
        return {"ok": False, "error": os.strerror(ctypes.get_errno())}
    return {"ok": True}


def thread(args: Message) -> Result:
    done = []
    worker = threading.Thread(target=lambda: done.append(True))
    worker.start()
    worker.join()
    return {"ok": done == [True]}


def status(args: Message) -> Result:
    with open("/proc/self/status") as stream:
        fields = dict(line.split(":", 1) for line in stream if ":" in line)
    wanted = ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb", "Seccomp", "NSpid")
    limits = {
        name: resource.getrlimit(getattr(resource, name))[0]
        for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_CORE")
    }
    return {
        "ok": True,
        "uid": os.getuid(),
        "ids": [os.getresuid(), os.getresgid(), os.getgroups()],
        "hostname": socket.gethostname(),
        "limits": limits,
        **{key: fields.get(key, "").strip() for key in wanted},
    }


def spin(args: Message) -> Result:
    while True:
        pass


def daemon(args: Message) -> Result:
    """The classic double fork; the grandchild is out of our session and group."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            pidfile = args["pidfile"]
            with open(pidfile + ".tmp", "w") as stream:
                stream.write(str(os.getpid()))
            os.rename(pidfile + ".tmp", pidfile)
            os.write(write_end, b"x")
            time.sleep(SLEEP)
        os._exit(0)
    os.waitpid(child, 0)
    os.read(read_end, 1)  # the pid file is in place before we answer
    os.close(read_end)
    os.close(write_end)
    with open(args["pidfile"]) as stream:
        return {"ok": True, "pid": int(stream.read())}


def hog(args: Message) -> Result:
    block = bytearray(args["bytes"])  # MemoryError, uncaught, is the point
    for offset in range(0, len(block), 4096):
        block[offset] = 1
    return {"ok": True}


def bomb(args: Message) -> Result:
    forked = 0
    while True:
        try:
            pid = os.fork()
        except OSError as e:
            return {"ok": True, "forked": forked, "error": str(e)}
        if pid == 0:
            time.sleep(SLEEP)
            os._exit(0)
        forked += 1


def memfd(args: Message) -> Result:
    fd = os.memfd_create("probe")
    try:
        return fill([fd], args["bytes"])
    finally:
        os.close(fd)  # an answer has been reached: the pages go with the descriptor


def tmpfs(args: Message) -> Result:
    """Half into POSIX shared memory (``shm_open``: a file in ``/dev/shm``), half into ``/tmp``."""
    import _posixshmem

    shm = _posixshmem.shm_open("/probe", os.O_CREAT | os.O_RDWR, 0o600)
    tmp = os.open("/tmp/probe-fill", os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        return fill([shm, tmp], args["bytes"])
    finally:  # the files stay, and with them their pages
        os.close(shm)
        os.close(tmp)


def fill(fds: List[int], size: int) -> Result:
    """Write ``size`` bytes, a MiB at a time, spread evenly over ``fds``."""
    written, chunk = 0, b"m" * MIB
    try:
        while written < size:
            written += os.write(fds[(written // MIB) % len(fds)], chunk)
    except OSError as e:
        return dict(refused(e), written=written)
    return {"ok": True, "written": written}


def sysv_shm(args: Message) -> Result:
    c = libc()
    c.shmat.restype = ctypes.c_void_p
    c.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    c.shmdt.argtypes = [ctypes.c_void_p]
    written = 0
    while written < args["bytes"]:
        segment = c.shmget(IPC_PRIVATE, ctypes.c_size_t(SEGMENT), IPC_CREAT | 0o600)
        address = c.shmat(segment, None, 0) if segment >= 0 else None
        if address is None or address == ctypes.c_void_p(-1).value:
            return {"ok": False, "error": errno_text(), "written": written}
        ctypes.memset(address, 1, SEGMENT)  # the pages exist once touched
        c.shmdt(ctypes.c_void_p(address))
        written += SEGMENT
    return {"ok": True, "written": written}


def keyring(args: Message) -> Result:
    keyctl = libc().syscall
    number = SYS_KEYCTL[platform.machine()]
    found = keyctl(
        ctypes.c_long(number),
        ctypes.c_long(KEYCTL_SEARCH),
        ctypes.c_long(KEY_SPEC_SESSION_KEYRING),
        b"user",
        args["description"].encode(),
        ctypes.c_long(0),
    )
    if found < 0:
        return {"ok": False, "error": "search: " + errno_text()}
    payload = ctypes.create_string_buffer(4096)
    size = keyctl(
        ctypes.c_long(number),
        ctypes.c_long(KEYCTL_READ),
        ctypes.c_long(found),
        payload,
        ctypes.c_long(len(payload)),
    )
    if size < 0:
        return {"ok": False, "error": "read: " + errno_text()}
    return {"ok": True, "text": payload.raw[:size].decode()}


def seize_init(args: Message) -> Result:
    try:
        os.close(os.open("/proc/1/mem", os.O_RDWR))
        mem = "ok"
    except OSError as e:
        mem = str(e)
    c = libc()
    c.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    attach = "ok" if c.ptrace(PTRACE_ATTACH, 1, None, None) == 0 else errno_text()
    return {"ok": True, "mem": mem, "attach": attach}


def tty_inject(args: Message) -> Result:
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        os.write(write_end, json.dumps(take_the_terminal(args["text"])).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as said:
        found: Result = json.loads(said.read())
    os.waitpid(child, 0)
    return dict(found, ok=True)


def take_the_terminal(text: str) -> Result:
    """In a child: a session of its own, stderr's terminal as its controlling one, then type."""
    found = {"ctty": "not tried", "sti": "not tried"}
    try:
        os.setsid()
        fcntl.ioctl(2, termios.TIOCSCTTY, 0)
        found["ctty"] = "ok"
        for byte in text.encode():
            fcntl.ioctl(2, termios.TIOCSTI, bytes([byte]))
        found["sti"] = "ok"
    except OSError as e:
        found["sti" if found["ctty"] == "ok" else "ctty"] = str(e)
    return found


def leave(args: Message) -> Result:
    os._exit(args["code"])


TOOLS: Dict[str, Callable[[Message], Result]] = {
    "read": read,
    "write": write,
    "tcp": tcp,
    "unix": unix,
    "family": family,
    "userns": userns,
    "thread": thread,
    "status": status,
    "spin": spin,
    "daemon": daemon,
    "hog": hog,
    "bomb": bomb,
    "memfd": memfd,
    "tmpfs": tmpfs,
    "sysv_shm": sysv_shm,
    "keyring": keyring,
    "seize_init": seize_init,
    "tty_inject": tty_inject,
    "exit": leave,
}


def answer(request: Message) -> Optional[Result]:
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "jail-probe", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in TOOLS]}
    if method == "tools/call":
        params = request["params"]
        tool = TOOLS[params["name"]]
        try:
            result = tool(params.get("arguments") or {})
        except (OSError, ValueError) as e:
            result = refused(e)
        return {"content": [{"type": "text", "text": json.dumps(result)}]}
    return None


def main() -> None:
    for line in sys.stdin.buffer:
        request = json.loads(line)
        if "id" not in request:
            continue
        result = answer(request)
        if result is None:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "error": {"code": -32601, "message": "no such method"},
                }
            )
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main()
