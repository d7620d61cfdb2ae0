"""The scheduler's public calls, for the CLI (through the control socket) and the tool."""

from __future__ import annotations

from typing import Any

import supervision as sv
from beamclaw_obs import scrub

from ._job import Job, RunRecord
from ._schedule import make_schedule
from ._store import JobError, store_call


class SchedulerNotRunning(RuntimeError):
    """The scheduler app is disabled or not started; the message says how to enable it."""


async def _call(request: Any) -> Any:
    try:
        return await store_call(request)
    except sv.NoProc:
        raise SchedulerNotRunning(
            "the scheduler is not running: set [scheduler] enabled = true and `beamclaw reload`"
        ) from None


async def add_job(
    *, agent_id: str, user_id: str, channel: str, kind: str, spec: str, message: str, created_by: str,
    timezone: str = "UTC", now: float, min_interval: float,
) -> Job:  # fmt: skip
    """A new active job; raises `BadSchedule` or `JobError` saying what is wrong."""
    if not message.strip():
        raise JobError("a job needs a message: what the agent is to do when it runs")
    if len(message) > 4000:
        raise JobError("a job's message is at most 4000 characters")
    schedule = make_schedule(kind, spec, timezone, now, min_interval)
    # Stored, listed and sent to the model: scrubbed like every other path into history.
    fields = {"agent_id": agent_id, "user_id": user_id, "channel": channel, "schedule": schedule,
              "message": scrub(message.strip()), "created_by": created_by}  # fmt: skip
    job: Job = await _call(("add", fields))
    return job


async def list_jobs(agent_id: str | None = None, user_id: str | None = None, everything: bool = False) -> list[Job]:
    jobs: list[Job] = await _call(("list", agent_id, user_id, everything))
    return jobs


async def find_job(prefix: str) -> Job:
    job: Job = await _call(("get", prefix))
    return job


async def change_job(action: str, prefix: str) -> Job:
    """``cancel``, ``pause`` or ``resume`` the job whose id starts with *prefix*."""
    if action not in {"cancel", "pause", "resume"}:
        raise JobError(f"unknown action {action!r}")
    job: Job = await _call((action, prefix))
    return job


async def job_runs(prefix: str) -> list[RunRecord]:
    runs: list[RunRecord] = await _call(("runs", prefix))
    return runs
