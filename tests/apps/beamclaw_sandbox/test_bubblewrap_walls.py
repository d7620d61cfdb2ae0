"""The walls the shell deny list used to stand in for, tried from inside through the real `bash` tool.

The seccomp filter (`beamclaw_sandbox._seccomp`): a Python script in the jail makes each
refused system call with arguments for which the kernel itself would answer something
else (EBADF, ESRCH, EINVAL, EFAULT, success), so EPERM can only be the filter's; the
harmless part of it runs unjailed as well, to show those other answers. The host's Unix
sockets (the Docker socket, a D-Bus-like bus under /run and /tmp, the daemon's control
socket, an abstract name): a ``connect()`` from inside fails, where the same script
unjailed connects. And the rest of the jail's contract: a session of its own, an empty
environment for its pid 1, ordinary work (threads, a process tree, git, pip) still runs.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pyseccomp
import pytest

import beamclaw_sandbox as sandbox
from beamclaw_base import JailUnavailable
from beamclaw_sandbox._seccomp import seccomp_program
from tests.apps.beamclaw_sandbox.jail_support import Daemon, attack
from tests.support.bubblewrap import requires_bubblewrap

pytestmark = requires_bubblewrap()

_CLONE_NEWUSER = 0x10000000
_SIGCHLD = 17
_NO_SUCH_PID = 999_999_999

#: label -> (system call, its arguments: ints, or str for a path or name), and the errno
#: the jail answers ("ok" for success). A clone that succeeds exits its child at once.
SYSCALLS: dict[str, tuple[str, list[int | str], str]] = {
    "TIOCSTI": ("ioctl", [-1, 0x5412, 0], "EPERM"),
    "TIOCSTI, high bits": ("ioctl", [-1, (1 << 32) | 0x5412, 0], "EPERM"),
    "TIOCLINUX": ("ioctl", [-1, 0x541C, 0], "EPERM"),
    "TCGETS (allowed)": ("ioctl", [-1, 0x5401, 0], "EBADF"),
    "unshare user": ("unshare", [_CLONE_NEWUSER], "EPERM"),
    "clone user": ("clone", [_CLONE_NEWUSER | _SIGCHLD, 0, 0, 0, 0], "EPERM"),
    "clone3": ("clone3", [0, 0], "ENOSYS"),
    "ptrace": ("ptrace", [16, _NO_SUCH_PID, 0, 0], "EPERM"),  # PTRACE_ATTACH
    "process_vm_readv": ("process_vm_readv", [_NO_SUCH_PID, 0, 0, 0, 0, 0], "EPERM"),
    "process_vm_writev": ("process_vm_writev", [_NO_SUCH_PID, 0, 0, 0, 0, 0], "EPERM"),
    "keyctl": ("keyctl", [0, -3, 0], "EPERM"),  # KEYCTL_GET_KEYRING_ID of the session keyring
    "add_key": ("add_key", ["user", "beamclaw", 0, 0, -2], "EPERM"),
    "request_key": ("request_key", ["user", "beamclaw", 0, 0], "EPERM"),
    "bpf": ("bpf", [999, 0, 0], "EPERM"),
    "perf_event_open": ("perf_event_open", [0, 0, -1, -1, 0], "EPERM"),
    "userfaultfd": ("userfaultfd", [1], "EPERM"),  # UFFD_USER_MODE_ONLY
    "io_uring_setup": ("io_uring_setup", [1, 0], "EPERM"),
    "mount": ("mount", ["none", "/nonexistent", "tmpfs", 0, 0], "EPERM"),
    "umount2": ("umount2", ["/nonexistent", 0xFFFF], "EPERM"),
    "pivot_root": ("pivot_root", ["/nonexistent", "/nonexistent"], "EPERM"),
    "setns": ("setns", [-1, 0], "EPERM"),
    "open_by_handle_at": ("open_by_handle_at", [-1, 0, 0], "EPERM"),
    "kexec_load": ("kexec_load", [0, 0, 0, 0], "EPERM"),
    "init_module": ("init_module", [0, 0, ""], "EPERM"),
    "finit_module": ("finit_module", [-1, "", 0], "EPERM"),
    "no ASLR": ("personality", [0x0040000], "EPERM"),
    "no ASLR, bit 31": ("personality", [0x80040000], "EPERM"),
    "personality query (allowed)": ("personality", [0xFFFFFFFF], "ok"),
    "socket AF_VSOCK": ("socket", [40, 1, 0], "EPERM"),
    "socket AF_UNIX (allowed)": ("socket", [1, 1, 0], "ok"),
}
#: What the kernel answers the harmless ones unjailed: not EPERM, so EPERM in the jail is the filter's.
UNJAILED = {
    "TIOCSTI": "EBADF",
    "TIOCSTI, high bits": "EBADF",
    "TIOCLINUX": "EBADF",
    "clone3": "EINVAL",
    "ptrace": "ESRCH",
    "setns": "EBADF",
    "umount2": "EINVAL",
    "perf_event_open": "EFAULT",
    "personality query (allowed)": "ok",
}

_PROBE = """\
import ctypes, errno, json, os, sys
PARENT = os.getpid()
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def arg(value):
    return ctypes.c_char_p(value.encode()) if isinstance(value, str) else ctypes.c_ulong(value & (2**64 - 1))
for label, (number, args) in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *map(arg, args))
    if result == 0 and os.getpid() != PARENT:  # a clone's child
        os._exit(0)
    print(label, "=", errno.errorcode.get(ctypes.get_errno(), "?") if result == -1 else "ok", sep="")
"""


def _calls(labels: list[str]) -> str:
    """The probe's argument: each label with the native number of its system call."""
    native = pyseccomp.Arch.NATIVE
    calls = {label: (pyseccomp.resolve_syscall(native, SYSCALLS[label][0]), SYSCALLS[label][1]) for label in labels}
    return json.dumps(calls)


async def _probe(daemon: Daemon, labels: list[str], isolation: str = "bubblewrap") -> dict[str, str]:
    (daemon.workspace / "probe.py").write_text(_PROBE)
    script = f"python3 probe.py '{_calls(labels)}'\n"
    result = await attack(daemon, script, isolation=isolation)
    assert result.text.startswith("exit code: 0\n"), result.text
    return dict(line.split("=", 1) for line in result.text.splitlines()[1:])


async def test_the_filter_refuses_what_a_command_never_needs(daemon: Daemon) -> None:
    answers = await _probe(daemon, list(SYSCALLS))
    assert answers == {label: expected for label, (_, _, expected) in SYSCALLS.items()}


async def test_unjailed_the_kernel_answers_otherwise(daemon: Daemon) -> None:
    """The arguments are chosen so that EPERM in the jail is the filter's, not the kernel's."""
    assert await _probe(daemon, list(UNJAILED), isolation="none") == UNJAILED


async def test_a_nested_user_namespace_is_refused_by_the_filter_too(daemon: Daemon) -> None:
    result = await attack(daemon, "unshare --user --map-root-user true; echo unshare=$?\n")
    assert "unshare=1" in result.text and "Operation not permitted" in result.text


async def test_without_libseccomp_the_jail_refuses_to_run_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # import fails, as without libseccomp.so.2
    seccomp_program.cache_clear()
    try:
        jail = sandbox.BubblewrapJail(sandbox.parse_sandbox_config({}))
        problem = await jail.check()
        assert problem is not None and "apt install libseccomp2" in problem
        assert "[sandbox.bubblewrap] seccomp = false" in problem
        with pytest.raises(JailUnavailable):
            await jail.run(["true"], workspace=tmp_path, timeout=20, output_limit=100)
        # Configured so, the jail runs without the filter (the other walls hold).
        unfiltered = sandbox.BubblewrapJail(sandbox.parse_sandbox_config({"bubblewrap": {"seccomp": False}}))
        result = await unfiltered.run(
            ["grep", "^Seccomp:", "/proc/self/status"], workspace=tmp_path, timeout=20, output_limit=100
        )
        assert result.stdout.split() == [b"Seccomp:", b"0"]
    finally:
        seccomp_program.cache_clear()


async def test_the_filter_is_on_in_every_jail(daemon: Daemon) -> None:
    result = await attack(daemon, "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status\n")
    assert result.text.split() == ["exit", "code:", "0", "NoNewPrivs:", "1", "Seccomp:", "2"]


def test_the_filter_is_compiled_once() -> None:
    assert seccomp_program(unix_sockets=True) is seccomp_program(unix_sockets=True)
    assert seccomp_program(unix_sockets=True) != seccomp_program(unix_sockets=False)


# --- ordinary work still runs ----------------------------------------------------------------

_ORDINARY = """\
import subprocess, sys, threading
results = []
threads = [threading.Thread(target=results.append, args=(n,)) for n in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print("threads", sorted(results) == list(range(8)))
tree = subprocess.run(["bash", "-c", "sh -c 'echo grandchild' | cat"], capture_output=True, text=True)
print("tree", tree.stdout.strip())
"""


async def test_ordinary_work_still_runs(daemon: Daemon) -> None:
    (daemon.workspace / "ordinary.py").write_text(_ORDINARY)
    script = (
        "python3 ordinary.py\n"
        "git init -q repo && cd repo && echo hi > f && git add f\n"
        "git -c user.name=a -c user.email=a@b commit -qm first && git log --format=%s\n"
        "cd .. && python3 -m pip --version >/dev/null && echo pip ok\n"
        "python3 -c 'import os; pid = os.fork(); os._exit(0) if pid == 0 else print(\"fork\", os.waitpid(pid, 0)[1])'\n"
    )
    result = await attack(daemon, script)
    assert result.text == "exit code: 0\nthreads True\ntree grandchild\nfirst\npip ok\nfork 0", result.text


# --- the jail's session and environment --------------------------------------------------------


async def test_the_command_runs_in_a_session_of_its_own(daemon: Daemon) -> None:
    """--new-session: the session's leader is inside the jail (a leader outside the pid
    namespace shows as 0), so no terminal of the daemon's is the command's."""
    result = await attack(
        daemon, "python3 -c 'import os; print(os.getsid(0))'; (exec 3</dev/tty) 2>/dev/null; echo tty=$?\n"
    )
    lines = result.text.splitlines()
    assert lines[0] == "exit code: 0" and int(lines[1]) != 0
    assert lines[2] == "tty=1"


async def test_the_jails_environment_holds_only_the_allowlist(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/0")
    monkeypatch.setenv("DOCKER_HOST", "unix:///var/run/docker.sock")
    result = await attack(daemon, "env | cut -d= -f1 | sort | tr '\\n' ' '; echo; wc -c < /proc/1/environ\n")
    names = set(result.text.splitlines()[1].split())
    assert names <= {"HOME", "LANG", "LOGNAME", "PATH", "PWD", "SHELL", "SHLVL", "TERM", "TMPDIR", "USER", "_"}
    assert result.text.splitlines()[2] == "0"


# --- the host's Unix sockets -----------------------------------------------------------------

_CONNECT = """\
import socket, sys
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1].replace("@", "\\0", 1)); print("connected")
except OSError as exc:
    print("refused", type(exc).__name__)
"""


def _listen(address: str) -> socket.socket:
    """A listening Unix socket at *address* (``@name``: an abstract one)."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(address.replace("@", "\0", 1))
    listener.listen(8)
    return listener


def _bus_under(parent: str) -> Iterator[str]:
    """A D-Bus-like socket of the host's in a new folder under *parent*."""
    if not os.access(parent, os.W_OK):
        pytest.skip(f"{parent} is not writable here")
    folder = Path(tempfile.mkdtemp(prefix="beamclaw-test-bus-", dir=parent))
    try:
        with _listen(str(folder / "bus")):
            yield str(folder / "bus")
    finally:
        (folder / "bus").unlink(missing_ok=True)
        folder.rmdir()


@pytest.fixture(params=["docker", "bus under /run", "bus under /tmp", "control socket", "abstract"])
def host_socket(request: pytest.FixtureRequest, control_socket: Path) -> Iterator[str]:
    """A Unix socket of the host's that answers there (checked), as a path or ``@name``."""
    kind = request.param
    if kind == "docker":
        address = "/var/run/docker.sock"
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(address)
            except OSError as exc:
                pytest.skip(f"no Docker engine answers at {address} ({exc}); .ci/run starts one")
        yield address
    elif kind == "control socket":
        yield str(control_socket)
    elif kind == "abstract":
        address = f"@beamclaw-test-{uuid.uuid4().hex}"
        with _listen(address):
            yield address
    else:
        yield from _bus_under(kind.removeprefix("bus under "))


async def test_no_unix_socket_of_the_host_is_reachable(daemon: Daemon, host_socket: str) -> None:
    (daemon.workspace / "connect.py").write_text(_CONNECT)
    script = f"python3 connect.py {host_socket}\n"
    unjailed = await attack(daemon, script, isolation="none")
    assert unjailed.text == "exit code: 0\nconnected"
    result = await attack(daemon, script)
    # A path: not in the jail's file system. An abstract name: not in the jail's network namespace.
    refused = "ConnectionRefusedError" if host_socket.startswith("@") else "FileNotFoundError"
    assert result.text == f"exit code: 0\nrefused {refused}"


async def test_with_the_hosts_network_no_unix_socket_can_be_made(daemon: Daemon) -> None:
    """network = "bridge" shares the host's network namespace, and with it the host's abstract
    Unix socket names: socket(AF_UNIX) is refused there (socketpair, which has no address, is not)."""
    jail = sandbox.BubblewrapJail(sandbox.parse_sandbox_config({"network": "bridge"}))
    opened = attrs.evolve(daemon, context=attrs.evolve(daemon.context, jails={"bubblewrap": jail}))
    address = f"@beamclaw-test-{uuid.uuid4().hex}"
    (daemon.workspace / "connect.py").write_text(_CONNECT)
    script = f"python3 connect.py {address}; python3 -c 'import socket; print(len(socket.socketpair()))'\n"
    with _listen(address):
        result = await attack(opened, script)
    assert result.text == "exit code: 0\nrefused PermissionError\n2"
