"""A job as stored, and one firing of it."""

from __future__ import annotations

from typing import Final, Literal

import attrs

from ._schedule import Schedule

#: The kind of the jobs the scheduler makes itself, one per agent (see `_heartbeat`).
HEARTBEAT: Final = "heartbeat"
State = Literal["active", "paused", "done"]


@attrs.frozen
class Job:
    id: str
    agent_id: str
    user_id: str
    channel: str
    schedule: Schedule
    message: str
    state: State
    next_due: float | None
    created_at: float
    created_by: str
    #: Consecutive due times whose every try failed.
    errors: int = 0
    paused_reason: str = ""
    #: "job" for the user's and agent's jobs, `HEARTBEAT` for the scheduler's own.
    purpose: str = "job"


@attrs.frozen
class Fire:
    """One try at one due time of a job: recorded (``claimed``) before it runs."""

    run_id: int
    job: Job
    due: float
    attempt: int


@attrs.frozen
class RunRecord:
    """A line of a job's run log."""

    run_id: int
    job_id: str
    due: float
    attempt: int
    state: str
    started_at: float | None
    finished_at: float | None
    detail: str
