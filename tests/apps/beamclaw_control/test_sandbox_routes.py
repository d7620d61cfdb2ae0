"""The sandbox routes over HTTP, against an engine's API on loopback (no Docker here): the
containers of this data dir listed and killed by an admin, and by nobody else."""

from __future__ import annotations

from pathlib import Path

import pytest

from beamclaw_sandbox._docker import LABEL_INSTANCE, LABEL_KEY, LABEL_SANDBOX, instance_id

from .apps_api import ADMIN, ALICE, VIEWER, running_api
from .docker_engine import docker_engine


def _containers(home: Path) -> dict[str, dict[str, object]]:
    ours = {LABEL_SANDBOX: "1", LABEL_INSTANCE: instance_id(home)}
    return {
        "bc-new": {"labels": {**ours, LABEL_KEY: "session:bbb"}, "state": "running", "created": 200.0},
        "bc-old": {"labels": {**ours, LABEL_KEY: "session:aaa"}, "state": "exited", "created": 100.0},
        # Another data dir's sandbox on the same engine, and a container that is no sandbox.
        "bc-theirs": {"labels": {LABEL_SANDBOX: "1", LABEL_INSTANCE: "elsewhere", LABEL_KEY: "session:ccc"},
                      "state": "running", "created": 50.0},
        "postgres": {"labels": {}, "state": "running", "created": 10.0},
    }  # fmt: skip


async def test_an_admin_lists_and_kills_this_data_dirs_sandboxes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with docker_engine(_containers(tmp_path / "home")) as engine:
        monkeypatch.setenv("DOCKER_HOST", engine.url)
        async with running_api(tmp_path, monkeypatch) as api:
            listed = await api.get(ADMIN, "/v1/sandbox")
            assert listed.status_code == 200, listed.text
            assert listed.json() == {"sandboxes": [
                {"name": "bc-old", "key": "session:aaa", "status": "exited", "created": 100.0},
                {"name": "bc-new", "key": "session:bbb", "status": "running", "created": 200.0},
            ]}  # fmt: skip
            by_key = await api.post(ADMIN, "/v1/sandbox/session:bbb/kill")
            assert by_key.status_code == 200, by_key.text
            assert by_key.json() == {"killed": "session:bbb", "container": "bc-new"}
            by_name = await api.post(ADMIN, "/v1/sandbox/bc-old/kill")
            assert by_name.json() == {"killed": "bc-old", "container": "bc-old"}
            assert engine.removed == ["bc-new", "bc-old"]
            theirs = await api.post(ADMIN, "/v1/sandbox/bc-theirs/kill")
            assert theirs.status_code == 404 and "no sandbox container 'bc-theirs'" in theirs.json()["error"]["message"]
            assert (await api.get(ADMIN, "/v1/sandbox")).json() == {"sandboxes": []}
            assert set(engine.containers) == {"bc-theirs", "postgres"}


async def test_sandboxes_are_an_admins_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with docker_engine(_containers(tmp_path / "home")) as engine:
        monkeypatch.setenv("DOCKER_HOST", engine.url)
        async with running_api(tmp_path, monkeypatch) as api:
            for token in (VIEWER, ALICE):
                assert (await api.get(token, "/v1/sandbox")).status_code == 403
                assert (await api.post(token, "/v1/sandbox/bc-new/kill")).status_code == 403
            assert engine.removed == []


async def test_an_engine_that_does_not_answer_is_a_503_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    async with running_api(tmp_path, monkeypatch) as api:
        for answer in (await api.get(ADMIN, "/v1/sandbox"), await api.post(ADMIN, "/v1/sandbox/bc-new/kill")):
            assert answer.status_code == 503, answer.text
            assert "the Docker engine does not answer" in answer.json()["error"]["message"]
            assert "start dockerd" in answer.json()["error"]["message"]
