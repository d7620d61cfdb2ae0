"""`beamclaw sandbox status|list|kill|build` against a real engine, with no daemon running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from beamclaw_sandbox._docker import LABEL_BOOT, LABEL_INSTANCE, LABEL_KEY, LABEL_SANDBOX, instance_id

from .docker_support import IMAGE, container_exists, docker_client, need_docker


@pytest.fixture(autouse=True)
def _docker() -> None:
    need_docker()


def _cli(home: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "beamclaw", "sandbox", *args, "--config", str(config)],
        env={**os.environ, "BEAMCLAW_HOME": str(home)}, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def test_status_list_kill_and_build(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = tmp_path / "config.toml"
    config.write_text(f'[sandbox]\nenabled = true\ndocker_image = "{IMAGE}"\n')
    client = docker_client()
    try:
        left = client.containers.run(IMAGE, ["sleep", "infinity"], detach=True, network_mode="none", labels={
            LABEL_SANDBOX: "1", LABEL_INSTANCE: instance_id(home), LABEL_BOOT: "gone", LABEL_KEY: "session:abc",
        })  # fmt: skip
    finally:
        client.close()
    try:
        status = _cli(home, config, "status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert "sandbox: enabled, scope session, Docker " in status.stdout
        assert f"image {IMAGE}: built" in status.stdout and "containers of this data dir: 1" in status.stdout

        listed = _cli(home, config, "list")
        rows = [line.split() for line in listed.stdout.splitlines()]
        assert rows[0] == ["NAME", "KEY", "STATUS", "AGE"] and rows[1][:3] == [left.name, "session:abc", "running"]
        as_json = json.loads(_cli(home, config, "list", "--json").stdout)
        assert [(c["name"], c["key"], c["status"]) for c in as_json] == [(left.name, "session:abc", "running")]

        missing = _cli(home, config, "kill", "nothing-like-it")
        assert missing.returncode == 1 and "no sandbox container" in missing.stdout
        killed = _cli(home, config, "kill", "session:abc")
        assert killed.returncode == 0 and f"removed {left.name}" in killed.stdout
        assert not container_exists(left.name)
        assert "no sandbox containers" in _cli(home, config, "list").stdout

        built = _cli(home, config, "build")
        assert built.returncode == 0 and "up to date" in built.stdout
    finally:
        if container_exists(left.name):
            left.remove(force=True)


def test_status_names_the_fix_when_the_image_is_missing(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[sandbox]\ndocker_image = "beamclaw-sandbox:never-built"\n')
    status = _cli(tmp_path, config, "status")
    assert status.returncode == 1 and "not built: run `beamclaw sandbox build`" in status.stdout
