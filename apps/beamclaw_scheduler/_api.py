"""The scheduler's public calls, for the CLI (through the control socket) and the tool."""

from __future__ import annotations

from typing import TypeVar

import supervision as sv
from beamclaw_obs import scrub

from ._job import Job, RunRecord
from ._jobs import JobError
from ._requests import AddJob, ChangeJob, FindJob, JobRuns, ListJobs
from ._schedule import make_schedule
from ._store import store_call

R = TypeVar("R")


class SchedulerNotRunning(RuntimeError):
    """The scheduler app is disabled or not started; the message says how to enable it."""


async def _call(request: sv.Request[R]) -> R:
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
    return await _call(AddJob(agent_id, user_id, channel, schedule, scrub(message.strip()), created_by))


async def list_jobs(agent_id: str | None = None, user_id: str | None = None, everything: bool = False) -> list[Job]:
    return await _call(ListJobs(agent_id, user_id, everything))


async def find_job(prefix: str) -> Job:
    return await _call(FindJob(prefix))


async def change_job(action: str, prefix: str) -> Job:
    """``cancel``, ``pause`` or ``resume`` the job whose id starts with *prefix*."""
    match action:
        case "cancel" | "pause" | "resume":
            return await _call(ChangeJob(action, prefix))
    raise JobError(f"unknown action {action!r}")


async def job_runs(prefix: str) -> list[RunRecord]:
    return await _call(JobRuns(prefix))
