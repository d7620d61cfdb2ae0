"""Due times on Trio's MockClock: every, at, cron across both changes of clocks, retries
with backoff, auto-pause, missed times after a stop, and crashes of runner and executor."""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path

import pytest
import trio
from trio.testing import MockClock

import supervision as sv
from beamclaw_scheduler import HeartbeatConfig, add_job, change_job, find_job, job_runs, list_jobs
from beamclaw_scheduler._heartbeat import within_active_hours
from beamclaw_scheduler._store import EXECUTOR, RUNNER

from .conftest import PARIS, Script, at, running_scheduler, virtual_clock


async def _add(clock, kind: str, spec: str, timezone: str = "UTC", message: str = "check the news"):  # type: ignore[no-untyped-def]
    return await add_job(
        agent_id="default", user_id="local:ada", channel="cli", kind=kind, spec=spec, message=message,
        created_by="cli", timezone=timezone, now=clock(), min_interval=60,
    )  # fmt: skip


async def test_every_fires_once_per_interval_at_its_time(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(at(2026, 5, 4, 10, 0))
    script = Script(clock)
    async with running_scheduler(tmp_path, script, clock):
        job = await _add(clock, "every", "5m")
        await trio.sleep(3600 + 1)
    assert [round(t - job.created_at) for t, _ in script.fires] == [300 * n for n in range(1, 13)]
    assert script.dues() == [job.created_at + 300 * n for n in range(1, 13)]
    assert {fire.attempt for _, fire in script.fires} == {1}


async def test_at_fires_once_and_is_done(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(at(2026, 5, 4, 10, 0))
    script = Script(clock)
    async with running_scheduler(tmp_path, script, clock):
        job = await _add(clock, "at", "2026-05-04T10:30", timezone="Europe/Paris")
        await trio.sleep(2 * 3600)
        assert (await find_job(job.id)).state == "done"
        assert await list_jobs() == []
        assert [r.state for r in await job_runs(job.id)] == ["ok"]
    assert [round(t) for t, _ in script.fires] == [round(at(2026, 5, 4, 10, 30))]


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        # Spring: 02:30 does not exist on 29 March; it runs at 03:00 (once), as cron does.
        (at(2026, 3, 27, 12, 0), [at(2026, 3, 28, 2, 30), at(2026, 3, 29, 3, 0), at(2026, 3, 30, 2, 30)]),
        # Autumn: 02:30 comes twice on 25 October; a job at a fixed hour runs once.
        (at(2026, 10, 23, 12, 0), [at(2026, 10, 24, 2, 30), at(2026, 10, 25, 2, 30), at(2026, 10, 26, 2, 30)]),
    ],
)
async def test_cron_in_a_time_zone_across_a_change_of_clocks(
    tmp_path: Path, autojump_clock: MockClock, start: float, expected: list[float]
) -> None:
    clock = virtual_clock(start)
    script = Script(clock)
    async with running_scheduler(tmp_path, script, clock):
        await _add(clock, "cron", "30 2 * * *", timezone="Europe/Paris")
        await trio.sleep(3 * 86400 + 3600)
    assert [round(t) for t, _ in script.fires] == [round(t) for t in expected]
    local = [dt.datetime.fromtimestamp(t, PARIS).strftime("%d %H:%M") for t, _ in script.fires]
    assert len(local) == len(set(local))


async def test_an_hourly_cron_runs_in_both_passes_of_the_repeated_hour(
    tmp_path: Path, autojump_clock: MockClock
) -> None:
    clock = virtual_clock(at(2026, 10, 25, 1, 30))
    script = Script(clock)
    async with running_scheduler(tmp_path, script, clock):
        await _add(clock, "cron", "0 * * * *", timezone="Europe/Paris")
        await trio.sleep(3 * 3600)
    # 02:00 CEST, 02:00 CET, 03:00 CET: an hour apart each, as the clock on the wall says.
    times = [t for t, _ in script.fires]
    assert [round(b - a) for a, b in itertools.pairwise(times)] == [3600, 3600]


async def test_a_failing_job_is_retried_with_backoff_then_paused(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(at(2026, 5, 4, 10, 0))
    script = Script(clock, outcome=lambda fire: ("failed", "the model is down"))
    async with running_scheduler(tmp_path, script, clock, max_errors=2):
        job = await _add(clock, "every", "10m")
        await trio.sleep(3 * 3600)
        paused = await find_job(job.id)
    # Two due times, three tries each (first, then 2 s and 4 s later, ±25%), then paused.
    assert [fire.attempt for _, fire in script.fires] == [1, 2, 3, 1, 2, 3]
    for first in (0, 3):
        (t1, _), (t2, _), (t3, _) = script.fires[first : first + 3]
        assert 1.5 <= t2 - t1 <= 2.5 and 3.0 <= t3 - t2 <= 5.0
    assert script.dues() == [job.created_at + 600] * 3 + [job.created_at + 1200] * 3
    assert paused.state == "paused" and paused.errors == 2
    assert paused.paused_reason.startswith("paused after 2 failed runs in a row; the last: the model is down")


async def test_a_crashing_job_is_retried_and_the_next_one_succeeds(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(at(2026, 5, 4, 10, 0))

    def crash_first(fire):  # type: ignore[no-untyped-def]
        if fire.attempt == 1:
            raise RuntimeError("the worker blew up")
        return "ok", "fine"

    script = Script(clock, outcome=crash_first)
    async with running_scheduler(tmp_path, script, clock):
        job = await _add(clock, "every", "10m")
        await trio.sleep(700)
        runs = await job_runs(job.id)
        assert (await find_job(job.id)).errors == 0
    assert [(r.attempt, r.state) for r in reversed(runs)] == [(1, "failed"), (2, "ok")]
    assert "RuntimeError: the worker blew up" in runs[-1].detail


async def test_pause_and_resume(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(at(2026, 5, 4, 10, 0))
    script = Script(clock)
    async with running_scheduler(tmp_path, script, clock):
        job = await _add(clock, "every", "1m")
        await trio.sleep(150)
        await change_job("pause", job.id[:4])
        await trio.sleep(600)
        assert len(script.fires) == 2
        resumed = await change_job("resume", job.id)
        assert resumed.state == "active" and resumed.next_due is not None and resumed.next_due > clock()
        await trio.sleep(61)
        await change_job("cancel", job.id)
        await trio.sleep(600)
    assert len(script.fires) == 3


async def test_killing_runner_and_executor_loses_no_due_time_and_repeats_none(
    tmp_path: Path, autojump_clock: MockClock
) -> None:
    clock = virtual_clock(at(2026, 5, 4, 10, 0))

    async def slow_ok(fire):  # type: ignore[no-untyped-def]
        script.fires.append((clock(), fire))
        await trio.sleep(20)  # still running when the executor is killed
        return "ok", "done"

    script = Script(clock)
    async with running_scheduler(tmp_path, slow_ok, clock):  # type: ignore[arg-type]
        jobs = [await _add(clock, "every", "1m", message=f"job {n}") for n in range(5)]
        for round_ in range(10):
            await trio.sleep(37)
            sv.kill(RUNNER if round_ % 2 else EXECUTOR)
        await trio.sleep(120)
        runs = {job.id: await job_runs(job.id) for job in jobs}
    for job in jobs:
        dues = [fire.due for _, fire in script.fires if fire.job.id == job.id and fire.attempt == 1]
        # Every due time up to the end ran its first try once, whatever was killed meanwhile.
        assert dues == sorted(set(dues)) and len(dues) >= 7
        assert {r.state for r in runs[job.id]} <= {"ok", "failed", "running", "claimed"}, runs[job.id]


async def test_a_time_missed_while_stopped_runs_once_within_the_grace_window(
    tmp_path: Path, autojump_clock: MockClock
) -> None:
    clock = virtual_clock(at(2026, 5, 4, 10, 0))
    script = Script(clock)
    async with running_scheduler(tmp_path, script, clock, missed_grace_seconds=900):
        job = await _add(clock, "every", "1m")
        await trio.sleep(90)
    assert len(script.fires) == 1
    await trio.sleep(600)  # the daemon is down for ten intervals
    async with running_scheduler(tmp_path, script, clock, missed_grace_seconds=900):
        await trio.sleep(20)
    # One run at start for the missed times (not ten).
    assert len(script.fires) == 2
    assert round(script.fires[1][0] - script.fires[0][0]) == 630
    await trio.sleep(3600)  # down past the grace window: recorded as missed, not run
    async with running_scheduler(tmp_path, script, clock, missed_grace_seconds=900):
        await trio.sleep(5)
        runs = await job_runs(job.id)
    assert len(script.fires) == 2
    assert runs[0].state == "missed" and "not running" in runs[0].detail


async def test_a_run_cut_by_a_stop_of_the_daemon_is_not_run_again(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(at(2026, 5, 4, 10, 0))
    started = trio.Event()

    async def hang(fire):  # type: ignore[no-untyped-def]
        script.fires.append((clock(), fire))
        started.set()
        await trio.sleep_forever()

    script = Script(clock)
    async with running_scheduler(tmp_path, hang, clock):  # type: ignore[arg-type]
        job = await _add(clock, "at", "2026-05-04T08:01:00+00:00")
        await started.wait()
    # The daemon stopped with the run in progress; at the next start it is not run again.
    async with running_scheduler(tmp_path, script, clock):
        await trio.sleep(600)
        runs = await job_runs(job.id)
        assert (await find_job(job.id)).state == "done"
    assert len(script.fires) == 1
    assert runs[0].state == "interrupted"


def test_active_hours() -> None:
    day = HeartbeatConfig(active_hours=(8, 22), timezone="Europe/Paris")
    night = HeartbeatConfig(active_hours=(22, 6), timezone="Europe/Paris")
    assert within_active_hours(at(2026, 5, 4, 8, 0), day) and not within_active_hours(at(2026, 5, 4, 7, 59), day)
    assert not within_active_hours(at(2026, 5, 4, 22, 0), day)
    assert within_active_hours(at(2026, 5, 4, 23, 0), night) and within_active_hours(at(2026, 5, 5, 5, 0), night)
    assert not within_active_hours(at(2026, 5, 4, 12, 0), night)


async def test_a_credential_in_a_job_or_its_failure_is_never_stored(tmp_path: Path, autojump_clock: MockClock) -> None:
    clock = virtual_clock(at(2026, 5, 4, 10, 0))
    key = "sk-ant-api03-Zq8vT3xLmN4pR7sK2wY9aB6cZq8vT3xLmN4p"
    script = Script(clock, outcome=lambda fire: ("failed", f"the model said: bad key {key}"))
    async with running_scheduler(tmp_path, script, clock, max_errors=1):
        job = await _add(clock, "every", "10m", message=f"use the key {key} to check")
        await trio.sleep(700)
        runs = await job_runs(job.id)
    assert key not in job.message and "[REDACTED]" in job.message
    assert runs and all(key not in run.detail for run in runs)
    assert key.encode() not in (tmp_path / "scheduler.db").read_bytes()
