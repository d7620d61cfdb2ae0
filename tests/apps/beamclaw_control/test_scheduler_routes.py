"""The scheduler's routes over HTTP: jobs added, listed, paused, resumed, cancelled and
their runs, each operator within its own users and a viewer reading none of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .apps_api import ADMIN, ALICE, BOB, VIEWER, Api, running_api

JOBS = "/v1/scheduler/jobs"


async def _add(api: Api, token: str, **fields: Any) -> dict[str, Any]:
    body = {"kind": "every", "spec": "1h", "message": "check the build", **fields}
    added = await api.post(token, JOBS, body)
    assert added.status_code == 201, added.text
    job: dict[str, Any] = added.json()["job"]
    return job


async def _jobs(api: Api, token: str, **params: Any) -> list[dict[str, Any]]:
    listed = await api.get(token, JOBS, **params)
    assert listed.status_code == 200, listed.text
    jobs: list[dict[str, Any]] = listed.json()["jobs"]
    return jobs


async def test_a_job_is_added_paused_resumed_and_cancelled_with_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        job = await _add(api, ALICE, agent="default", timezone="Europe/Paris")
        assert (job["user"], job["agent"], job["schedule"], job["state"]) == ("api:alice", "default", "every 1h",
                                                                              "active")  # fmt: skip
        assert job["created_by"] == "api:alice" and job["next_due"] is not None
        assert [j["id"] for j in await _jobs(api, ALICE)] == [job["id"]]
        paused = await api.post(ALICE, f"{JOBS}/{job['id'][:6]}/pause")  # a prefix will do
        assert paused.status_code == 200, paused.text
        assert paused.json()["job"]["state"] == "paused"
        assert [j["state"] for j in await _jobs(api, ALICE)] == ["paused"]
        resumed = await api.post(ALICE, f"{JOBS}/{job['id']}/resume")
        assert resumed.json()["job"]["state"] == "active"
        runs = await api.get(ALICE, f"{JOBS}/{job['id']}/runs")
        assert runs.status_code == 200 and runs.json() == {"runs": []}
        cancelled = await api.post(ALICE, f"{JOBS}/{job['id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["job"]["id"] == job["id"]
        assert await _jobs(api, ALICE, all=1) == []
        gone = await api.post(ALICE, f"{JOBS}/{job['id']}/pause")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"


async def test_an_operator_reaches_only_its_own_users_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        alices = await _add(api, ALICE, message="alice's plan")
        bobs = await _add(api, BOB, user="u1", message="bob's plan")
        assert bobs["user"] == "api:bob/u1"
        assert [j["message"] for j in await _jobs(api, ALICE)] == ["alice's plan"]
        assert [j["message"] for j in await _jobs(api, BOB)] == ["bob's plan"]
        assert {j["user"] for j in await _jobs(api, ADMIN)} == {"api:alice", "api:bob/u1"}
        for action in ("pause", "cancel", "resume"):
            refused = await api.post(BOB, f"{JOBS}/{alices['id']}/{action}")
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"]["code"] == "forbidden"
        assert (await api.get(BOB, f"{JOBS}/{alices['id']}/runs")).status_code == 403
        assert [j["state"] for j in await _jobs(api, ALICE)] == ["active"]
        # Nor may bob add a job that speaks as alice.
        forged = await api.post(BOB, JOBS, {"user": "api:alice", "kind": "every", "spec": "1h", "message": "hi"})
        assert forged.status_code == 403
        assert len(await _jobs(api, ADMIN)) == 2
        # An admin reaches every job.
        assert (await api.post(ADMIN, f"{JOBS}/{alices['id']}/pause")).json()["job"]["state"] == "paused"


async def test_a_viewer_changes_and_reads_no_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        job = await _add(api, ALICE)
        assert (await api.get(VIEWER, JOBS)).status_code == 403
        assert (await api.post(VIEWER, JOBS, {"kind": "every", "spec": "1h", "message": "hi"})).status_code == 403
        for action in ("pause", "resume", "cancel"):
            assert (await api.post(VIEWER, f"{JOBS}/{job['id']}/{action}")).status_code == 403
        async with api.client(None) as http:
            assert (await http.get(JOBS)).status_code == 401
        assert [j["state"] for j in await _jobs(api, ALICE)] == ["active"]


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ({"kind": "every", "spec": "1s", "message": "hi"}, 400, "the shortest interval"),
        ({"kind": "weekly", "spec": "1h", "message": "hi"}, 400, "weekly"),
        ({"kind": "every", "spec": "1h"}, 400, '"message"'),
        ({"kind": "every", "spec": "1h", "message": "hi", "agent": "nobody"}, 404, "no agent 'nobody'"),
        ({"kind": "every", "spec": "1h", "message": "hi", "agent": "../etc"}, 400, "agent"),
        ({"kind": "cron", "spec": "0 9 * * *", "message": "hi", "timezone": "Mars/Olympus"}, 400, "Mars/Olympus"),
        ({"kind": "every", "spec": "1h", "message": "hi", "user": 42}, 400, '"user"'),
    ],
)
async def test_a_bad_job_is_refused_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: dict[str, Any], status: int, said: str
) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        refused = await api.post(ALICE, JOBS, body)
        assert refused.status_code == status, refused.text
        assert said in refused.json()["error"]["message"]
        assert await _jobs(api, ADMIN) == []
