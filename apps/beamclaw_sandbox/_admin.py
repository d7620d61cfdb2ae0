"""What ``beamclaw sandbox status|list|kill|build`` does, straight to the engine.

No daemon is needed: the containers of a data dir are found by their instance label,
so these work as well after a crash (to see or remove what was left) as while the
daemon runs. A container removed under a running sandbox is noticed at its next exec:
the sandbox restarts with a new one.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Final

from ._config import SandboxConfig
from ._docker import (
    LABEL_INSTANCE,
    LABEL_KEY,
    LABEL_SANDBOX,
    ContainerInfo,
    DockerEngine,
    EngineUnavailable,
    instance_id,
)

#: The image's definition (Dockerfile, bridge, build script), in a source checkout.
IMAGE_DIR: Final = Path(__file__).resolve().parents[2] / "sandbox-image"


async def containers_of(data_dir: Path, engine: DockerEngine) -> list[ContainerInfo]:
    """The sandbox and jail containers of the daemon whose data dir is *data_dir*."""
    return await engine.containers({LABEL_SANDBOX: "1", LABEL_INSTANCE: instance_id(data_dir)})


async def remove_container(data_dir: Path, which: str, engine: DockerEngine) -> str | None:
    """Remove the container of *data_dir* named *which* (or holding the key *which*, e.g.
    ``session:<id>``); its name, or None when there is none."""
    for container in await containers_of(data_dir, engine):
        if which in (container.name, container.label(LABEL_KEY)):
            await engine.remove(container.name)
            return container.name
    return None


async def engine_status(config: SandboxConfig, data_dir: Path, engine: DockerEngine) -> dict[str, Any]:
    """The Docker backend at a glance: ``engine`` (its version, or None), ``image_built``,
    the containers of this data dir, and ``problem`` with its fix (absent when all is well)."""
    status: dict[str, Any] = {"enabled": config.enabled, "image": config.docker_image, "scope": config.scope}
    try:
        status["engine"] = (await engine.version()).get("Version", "?")
    except EngineUnavailable as exc:
        status.update(engine=None, problem=f"{exc}: install Docker (docker.io) and start dockerd")
        return status
    status["image_built"] = await engine.image_exists(config.docker_image)
    status["containers"] = len(await containers_of(data_dir, engine))
    if not status["image_built"]:
        status["problem"] = f"the image {config.docker_image} is not built: run `beamclaw sandbox build`"
    elif not config.enabled:
        status["problem"] = "Docker code execution is off: set [sandbox] enabled = true"
    return status


def build_image(image: str, *, force: bool = False) -> int:
    """Run sandbox-image/build.sh for *image* (a no-op when it is up to date); its exit status."""
    script = IMAGE_DIR / "build.sh"
    if not script.is_file():
        raise FileNotFoundError(f"{script} is not here: build the image from a source checkout of BeamClaw")
    env = {**os.environ, "FORCE": "1"} if force else None
    return subprocess.run(["bash", str(script), image], env=env, check=False).returncode
