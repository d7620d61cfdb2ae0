"""The jobs and their run log: SQLite (WAL) in the data dir, owned by the store process.

Exactly once per due time rests here. A due time is *claimed* (a run row, unique per
job, due time and try) in the same transaction that moves the job to its next due
time, before anything runs it; a runner or executor that crashes after that finds the
claim again, and one that crashes before it claims again. After a `kill -9`, a run
that had started is marked interrupted, never started again (its turn may have
answered), and a due time missed while the daemon was down runs once if it is within
``missed_grace_seconds`` and is recorded as missed if older: a backlog of intervals
is never replayed, since the next due time is always counted from now.

Each operation is a few rows, so it runs on the event loop in the store's process
(no thread hop, and deterministic under Trio's MockClock in tests).
"""

from __future__ import annotations

import contextlib
import random
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs

import beamclaw_core as core
import supervision as sv
from beamclaw_base import RetryPolicy
from beamclaw_obs import emit, scrub

from ._config import SchedulerConfig
from ._job import HEARTBEAT, Fire, Job, RunRecord
from ._requests import (
    AddJob,
    ChangeJob,
    Claim,
    ClaimedFires,
    Delivered,
    DeliveredRecently,
    FindJob,
    FinishRun,
    JobRuns,
    ListJobs,
    NextWake,
    Poke,
    RunningRuns,
    RunStarted,
    StoreRequest,
    SyncHeartbeats,
)
from ._schedule import Kind, Schedule

STORE: Final = "beamclaw_scheduler.store"
RUNNER: Final = "beamclaw_scheduler.runner"
EXECUTOR: Final = "beamclaw_scheduler.executor"
SCHEMA_VERSION: Final = 1
#: Claimed in one transaction at most; the runner claims again at once when it got this many.
CLAIM_BATCH: Final = 500
#: Runs kept per job in the log.
_RUNS_KEPT: Final = 50

Clock = Callable[[], float]
R = TypeVar("R")

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL,
    spec TEXT NOT NULL,
    timezone TEXT NOT NULL,
    anchor REAL NOT NULL,
    message TEXT NOT NULL,
    state TEXT NOT NULL,
    next_due REAL,
    errors INTEGER NOT NULL DEFAULT 0,
    paused_reason TEXT NOT NULL DEFAULT '',
    purpose TEXT NOT NULL DEFAULT 'job',
    created_at REAL NOT NULL,
    created_by TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_due ON jobs(state, next_due);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    due REAL NOT NULL,
    attempt INTEGER NOT NULL,
    state TEXT NOT NULL,
    retry_at REAL,
    started_at REAL,
    finished_at REAL,
    detail TEXT NOT NULL DEFAULT '',
    UNIQUE (job_id, due, attempt)
);
CREATE INDEX IF NOT EXISTS runs_state ON runs(state);
CREATE INDEX IF NOT EXISTS runs_retry ON runs(retry_at);
CREATE TABLE IF NOT EXISTS delivered (
    job_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (job_id, digest)
);
"""
_JOB_COLUMNS: Final = (
    "id, agent_id, user_id, channel, kind, spec, timezone, anchor, message, state, next_due, errors, "
    "paused_reason, purpose, created_at, created_by"
)


class StoreError(Exception):
    """The job database cannot be used (a newer format, a corrupt file); the message says which."""


class JobError(ValueError):
    """A request about jobs that cannot be done (no such job, too many jobs); the message says why."""


def open_jobs_database(path: Path | None) -> sqlite3.Connection:
    """Open (creating) the job database; *path* None keeps it in memory."""
    if path is not None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    db = sqlite3.connect(":memory:" if path is None else path, isolation_level=None, timeout=10.0)
    try:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StoreError(f"{path} has format version {version}, newer than this BeamClaw's {SCHEMA_VERSION}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    except sqlite3.DatabaseError as exc:
        db.close()
        raise StoreError(f"{path} cannot be used as the job database ({exc}); move it away to start afresh") from None
    return db


def _job(row: tuple[Any, ...]) -> Job:
    (id_, agent, user, channel, kind, spec, tz, anchor, message, state, next_due, errors, reason, purpose,
     created_at, created_by) = row  # fmt: skip
    schedule_kind: Kind = "every" if kind == HEARTBEAT else kind
    return Job(id_, agent, user, channel, Schedule(schedule_kind, spec, tz, anchor), message, state, next_due,
               created_at, created_by, errors, reason, purpose)  # fmt: skip


def retry_delay(config: SchedulerConfig, attempt: int, rng: random.Random | None = None) -> float:
    """Seconds before try *attempt* + 1: doubling from the base, capped, ±25% jitter (the
    backoff of every retry in BeamClaw; this one is a time stored with the run, not a wait)."""
    policy = RetryPolicy(None, config.retry_base_seconds, config.retry_max_seconds, jitter=0.25)
    return policy.delay(attempt, rng)


@attrs.define
class _State:
    db: sqlite3.Connection
    config: SchedulerConfig
    clock: Clock


def _poke(name: str) -> None:
    """Tell the runner (its next wake may be sooner) or the executor (claims wait): best effort."""
    with contextlib.suppress(sv.NoProc):
        sv.send(name, Poke())


class JobStore(sv.GenServer):
    """Job CRUD, claims, and the run log (see the module's docstring)."""

    def init(self, path: Path | None, config: SchedulerConfig, clock: Clock) -> _State:
        state = _State(open_jobs_database(path), config, clock)
        self._recover(state)
        return state

    def _recover(self, state: _State) -> None:
        """After a stop or a kill: runs that had started are interrupted, missed due times
        older than the grace window are recorded as missed."""
        now, db = state.clock(), state.db
        with core.immediate_transaction(db):
            interrupted = db.execute(
                "UPDATE runs SET state = 'interrupted', finished_at = ?, "
                "detail = 'the daemon stopped while it ran; not run again (it may have answered)' "
                "WHERE state = 'running' RETURNING job_id",
                (now,),
            ).fetchall()
            for (job_id,) in interrupted:
                self._failed_due(state, job_id, "interrupted by a stop of the daemon")
            cutoff = now - state.config.missed_grace_seconds
            db.execute(
                "UPDATE runs SET state = 'missed', detail = 'claimed before the daemon stopped, too long ago' "
                "WHERE state = 'claimed' AND due < ?",
                (cutoff,),
            )
            for row in db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE state = 'active' AND next_due < ?", (cutoff,)
            ).fetchall():
                job = _job(row)
                assert job.next_due is not None
                db.execute(
                    "INSERT OR IGNORE INTO runs (job_id, due, attempt, state, detail) VALUES (?, ?, 1, 'missed', ?)",
                    (job.id, job.next_due, "the daemon was not running at the time"),
                )
                upcoming = job.schedule.next_due(now)
                db.execute(
                    "UPDATE jobs SET next_due = ?, state = ? WHERE id = ?",
                    (upcoming, "active" if upcoming is not None else "done", job.id),
                )

    def _failed_due(self, state: _State, job_id: str, why: str) -> None:
        """A due time spent every try: count it, and pause the job past ``max_errors``."""
        db = state.db
        row = db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            return
        job = _job(row)
        errors = job.errors + 1
        if job.schedule.kind == "at":
            db.execute("UPDATE jobs SET errors = ?, state = 'done' WHERE id = ?", (errors, job_id))
        elif errors >= state.config.max_errors and job.state == "active":
            reason = f"paused after {errors} failed runs in a row; the last: {why}"[:500]
            db.execute(
                "UPDATE jobs SET errors = ?, state = 'paused', paused_reason = ? WHERE id = ?", (errors, reason, job_id)
            )
            emit("sched_job_paused", job_id=job_id, by="auto", reason=reason)
        else:
            db.execute("UPDATE jobs SET errors = ? WHERE id = ?", (errors, job_id))

    async def handle_call(self, request: StoreRequest, caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
        try:
            return sv.Reply(self._answer(request, state), state)
        except JobError as exc:
            sv.reply_error(caller, exc)
            return sv.NoReply(state)

    def _answer(self, request: StoreRequest, state: _State) -> Any:
        match request:
            case AddJob():
                return self._add(state, request)
            case ListJobs(agent, user, everything):
                return self._list(state, agent, user, everything)
            case FindJob(prefix):
                return self._find(state, prefix)
            case ChangeJob("cancel", prefix):
                job = self._find(state, prefix)
                state.db.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
                emit("sched_job_cancelled", job_id=job.id)
                return job
            case ChangeJob("pause", prefix):
                job = self._find(state, prefix)
                state.db.execute(
                    "UPDATE jobs SET state = 'paused', paused_reason = 'paused by hand' WHERE id = ?", (job.id,)
                )
                emit("sched_job_paused", job_id=job.id, by="manual", reason="")
                return self._find(state, job.id)
            case ChangeJob("resume", prefix):
                return self._resume(state, prefix)
            case Claim(now):
                return self._claim(state, now)
            case NextWake():
                return self._next_wake(state)
            case ClaimedFires():
                return self._claimed(state)
            case RunningRuns():
                return [run_id for (run_id,) in state.db.execute("SELECT id FROM runs WHERE state = 'running'")]
            case RunStarted(run_id):
                state.db.execute(
                    "UPDATE runs SET state = 'running', started_at = ? WHERE id = ? AND state = 'claimed'",
                    (state.clock(), run_id),
                )
                return None
            case FinishRun(run_id, outcome, detail):
                return self._finish(state, run_id, outcome, detail)
            case JobRuns(prefix):
                job = self._find(state, prefix)
                rows = state.db.execute(
                    "SELECT id, job_id, due, attempt, state, started_at, finished_at, detail FROM runs "
                    "WHERE job_id = ? ORDER BY id DESC LIMIT ?",
                    (job.id, _RUNS_KEPT),
                ).fetchall()
                return [RunRecord(*row) for row in rows]
            case DeliveredRecently(job_id, digest, since):
                row = state.db.execute(
                    "SELECT at FROM delivered WHERE job_id = ? AND digest = ?", (job_id, digest)
                ).fetchone()
                return row is not None and row[0] >= since
            case Delivered(job_id, digest):
                state.db.execute(
                    "INSERT OR REPLACE INTO delivered (job_id, digest, at) VALUES (?, ?, ?)",
                    (job_id, digest, state.clock()),
                )
                return None
            case SyncHeartbeats(wanted):
                return self._sync_heartbeats(state, wanted)
        raise ValueError(f"unknown scheduler store request {request!r}")

    def _add(self, state: _State, request: AddJob) -> Job:
        schedule, agent, user = request.schedule, request.agent_id, request.user_id
        self._check_quota(state, "agent_id", agent, "max_jobs_per_agent", f"agent {agent!r}")
        self._check_quota(state, "user_id", user, "max_jobs_per_user", f"user {user!r}")
        now = state.clock()
        job = Job(
            secrets.token_hex(4), agent, user, request.channel, schedule, request.message, "active",
            schedule.first_due(now), now, request.created_by,
        )  # fmt: skip
        self._insert(state, job)
        emit("sched_job_created", job_id=job.id, agent_id=agent, schedule=schedule.describe(), by=job.created_by)
        _poke(RUNNER)
        return job

    @staticmethod
    def _check_quota(state: _State, column: str, value: str, key: str, who: str) -> None:
        """Refuse a new job past the limit *key* of the config for the jobs (not done) whose
        *column* is *value*: per agent, and per user across agents, so that one user cannot
        take an agent's whole quota from the others."""
        limit: int = getattr(state.config, key)
        (count,) = state.db.execute(
            f"SELECT count(*) FROM jobs WHERE {column} = ? AND purpose = 'job' AND state != 'done'", (value,)
        ).fetchone()
        if count >= limit:
            raise JobError(f"{who} has {count} jobs, the most allowed (scheduler.{key} = {limit}): cancel one first")

    @staticmethod
    def _insert(state: _State, job: Job) -> None:
        kind = HEARTBEAT if job.purpose == HEARTBEAT else job.schedule.kind
        state.db.execute(
            f"INSERT INTO jobs ({_JOB_COLUMNS}) VALUES ({', '.join('?' * 16)})",
            (job.id, job.agent_id, job.user_id, job.channel, kind, job.schedule.spec, job.schedule.timezone,
             job.schedule.anchor, job.message, job.state, job.next_due, job.errors, job.paused_reason, job.purpose,
             job.created_at, job.created_by),
        )  # fmt: skip

    def _list(self, state: _State, agent: str | None, user: str | None, everything: bool) -> list[Job]:
        query, params = f"SELECT {_JOB_COLUMNS} FROM jobs WHERE purpose = 'job'", list[str]()
        if not everything:
            query += " AND state != 'done'"
        if agent is not None:
            query, params = query + " AND agent_id = ?", [*params, agent]
        if user is not None:
            query, params = query + " AND user_id = ?", [*params, user]
        return [_job(row) for row in state.db.execute(query + " ORDER BY created_at", params)]

    def _find(self, state: _State, prefix: str) -> Job:
        if not prefix or len(prefix) > 64 or not prefix.replace("-", "").replace("_", "").isalnum():
            raise JobError(f"{prefix!r} is not a job id: `beamclaw scheduler list` shows them")
        rows = state.db.execute(
            f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ? OR (substr(id, 1, ?) = ? AND purpose = 'job')",
            (prefix, len(prefix), prefix),
        ).fetchall()
        exact = [row for row in rows if row[0] == prefix]
        if exact or len(rows) == 1:
            return _job((exact or rows)[0])
        what = "several jobs" if rows else "no job"
        raise JobError(f"{what} start with {prefix!r}: `beamclaw scheduler list` shows them")

    def _resume(self, state: _State, prefix: str) -> Job:
        job = self._find(state, prefix)
        if job.state == "done":
            raise JobError(f"job {job.id} is done (it ran at its one time); add a new one")
        upcoming = job.next_due if job.next_due is not None and job.next_due >= state.clock() else None
        upcoming = upcoming or job.schedule.next_due(state.clock())
        state.db.execute(
            "UPDATE jobs SET state = 'active', paused_reason = '', errors = 0, next_due = ? WHERE id = ?",
            (upcoming, job.id),
        )
        _poke(RUNNER)
        return self._find(state, job.id)

    def _claim(self, state: _State, now: float) -> int:
        """Claim what is due at *now* (new due times, and retries whose time came); return
        how many. The executor is told; it takes them with ``claimed``."""
        db, claimed = state.db, 0
        with core.immediate_transaction(db):
            due = db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE state = 'active' AND next_due <= ? ORDER BY next_due LIMIT ?",
                (now, CLAIM_BATCH),
            ).fetchall()
            for row in due:
                job = _job(row)
                assert job.next_due is not None
                db.execute(
                    "INSERT OR IGNORE INTO runs (job_id, due, attempt, state) VALUES (?, ?, 1, 'claimed')",
                    (job.id, job.next_due),
                )
                # From now, not from the due time: a backlog runs once, never once per interval.
                db.execute(
                    "UPDATE jobs SET next_due = ? WHERE id = ?", (job.schedule.next_due(max(job.next_due, now)), job.id)
                )
                claimed += 1
            retries = db.execute(
                "SELECT id, job_id, due, attempt FROM runs WHERE retry_at IS NOT NULL AND retry_at <= ? LIMIT ?",
                (now, CLAIM_BATCH),
            ).fetchall()
            for run_id, job_id, due_at, attempt in retries:
                db.execute("UPDATE runs SET retry_at = NULL WHERE id = ?", (run_id,))
                if db.execute("SELECT 1 FROM jobs WHERE id = ? AND state = 'active'", (job_id,)).fetchone():
                    db.execute(
                        "INSERT OR IGNORE INTO runs (job_id, due, attempt, state) VALUES (?, ?, ?, 'claimed')",
                        (job_id, due_at, attempt + 1),
                    )
                    claimed += 1
        if claimed:
            _poke(EXECUTOR)
        return claimed

    def _next_wake(self, state: _State) -> float | None:
        (due,) = state.db.execute("SELECT min(next_due) FROM jobs WHERE state = 'active'").fetchone()
        (retry,) = state.db.execute("SELECT min(retry_at) FROM runs WHERE retry_at IS NOT NULL").fetchone()
        times = [t for t in (due, retry) if t is not None]
        return min(times) if times else None

    def _claimed(self, state: _State) -> list[Fire]:
        fires = []
        for run_id, job_id, due, attempt in state.db.execute(
            "SELECT id, job_id, due, attempt FROM runs WHERE state = 'claimed' ORDER BY due, id"
        ).fetchall():
            row = state.db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:  # cancelled after the claim
                state.db.execute("UPDATE runs SET state = 'cancelled' WHERE id = ?", (run_id,))
                continue
            fires.append(Fire(run_id, _job(row), due, attempt))
        return fires

    def _finish(self, state: _State, run_id: int, outcome: str, detail: str) -> str:
        """Record how a run ended (ok, failed, skipped, suppressed); plan a retry or count the failure."""
        db, now = state.db, state.clock()
        row = db.execute("SELECT job_id, attempt, state FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None or row[2] not in {"claimed", "running"}:
            return "ignored"  # already settled (a late report after a restart)
        job_id, attempt, _ = row
        detail = scrub(detail[:1000])  # a model's error may quote what it was sent
        with core.immediate_transaction(db):
            retry_at = None
            if outcome == "failed" and attempt < state.config.retry_attempts:
                retry_at = now + retry_delay(state.config, attempt)
            db.execute(
                "UPDATE runs SET state = ?, finished_at = ?, detail = ?, retry_at = ? WHERE id = ?",
                (outcome, now, detail, retry_at, run_id),
            )
            if outcome == "failed" and retry_at is None:
                self._failed_due(state, job_id, detail)
            elif outcome != "failed":
                db.execute("UPDATE jobs SET errors = 0 WHERE id = ?", (job_id,))
                db.execute("UPDATE jobs SET state = 'done' WHERE id = ? AND kind = 'at'", (job_id,))
            db.execute(
                "DELETE FROM runs WHERE job_id = ? AND id NOT IN "
                "(SELECT id FROM runs WHERE job_id = ? ORDER BY id DESC LIMIT ?)",
                (job_id, job_id, _RUNS_KEPT),
            )
        if retry_at is not None:
            _poke(RUNNER)
        event = {"ok": "sched_job_completed", "failed": "sched_job_failed"}.get(outcome, "sched_suppressed")
        emit(event, job_id=job_id, run_id=run_id, attempt=attempt, outcome=outcome, retry=retry_at is not None)
        return "retry" if retry_at is not None else outcome

    def _sync_heartbeats(self, state: _State, wanted: dict[str, float]) -> None:
        """One heartbeat job per agent in *wanted* (agent -> interval), none for the others."""
        db, now = state.db, state.clock()
        existing = {
            row[1]: _job(row)
            for row in db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE purpose = ?", (HEARTBEAT,)).fetchall()
        }
        for agent, job in existing.items():
            if agent not in wanted or float(job.schedule.spec) != wanted[agent]:
                db.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
        for agent, interval in wanted.items():
            if agent in existing and float(existing[agent].schedule.spec) == interval:
                continue
            schedule = Schedule("every", repr(interval), "UTC", anchor=now)
            job = Job(f"heartbeat-{agent}", agent, "", "", schedule, "", "active", schedule.first_due(now), now,
                      "scheduler", purpose=HEARTBEAT)  # fmt: skip
            self._insert(state, job)
        _poke(RUNNER)

    def terminate(self, reason: Any, state: _State) -> None:
        state.db.close()


async def store_call(request: sv.Request[R], timeout: float = 10.0) -> R:
    """A request to the job store, riding through a restart of it."""
    return await sv.call(STORE, request, timeout=timeout, restart_wait=2.0)
