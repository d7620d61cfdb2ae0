"""The job database's tables, one schema for both backends, and a job as a row.

Version 1 is the tables as the scheduler has always written them, so an existing
``scheduler.db`` opens unchanged. PostgreSQL gets the same tables with its own types:
BIGINT integers, ``double precision`` times (epoch seconds, as the injected clocks give
them; a job stored before schedules were bounded is due at infinity), an identity for
run ids, and byte-ordered job ids (a prefix lookup must find what SQLite finds).

Version 2 records who claimed each run (``owner``, see `_owner`): with several nodes on
one database, a run is recovered only when its owner is gone, never while it runs.
A run claimed before version 2 has no owner: it is taken for an earlier start's.
"""

from __future__ import annotations

from typing import Any, Final

from beamclaw_base import Schema, Step, Tx

from ._job import HEARTBEAT, Job
from ._schedule import Kind, Schedule

_V1_SQLITE: Final = """
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

_V1_POSTGRES: Final = """
CREATE TABLE jobs (
    id TEXT COLLATE "C" PRIMARY KEY,
    agent_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL,
    spec TEXT NOT NULL,
    timezone TEXT NOT NULL,
    anchor double precision NOT NULL,
    message TEXT NOT NULL,
    state TEXT NOT NULL,
    next_due double precision,
    errors BIGINT NOT NULL DEFAULT 0,
    paused_reason TEXT NOT NULL DEFAULT '',
    purpose TEXT NOT NULL DEFAULT 'job',
    created_at double precision NOT NULL,
    created_by TEXT NOT NULL
);
CREATE INDEX jobs_due ON jobs(state, next_due);
CREATE TABLE runs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id TEXT COLLATE "C" NOT NULL,
    due double precision NOT NULL,
    attempt BIGINT NOT NULL,
    state TEXT NOT NULL,
    retry_at double precision,
    started_at double precision,
    finished_at double precision,
    detail TEXT NOT NULL DEFAULT '',
    UNIQUE (job_id, due, attempt)
);
CREATE INDEX runs_state ON runs(state);
CREATE INDEX runs_retry ON runs(retry_at);
CREATE TABLE delivered (
    job_id TEXT COLLATE "C" NOT NULL,
    digest TEXT NOT NULL,
    at double precision NOT NULL,
    PRIMARY KEY (job_id, digest)
);
"""

_V2: Final = """
ALTER TABLE runs ADD COLUMN owner TEXT;
CREATE INDEX runs_owner ON runs(owner, state);
"""

#: The job database, as `beamclaw_base.open_store` builds or upgrades it.
SCHEMA: Final = Schema("scheduler", (Step(sqlite=_V1_SQLITE, postgres=_V1_POSTGRES), Step.portable(_V2)))

JOB_COLUMNS: Final = (
    "id, agent_id, user_id, channel, kind, spec, timezone, anchor, message, state, next_due, errors, "
    "paused_reason, purpose, created_at, created_by"
)


def job_from_row(row: tuple[Any, ...]) -> Job:
    (id_, agent, user, channel, kind, spec, tz, anchor, message, state, next_due, errors, reason, purpose,
     created_at, created_by) = row  # fmt: skip
    schedule_kind: Kind = "every" if kind == HEARTBEAT else kind
    return Job(id_, agent, user, channel, Schedule(schedule_kind, spec, tz, anchor), message, state, next_due,
               created_at, created_by, errors, reason, purpose)  # fmt: skip


def insert_job(tx: Tx, job: Job) -> None:
    kind = HEARTBEAT if job.purpose == HEARTBEAT else job.schedule.kind
    tx.execute(
        f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 16)})",
        (job.id, job.agent_id, job.user_id, job.channel, kind, job.schedule.spec, job.schedule.timezone,
         job.schedule.anchor, job.message, job.state, job.next_due, job.errors, job.paused_reason, job.purpose,
         job.created_at, job.created_by),
    )  # fmt: skip
