"""The agent's ``scheduler`` tool: its own jobs for the user it talks to.

Registered by the scheduler app when it starts (core never imports this app). Making,
cancelling, pausing or resuming a job lets the agent act later on its own, so each such
call asks the user under ``supervised`` (every time: "always allow" for a listing must
not cover making jobs); listing does not ask.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

import attrs

from beamclaw_tools import Autonomy, ToolContext, ToolDefinition, ToolError, ToolSession, object_schema

from ._api import add_job, change_job, list_jobs
from ._job import Job
from ._jobs import Clock, JobError
from ._schedule import BadSchedule, describe_time

_CHANGES: Final = ("cancel", "pause", "resume")


def describe_job(job: Job) -> str:
    due = describe_time(job.next_due if job.state == "active" else None, dt.UTC)
    if job.schedule.kind == "random" and job.state == "active":
        due += " (the slot drawn)"
    state = job.state + (f" ({job.paused_reason})" if job.paused_reason else "")
    return f"{job.id}  {job.schedule.describe()}  next {due}  {state}  {job.message[:80]}"


@attrs.frozen
class SchedulerTool:
    clock: Clock
    min_interval: float
    requires_approval: bool = False
    min_autonomy: Autonomy = Autonomy.READ_ONLY

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "scheduler",
            "Schedule a message to yourself for later, for the user you are talking to: once (`at`, an ISO time), "
            "every interval (`every`, like 30m, 2h, 1d), on a cron expression (`cron`, 5 fields, with `timezone`) "
            "or once a day at a random time within a window (`random`, like 09:00-17:00, with `timezone`). "
            "When a job runs, you get its message as a turn and your reply goes to the user. Also list, cancel, "
            "pause and resume your jobs.",
            object_schema(
                {
                    "action": {"enum": ["create", "list", *_CHANGES]},
                    "message": {"type": "string", "description": "create: what to do when the job runs"},
                    "at": {"type": "string", "description": "create: an ISO time, e.g. 2026-12-01T09:00"},
                    "every": {"type": "string", "description": "create: an interval, e.g. 30m, 2h, 1d"},
                    "cron": {"type": "string", "description": "create: e.g. '0 9 * * 1-5'"},
                    "random": {"type": "string", "description": "create: a window of the day, e.g. 09:00-17:00"},
                    "timezone": {"type": "string", "description": "create: for at, cron and random, e.g. Europe/Paris"},
                    "job_id": {"type": "string", "description": "cancel, pause, resume: the job's id"},
                },
                ("action",),
            ),
        )

    def approval_reason(self, args: dict[str, Any]) -> str | None:
        if args.get("action") == "list":
            return None
        return "a scheduled job lets the agent act later on its own: it needs the user's approval every time"

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        action = args["action"]
        try:
            if action == "create":
                return await self._create(args, session)
            mine = await list_jobs(session.agent_id, session.user_id)
            if action == "list":
                return "\n".join(describe_job(job) for job in mine) or "no jobs"
            job_id = str(args.get("job_id") or "")
            match = [job for job in mine if job.id == job_id]
            if not match:
                raise ToolError(f"you have no job {job_id!r} (list shows yours)")
            return describe_job(await change_job(action, job_id))
        except (BadSchedule, JobError) as exc:
            raise ToolError(str(exc)) from None

    async def _create(self, args: dict[str, Any], session: ToolSession) -> str:
        given = [kind for kind in ("at", "every", "cron", "random") if args.get(kind)]
        if len(given) != 1:
            raise ToolError("create needs exactly one of at, every, cron or random")
        kind = given[0]
        job = await add_job(
            agent_id=session.agent_id, user_id=session.user_id, channel=session.channel, kind=kind,
            spec=str(args[kind]), message=str(args.get("message") or ""), created_by="agent",
            timezone=str(args.get("timezone") or "UTC"), now=self.clock(), min_interval=self.min_interval,
        )  # fmt: skip
        return "created " + describe_job(job)
