"""What every process of the sandbox app shares: its configuration, the engine, the registry.

The registry (an `sv.Registry`) holds one entry per running sandbox, under its scope
key (``session:<id>``, ``agent:<id>`` or ``shared``), whose value is the sandbox's
`SandboxInfo`. An entry goes away the moment its process exits, whatever the reason.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from pathlib import Path
from typing import Final, final

import attrs

import supervision as sv
from beamclaw_tools import ToolSession

from ._config import SandboxConfig
from ._docker import DockerEngine, instance_id, new_boot_id
from ._host_dir import HostDir

#: The dynamic supervisor of the sandboxes, and the registry process (its only starter).
SANDBOXES: Final = "beamclaw_sandbox.sandboxes"
REGISTRY: Final = "beamclaw_sandbox.registry"
#: Unix socket paths are limited to 108 bytes; past this length the bridge directories
#: move to a private folder under /tmp (see `SandboxRuntime.host_dir`).
_MAX_SOCKET_PATH: Final = 100


def sandbox_key(scope: str, session: ToolSession) -> str:
    """The key of the sandbox a call of *session* uses under *scope* (session | agent | shared)."""
    if scope == "session":
        return f"session:{session.id}"
    if scope == "agent":
        return f"agent:{session.agent_id}"
    if scope == "shared":
        return "shared"
    raise ValueError(f"scope: expected session, agent or shared, got {scope!r}")


@final
@attrs.define
class SandboxInfo:
    """One running sandbox, as `list_sandboxes` and the reaper see it."""

    name: str  # the container's name
    key: str
    workspace: str  # the host folder mounted at /workspace, or ""
    created: float = attrs.field(factory=time.time)
    last_used: float = attrs.field(factory=time.monotonic)
    execs: int = 0
    busy: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name, "key": self.key, "workspace": self.workspace, "created": self.created,
            "idle_seconds": round(time.monotonic() - self.last_used, 1), "execs": self.execs, "busy": self.busy,
        }  # fmt: skip


@final
@attrs.frozen
class SandboxRuntime:
    config: SandboxConfig
    data_dir: Path
    engine: DockerEngine
    registry: sv.Registry
    instance: str
    boot: str

    @classmethod
    def create(cls, config: SandboxConfig, data_dir: Path, engine: DockerEngine | None = None) -> SandboxRuntime:
        return cls(
            config, data_dir, engine or DockerEngine(), sv.Registry(sv.UNIQUE, name="sandboxes"),
            instance_id(data_dir), new_boot_id(),
        )  # fmt: skip

    def container_name(self) -> str:
        """A new container's name: this daemon's instance and a random suffix."""
        return f"beamclaw-sbx-{self.instance}-{secrets.token_hex(4)}"

    def host_root(self) -> Path:
        """Where the sandboxes' host folders (bridge socket, scripts, discovery) live."""
        root = self.data_dir / "sandboxes"
        if len(str(root)) + len("/beamclaw-sbx-0123456789ab-01234567/bridge/bridge.sock") <= _MAX_SOCKET_PATH:
            return root
        return _private_tmp(f"beamclaw-sbx-{os.getuid()}-{self.instance}")

    def host_dir(self, name: str) -> HostDir:
        """The host folder of the sandbox whose container is *name*."""
        return HostDir(self.host_root() / name)


def _private_tmp(name: str) -> Path:
    """A folder under /tmp only we can enter; refused if someone else made it first."""
    path = Path("/tmp") / name  # checked below: ours, a real directory, mode 0700
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{path} is not a private directory of this user; remove it, or use a shorter data dir")
    return path
