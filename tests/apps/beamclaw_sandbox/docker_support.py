"""A real Docker engine for the sandbox tests, or a visible skip.

`docker_image` makes sure the engine answers and the sandbox image is built from the
current definition (sandbox-image/build.sh is a no-op when it is); `sandbox_app` runs
the tools app and the sandbox app, as the daemon does, with an event collector.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import beamclaw_obs as obs
import beamclaw_sandbox as sandbox
import beamclaw_tools as tools
import supervision as sv
from beamclaw_sandbox._docker import local_socket_refuses
from beamclaw_sandbox._registry import RegistryRuntime

ROOT = Path(__file__).resolve().parents[3]
IMAGE = "beamclaw-sandbox:latest"


@functools.cache
def _engine_and_image() -> str | None:
    """None when the engine answers and the image is current; else why the tests skip."""
    import docker

    refused = local_socket_refuses(None)
    if refused is not None:
        return f"no Docker engine answers ({refused}); .ci/run installs and starts one"
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        return f"no Docker engine answers ({type(exc).__name__}); .ci/run installs and starts one"
    client.close()
    built = subprocess.run(
        ["bash", str(ROOT / "sandbox-image" / "build.sh"), IMAGE], capture_output=True, text=True, check=False
    )
    if built.returncode != 0:
        return f"the sandbox image could not be built: {built.stderr.strip()[-300:]}"
    return None


def need_docker() -> None:
    why = _engine_and_image()
    if why is not None:
        pytest.skip(why)


class Collect(obs.Backend):
    def setup(self, sink: list[obs.ObsEvent]) -> list[obs.ObsEvent]:
        return sink

    def handle_event(self, event: obs.ObsEvent, sink: list[obs.ObsEvent]) -> None:
        sink.append(event)


def table(**overrides: Any) -> dict[str, Any]:
    """A ``[sandbox]`` table with Docker enabled, small limits (fast tests) and *overrides*."""
    return {"enabled": True, "docker_image": IMAGE, "memory_limit": "128m", "timeout_seconds": 30.0, **overrides}


@asynccontextmanager
async def sandbox_app(home: Path, events: list[obs.ObsEvent] | None = None, **overrides: Any) -> AsyncIterator[Any]:
    """obs, tools and sandbox apps under one root; yields the sandbox runtime."""
    home.mkdir(parents=True, exist_ok=True)
    sink = events if events is not None else []
    obs_tree = obs.supervision_tree({"log_level": "WARNING"}, home)
    root = sv.Supervisor(
        [
            sv.Supervisor(
                [*obs_tree.children, sv.ChildSpec("collect", Collect.start, args=(sink,))], name="obs"
            ).child_spec("obs"),
            tools.supervision_tree({}, home).child_spec("tools"),
            sandbox.supervision_tree(table(**overrides), home).child_spec("sandbox"),
        ],
        name="test_root",
    )
    async with sv.open_supervisor(root):
        runtime = await sv.call("beamclaw_sandbox.registry", RegistryRuntime())
        yield runtime


def docker_client() -> Any:
    import docker

    return docker.from_env()


def container_exists(name: str) -> bool:
    import docker

    client = docker_client()
    try:
        client.containers.get(name)
    except docker.errors.NotFound:
        return False
    finally:
        client.close()
    return True


def sandbox_name(runtime: Any, key: str) -> str:
    entries = runtime.registry.lookup(key)
    assert entries, f"no sandbox under {key!r}"
    name: str = entries[0][1].name
    return name
