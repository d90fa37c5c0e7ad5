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
``exit [code]`` -- ``os._exit(code)`` without answering.

The server exits with status 0 when its stdin reaches EOF.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import socket
import sys
import threading
import time
from typing import Any, Callable, Dict, Optional

Message = Dict[str, Any]
Result = Dict[str, Any]
SLEEP = 300.0  # "forever" for a test: the jail's end is what stops it
CLONE_NEWUSER = 0x10000000


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
    wanted = ("CapEff", "Seccomp", "NSpid")
    limits = {name: resource.getrlimit(getattr(resource, name))[0] for name in
              ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_CORE")}
    return {"ok": True, "uid": os.getuid(), "hostname": socket.gethostname(),
            "limits": limits, **{key: fields.get(key, "").strip() for key in wanted}}


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


def leave(args: Message) -> Result:
    os._exit(args["code"])


TOOLS: Dict[str, Callable[[Message], Result]] = {
    "read": read, "write": write, "tcp": tcp, "unix": unix, "userns": userns,
    "thread": thread, "status": status, "spin": spin, "daemon": daemon, "hog": hog,
    "bomb": bomb, "exit": leave,
}


def answer(request: Message) -> Optional[Result]:
    method = request.get("method")
    if method == "initialize":
        return {"protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "jail-probe", "version": "1"}}
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
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": -32601, "message": "no such method"}})
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main()
