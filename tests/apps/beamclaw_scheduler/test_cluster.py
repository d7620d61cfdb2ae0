"""The scheduler with several nodes on one PostgreSQL database.

Each node is a job store claiming as a member of the cluster registry (`cluster_nodes`,
filled through `beamclaw_cluster`'s own registration); a node dies the way the cluster
sees it: its member's lease runs out by the database's clock. The heartbeat jobs are
checked on both backends (one node on SQLite syncs them the same way).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

import supervision as sv
from beamclaw_base import Database, Notified, StoreConfig, notify_group, open_store
from beamclaw_cluster import SCHEMA as CLUSTER_SCHEMA
from beamclaw_cluster import _nodes as nodes
from beamclaw_cluster import membership
from beamclaw_cluster import supervision_tree as cluster_tree
from beamclaw_scheduler import SchedulerConfig, add_job, find_job, job_runs, scheduler_tree
from beamclaw_scheduler import _runner as runner_module
from beamclaw_scheduler._jobs import WAKE_CHANNEL, Jobs
from beamclaw_scheduler._owner import Owner
from beamclaw_scheduler._requests import (
    Claim,
    ClaimedFires,
    FinishRun,
    JobRuns,
    ListJobs,
    RecoverRuns,
    RunningRuns,
    RunStarted,
    SyncHeartbeats,
)
from beamclaw_scheduler._tables import SCHEMA
from beamclaw_tools import supervision_tree as tools_tree
from tests.support.stores import sql

from .conftest import Script, running_scheduler
from .test_store import NOW, FakeClock, add, ask, opened

JOBS = 1000
#: Long enough that no live member's lease runs out while the test runs.
LEASE = 3600.0


@pytest.fixture
def registry(postgres_store_config: StoreConfig) -> Iterator[Database]:
    """The cluster's tables in the test's database, as every node's node process opens them."""
    database = open_store(postgres_store_config, CLUSTER_SCHEMA, sqlite_file=None)
    yield database
    database.close()


@contextlib.contextmanager
def node(store_config: StoreConfig, registry: Database, name: str, clock: FakeClock) -> Iterator[Jobs]:
    """A node's job store: a live member of the registry, claiming as it."""
    instance = uuid.uuid4().hex
    registry.transact(lambda tx: nodes.register(tx, instance, name, f"http://{name}.internal:18800", LEASE))
    db = open_store(store_config, SCHEMA, sqlite_file=None)
    try:
        config = SchedulerConfig(max_jobs_per_user=JOBS, max_jobs_per_agent=JOBS)
        yield Jobs(db, config, clock, Owner(instance, cluster=True), LEASE / 3)
    finally:
        db.close()


def dies(registry: Database, jobs: Jobs) -> None:
    sql(registry, "UPDATE cluster_nodes SET expires_at = now() - interval '1 second' WHERE instance_id = ?",
        (jobs.owner.id,))  # fmt: skip


async def claim_all(jobs: Jobs, now: float) -> int:
    """Claim until nothing more is due (a batch at a time), as the runner does."""
    claimed: int = await ask(jobs, Claim(now))
    total = claimed
    while claimed:
        claimed = await ask(jobs, Claim(now))
        total += claimed
    return total


async def run(jobs: Jobs, *, finish: bool = True, start: int | None = None) -> list[int]:
    """Start this node's claims (the first *start* of them), finish them ok unless not
    *finish*; the run ids started."""
    started = []
    for fire in (await ask(jobs, ClaimedFires()))[:start]:
        assert await ask(jobs, RunStarted(fire.run_id))
        started.append(fire.run_id)
    if finish:
        for run_id in started:
            assert await ask(jobs, FinishRun(run_id, "ok", "done")) == "ok"
    return started


@pytest.mark.postgres
async def test_three_nodes_run_each_due_time_of_1000_jobs_once_and_recover_only_the_dead_ones(
    postgres_store_config: StoreConfig, registry: Database
) -> None:
    clock = FakeClock()
    with (
        node(postgres_store_config, registry, "a", clock) as a,
        node(postgres_store_config, registry, "b", clock) as b,
        node(postgres_store_config, registry, "c", clock) as c,
    ):
        async with trio.open_nursery() as nursery:  # each node adds a third, all at once
            for first, jobs in enumerate((a, b, c)):
                nursery.start_soon(_add_jobs, jobs, clock, range(first, JOBS, 3))
        a_job = await add(a, clock, user="local:ada", agent="ops", kind="at", spec="2026-05-04T08:01:30")
        # Minute 1: all three claim at once; each runs its own claims.
        clock.now = NOW + 60
        claimed: dict[str, int] = {}
        async with trio.open_nursery() as nursery:
            for name, jobs in (("a", a), ("b", b), ("c", c)):
                nursery.start_soon(_claim_into, claimed, name, jobs, clock.now)
        assert sum(claimed.values()) == JOBS
        async with trio.open_nursery() as nursery:
            for jobs in (a, b, c):
                nursery.start_soon(run, jobs)
        # a starts a run of its own that is still running when c dies.
        clock.now = NOW + 90
        assert await claim_all(a, clock.now) == 1
        (a_running,) = await run(a, finish=False)
        # Minute 2: c claims first, starts half of its claims and is killed mid-run.
        clock.now = NOW + 120
        assert await claim_all(c, clock.now) == JOBS
        c_fires = await ask(c, ClaimedFires())
        cut = await run(c, finish=False, start=JOBS // 2)
        dies(registry, c)
        # Both live nodes look for dead owners at once, then again: each cut run is
        # interrupted once, each claim c had not started passes to one live node.
        async with trio.open_nursery() as nursery:
            for jobs in (a, b, a, b):
                nursery.start_soon(ask, jobs, RecoverRuns())
        taken = {"a": await ask(a, ClaimedFires()), "b": await ask(b, ClaimedFires())}
        assert len(taken["a"]) + len(taken["b"]) == JOBS - JOBS // 2
        assert {f.run_id for f in taken["a"] + taken["b"]} == {f.run_id for f in c_fires} - set(cut)
        async with trio.open_nursery() as nursery:
            for jobs in (a, b):
                nursery.start_soon(run, jobs)
        # The dead node's late finishes are refused, it claims and starts nothing more,
        # and its restart as a new member does not run the interrupted ones again.
        assert {await ask(c, FinishRun(run_id, "ok", "late")) for run_id in cut} == {"ignored"}
        clock.now = NOW + 240
        assert await ask(c, Claim(clock.now)) == 0
        # a's own run was never touched: it finishes as it ran.
        assert await ask(a, RunningRuns()) == [a_running]
        assert await ask(a, FinishRun(a_running, "ok", "done")) == "ok"
        assert await ask(a, JobRuns(a_job.id)) and (await ask(a, JobRuns(a_job.id)))[0].state == "ok"
        runs = sql(a.db, "SELECT job_id, due, state, owner FROM runs WHERE job_id <> ?", (a_job.id,))
        jobs_listed = {job.id: job for job in await ask(b, ListJobs(None, None, True))}

    # Every due time of every job was run at most once: minute 1 by whoever claimed it,
    # minute 2 either cut (interrupted, never run again) or run once by a live node.
    assert len(runs) == 2 * JOBS and len({(job_id, due) for job_id, due, _, _ in runs}) == 2 * JOBS
    by_state: dict[str, int] = {}
    for _, _, state, _ in runs:
        by_state[state] = by_state.get(state, 0) + 1
    assert by_state == {"ok": JOBS + JOBS - JOBS // 2, "interrupted": JOBS // 2}
    assert {owner for _, _, state, owner in runs if state == "interrupted"} == {c.owner.id}
    assert {owner for _, due, state, owner in runs if due == NOW + 120 and state == "ok"} <= {a.owner.id, b.owner.id}
    # Each interrupted due time is counted once against its job (told once), no other.
    cut_jobs = {job_id for job_id, _, state, _ in runs if state == "interrupted"}
    assert {job_id for job_id, job in jobs_listed.items() if job.errors == 1} == cut_jobs
    assert all(job.errors == 0 for job_id, job in jobs_listed.items() if job_id not in cut_jobs)


async def _add_jobs(jobs: Jobs, clock: FakeClock, numbers: range) -> None:
    for n in numbers:
        await add(jobs, clock, user=f"local:user{n % 20}", agent=f"agent{n // 20}")


async def _claim_into(claimed: dict[str, int], name: str, jobs: Jobs, now: float) -> None:
    claimed[name] = await claim_all(jobs, now)


@pytest.mark.postgres
async def test_a_node_that_joined_again_claims_as_its_new_member_and_recovers_its_old_one(
    postgres_store_config: StoreConfig, registry: Database
) -> None:
    clock = FakeClock()
    with node(postgres_store_config, registry, "a", clock) as a:
        job = await add(a, clock)
        clock.now = NOW + 60
        assert await claim_all(a, clock.now) == 1
        (cut,) = await run(a, finish=False)
        old = a.owner
        dies(registry, a)
        assert await ask(a, RunningRuns()) == [cut]  # nobody looked yet
        fresh = uuid.uuid4().hex
        registry.transact(lambda tx: nodes.register(tx, fresh, "a", "http://a.internal:18800", LEASE))
        a.owner = Owner(fresh, cluster=True)
        await ask(a, RecoverRuns())
        assert await ask(a, FinishRun(cut, "ok", "late")) == "ignored"
        clock.now = NOW + 120
        assert await claim_all(a, clock.now) == 1
        (run_id,) = await run(a)
        runs = await ask(a, JobRuns(job.id))
        owners = sql(a.db, "SELECT owner FROM runs ORDER BY id")
    assert [(r.run_id, r.state) for r in runs] == [(run_id, "ok"), (cut, "interrupted")]
    assert "taken for dead" in runs[1].detail and "not run again" in runs[1].detail
    assert owners == [(old.id,), (fresh,)]


async def test_heartbeat_jobs_are_synced_by_every_node_alike_and_only_a_start_replaces_them(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    clock = FakeClock()
    with opened(store_config, tmp_path, clock) as first, opened(store_config, tmp_path, clock) as second:

        async def heartbeats() -> dict[str, tuple[str, float | None]]:
            rows = sql(first.db, "SELECT agent_id, spec, next_due FROM jobs WHERE purpose = 'heartbeat'")
            return {agent: (spec, due) for agent, spec, due in rows}

        await ask(first, SyncHeartbeats({"default": 1800.0, "ops": 1800.0}))
        synced = await heartbeats()
        clock.now = NOW + 600
        await ask(second, SyncHeartbeats({"default": 1800.0, "ops": 1800.0}))  # the second node's start
        assert await heartbeats() == synced  # no duplicate, and the due times kept
        # A node started with another interval sets it; the first node's minute-by-minute
        # sync, its own plan unchanged, does not set it back.
        await ask(second, SyncHeartbeats({"default": 900.0, "ops": 900.0}))
        await ask(first, SyncHeartbeats({"default": 1800.0, "ops": 1800.0}, frozenset()))
        assert {agent: spec for agent, (spec, _) in (await heartbeats()).items()} == {
            "default": "900.0",
            "ops": "900.0",
        }
        # An agent new on a node gets its heartbeat; one gone from it loses it.
        await ask(first, SyncHeartbeats({"default": 1800.0, "ops": 1800.0, "new": 1800.0}, frozenset()))
        await ask(first, SyncHeartbeats({"default": 1800.0, "new": 1800.0}, frozenset({"ops"})))
        assert {agent: spec for agent, (spec, _) in (await heartbeats()).items()} == {
            "default": "900.0", "new": "1800.0",
        }  # fmt: skip


@pytest.mark.postgres
async def test_a_job_added_through_another_node_wakes_this_nodes_runner(
    postgres_store_config: StoreConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This node's runner would sleep an hour: only the notification can wake it.
    monkeypatch.setattr(runner_module, "MAX_SLEEP", 3600.0)
    monkeypatch.setattr(runner_module, "_AGENTS_EVERY", 3600.0)
    script = Script(time.time)
    with sv.as_process():
        sv.pg.join(notify_group(WAKE_CHANNEL))
        async with running_scheduler(tmp_path, script, time.time, store=postgres_store_config):
            with trio.fail_after(30):  # only a bound for a hang
                await sv.receive(match=lambda m: m == Notified(WAKE_CHANNEL, None))  # the listener is there
            await trio.sleep(1)  # and the runner asleep
            clock = FakeClock(time.time())
            with opened(postgres_store_config, tmp_path, clock) as other:
                job = await add(other, clock, kind="at", spec=_iso(time.time() + 1))
            with trio.fail_after(60):  # only a bound for a hang
                while not script.fires:
                    await trio.sleep(0.1)
            runs = await job_runs(job.id)
            assert (await find_job(job.id)).state == "done"
    assert [fire.job.id for _, fire in script.fires] == [job.id]
    assert [r.state for r in runs] == ["ok"]


def _iso(when: float) -> str:
    return dt.datetime.fromtimestamp(when, dt.UTC).isoformat()


@pytest.mark.postgres
async def test_in_a_cluster_tree_the_runner_recovers_a_node_that_dies_meanwhile_and_claims_as_its_member(
    postgres_store_config: StoreConfig, registry: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEAMCLAW_CLUSTER_SECRET", "cluster-secret-of-the-test-0123456789")
    table = {"enabled": True, "node_id": "here", "advertise_url": "http://127.0.0.1:18801", "lease_seconds": 3.0,
             "secret": {"env": "BEAMCLAW_CLUSTER_SECRET"}}  # fmt: skip
    clock = FakeClock(time.time())
    with (
        node(postgres_store_config, registry, "dies", clock) as dying,
        node(postgres_store_config, registry, "lives", clock) as living,
    ):
        running = {}
        for jobs in (dying, living):
            await add(jobs, clock)
            assert await claim_all(jobs, clock.now + 60) == 1
            (running[jobs.owner.id],) = await run(jobs, finish=False)
        script = Script(time.time)
        tree = scheduler_tree(SchedulerConfig(), None, script, time.time, dict, store=postgres_store_config)
        root = sv.Supervisor(
            [
                tools_tree({}, tmp_path).child_spec("tools"),
                cluster_tree(table, tmp_path, postgres_store_config).child_spec("cluster"),
                tree.child_spec("scheduler"),
            ],
            name="test_root",
        )
        async with sv.open_supervisor(root):
            member = await membership()
            assert member is not None
            dies(registry, dying)  # after this node started: found by the runner's rounds
            with trio.fail_after(60):  # only a bound for a hang
                while sql(dying.db, "SELECT state FROM runs WHERE id = ?", (running[dying.owner.id],)) != [
                    ("interrupted",)
                ]:
                    await trio.sleep(0.2)
            added = await add_job(
                agent_id="default", user_id="local:ada", channel="cli", kind="at", spec=_iso(time.time() + 1),
                message="check the news", created_by="cli", now=time.time(), min_interval=60,
            )  # fmt: skip
            with trio.fail_after(60):  # only a bound for a hang
                while not script.fires:
                    await trio.sleep(0.1)
            owners = sql(dying.db, "SELECT owner FROM runs WHERE job_id = ?", (added.id,))
            other = sql(dying.db, "SELECT state FROM runs WHERE id = ?", (running[living.owner.id],))
    assert owners == [(member.instance_id,)]
    assert other == [("running",)]  # a live node's run is never touched
