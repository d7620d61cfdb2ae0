"""The job store's contract, on every store backend: its requests called one by one at
times a test sets (no tree, no MockClock), against the same database a second store may
hold too, as another node's would."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from beamclaw_base import StoreConfig, StoreError, open_store
from beamclaw_scheduler import Job, JobError, SchedulerConfig, add_job, change_job, job_runs, list_jobs, make_schedule
from beamclaw_scheduler._jobs import Answer, Jobs
from beamclaw_scheduler._requests import (
    AddJob,
    ChangeJob,
    Claim,
    ClaimedFires,
    FindJob,
    FinishRun,
    JobRuns,
    ListJobs,
    NextWake,
    Outcome,
    RecoverRuns,
    RunningRuns,
    RunStarted,
    StoreRequest,
)
from beamclaw_scheduler._tables import SCHEMA
from tests.support.stores import sql

from .conftest import Script, at, running_scheduler

NOW = at(2026, 5, 4, 10, 0)


@attrs.define
class FakeClock:
    now: float = NOW

    def __call__(self) -> float:
        return self.now


@contextlib.contextmanager
def opened(store_config: StoreConfig, tmp_path: Path, clock: FakeClock, **config: Any) -> Iterator[Jobs]:
    """A job store on *store_config* (in *tmp_path* for SQLite), closed on the way out."""
    db = open_store(store_config, SCHEMA, sqlite_file=tmp_path / "scheduler.db")
    try:
        yield Jobs(db, SchedulerConfig(**config), clock)
    finally:
        db.close()


async def ask(jobs: Jobs, request: StoreRequest) -> Any:
    return (await jobs.answer(request)).reply


def adding(clock: FakeClock, *, user: str = "local:ada", agent: str = "default", spec: str = "1m",
           kind: str = "every", message: str = "check the news") -> AddJob:  # fmt: skip
    schedule = make_schedule(kind, spec, "UTC", clock(), 60)
    return AddJob(agent, user, "cli", schedule, message, "cli")


async def add(jobs: Jobs, clock: FakeClock, **fields: Any) -> Job:
    job: Job = await ask(jobs, adding(clock, **fields))
    return job


async def run_claims(jobs: Jobs, clock: FakeClock, outcome: Outcome, detail: str = "done") -> list[Answer[Any]]:
    """Claim what is due now and run each claim to *outcome*; the answers of the finishes."""
    await ask(jobs, Claim(clock()))
    finished = []
    for fire in await ask(jobs, ClaimedFires()):
        await ask(jobs, RunStarted(fire.run_id))
        finished.append(await jobs.answer(FinishRun(fire.run_id, outcome, detail)))
    return finished


async def test_two_stores_claiming_at_once_claim_each_due_time_once(store_config: StoreConfig, tmp_path: Path) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock) as first, opened(store_config, tmp_path, clock) as second:
        for n in range(20):
            await add(first, clock, user=f"local:user{n}")
        for minute in range(1, 6):
            now = NOW + 60 * minute
            start = threading.Barrier(2)
            claimed: list[int] = []

            def claim(jobs: Jobs, now: float = now, start: threading.Barrier = start) -> int:
                start.wait()
                return int(jobs.db.transact(jobs.work(Claim(now), now)).reply)

            async def in_thread(jobs: Jobs, claimed: list[int] = claimed) -> None:
                claimed.append(await trio.to_thread.run_sync(claim, jobs))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(in_thread, first)
                nursery.start_soon(in_thread, second)
            assert sum(claimed) == 20, claimed
        runs = sql(first.db, "SELECT job_id, due, attempt FROM runs")
    assert len(runs) == 100 and len(set(runs)) == 100
    per_job: dict[str, list[float]] = {}
    for job_id, due, _ in runs:
        per_job.setdefault(job_id, []).append(due)
    assert all(sorted(dues) == [NOW + 60 * m for m in range(1, 6)] for dues in per_job.values())


async def test_at_start_a_cut_run_is_interrupted_and_old_claims_and_due_times_are_missed_once(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock, missed_grace_seconds=900) as jobs:
        cut, waiting = await add(jobs, clock, user="local:ada"), await add(jobs, clock, user="local:bob")
        hourly = await add(jobs, clock, spec="1h")
        clock.now = NOW + 60
        assert await ask(jobs, Claim(clock.now)) == 2
        fires = {fire.job.id: fire for fire in await ask(jobs, ClaimedFires())}
        await ask(jobs, RunStarted(fires[cut.id].run_id))
    clock.now = NOW + 60 + 3600  # the daemon was down for an hour, past the grace window
    for _ in range(2):  # and a second start finds nothing more to do
        with opened(store_config, tmp_path, clock, missed_grace_seconds=900) as jobs:
            recovered = await jobs.answer(RecoverRuns())
            assert await ask(jobs, RunningRuns()) == [] and await ask(jobs, ClaimedFires()) == []
            cut_runs, waiting_runs = await ask(jobs, JobRuns(cut.id)), await ask(jobs, JobRuns(waiting.id))
            listed = {job.id: job for job in await ask(jobs, ListJobs(None, None, False))}
    assert recovered.events == [] and recovered.pokes == set()
    assert [(r.due, r.state) for r in cut_runs] == [(NOW + 120, "missed"), (NOW + 60, "interrupted")]
    assert "not run again" in cut_runs[1].detail and "not running" in cut_runs[0].detail
    assert [(r.due, r.state) for r in waiting_runs] == [(NOW + 120, "missed"), (NOW + 60, "missed")]
    assert listed[cut.id].errors == 1 and listed[waiting.id].errors == 0
    # Next due is counted from the start, not once per missed minute; the hourly job was not missed.
    assert listed[cut.id].next_due == listed[waiting.id].next_due == NOW + 3660 + 60
    assert listed[hourly.id].next_due == NOW + 3600


async def test_a_failing_due_time_is_retried_then_the_job_is_paused_past_max_errors(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock, max_errors=2, retry_attempts=3) as jobs:
        job = await add(jobs, clock, spec="10m")
        answers: list[Answer[Any]] = []
        for due in (NOW + 600, NOW + 1200):
            clock.now = due
            for _ in range(3):
                answers += await run_claims(jobs, clock, "failed", "the model is down")
                wake = await ask(jobs, NextWake())
                clock.now = clock.now if wake is None else max(clock.now, wake)
        paused = await ask(jobs, FindJob(job.id))
        clock.now = NOW + 3600
        assert await ask(jobs, Claim(clock.now)) == 0
        runs = await ask(jobs, JobRuns(job.id))
    assert [answer.reply for answer in answers] == ["retry", "retry", "failed"] * 2
    assert [answer.pokes for answer in answers] == [{"runner"}, {"runner"}, set()] * 2
    # The pause is told once, by the answer of the try that caused it, never from inside it.
    pauses = [data for answer in answers for event, data in answer.events if event == "sched_job_paused"]
    assert pauses == [{"job_id": job.id, "by": "auto", "reason": paused.paused_reason}]
    assert paused.state == "paused" and paused.errors == 2
    assert paused.paused_reason == "paused after 2 failed runs in a row; the last: the model is down"
    assert [(r.due, r.attempt) for r in reversed(runs)] == [(d, a) for d in (NOW + 600, NOW + 1200) for a in (1, 2, 3)]
    # A retry waits 2 s, then 4 s (±25%), after the try before it.
    first, second, third = sorted(runs, key=lambda r: r.run_id)[:3]
    assert first.finished_at is not None and second.finished_at is not None
    assert 1.5 <= second.finished_at - first.finished_at <= 2.5
    assert third.finished_at is not None and 3.0 <= third.finished_at - second.finished_at <= 5.0


async def test_quotas_per_agent_and_per_user_are_checked_with_the_insert(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock, max_jobs_per_user=2, max_jobs_per_agent=3) as jobs:
        await add(jobs, clock, user="telegram:mallory")
        await add(jobs, clock, user="telegram:mallory", agent="ops")
        with pytest.raises(JobError, match=r"user 'telegram:mallory' has 2 jobs, .*max_jobs_per_user = 2"):
            await add(jobs, clock, user="telegram:mallory")
        await add(jobs, clock, user="local:ada")
        await add(jobs, clock, user="local:bob")
        with pytest.raises(JobError, match=r"agent 'default' has 3 jobs, .*max_jobs_per_agent = 3"):
            await add(jobs, clock, user="local:carol")
        # A job done (an `at` that ran) no longer counts.
        once = await add(jobs, clock, user="local:dan", agent="ops", kind="at", spec="2026-05-04T08:30")
        clock.now = NOW + 3600
        await run_claims(jobs, clock, "ok")
        assert (await ask(jobs, FindJob(once.id))).state == "done"
        await add(jobs, clock, user="local:dan", agent="ops")
        listed = await ask(jobs, ListJobs(None, None, False))
    assert sorted(job.user_id for job in listed) == [
        "local:ada", "local:bob", "local:dan", "telegram:mallory", "telegram:mallory",
    ]  # fmt: skip


async def test_two_stores_adding_at_once_never_pass_a_quota_together(store_config: StoreConfig, tmp_path: Path) -> None:
    clock = FakeClock()
    with (
        opened(store_config, tmp_path, clock, max_jobs_per_user=5) as first,
        opened(store_config, tmp_path, clock, max_jobs_per_user=5) as second,
    ):
        start = threading.Barrier(2)
        refused: list[str] = []

        def add_five(jobs: Jobs) -> None:
            start.wait()
            for _ in range(5):
                try:
                    jobs.db.transact(jobs.work(adding(clock), clock.now))
                except JobError as exc:
                    refused.append(str(exc))

        async with trio.open_nursery() as nursery:
            for jobs in (first, second):
                nursery.start_soon(trio.to_thread.run_sync, add_five, jobs)
        listed = await ask(first, ListJobs(None, "local:ada", True))
    assert len(listed) == 5 and len(refused) == 5
    assert set(refused) == {
        "user 'local:ada' has 5 jobs, the most allowed (scheduler.max_jobs_per_user = 5): cancel one first"
    }


async def test_the_log_keeps_the_newest_50_runs_of_a_job(store_config: StoreConfig, tmp_path: Path) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock) as jobs:
        job = await add(jobs, clock)
        other = await add(jobs, clock, spec="1h")
        for minute in range(1, 60):
            clock.now = NOW + 60 * minute
            assert [answer.reply for answer in await run_claims(jobs, clock, "ok")] == ["ok"]
        clock.now = NOW + 3600  # the hourly job's first
        assert [answer.reply for answer in await run_claims(jobs, clock, "ok")] == ["ok", "ok"]
        runs = await ask(jobs, JobRuns(job.id[:6]))
        (stored,) = sql(jobs.db, "SELECT count(*) FROM runs WHERE job_id = ?", (job.id,))
        assert len(await ask(jobs, JobRuns(other.id))) == 1
    assert stored == (50,)
    assert [r.due for r in runs] == [NOW + 60 * m for m in range(60, 10, -1)]


async def test_a_job_due_at_infinity_is_listed_and_never_claimed(store_config: StoreConfig, tmp_path: Path) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock) as jobs:
        job = await add(jobs, clock)
        for far in (1e20, float("inf")):
            # A job stored before schedules were bounded.
            sql(jobs.db, "UPDATE jobs SET spec = ?, next_due = ? WHERE id = ?", (repr(far), far, job.id))
            (listed,) = await ask(jobs, ListJobs(None, None, False))
            assert listed.next_due == far
            assert await ask(jobs, NextWake()) == far
            assert await ask(jobs, Claim(1e19)) == 0
        assert await ask(jobs, ClaimedFires()) == []


async def test_a_long_message_is_kept_faithfully_and_a_nul_is_refused_saying_so(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    clock = FakeClock()
    message = ("100% sure? 'quote' \"double\" ; -- DROP TABLE jobs; \\ é 🦀 \u2028 %s ?" * 2000)[:100_000]
    with opened(store_config, tmp_path, clock) as jobs:
        job = await add(jobs, clock, message=message)
        for field, value in [("message", "tick\x00tock"), ("user_id", "local:\x00ada"), ("agent_id", "ops\x00")]:
            request = attrs.evolve(adding(clock), **{field: value})
            with pytest.raises(JobError) as refused:
                await jobs.answer(request)
            assert str(refused.value) == f"a job's {field} cannot hold a NUL character (\\x00)"
        (listed,) = await ask(jobs, ListJobs(None, None, True))
        assert await ask(jobs, ListJobs(None, "local:\x00ada", True)) == []
    assert listed.message == message and len(message) == 100_000
    assert listed.id == job.id


async def test_a_nul_in_how_a_run_went_is_kept_as_a_replacement(store_config: StoreConfig, tmp_path: Path) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock, retry_attempts=1) as jobs:
        job = await add(jobs, clock)
        clock.now = NOW + 60
        (finished,) = await run_claims(jobs, clock, "failed", "the model said \x00 and stopped")
        (run,) = await ask(jobs, JobRuns(job.id))
    assert finished.reply == "failed"
    assert run.state == "failed" and run.detail == "the model said \ufffd and stopped"


async def test_an_add_tried_again_adds_one_job(store_config: StoreConfig, tmp_path: Path) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock) as jobs:
        request = adding(clock)
        first = await jobs.answer(request)
        again = await jobs.answer(request)  # as after a commit whose answer was lost
        other = await add(jobs, clock)
        clash = attrs.evolve(adding(clock, message="something else"), job_id=first.reply.id)
        with pytest.raises(JobError, match=f"job id {first.reply.id} is taken"):
            await jobs.answer(clash)
        listed = await ask(jobs, ListJobs(None, None, True))
    assert again.reply == first.reply and again.pokes == {"runner"}
    assert {job.id for job in listed} == {first.reply.id, other.id}
    assert len(listed) == 2 and all(len(job.id) == 16 and int(job.id, 16) >= 0 for job in listed)


async def test_cancel_pause_and_resume_answer_with_their_events(store_config: StoreConfig, tmp_path: Path) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock) as jobs:
        job = await add(jobs, clock)
        paused = await jobs.answer(ChangeJob("pause", job.id[:5]))
        clock.now = NOW + 600
        assert await ask(jobs, Claim(clock.now)) == 0
        resumed = await jobs.answer(ChangeJob("resume", job.id))
        cancelled = await jobs.answer(ChangeJob("cancel", job.id))
        with pytest.raises(JobError, match="no job start with"):
            await jobs.answer(FindJob(job.id))
    assert paused.reply.state == "paused" and paused.events == [
        ("sched_job_paused", {"job_id": job.id, "by": "manual", "reason": ""})
    ]
    assert resumed.reply.state == "active" and resumed.reply.next_due == NOW + 660 and resumed.pokes == {"runner"}
    assert cancelled.events == [("sched_job_cancelled", {"job_id": job.id})]


# SQLite only: the file format of the data dirs there are.

_V1_AS_WRITTEN = """
CREATE TABLE jobs (
    id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, user_id TEXT NOT NULL, channel TEXT NOT NULL,
    kind TEXT NOT NULL, spec TEXT NOT NULL, timezone TEXT NOT NULL, anchor REAL NOT NULL,
    message TEXT NOT NULL, state TEXT NOT NULL, next_due REAL, errors INTEGER NOT NULL DEFAULT 0,
    paused_reason TEXT NOT NULL DEFAULT '', purpose TEXT NOT NULL DEFAULT 'job',
    created_at REAL NOT NULL, created_by TEXT NOT NULL
);
CREATE INDEX jobs_due ON jobs(state, next_due);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, due REAL NOT NULL, attempt INTEGER NOT NULL,
    state TEXT NOT NULL, retry_at REAL, started_at REAL, finished_at REAL, detail TEXT NOT NULL DEFAULT '',
    UNIQUE (job_id, due, attempt)
);
CREATE INDEX runs_state ON runs(state);
CREATE INDEX runs_retry ON runs(retry_at);
CREATE TABLE delivered (job_id TEXT NOT NULL, digest TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (job_id, digest));
"""


def _written_before(path: Path, version: int = 1) -> None:
    """A scheduler.db as the scheduler wrote it before the store layer: one job, one run."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(_V1_AS_WRITTEN + f"PRAGMA user_version = {version};")
    with db:
        db.execute(
            "INSERT INTO jobs VALUES ('0badcafe', 'default', 'local:ada', 'cli', 'every', '60.0', 'UTC', ?, "
            "'check the news', 'active', ?, 0, '', 'job', ?, 'cli')",
            (NOW, NOW + 60, NOW),
        )
        db.execute("INSERT INTO runs (job_id, due, attempt, state, detail) VALUES ('0badcafe', ?, 1, 'ok', 'fine')",
                   (NOW,))  # fmt: skip
    db.close()


async def test_a_job_database_written_before_the_store_layer_opens_unchanged(tmp_path: Path) -> None:
    _written_before(tmp_path / "scheduler.db")
    clock = FakeClock(NOW + 60)
    with opened(StoreConfig(), tmp_path, clock) as jobs:
        (old,) = await ask(jobs, ListJobs(None, None, False))
        (run,) = await ask(jobs, JobRuns("0bad"))
        assert await ask(jobs, Claim(clock.now)) == 1
        new = await add(jobs, clock)
        assert [job.id for job in await ask(jobs, ListJobs(None, None, False))] == ["0badcafe", new.id]
    assert old.id == "0badcafe" and old.message == "check the news" and old.next_due == NOW + 60
    assert (run.state, run.detail) == ("ok", "fine")
    db = sqlite3.connect(tmp_path / "scheduler.db")
    assert db.execute("PRAGMA user_version").fetchone() == (2,)  # runs now record their owner
    assert db.execute("SELECT count(*) FROM runs").fetchone() == (2,)
    db.close()


def test_a_job_database_of_a_newer_beamclaw_is_refused_and_kept(tmp_path: Path) -> None:
    _written_before(tmp_path / "scheduler.db", version=3)
    with pytest.raises(StoreError, match="has format version 3, newer than this BeamClaw's 2"):
        open_store(StoreConfig(), SCHEMA, sqlite_file=tmp_path / "scheduler.db")
    db = sqlite3.connect(tmp_path / "scheduler.db")
    assert db.execute("SELECT id FROM jobs").fetchall() == [("0badcafe",)]
    db.close()


async def test_the_tree_on_the_configured_store_runs_a_due_time_once_and_keeps_its_jobs(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    script = Script(time.time)
    async with running_scheduler(tmp_path, script, time.time, store=store_config):
        job = await add_job(
            agent_id="default", user_id="local:ada", channel="cli", kind="every", spec="1h", message="check the news",
            created_by="cli", now=time.time(), min_interval=60,
        )  # fmt: skip
        await change_job("pause", job.id)
        with opened(store_config, tmp_path, FakeClock()) as other:
            sql(other.db, "UPDATE jobs SET next_due = ? WHERE id = ?", (time.time() + 0.2, job.id))
        await change_job("resume", job.id)  # keeps the due time, and wakes the runner
        with trio.fail_after(30):
            while not script.fires:
                await trio.sleep(0.05)
            while (await job_runs(job.id))[0].state != "ok":
                await trio.sleep(0.05)
    async with running_scheduler(tmp_path, script, time.time, store=store_config):
        (listed,) = await list_jobs()
        runs = await job_runs(job.id)
    assert [fire.job.id for _, fire in script.fires] == [job.id]
    assert listed.id == job.id and listed.next_due is not None and listed.next_due > time.time() + 3000
    assert [run.state for run in runs] == ["ok"]
