"""The jail's seccomp program: classic BPF, assembled here, from a table per ABI.

What it refuses, and why, is in :mod:`mcp_client.jail`'s docstring (**Seccomp**);
:func:`seccomp_filter` is what :func:`mcp_client.jail.invocation` hands bwrap. Pure: no I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import TransportFailed

__all__ = ["seccomp_filter", "SOCKET_FAMILIES"]


# Classic BPF as seccomp runs it: one (code, jt, jf, k) per instruction, jumps
# counted from the next instruction. Only what the filter below needs.
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_EPERM, _ENOSYS, _EAFNOSUPPORT = 1, 38, 97
_AF_UNIX, _CLONE_NEWUSER, _X32_SYSCALL_BIT = 1, 0x10000000, 0x40000000
#: The socket families a jailed process may open besides AF_UNIX (which only
#: ``network=True`` allows): AF_INET and AF_INET6, which the network namespace
#: confines to the jail's own loopback unless ``network=True``. Every other family
#: is EAFNOSUPPORT: vsock (the hypervisor's port space, shared with the host),
#: packet, alg (the kernel's crypto), bluetooth, tipc, netlink, can, rds, xdp...
#: Netlink is left out too: nothing a server here needs asks for it (glibc's
#: getaddrinfo and Node's interface list go without it), and it speaks to the kernel.
SOCKET_FAMILIES: Tuple[int, ...] = (2, 10)
#: ioctl requests refused: push a byte into a terminal's input (TIOCSTI), and the
#: Linux console's multiplexer, which can paste its selection the same way (TIOCLINUX).
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
# struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6] (little-endian low word first).
# The kernel's ioctl takes its request as an unsigned int: only args[1]'s low word
# counts, whatever a caller leaves in the high one (Flatpak masks it the same way).
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24


@dataclass(frozen=True)
class _Abi:
    """One system-call ABI's numbers for what the filter looks at."""

    arch: int
    socket: int
    socketpair: int
    clone: int
    unshare: int
    ioctl: int
    #: EPERM: keyctl, add_key, request_key (the harness's keyrings), then ptrace,
    #: process_vm_readv, process_vm_writev (another process's memory).
    eperm: Tuple[int, ...]
    #: clone3 and io_uring_setup/enter/register: the same numbers on every ABI here.
    enosys: Tuple[int, ...] = (435, 425, 426, 427)
    #: EPERM too (another process's descriptors); one number everywhere, as above.
    pidfd_getfd: int = 438
    #: i386's socketcall multiplexer: its arguments are in memory, out of a filter's sight.
    socketcall: Optional[int] = None
    x32: bool = False


_X86_64 = _Abi(
    arch=0xC000003E,
    socket=41,
    socketpair=53,
    clone=56,
    unshare=272,
    ioctl=16,
    eperm=(250, 248, 249, 101, 310, 311),
    x32=True,
)
_I386 = _Abi(
    arch=0x40000003,
    socket=359,
    socketpair=360,
    clone=120,
    unshare=310,
    ioctl=54,
    eperm=(288, 286, 287, 26, 347, 348),
    socketcall=102,
)
_AARCH64 = _Abi(
    arch=0xC00000B7,
    socket=198,
    socketpair=199,
    clone=220,
    unshare=97,
    ioctl=29,
    eperm=(219, 217, 218, 117, 270, 271),
)
#: platform.machine() -> the ABIs a process there can call the kernel with.
_ABIS: Dict[str, Tuple[_Abi, ...]] = {
    "x86_64": (_X86_64, _I386),
    "amd64": (_X86_64, _I386),
    "aarch64": (_AARCH64,),
    "arm64": (_AARCH64,),
}

Item = Union[str, Tuple[int, Union[int, str], Union[int, str], int]]


def seccomp_filter(machine: str, allow_unix: bool) -> bytes:
    """The jail's seccomp program for ``machine`` (bwrap's ``--seccomp`` format).

    Any other ABI than the machine's own (and i386 on x86_64) is killed: a
    filter that does not know an ABI's numbers cannot judge its calls.
    ``socket`` takes the families of :data:`SOCKET_FAMILIES` (``AF_UNIX`` only
    with ``allow_unix``), ``socketpair`` ``AF_UNIX`` only.
    """
    abis = _ABIS.get(machine.lower())
    if abis is None:
        raise TransportFailed(
            "the jail's seccomp filter knows x86_64 and aarch64, not %s" % machine
        )
    items: List[Item] = [(_LD_W_ABS, 0, 0, _ARCH)]
    items += [(_JEQ, "abi%d/" % n, 0, abi.arch) for n, abi in enumerate(abis)]
    items.append((_RET, 0, 0, _RET_KILL_PROCESS))
    for n, abi in enumerate(abis):
        items += _abi_rules(abi, "abi%d/" % n, allow_unix)
    return _assemble(items)


def _abi_rules(abi: _Abi, label: str, allow_unix: bool) -> List[Item]:
    eperm, enosys, flags, socket, pair, ioctl, allowed, nofamily = (
        label + name
        for name in ("eperm", "enosys", "flags", "socket", "pair", "ioctl", "allowed", "nofamily")
    )
    rules: List[Item] = [label, (_LD_W_ABS, 0, 0, _NR)]
    if abi.x32:  # x32 calls are x86_64 numbers with a high bit set: refuse them all
        rules.append((_JGE, enosys, 0, _X32_SYSCALL_BIT))
    rules += [(_JEQ, enosys, 0, nr) for nr in abi.enosys]
    rules += [(_JEQ, eperm, 0, nr) for nr in abi.eperm + (abi.pidfd_getfd,)]
    if abi.socketcall is not None:  # its family is in memory: no allow list could read it
        rules.append((_JEQ, eperm, 0, abi.socketcall))
    rules += [
        (_JEQ, socket, 0, abi.socket),
        (_JEQ, pair, 0, abi.socketpair),
        (_JEQ, flags, 0, abi.clone),
        (_JEQ, flags, 0, abi.unshare),
        (_JEQ, ioctl, 0, abi.ioctl),
        (_RET, 0, 0, _RET_ALLOW),
    ]
    # socketpair(domain, ...): a connected pair reaches nothing but itself; AF_UNIX only
    # (Python's asyncio and libuv's child stdio make them with no network at all).
    rules += [
        pair,
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JEQ, 0, nofamily, _AF_UNIX),
        (_RET, 0, 0, _RET_ALLOW),
    ]
    # socket(domain, ...): the allow list. AF_UNIX without allow_unix is EPERM (a policy,
    # as before), any family not on the list EAFNOSUPPORT (as a kernel without it says).
    rules += [socket, (_LD_W_ABS, 0, 0, _ARG0)]
    rules += [(_JEQ, allowed, 0, family) for family in SOCKET_FAMILIES]
    rules += [
        (_JEQ, allowed if allow_unix else eperm, 0, _AF_UNIX),
        nofamily,
        (_RET, 0, 0, _RET_ERRNO | _EAFNOSUPPORT),
        allowed,
        (_RET, 0, 0, _RET_ALLOW),
    ]
    # ioctl(fd, request, ...): refuse the requests that type into a terminal
    rules += [
        ioctl,
        (_LD_W_ABS, 0, 0, _ARG1),
        (_JEQ, eperm, 0, _TIOCSTI),
        (_JEQ, eperm, 0, _TIOCLINUX),
        (_RET, 0, 0, _RET_ALLOW),
    ]
    # clone(flags, ...) and unshare(flags): refuse a new user namespace
    rules += [
        flags,
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JSET, eperm, 0, _CLONE_NEWUSER),
        (_RET, 0, 0, _RET_ALLOW),
        eperm,
        (_RET, 0, 0, _RET_ERRNO | _EPERM),
        enosys,
        (_RET, 0, 0, _RET_ERRNO | _ENOSYS),
    ]
    return rules


def _assemble(items: Sequence[Item]) -> bytes:
    labels: Dict[str, int] = {}
    code: List[Tuple[int, Union[int, str], Union[int, str], int]] = []
    for item in items:
        if isinstance(item, str):
            labels[item] = len(code)
        else:
            code.append(item)
    out = bytearray()
    for index, (op, jt, jf, k) in enumerate(code):
        out += struct.pack("<HBBI", op, _jump(jt, index, labels), _jump(jf, index, labels), k)
    return bytes(out)


def _jump(target: Union[int, str], index: int, labels: Mapping[str, int]) -> int:
    if isinstance(target, int):
        return target
    offset = labels[target] - index - 1
    assert 0 <= offset < 256, "classic BPF jumps forward, at most 255 instructions"
    return offset
