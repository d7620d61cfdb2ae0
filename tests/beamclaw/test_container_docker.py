"""The daemon's container image (contrib/container): built with no image registry, it
serves /health on its published port, keeps its data dir on a volume and stops gracefully.

Skips, saying why, without a Docker engine; .ci/run installs and starts one and builds
the image (contrib/container/build.sh, a no-op when its definition is unchanged).
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trio

from beamclaw_sandbox._docker import local_socket_refuses

from .daemon import free_port

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "beamclaw:latest"


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    import docker

    refused = local_socket_refuses(None)
    if refused is not None:
        pytest.skip(f"no Docker engine answers ({refused}); .ci/run installs and starts one")
    try:
        with contextlib.closing(docker.from_env()) as client:
            client.ping()
    except Exception as exc:
        pytest.skip(f"no Docker engine answers ({type(exc).__name__}); .ci/run installs and starts one")
    built = subprocess.run(
        ["bash", str(ROOT / "contrib" / "container" / "build.sh"), IMAGE], capture_output=True, text=True, check=False
    )
    if built.returncode != 0:
        pytest.fail(f"the daemon's image could not be built: {built.stderr.strip()[-2000:]}")
    yield IMAGE


async def test_the_container_answers_health_and_keeps_its_data_on_a_volume(image: str) -> None:
    import docker

    client = docker.from_env()
    volume = client.volumes.create(f"beamclaw-test-{uuid.uuid4().hex[:12]}")
    port = free_port()
    container = client.containers.run(
        image, detach=True, ports={"18800/tcp": ("127.0.0.1", port)}, volumes={volume.name: {"bind": "/data"}},
        environment={"BEAMCLAW_GATEWAY_TOKEN": secrets.token_hex(16)}, labels={"beamclaw.test": "container"},
    )  # fmt: skip
    try:
        with trio.fail_after(120):
            while True:
                try:
                    health = await trio.to_thread.run_sync(httpx.get, f"http://127.0.0.1:{port}/health")
                    if health.status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                container.reload()
                assert container.status in {"created", "running"}, container.logs().decode()[-3000:]
                await trio.sleep(0.5)
        status = container.exec_run(["python", "-m", "beamclaw", "status"])
        assert status.exit_code == 0 and b"BeamClaw 0.1.0 running" in status.output, status.output
        assert container.exec_run(["id", "-u"]).output == b"1000\n"  # never root
        await trio.to_thread.run_sync(lambda: container.stop(timeout=60))
        assert container.wait(timeout=60)["StatusCode"] == 0  # SIGTERM: a graceful stop
        assert b"BeamClaw stopped" in container.logs()
        # The data dir outlives the container: another one sees what the first stored.
        listed = client.containers.run(
            image, ["ls", "/data", "/data/logs"], volumes={volume.name: {"bind": "/data"}}, remove=True
        )
        assert b"sessions.db" in listed and b"beamclaw.log" in listed, listed
    finally:
        container.remove(force=True)
        volume.remove(force=True)
        client.close()
