"""The Docker jail: ``bash``/``terminal`` commands each in a fresh, locked-down container.

``[tools.bash] isolation = "docker"`` (with ``[sandbox] enabled = true``) runs every
command in a new container with the same flags as a sandbox (no network unless
``network`` opens it, every capability dropped, a read-only root, no-new-privileges, a
private /tmp, the memory, CPU and process limits) and the `Jail` contract: the agent's
workspace at its own absolute path as the only writable place (its prompt files and
folders mounted read-only over it, see `_prompt_guard`), skill folders read-only
at theirs, the working directory inside the workspace, a timeout that kills everything
(GNU ``timeout`` in the container, then the engine), output capped keeping both ends.
A container per command costs a container start (a few hundred ms, see
bench/sandbox_bench); the bubblewrap jail is the light default. The container is
removed when the command ends; one left by a ``kill -9`` of the daemon is the reaper's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, final

import trio

from beamclaw_base import SYSTEM_PATH, JailResult, JailUnavailable, check_cwd

from ._docker import (
    LABEL_BOOT,
    LABEL_INSTANCE,
    LABEL_KEY,
    LABEL_SANDBOX,
    ContainerSpec,
    EngineUnavailable,
    ImageMissing,
    Mount,
    container_user,
)
from ._env import container_environment
from ._prompt_guard import guarded_names
from ._runtime import SandboxRuntime

#: The key label of jail containers (a sandbox's is its scope key).
JAIL_KEY: Final = "jail"
#: Seconds the engine is given beyond the command's own timeout before it stops the container.
_ENGINE_GRACE: Final = 15.0


def _cap(data: bytes, limit: int) -> tuple[bytes, bool]:
    """*data* within *limit* bytes, its middle replaced by one line saying how much was left out."""
    if len(data) <= limit:
        return data, False
    head = limit // 2
    tail = limit - head
    return data[:head] + f"\n[... {len(data) - limit} bytes left out ...]\n".encode() + data[-tail:], True


@final
class DockerJail:
    """The `beamclaw_base.Jail` of the Docker backend, for the daemon's *runtime*."""

    def __init__(self, runtime: SandboxRuntime) -> None:
        self._runtime = runtime

    @property
    def backend(self) -> str:
        return "docker"

    async def check(self) -> str | None:
        engine, image = self._runtime.engine, self._runtime.config.docker_image
        try:
            if not await engine.image_exists(image):
                return f"the sandbox image {image} is not built: run `beamclaw sandbox build`"
        except EngineUnavailable as exc:
            return f"{exc}: start the Docker engine (dockerd)"
        return None

    async def run(
        self,
        argv: Sequence[str],
        *,
        workspace: Path,
        cwd: Path | None = None,
        timeout: float,
        output_limit: int,
        readonly: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
    ) -> JailResult:
        runtime = self._runtime
        config = runtime.config
        directory = check_cwd(workspace, cwd)
        seconds = max(1, round(timeout))
        guarded = await trio.to_thread.run_sync(guarded_names, workspace)
        spec = ContainerSpec(
            name=f"beamclaw-jail-{runtime.instance}-{os.urandom(4).hex()}",
            image=config.docker_image,
            labels={
                LABEL_SANDBOX: "1",
                LABEL_INSTANCE: runtime.instance,
                LABEL_BOOT: runtime.boot,
                LABEL_KEY: JAIL_KEY,
            },
            environment={
                **container_environment(config, os.environ, {"PATH": SYSTEM_PATH, "HOME": str(workspace)}),
                **(env or {}),
            },
            mounts=(
                Mount(workspace, str(workspace), read_only=False),
                *(Mount(workspace / name, str(workspace / name)) for name in guarded),  # see `_prompt_guard`
                *(Mount(path, str(path)) for path in readonly if path.is_dir()),
            ),
            memory_bytes=config.memory_bytes,
            cpus=config.cpus,
            pids_limit=config.pids_limit,
            network=config.network,
            working_dir=str(directory),
            user=container_user(),
            command=("timeout", "-k", "2", str(seconds), *argv),
        )
        try:
            code, stdout, stderr = await runtime.engine.run_to_exit(spec, seconds + 2 + _ENGINE_GRACE)
        except (EngineUnavailable, ImageMissing) as exc:
            raise JailUnavailable(f"{exc}: start dockerd, or run `beamclaw sandbox build`") from None
        timed_out = code is None or code == 124  # GNU timeout's status for a command it stopped
        out, out_cut = _cap(stdout, output_limit)
        err, err_cut = _cap(stderr, output_limit)
        return JailResult(None if timed_out else code, out, err, timed_out=timed_out, truncated=out_cut or err_cut)
