"""The scheduler's jobs: list, add, pause, resume, cancel, and each job's run log.

An operator sees and changes only the jobs of the users it may act as, and adds jobs
only for its own users: a job speaks in its user's conversation, so a job added for
another user would be a message in their name. An admin (and the Unix socket) reaches
every job.
"""

from __future__ import annotations

import time
from typing import Any, Final

import attrs
from quart import Blueprint, Response, request

import beamclaw_core as core
import beamclaw_scheduler as scheduler
import beamclaw_tools as tools
from beamclaw_gateway import BadRequest, Role, context, json_body, needs, principal

from ._common import answer, handle_errors, text_field
from ._daemon_config import default_agent

scheduler_routes = handle_errors(Blueprint("scheduler_routes", __name__))

#: The channel a job added here speaks on: the one `POST /v1/chat` uses by default, so a
#: job's turn continues the conversation its user has through the API and the CLI.
_CHANNEL: Final = "cli"
_CHANGES: Final = ("pause", "resume", "cancel")


def _job_fields(job: scheduler.Job) -> dict[str, Any]:
    return {
        "id": job.id, "agent": job.agent_id, "user": job.user_id, "schedule": job.schedule.describe(),
        "message": job.message, "state": job.state, "next_due": job.next_due, "errors": job.errors,
        "paused_reason": job.paused_reason, "created_by": job.created_by,
    }  # fmt: skip


def _unavailable(exc: scheduler.SchedulerNotRunning) -> BadRequest:
    return BadRequest(str(exc), 503, "unavailable")


async def _min_interval() -> float:
    """The running scheduler's shortest interval for an ``every`` job, from the tool it
    registered with its configuration (no tool: the scheduler is not running)."""
    for tool in await tools.list_tools():
        if isinstance(tool, scheduler.SchedulerTool):
            return tool.min_interval
    raise _unavailable(scheduler.SchedulerNotRunning("the scheduler is not running: set [scheduler] enabled = true"))


async def _own_job(prefix: str) -> scheduler.Job:
    """The job whose id is *prefix* (or starts with it), if the principal may act as its user."""
    who = principal()
    try:
        jobs = await scheduler.list_jobs(everything=True)
        found = [job for job in jobs if job.id == prefix] or [job for job in jobs if job.id.startswith(prefix)]
        if not found:  # the scheduler's own jobs (an agent's heartbeat) are not listed: by their whole id
            found = [await scheduler.find_job(prefix)]
    except scheduler.SchedulerNotRunning as exc:
        raise _unavailable(exc) from None
    except scheduler.JobError:
        raise BadRequest(f"no job {prefix!r}: GET /v1/scheduler/jobs lists them", 404, "not_found") from None
    reached = [job for job in found if who.may_act_as(job.user_id)]
    if not reached:
        who.check_user(found[0].user_id)
    if len(reached) > 1:
        raise BadRequest(f"several jobs start with {prefix!r}: give more of the id")
    return reached[0]


@scheduler_routes.get("/v1/scheduler/jobs")
@needs(Role.OPERATOR)
async def list_jobs() -> Response:
    """The jobs not done (``?all=1``: done ones too) of the users the principal may act as."""
    who = principal()
    try:
        jobs = await scheduler.list_jobs(everything=request.args.get("all", "") not in {"", "0", "false"})
    except scheduler.SchedulerNotRunning as exc:
        raise _unavailable(exc) from None
    return answer({"jobs": [_job_fields(job) for job in jobs if who.may_act_as(job.user_id)]})


@scheduler_routes.post("/v1/scheduler/jobs")
@needs(Role.OPERATOR)
async def add_job() -> Response:
    """A new job for one of the principal's own users: ``{user, agent, kind, spec, timezone?, message}``."""
    body = await json_body("a job: user, agent, kind, spec, timezone, message")
    who = principal()
    name = body.get("user")
    if name is not None and not isinstance(name, str):
        raise BadRequest('"user" must be a user id or name')
    timezone = body.get("timezone") or "UTC"
    if not isinstance(timezone, str):
        raise BadRequest('"timezone" must be an IANA time zone name, e.g. "Europe/Paris"')
    default = await default_agent()
    agent = body.get("agent") or default
    if not isinstance(agent, str):
        raise BadRequest('"agent" must be the name of an agent')
    user = who.check_user(who.user_for(name))
    who.check_agent(agent)
    try:
        user = core.check_user_id(user)
        agent = core.check_agent_exists(context().data_dir, agent, default)
        job = await scheduler.add_job(
            agent_id=agent, user_id=user, channel=_CHANNEL, kind=text_field(body, "kind"),
            spec=text_field(body, "spec"), message=text_field(body, "message"), created_by=who.origin("api"),
            timezone=timezone, now=time.time(), min_interval=await _min_interval(),
        )  # fmt: skip
    except core.UnknownAgent as exc:
        raise BadRequest(str(exc), 404, "not_found") from None
    except scheduler.SchedulerNotRunning as exc:
        raise _unavailable(exc) from None
    except ValueError as exc:  # a bad user id, agent name, schedule or message; a quota reached
        raise BadRequest(str(exc)) from None
    return answer({"job": _job_fields(job)}, 201)


@scheduler_routes.post("/v1/scheduler/jobs/<job_id>/<action>")
@needs(Role.OPERATOR)
async def change_job(job_id: str, action: str) -> Response:
    """Pause, resume or cancel one of the principal's users' jobs."""
    if action not in _CHANGES:
        raise BadRequest(f"no such action {action!r}: pause, resume or cancel", 404, "not_found")
    job = await _own_job(job_id)
    try:
        changed = await scheduler.change_job(action, job.id)
    except scheduler.SchedulerNotRunning as exc:
        raise _unavailable(exc) from None
    except ValueError as exc:  # a job that is done cannot be resumed
        raise BadRequest(str(exc), 409, "conflict") from None
    return answer({"job": _job_fields(changed)})


@scheduler_routes.get("/v1/scheduler/jobs/<job_id>/runs")
@needs(Role.OPERATOR)
async def job_runs(job_id: str) -> Response:
    """The newest runs of one of the principal's users' jobs: due time, try, outcome, detail."""
    job = await _own_job(job_id)
    try:
        runs = await scheduler.job_runs(job.id)
    except scheduler.SchedulerNotRunning as exc:
        raise _unavailable(exc) from None
    return answer({"runs": [attrs.asdict(run) for run in runs]})
