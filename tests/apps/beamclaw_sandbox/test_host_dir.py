"""A sandbox's host folder, attacked by another local user, without Docker.

Before the fix the bridge socket was 0666 in 0755 folders: another local user
connected to it and called tools as the owner. Here the real bridge serves on a host
folder made as a sandbox makes it, inside a data dir the user left open (0755); a
process of another uid (root's subprocess after ``setuid``) tries to connect, and the
container's own user connects through a bind mount, as Docker gives it the folder.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from beamclaw_sandbox import Bridge, PolicyConfig
from beamclaw_sandbox._discovery import write_discovery
from beamclaw_sandbox._docker import container_ids
from beamclaw_sandbox._host_dir import HostDir

from .conftest import RealTools

#: A local user who is neither the daemon's nor the container's (nobody).
STRANGER = 65534

#: Run as root: optionally bind-mount a folder (as Docker mounts the bridge folder into
#: its container), become *uid*, connect to the socket and ask for the tools; print the
#: first answer, or the errno's name.
_CONNECT_AS = """
import errno, os, socket, subprocess, sys
path, uid, gid, mount_from = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if mount_from:
    subprocess.run(["mount", "--bind", mount_from, os.path.dirname(path)], check=True)
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    sock.connect(path)
except OSError as exc:
    print(errno.errorcode[exc.errno])
    sys.exit(0)
sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "search_tools", "params": {}}\\n')
answer = b""
while not answer.endswith(b"\\n"):
    answer += sock.recv(65536)
print(answer.decode().strip())
"""

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another uid needs root (setuid)")


@pytest.fixture
def open_data_dir() -> Iterator[Path]:
    """A data dir another user can enter (0755, under /tmp, which every user may cross):
    pytest's own tmp_path sits in a 0700 folder and would hide everything anyway."""
    path = Path(tempfile.mkdtemp(prefix="beamclaw-open-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


async def _connect_as(uid: int, gid: int, socket_path: Path, mount_from: Path | None = None) -> str:
    command = [sys.executable, "-c", _CONNECT_AS, str(socket_path), str(uid), str(gid), str(mount_from or "")]
    if mount_from is not None:
        command = ["unshare", "--mount", "--propagation", "private", *command]
    result = await trio.run_process(command, capture_stdout=True, capture_stderr=True, check=False)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode().strip()


async def _serving(nursery: trio.Nursery, host: HostDir, real_tools: RealTools) -> None:
    bridge = Bridge(PolicyConfig(), [t.definition for t in real_tools.tools.values()], real_tools)
    host.create()
    listener = await host.listen()

    async def serve(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with listener:
            await bridge.serve(listener, task_status=task_status)

    await nursery.start(serve)


@needs_root
async def test_another_local_user_cannot_reach_the_bridge_but_the_container_can(
    nursery: trio.Nursery, open_data_dir: Path, real_tools: RealTools
) -> None:
    host = HostDir(open_data_dir / "sandboxes" / "beamclaw-sbx-test")
    await _serving(nursery, host, real_tools)
    assert await _connect_as(STRANGER, STRANGER, host.socket) == errno.errorcode[errno.EACCES]
    # The container's user, given the bridge folder as a mount (Docker's view of it).
    seen_from_inside = open_data_dir / "run-beamclaw"
    seen_from_inside.mkdir(mode=0o755)
    seen_from_inside.chmod(0o755)
    answer = await _connect_as(*host.owner, seen_from_inside / "bridge.sock", mount_from=host.bridge)
    assert '"name": "read_file"' in answer


@needs_root
async def test_a_root_daemon_gives_the_container_only_what_it_mounts(
    nursery: trio.Nursery, open_data_dir: Path, real_tools: RealTools
) -> None:
    """Under a root daemon the container runs as the image's user; the folders it mounts
    are that user's alone, the host folder above them root's alone."""
    host = HostDir(open_data_dir / "sandboxes" / "beamclaw-sbx-test")
    assert host.owner == container_ids() != (0, 0)
    await _serving(nursery, host, real_tools)
    write_discovery(host.tools, [t.definition for t in real_tools.tools.values()])
    host.hand_over(host.tools)
    (host.scripts / "1.py").write_text("print(call_tool('read_file', path='notes.md'))\n")
    host.hand_over(host.scripts / "1.py")
    assert _owner_and_mode(host.path) == (0, 0, 0o700)
    mounted = [host.bridge, host.tools, *host.bridge.rglob("*"), *host.tools.rglob("*")]
    assert len(mounted) > 6  # the socket, a script, the discovery tree
    assert {_owner_and_mode(path) for path in mounted} <= {(*host.owner, 0o700), (*host.owner, 0o600)}


def test_without_root_the_tree_is_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    """The daemon's own uid is the container's: nothing changes hands, everything is 0700/0600."""
    previous = os.umask(0o022)
    try:
        host = HostDir(tmp_path / "sandboxes" / "beamclaw-sbx-test", owner=(os.getuid(), os.getgid()))
        host.create()
        (host.scripts / "1.sh").write_text("echo hi\n")
        host.hand_over(host.scripts / "1.sh")
    finally:
        os.umask(previous)
    tree = [host.path.parent, host.path, *host.path.rglob("*")]
    assert {_owner_and_mode(path)[2] & 0o077 for path in tree} == {0}


def _owner_and_mode(path: Path) -> tuple[int, int, int]:
    info = path.lstat()
    return info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)
