"""A sandbox's host folder: its bridge socket, scripts and tool discovery tree, which only
its container reaches.

Whoever can connect to the bridge socket calls tools as the owner (reads the
conversation through ``memory_search``, writes into the workspace), so nothing here
is open to any other local user, whatever the daemon's umask:

- the host folder itself (``<data dir>/sandboxes/<container>``) is the daemon's, mode
  0700: no other local user gets through it to anything below;
- the two folders mounted into the container (``bridge``, with the socket and the
  scripts, and ``tools``) and everything in them belong to the container's user,
  modes 0700 and 0600. The container reaches them through its mounts, which need no
  way through the folders above. That user is the daemon's own, except under a root
  daemon, whose containers run as the image's unprivileged user (`container_ids`).
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import final

import attrs
import trio

from ._docker import container_ids


@final
@attrs.frozen
class HostDir:
    """The host folder *path* of one sandbox, whose container runs as *owner* (uid, gid)."""

    path: Path
    owner: tuple[int, int] = attrs.field(factory=container_ids)

    @property
    def bridge(self) -> Path:
        """Mounted read-only at ``BRIDGE_DIR``: the socket and the scripts."""
        return self.path / "bridge"

    @property
    def scripts(self) -> Path:
        return self.bridge / "scripts"

    @property
    def tools(self) -> Path:
        """Mounted read-only at ``TOOLS_DIR``: the discovery tree."""
        return self.path / "tools"

    @property
    def socket(self) -> Path:
        return self.bridge / "bridge.sock"

    def create(self) -> None:
        """Make the folders of a new sandbox; FileExistsError if its host folder exists."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path.mkdir(mode=0o700)  # a umask can only take bits away: 0700 whatever it is
        self.scripts.mkdir(mode=0o700, parents=True)
        self.tools.mkdir(mode=0o700)
        self.hand_over(self.bridge)
        self.hand_over(self.tools)

    def hand_over(self, path: Path) -> None:
        """Give *path* and everything below it to the container's user, owner-only
        (folders 0700, the rest 0600); symbolic links are left alone, never followed."""
        for entry in _walk(path):
            info = entry.lstat()
            if stat.S_ISLNK(info.st_mode):
                continue
            if (info.st_uid, info.st_gid) != self.owner:
                os.chown(entry, *self.owner, follow_symlinks=False)
            entry.chmod(0o700 if stat.S_ISDIR(info.st_mode) else 0o600)

    async def listen(self) -> trio.SocketListener:
        """The bridge's listening socket, the container's user's alone (0600).

        Between the bind and the hand-over the socket's mode is the umask's, but the
        host folder (0700) already keeps everyone else out.
        """
        sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            await sock.bind(str(self.socket))
            await trio.to_thread.run_sync(self.hand_over, self.socket)
            sock.listen(16)
        except BaseException:
            sock.close()
            raise
        return trio.SocketListener(sock)


def _walk(path: Path) -> Iterator[Path]:
    yield path
    if path.is_dir() and not path.is_symlink():
        for folder, names, files in os.walk(path):
            for name in (*names, *files):
                yield Path(folder, name)
