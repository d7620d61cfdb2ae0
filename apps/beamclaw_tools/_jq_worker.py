"""The jq worker: one jq program over one input, in a process of its own.

Run by `JqTool` as ``python -I -B _jq_worker.py CPU_SECONDS MEMORY_BYTES`` with an empty
environment, in an empty private folder. Before it reads a byte of the request it

1. clears its environment (Python's locale coercion may have put ``LC_CTYPE`` back, and
   jq's ``$ENV`` and ``env`` read the process environment),
2. lowers its own resource limits: CPU time, address space, file size 0, a few file
   descriptors, no child processes, no core file,
3. where the kernel has Landlock, drops every file-system right (it can open no file,
   not even for reading) and, where the ABI has them, TCP and signals to other processes.

Only then does it read the request (JSON on stdin: ``filter``, ``input``,
``output_limit``) and run it. It answers on stdout with one status line (``ok``,
``truncated`` or ``error``) and then the text: the outputs, one JSON value a line, or
the error message. Running jq here, not in the daemon, is what makes a filter that
loops, allocates without end or crashes the library cost one process, not the daemon.

This file imports nothing from BeamClaw (it runs outside the package, by path), and
every module it needs is imported before the limits and the Landlock rules apply.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
from typing import Any

import jq

_NOFILE = 16

# Landlock (linux/landlock.h). The syscall numbers are the same on every architecture
# that has them (they come from the generic table).
_SYS_CREATE_RULESET = 444
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_PR_SET_NO_NEW_PRIVS = 38
# Every file-system right known to each ABI version: with no rule added, all are denied.
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
_FS_RIGHTS_LATEST = (1 << 16) - 1  # ABI 5 added LANDLOCK_ACCESS_FS_IOCTL_DEV
_NET_TCP_BIND_AND_CONNECT = 0b11  # ABI 4
_SCOPE_ABSTRACT_UNIX_AND_SIGNAL = 0b11  # ABI 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


def _limit(resource_id: int, value: int) -> None:
    _, hard = resource.getrlimit(resource_id)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(resource_id, (value, value))


def _set_limits(cpu_seconds: int, memory_bytes: int) -> None:
    # The soft CPU limit sends SIGXCPU (which kills); the hard one, a second later, SIGKILL.
    _, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    hard = cpu_seconds + 1 if cpu_hard == resource.RLIM_INFINITY else min(cpu_seconds + 1, cpu_hard)
    resource.setrlimit(resource.RLIMIT_CPU, (min(cpu_seconds, hard), hard))
    _limit(resource.RLIMIT_AS, memory_bytes)
    _limit(resource.RLIMIT_FSIZE, 0)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_NOFILE, _NOFILE)
    _limit(resource.RLIMIT_NPROC, 0)


def _landlock() -> bool:
    """Deny this process every file-system right (and TCP, and signals out); False when the kernel cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
        if abi < 1:
            return False
        attr = _RulesetAttr(_FS_RIGHTS_BY_ABI.get(abi, _FS_RIGHTS_LATEST), 0, 0)
        size = 8
        if abi >= 4:
            attr.handled_access_net = _NET_TCP_BIND_AND_CONNECT
            size = 16
        if abi >= 6:
            attr.scoped = _SCOPE_ABSTRACT_UNIX_AND_SIGNAL
            size = 24
        fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            return False
        try:
            if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                return False
            return bool(libc.syscall(_SYS_RESTRICT_SELF, fd, ctypes.c_uint32(0)) == 0)
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        return False


def _run(program: str, text: str, output_limit: int) -> tuple[str, str]:
    lines: list[str] = []
    room = output_limit
    for value in jq.compile(program).input_text(text):
        line = json.dumps(value, ensure_ascii=False)
        if len(line) > room:
            if room > 0:
                lines.append(line[:room])
            return "truncated", "\n".join(lines)
        lines.append(line)
        room -= len(line) + 1
    return "ok", "\n".join(lines)


def _answer(status: str, text: str) -> None:
    sys.stdout.buffer.write(f"{status}\n".encode() + text.encode("utf-8", "replace"))
    sys.stdout.buffer.flush()


def main(argv: list[str]) -> int:
    os.environ.clear()
    _set_limits(int(argv[1]), int(argv[2]))
    _landlock()  # defence in depth: without it, nothing in the request can name a file (see _jq)
    request: dict[str, Any] = json.loads(sys.stdin.buffer.read())
    try:
        status, text = _run(request["filter"], request["input"], int(request["output_limit"]))
    except MemoryError:
        status, text = "memory", ""
    except RecursionError:
        status, text = "error", "the value is nested too deeply"
    except (ValueError, UnicodeError) as exc:
        status, text = "error", str(exc)
    _answer(status, text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
