"""Schedules are bounded to what a clock can hold, a job stored before that bound is still
listed, and one user cannot take an agent's whole job quota."""

from __future__ import annotations

from pathlib import Path

import pytest
from trio.testing import MockClock

from beamclaw_base import StoreConfig, open_store
from beamclaw_scheduler import BadSchedule, JobError, SchedulerTool, add_job, describe_job, list_jobs, make_schedule
from beamclaw_scheduler._tables import SCHEMA
from beamclaw_tools import ToolContext, ToolError, ToolSession
from tests.support.stores import sql

from .conftest import Script, at, running_scheduler, virtual_clock

NOW = at(2026, 5, 4, 10, 0)
SESSION = ToolSession("s1", "default", "local:ada", "cli")


@pytest.mark.parametrize(
    ("kind", "spec", "why"),
    [
        ("every", "100000000000000000000s", "is too long: the longest interval is 100 years"),
        ("every", "1000000000000000000000000000000d", "is too long"),
        ("every", "9" * 400, "is too long"),  # read as a float, it is infinite
        ("every", "1e20s", "is not a duration"),
        ("at", "9999-12-31T23:59", "is too far ahead: a job must be due within 100 years"),
        ("at", "2200-01-01T00:00+14:00", "is too far ahead"),
        ("cron", "0 0 30 2 *", "never matches"),
    ],
)
def test_a_schedule_no_clock_can_hold_is_refused_saying_why(kind: str, spec: str, why: str) -> None:
    with pytest.raises(BadSchedule) as refused:
        make_schedule(kind, spec, "UTC", NOW, 60)
    assert why in str(refused.value)
    assert len(str(refused.value)) < 200  # 400 digits are not echoed whole


def test_the_longest_schedules_within_the_bound_are_taken() -> None:
    assert make_schedule("every", "36500d", "UTC", NOW, 60).spec == repr(36500 * 86400.0)
    assert make_schedule("at", "2125-01-01T00:00", "UTC", NOW, 60).first_due(NOW) > NOW
    leap_monday = make_schedule("cron", "0 0 29 2 1", "UTC", NOW, 60)  # 2044, then 2072
    assert leap_monday.next_due(NOW) is not None


async def _add(clock, user: str = "local:ada", agent: str = "default"):  # type: ignore[no-untyped-def]
    return await add_job(
        agent_id=agent, user_id=user, channel="cli", kind="every", spec="1h", message="check the news",
        created_by="cli", now=clock(), min_interval=60,
    )  # fmt: skip


async def test_a_job_stored_before_the_bound_is_listed_as_never(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(NOW)
    async with running_scheduler(tmp_path, Script(clock), clock):
        job = await _add(clock)
        for far in (1e20, float("inf")):
            db = open_store(StoreConfig(), SCHEMA, sqlite_file=tmp_path / "scheduler.db")
            sql(db, "UPDATE jobs SET spec = ?, next_due = ? WHERE id = ?", (repr(far), far, job.id))
            db.close()
            (stored,) = await list_jobs()
            assert stored.next_due == far
            assert "next never (beyond any date)" in describe_job(stored)
            # The agent's own listing, through its tool, works too.
            tool = SchedulerTool(clock, 60)
            listed = await tool.execute({"action": "list"}, SESSION, ToolContext(tmp_path, tmp_path))
            assert job.id in listed and "never" in listed


async def test_one_user_cannot_take_an_agent_s_whole_quota(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(NOW)
    async with running_scheduler(tmp_path, Script(clock), clock, max_jobs_per_user=3, max_jobs_per_agent=5):
        for _ in range(3):
            await _add(clock, user="telegram:mallory")
        with pytest.raises(JobError) as refused:
            await _add(clock, user="telegram:mallory")
        assert str(refused.value) == (
            "user 'telegram:mallory' has 3 jobs, the most allowed (scheduler.max_jobs_per_user = 3): cancel one first"
        )
        # Another agent is no way round it: the quota is the user's.
        with pytest.raises(JobError, match="max_jobs_per_user = 3"):
            await _add(clock, user="telegram:mallory", agent="ops")
        # The others still have the rest of the agent's quota, up to the agent's own limit.
        await _add(clock, user="local:ada")
        await _add(clock, user="local:bob")
        with pytest.raises(JobError, match=r"agent 'default' has 5 jobs, .*scheduler.max_jobs_per_agent = 5"):
            await _add(clock, user="local:carol")
        assert len(await list_jobs(user_id="telegram:mallory")) == 3


async def test_a_tool_call_with_a_schedule_too_far_is_refused(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(NOW)
    tool, context = SchedulerTool(clock, 60), ToolContext(tmp_path, tmp_path)
    async with running_scheduler(tmp_path, Script(clock), clock):
        for args in ({"every": "100000000000000000000s"}, {"at": "9999-01-01T00:00"}):
            with pytest.raises(ToolError, match="too"):
                await tool.execute({"action": "create", "message": "x", **args}, SESSION, context)
        assert await list_jobs() == []
