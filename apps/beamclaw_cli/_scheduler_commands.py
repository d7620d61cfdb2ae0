"""`beamclaw scheduler list | add | cancel | pause | resume | runs`: the jobs of the running daemon."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

if TYPE_CHECKING:
    from rich.console import Console

    pass

from ._api_client import call
from ._help import Commands, Help, add_group
from ._identity import add_identity_options, user_id
from ._listing import Column, add_json_option, print_json, print_table, wants_json
from ._terminal_safe import as_text, console

_HELP: Final = Help(
    "jobs that run a message as a turn, on time",
    "A job sends its message to an agent at a time (--at), every interval (--every) or on a cron "
    "expression (--cron, with --tz), in your conversation with the agent; the reply goes to where "
    "you are (Telegram, a connected `beamclaw tui`) and into the history. Without an action, list them.",
    ['beamclaw scheduler add --every 1h --message "check the build"', "beamclaw scheduler list"],
)
_ACTIONS: Final = {
    "list": Help("the jobs: schedule, next time, state", "List the jobs (--all: done ones too), with their "
                 "schedule, next due time, state and, when paused, why.", ["beamclaw scheduler list"]),
    "add": Help("a new job", "Add a job for an agent, in your conversation with it: exactly one of --at (an "
                "ISO time), --every (30m, 2h, 1d), --cron (5 fields) or --random (a window of the day, drawn "
                "once a day: `list` shows the slot as NEXT), and --message.",
                ['beamclaw scheduler add --at 2026-12-01T09:00 --tz Europe/Paris --message "send the report"',
                 'beamclaw scheduler add --cron "0 9 * * 1-5" --tz Europe/Paris --message "plan my day"',
                 'beamclaw scheduler add --agent ops --every 30m --message "check the disk"']),
    "cancel": Help("delete a job", "Delete a job (its id from `list`; a prefix does).",
                   ["beamclaw scheduler cancel 3f9a"]),
    "pause": Help("stop a job for now", "Pause a job until it is resumed.", ["beamclaw scheduler pause 3f9a"]),
    "resume": Help("start a paused job again", "Resume a job paused by hand or after failing max_errors times "
                   "in a row; it runs at its next due time.", ["beamclaw scheduler resume 3f9a"]),
    "runs": Help("a job's run log", "Each run of a job: its due time, try, outcome and detail.",
                 ["beamclaw scheduler runs 3f9a"]),
}  # fmt: skip


def add_parser(commands: Commands) -> None:
    actions = add_group(commands, "scheduler", _HELP, _ACTIONS)
    actions["list"].add_argument("--all", action="store_true", help="done jobs too")
    add_json_option(actions["list"])
    add = actions["add"]
    add_identity_options(add)
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", metavar="TIME", help="once, at an ISO time (2026-12-01T09:00)")
    when.add_argument("--every", metavar="INTERVAL", help="every interval (30m, 2h, 1d)")
    when.add_argument("--cron", metavar="EXPR", help="a 5-field cron expression ('0 9 * * 1-5')")
    when.add_argument("--random", metavar="WINDOW", help="once a day at a random time in a window (09:00-17:00)")
    add.add_argument("--tz", default="UTC", help="the time zone of --at, --cron and --random (default: UTC)")
    add.add_argument("--message", required=True, help="what the agent gets when the job runs")
    for action in ("cancel", "pause", "resume", "runs"):
        actions[action].add_argument("job", help="the job's id (a prefix does)")


def _print_job(out: Console, job: dict[str, Any], verb: str) -> None:
    import beamclaw_scheduler as scheduler

    out.print(
        as_text(f"{verb} job {job['id']}: {job['schedule']}, next {scheduler.describe_time(job['next_due'])}, "
                f"{job['state']}")
    )  # fmt: skip


def _job_path(job: str, *rest: str) -> str:
    """The route of one job (its id, or a prefix, as the user typed it)."""
    return "/".join(["/v1/scheduler/jobs", quote(job, safe=""), *rest])


async def run(args: argparse.Namespace) -> int:
    import beamclaw_scheduler as scheduler

    out = console()
    action = args.action or "list"
    if action == "list":
        params = {"all": 1} if getattr(args, "all", False) else None
        jobs = (await call("GET", "/v1/scheduler/jobs", params=params, raw=wants_json(args)))["jobs"]
        if wants_json(args):
            print_json(jobs)
            return 0
        if not jobs:
            print('no jobs: `beamclaw scheduler add --every 1h --message "..."` makes one')
            return 0
        print_table(
            [Column("ID", whole=True), Column("AGENT", whole=True), Column("USER", whole=True), Column("SCHEDULE"),
             Column("NEXT"), Column("STATE"), Column("MESSAGE")],
            [(job["id"], job["agent"], job["user"], job["schedule"], scheduler.describe_time(job["next_due"]),
              job["state"] + (f": {job['paused_reason']}" if job["paused_reason"] else ""), job["message"])
             for job in jobs],
        )  # fmt: skip
        return 0
    if action == "add":
        kind, spec = next((k, v) for k in ("at", "every", "cron", "random") if (v := getattr(args, k)) is not None)
        answer = await call("POST", "/v1/scheduler/jobs", json={"user": user_id(args), "agent": args.agent,
                            "kind": kind, "spec": spec, "timezone": args.tz, "message": args.message})  # fmt: skip
        _print_job(out, answer["job"], "added")
        return 0
    if action == "runs":
        runs = (await call("GET", _job_path(args.job, "runs")))["runs"]
        if not runs:
            print(f"job {args.job} has not run yet")
        for item in runs:
            out.print(
                as_text(
                    f"{scheduler.describe_time(item['due'])}  try {item['attempt']}  {item['state']}  {item['detail']}"
                )
            )
        return 0
    answer = await call("POST", _job_path(args.job, action))
    _print_job(out, answer["job"], {"cancel": "cancelled", "pause": "paused", "resume": "resumed"}[action])
    return 0


def run_command(args: argparse.Namespace) -> int:
    import trio

    return trio.run(run, args)
