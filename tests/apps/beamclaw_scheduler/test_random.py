"""Random-slot jobs (the spec's bc_sched_random) on Trio's MockClock over a real store file:
once a day at a time drawn within a window, the slot stored (a restart keeps it), a new
draw each day, and windows that cannot be refused with a reason."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import trio
from trio.testing import MockClock

from beamclaw_scheduler import BadSchedule, SchedulerTool, find_job, make_schedule
from beamclaw_tools import ToolContext, ToolSession

from .conftest import PARIS, Script, at, running_scheduler, virtual_clock

SESSION = ToolSession("s1", "default", "local:ada", "cli")


def _local(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, PARIS)


def _within_window(seconds: float) -> bool:
    return dt.time(9, 0) <= _local(seconds).time() < dt.time(17, 0)


async def test_the_slot_is_drawn_once_a_day_and_kept_across_a_restart(
    tmp_path: Path, autojump_clock: MockClock
) -> None:
    clock = virtual_clock(at(2026, 5, 4, 8, 0))
    script = Script(clock)
    async with running_scheduler(tmp_path, script, clock):
        tool = SchedulerTool(clock, 60)
        answer = await tool.execute(
            {"action": "create", "random": "09:00-17:00", "timezone": "Europe/Paris", "message": "stretch"},
            SESSION, ToolContext(tmp_path, tmp_path),
        )  # fmt: skip
        job_id = answer.split()[1]
        slot = (await find_job(job_id)).next_due
        assert slot is not None and _within_window(slot) and _local(slot).date() == dt.date(2026, 5, 4)
        listed = await tool.execute({"action": "list"}, SESSION, ToolContext(tmp_path, tmp_path))
        assert "daily at random 09:00-17:00 (Europe/Paris)" in listed and "(the slot drawn)" in listed
        assert dt.datetime.fromtimestamp(slot, dt.UTC).strftime("%Y-%m-%d %H:%M") in listed
    # The daemon stops and starts again: the same store file, the same slot.
    async with running_scheduler(tmp_path, script, clock):
        assert (await find_job(job_id)).next_due == slot
        await trio.sleep(3 * 86400)  # three days
    fired = [t for t, _ in script.fires]
    assert [round(t) for t in fired[:1]] == [round(slot)]
    assert [_local(t).date() for t in fired] == [dt.date(2026, 5, n) for n in (4, 5, 6)]
    assert all(_within_window(t) for t in fired)
    assert len({_local(t).time() for t in fired}) > 1  # a new draw each day (the same thrice: 1 in 230 billion)


async def test_a_job_added_while_its_window_is_open_first_runs_the_next_day(
    tmp_path: Path, autojump_clock: MockClock
) -> None:
    clock = virtual_clock(at(2026, 5, 4, 12, 0))
    async with running_scheduler(tmp_path, Script(clock), clock):
        answer = await SchedulerTool(clock, 60).execute(
            {"action": "create", "random": "09:00-17:00", "timezone": "Europe/Paris", "message": "stretch"},
            SESSION, ToolContext(tmp_path, tmp_path),
        )  # fmt: skip
        slot = (await find_job(answer.split()[1])).next_due
        assert slot is not None and _within_window(slot) and _local(slot).date() == dt.date(2026, 5, 5)


MAY = at(2026, 5, 4, 8, 0)


@pytest.mark.parametrize(
    ("spec", "timezone", "now", "error"),
    [
        ("9-17", "UTC", MAY, "'9-17' is not a window of the day: write it like 09:00-17:00"),
        ("09:00-25:00", "UTC", MAY, "is not a window of the day"),
        ("17:00-09:00", "UTC", MAY, "the window must start before it ends, within one day"),
        ("09:00-09:00", "UTC", MAY, "the window must start before it ends"),
        ("02:30-06:00", "Europe/Paris", at(2026, 3, 1, 8, 0), "02:30 does not exist on 2026-03-29 (the clocks change)"),
        ("01:00-02:30", "Europe/Paris", MAY, "02:30 comes twice on 2026-10-25 (the clocks change)"),
        ("09:00-17:00", "Mars/Olympus", MAY, "'Mars/Olympus' is not a time zone"),
    ],
)
def test_bad_windows_are_refused_with_the_reason(spec: str, timezone: str, now: float, error: str) -> None:
    with pytest.raises(BadSchedule, match=error.replace("(", r"\(").replace(")", r"\)")):
        make_schedule("random", spec, timezone, now, 60)


def test_a_window_clear_of_the_change_of_clocks_is_kept_in_local_time() -> None:
    schedule = make_schedule("random", "9:00-17:00", "Europe/Paris", at(2026, 3, 27, 8, 0), 60)
    assert schedule.spec == "09:00-17:00"
    day = schedule.next_due(at(2026, 3, 28, 18, 0))  # the day the clocks go forward
    assert day is not None and _local(day).date() == dt.date(2026, 3, 29) and _within_window(day)
