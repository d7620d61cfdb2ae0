"""The bubblewrap jail's seccomp filter: the system calls a jailed command never needs.

The namespaces, the dropped capabilities and ``--disable-userns`` already stop most of
what is here; the filter is the second wall, and the first for what namespaces do not
cover (a kernel's keyrings are not namespaced; ``bpf``, ``perf_event_open``, ``io_uring``
and ``userfaultfd`` are the usual ways into a kernel bug). The list is Codex's
linux-sandbox's (ptrace, process_vm_*, io_uring, AF_VSOCK) joined with Docker's default
profile and Flatpak's (keyrings, mount and the new mount API, nested user namespaces,
TIOCSTI/TIOCLINUX, kernel modules and kexec, personality flags, clock and system
settings). Each refused call fails with EPERM, as a missing privilege would, so tools
report it and go on; ``clone3`` fails with ENOSYS, because its flags are behind a
pointer that no filter can read: libc then falls back to ``clone``, whose flags the
filter reads (Codex and Chromium do the same).

The filter is built with libseccomp (through ``pyseccomp``), never by hand, for x86_64
and the machine's own architecture; a system call of any other ABI (an i386 ``int
0x80``, an x32 call) kills the process, libseccomp's default for a foreign
architecture, so no other table of numbers is a way around it. It is compiled once per
daemon and network mode (`seccomp_program`) and handed to bwrap as a memfd
(``--seccomp FD``), which loads it, with no_new_privs, just before it runs the command.
"""

from __future__ import annotations

import errno
import functools
import os
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pyseccomp import SyscallFilter

#: Refused outright (EPERM). Names libseccomp must know: the filter is not built without them.
REFUSED: Final = (
    # another process's memory
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    # the kernel's keyrings: not namespaced, a way to another jail's or the host's keys
    "keyctl",
    "add_key",
    "request_key",
    # the kernel's attack surface a shell never needs
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # the mount table, the root, other namespaces, file handles
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "setns",
    "open_by_handle_at",
    "name_to_handle_at",
    # the kernel itself
    "kexec_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "vhangup",
)
#: Refused too where libseccomp knows them (newer calls; or gone from newer kernels).
REFUSED_IF_KNOWN: Final = (
    "kexec_file_load",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "lookup_dcookie",
    "iopl",
    "ioperm",
)
_CLONE_NEWUSER: Final = 0x10000000
_TIOCSTI: Final = 0x5412
_TIOCLINUX: Final = 0x541C
_AF_UNIX: Final = 1
_AF_VSOCK: Final = 40
#: personality flags that weaken the process's own memory layout (no ASLR, executable data, page 0).
_PERSONALITY_FLAGS: Final = (0x0040000, 0x0100000, 0x0200000, 0x0400000)
_PERSONALITY_QUERY: Final = 0xFFFFFFFF
_LOW32: Final = 0xFFFFFFFF


class SeccompUnavailable(Exception):
    """libseccomp is missing here, or too old to know a call the filter must refuse."""


def _filter(*, unix_sockets: bool) -> SyscallFilter:
    """The libseccomp filter; see the module docstring."""
    try:
        import pyseccomp as sc  # noqa: PLC0415 - it loads libseccomp.so.2 when imported: a host without it must still start
    except (ImportError, RuntimeError) as exc:  # pyseccomp raises RuntimeError without libseccomp.so.2
        raise SeccompUnavailable(str(exc)) from None
    refuse = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(sc.ALLOW)
    if not rules.exist_arch(sc.Arch.X86_64):
        rules.add_arch(sc.Arch.X86_64)
    for name in REFUSED:
        rules.add_rule(refuse, name)
    for name in REFUSED_IF_KNOWN:
        try:
            rules.add_rule(refuse, name)
        except (OSError, ValueError):  # a name this libseccomp does not know
            continue
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    # Nested user namespaces. The flags are arg 0 of clone on x86_64 and aarch64.
    for name in ("clone", "unshare"):
        rules.add_rule(refuse, name, sc.Arg(0, sc.MASKED_EQ, _CLONE_NEWUSER, _CLONE_NEWUSER))
    # The kernel reads an ioctl request as 32 bits: compare those only, or 1<<32 | TIOCSTI passes.
    for request in (_TIOCSTI, _TIOCLINUX):
        rules.add_rule(refuse, "ioctl", sc.Arg(1, sc.MASKED_EQ, _LOW32, request))
    # socket(AF_VSOCK) reaches the hypervisor's host; with the host's network (network =
    # "bridge") a new AF_UNIX socket reaches the host's abstract names (no path, no file
    # system wall), so it is refused there; socketpair needs no address and stays.
    families = (_AF_VSOCK,) if unix_sockets else (_AF_VSOCK, _AF_UNIX)
    for family in families:
        rules.add_rule(refuse, "socket", sc.Arg(0, sc.MASKED_EQ, _LOW32, family))
    # personality(F | anything) for a weakening flag F, but not the query (all 32 bits set):
    # one comparison per argument and rule, so "F set and some other bit clear", bit by bit.
    for flag in _PERSONALITY_FLAGS:
        for bit in range(32):
            if 1 << bit != flag:
                rules.add_rule(refuse, "personality", sc.Arg(0, sc.MASKED_EQ, flag | 1 << bit, flag))
    return rules


@functools.cache
def seccomp_program(*, unix_sockets: bool) -> bytes:
    """The compiled BPF program (``struct sock_filter`` array) bwrap's ``--seccomp`` reads.

    *unix_sockets*: whether ``socket(AF_UNIX)`` is allowed (false for a jail that shares
    the host's network). Compiled once per daemon; `SeccompUnavailable` without libseccomp.
    """
    rules = _filter(unix_sockets=unix_sockets)
    with os.fdopen(os.memfd_create("beamclaw-seccomp", os.MFD_CLOEXEC), "w+b") as sink:
        rules.export_bpf(sink)  # libseccomp writes to the file descriptor itself
        sink.seek(0)
        return sink.read()
