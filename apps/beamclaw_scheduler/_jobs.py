"""The job store's answers: each request is one transaction on the store's `Database`.

Exactly once per due time rests here. A due time is *claimed* (a run row, unique per
job, due time and try) in the same transaction that moves the job to its next due
time, before anything runs it; a runner or executor that crashes after that finds the
claim again, and one that crashes before it claims again. Two stores on one database
claiming at once claim each due time once: the run row's unique key admits one claim
(the other's insert does nothing), and the job moves on only from the due time it was
read at. Each claim names its owner (`_owner`): this store's start on one node, the
node's membership in a cluster. Once the owner is gone (the daemon was killed, or the
node was taken for dead), a run it had started is marked interrupted, never started
again (its turn may have answered), and its late finish is refused; a claim it had not
started yet passes to the store that finds it, and runs once. A due time missed while
no store was running runs once if it is within ``missed_grace_seconds`` and is
recorded as missed if older: a backlog of intervals is never replayed, since the next
due time is always counted from now.

A transaction may be run again (PostgreSQL retries a serialisation failure, and a
commit can be in doubt), so the work only touches the database: the time is read
before it starts, a new job's id is carried by its request, and what others must hear
(events, pokes to the runner or executor) comes back in the `Answer`, to be told once
the transaction committed. The one exception is the wake-up of the other nodes' runners
(`WAKE_CHANNEL`): PostgreSQL sends it when, and only if, the transaction commits.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final, Generic, Literal, TypeVar

import attrs

from beamclaw_base import Database, RetryPolicy, Tx, notify
from beamclaw_obs import scrub

from ._config import SchedulerConfig
from ._job import HEARTBEAT, Fire, Job, RunRecord
from ._owner import Owner
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
    RecoverRuns,
    RunningRuns,
    RunStarted,
    StoreRequest,
    SyncHeartbeats,
)
from ._schedule import Schedule
from ._tables import JOB_COLUMNS, insert_job, job_from_row

#: Claimed in one transaction at most; the runner claims again at once when it got this many.
CLAIM_BATCH: Final = 500
#: Runs kept per job in the log.
RUNS_KEPT: Final = 50
#: The channel that wakes every node's runner (payload: the job id) when a job is added,
#: resumed or has a retry planned: its next due time may be sooner than the runners sleep.
WAKE_CHANNEL: Final = "bc_sched"
#: The requests that only read: one snapshot, no write lock.
_READS: Final = (ListJobs, FindJob, JobRuns, NextWake, RunningRuns, DeliveredRecently)

Clock = Callable[[], float]
#: Whom a change concerns: the runner (its next wake may be sooner) or the executor (claims wait).
Whom = Literal["runner", "executor"]
R = TypeVar("R")


class JobError(ValueError):
    """A request about jobs that cannot be done (no such job, too many jobs); the message says why."""


@attrs.define
class Answer(Generic[R]):
    """A request's reply, and what to tell once its transaction committed (never before:
    a transaction run twice would tell twice, one rolled back would tell a lie)."""

    reply: R
    events: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    pokes: set[Whom] = attrs.field(factory=set)
    #: The jobs whose next due time may be sooner than the runners of every node sleep.
    woken: list[str] = attrs.field(factory=list)

    def emit(self, event: str, **data: Any) -> None:
        self.events.append((event, data))

    def wake(self, job_id: str) -> None:
        """Wake this node's runner once committed, and every node's (`WAKE_CHANNEL`)."""
        self.pokes.add("runner")
        self.woken.append(job_id)


def retry_delay(config: SchedulerConfig, attempt: int, rng: random.Random | None = None) -> float:
    """Seconds before try *attempt* + 1: doubling from the base, capped, ±25% jitter (the
    backoff of every retry in BeamClaw; this one is a time stored with the run, not a wait)."""
    policy = RetryPolicy(None, config.retry_base_seconds, config.retry_max_seconds, jitter=0.25)
    return policy.delay(attempt, rng)


class Jobs:
    """Job CRUD, claims and the run log on *db*, with *clock* for the time of a request.

    ``answer`` runs each statement on the event loop when the backend allows it (SQLite:
    a few rows, no thread hop, deterministic under Trio's MockClock), in a thread when
    it does not (PostgreSQL). Claims are made as *owner* (a new one per store by
    default: one node); the store sets a new one when its node joins the cluster again.
    *recover_every* is how often `RecoverRuns` is worth asking (None: one node).
    """

    def __init__(
        self, db: Database, config: SchedulerConfig, clock: Clock, owner: Owner | None = None,
        recover_every: float | None = None,
    ) -> None:  # fmt: skip
        self.db = db
        self.owner = owner or Owner()
        self.recover_every = recover_every
        self._config = config
        self._clock = clock

    async def answer(self, request: StoreRequest) -> Answer[Any]:
        """Do *request* at the clock's time; `JobError` when it cannot be done."""
        work = self.work(request, self._clock())
        return await self.db.run(work, write=not isinstance(request, _READS), inline=True)

    def work(self, request: StoreRequest, now: float) -> Callable[[Tx], Answer[Any]]:
        """*request* at *now* as one transaction's work (what `answer` runs)."""

        def work(tx: Tx) -> Answer[Any]:
            answer: Answer[Any] = Answer(None)
            answer.reply = self._do(tx, answer, request, now)
            for job_id in answer.woken:
                notify(tx, WAKE_CHANNEL, job_id)
            return answer

        return work

    def _do(self, tx: Tx, answer: Answer[Any], request: StoreRequest, now: float) -> Any:
        match request:
            case AddJob():
                return self._add(tx, answer, request, now)
            case ListJobs(agent, user, everything):
                return self._list(tx, agent, user, everything)
            case FindJob(prefix):
                return self._find(tx, prefix)
            case ChangeJob("cancel", prefix):
                job = self._find(tx, prefix)
                tx.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
                answer.emit("sched_job_cancelled", job_id=job.id)
                return job
            case ChangeJob("pause", prefix):
                job = self._find(tx, prefix)
                tx.execute("UPDATE jobs SET state = 'paused', paused_reason = 'paused by hand' WHERE id = ?", (job.id,))
                answer.emit("sched_job_paused", job_id=job.id, by="manual", reason="")
                return self._find(tx, job.id)
            case ChangeJob("resume", prefix):
                return self._resume(tx, answer, prefix, now)
            case Claim(at):
                return self._claim(tx, answer, at)
            case NextWake():
                return self._next_wake(tx)
            case ClaimedFires():
                return self._claimed(tx)
            case RunningRuns():
                running = tx.execute("SELECT id FROM runs WHERE state = 'running' AND owner = ?", (self.owner.id,))
                return [run_id for (run_id,) in running.fetchall()]
            case RunStarted(run_id):
                acting, params = self.owner.acting()
                return bool(
                    tx.execute(
                        "UPDATE runs SET state = 'running', started_at = ? "
                        f"WHERE id = ? AND state = 'claimed' AND owner = ? AND {acting} RETURNING id",
                        (now, run_id, self.owner.id, *params),
                    ).fetchall()
                )
            case FinishRun():
                return self._finish(tx, answer, request, now)
            case JobRuns(prefix):
                job = self._find(tx, prefix)
                rows = tx.execute(
                    "SELECT id, job_id, due, attempt, state, started_at, finished_at, detail FROM runs "
                    "WHERE job_id = ? ORDER BY id DESC LIMIT ?",
                    (job.id, RUNS_KEPT),
                ).fetchall()
                return [RunRecord(*row) for row in rows]
            case DeliveredRecently(job_id, digest, since):
                row = tx.execute(
                    "SELECT at FROM delivered WHERE job_id = ? AND digest = ?", (job_id, digest)
                ).fetchone()
                return row is not None and row[0] >= since
            case Delivered(job_id, digest):
                tx.execute(
                    "INSERT INTO delivered (job_id, digest, at) VALUES (?, ?, ?) "
                    "ON CONFLICT (job_id, digest) DO UPDATE SET at = excluded.at",
                    (job_id, digest, now),
                )
                return None
            case SyncHeartbeats(wanted, dropped):
                return self._sync_heartbeats(tx, answer, wanted, dropped, now)
            case RecoverRuns():
                self._recover(tx, answer, now)
                return self.recover_every
        raise ValueError(f"unknown scheduler store request {request!r}")

    def _recover(self, tx: Tx, answer: Answer[Any], now: float) -> None:
        """The runs of owners that are gone: those that had started are interrupted (each
        once: the update that finds it running is the one that tells), claims not started
        pass to this store (or are missed, past the grace window); then due times older
        than the grace window are recorded as missed."""
        alive, params = self.owner.alive("owner")
        who = "its node stopped or was taken for dead" if self.owner.cluster else "the daemon stopped"
        interrupted = tx.execute(
            f"UPDATE runs SET state = 'interrupted', finished_at = ?, detail = ? "
            f"WHERE state = 'running' AND NOT {alive} RETURNING job_id",
            (now, f"{who} while it ran; not run again (it may have answered)", *params),
        ).fetchall()
        for (job_id,) in interrupted:
            self._failed_due(tx, answer, job_id, f"interrupted: {who} while it ran")
        cutoff = now - self._config.missed_grace_seconds
        tx.execute(
            f"UPDATE runs SET state = 'missed', detail = ? WHERE state = 'claimed' AND due < ? AND NOT {alive}",
            (f"claimed before {who}, too long ago", cutoff, *params),
        )
        taken = tx.execute(
            f"UPDATE runs SET owner = ? WHERE state = 'claimed' AND NOT {alive} RETURNING id",
            (self.owner.id, *params),
        ).fetchall()
        if taken:
            answer.pokes.add("executor")
        for row in tx.execute(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE state = 'active' AND next_due < ?", (cutoff,)
        ).fetchall():
            job = job_from_row(row)
            assert job.next_due is not None
            tx.execute(
                "INSERT INTO runs (job_id, due, attempt, state, detail) VALUES (?, ?, 1, 'missed', ?) "
                "ON CONFLICT (job_id, due, attempt) DO NOTHING",
                (job.id, job.next_due, "the daemon was not running at the time"),
            )
            upcoming = job.schedule.next_due(now)
            tx.execute(
                "UPDATE jobs SET next_due = ?, state = ? WHERE id = ?",
                (upcoming, "active" if upcoming is not None else "done", job.id),
            )

    def _failed_due(self, tx: Tx, answer: Answer[Any], job_id: str, why: str) -> None:
        """A due time spent every try: count it, and pause the job past ``max_errors``."""
        row = tx.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            return
        job = job_from_row(row)
        errors = job.errors + 1
        if job.schedule.kind == "at":
            tx.execute("UPDATE jobs SET errors = ?, state = 'done' WHERE id = ?", (errors, job_id))
        elif errors >= self._config.max_errors and job.state == "active":
            reason = f"paused after {errors} failed runs in a row; the last: {why}"[:500]
            tx.execute(
                "UPDATE jobs SET errors = ?, state = 'paused', paused_reason = ? WHERE id = ?", (errors, reason, job_id)
            )
            answer.emit("sched_job_paused", job_id=job_id, by="auto", reason=reason)
        else:
            tx.execute("UPDATE jobs SET errors = ? WHERE id = ?", (errors, job_id))

    def _add(self, tx: Tx, answer: Answer[Any], request: AddJob, now: float) -> Job:
        schedule, agent, user = request.schedule, request.agent_id, request.user_id
        for field in ("agent_id", "user_id", "channel", "message", "created_by"):
            if "\x00" in getattr(request, field):
                raise JobError(f"a job's {field} cannot hold a NUL character (\\x00)")
        row = tx.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (request.job_id,)).fetchone()
        if row is not None:  # this very request, committed by a try whose answer was lost
            job = job_from_row(row)
            if (job.agent_id, job.user_id, job.message) != (agent, user, request.message):
                raise JobError(f"job id {request.job_id} is taken: add the job again")
        else:
            # The count and the insert in one write transaction: two adds at once cannot
            # both pass the last free place.
            self._check_quota(tx, "agent_id", agent, "max_jobs_per_agent", f"agent {agent!r}")
            self._check_quota(tx, "user_id", user, "max_jobs_per_user", f"user {user!r}")
            job = Job(
                request.job_id, agent, user, request.channel, schedule, request.message, "active",
                schedule.first_due(now), now, request.created_by,
            )  # fmt: skip
            insert_job(tx, job)
        answer.emit("sched_job_created", job_id=job.id, agent_id=agent, schedule=schedule.describe(), by=job.created_by)
        answer.wake(job.id)
        return job

    def _check_quota(self, tx: Tx, column: str, value: str, key: str, who: str) -> None:
        """Refuse a new job past the limit *key* of the config for the jobs (not done) whose
        *column* is *value*: per agent, and per user across agents, so that one user cannot
        take an agent's whole quota from the others."""
        limit: int = getattr(self._config, key)
        (count,) = tx.execute(
            f"SELECT count(*) FROM jobs WHERE {column} = ? AND purpose = 'job' AND state != 'done'", (value,)
        ).fetchone()
        if count >= limit:
            raise JobError(f"{who} has {count} jobs, the most allowed (scheduler.{key} = {limit}): cancel one first")

    @staticmethod
    def _list(tx: Tx, agent: str | None, user: str | None, everything: bool) -> list[Job]:
        if "\x00" in f"{agent}{user}":  # no job holds one (`_add`), and PostgreSQL's text cannot
            return []
        query, params = f"SELECT {JOB_COLUMNS} FROM jobs WHERE purpose = 'job'", list[str]()
        if not everything:
            query += " AND state != 'done'"
        if agent is not None:
            query, params = query + " AND agent_id = ?", [*params, agent]
        if user is not None:
            query, params = query + " AND user_id = ?", [*params, user]
        return [job_from_row(row) for row in tx.execute(query + " ORDER BY created_at, id", params).fetchall()]

    @staticmethod
    def _find(tx: Tx, prefix: str) -> Job:
        if not prefix or len(prefix) > 64 or not prefix.replace("-", "").replace("_", "").isalnum():
            raise JobError(f"{prefix!r} is not a job id: `beamclaw scheduler list` shows them")
        rows = tx.execute(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ? OR (substr(id, 1, ?) = ? AND purpose = 'job')",
            (prefix, len(prefix), prefix),
        ).fetchall()
        exact = [row for row in rows if row[0] == prefix]
        if exact or len(rows) == 1:
            return job_from_row((exact or rows)[0])
        what = "several jobs" if rows else "no job"
        raise JobError(f"{what} start with {prefix!r}: `beamclaw scheduler list` shows them")

    def _resume(self, tx: Tx, answer: Answer[Any], prefix: str, now: float) -> Job:
        job = self._find(tx, prefix)
        if job.state == "done":
            raise JobError(f"job {job.id} is done (it ran at its one time); add a new one")
        upcoming = job.next_due if job.next_due is not None and job.next_due >= now else None
        upcoming = upcoming or job.schedule.next_due(now)
        tx.execute(
            "UPDATE jobs SET state = 'active', paused_reason = '', errors = 0, next_due = ? WHERE id = ?",
            (upcoming, job.id),
        )
        answer.wake(job.id)
        return self._find(tx, job.id)

    def _claim(self, tx: Tx, answer: Answer[Any], now: float) -> int:
        """Claim what is due at *now* (new due times, and retries whose time came) as this
        store's owner; return how many. The executor is told; it takes them with
        ``claimed``. A node the cluster took for dead claims nothing."""
        acting, params = self.owner.acting()
        if not tx.execute(f"SELECT 1 WHERE {acting}", params).fetchall():
            return 0
        claimed = 0
        due = tx.execute(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE state = 'active' AND next_due <= ? ORDER BY next_due LIMIT ?",
            (now, CLAIM_BATCH),
        ).fetchall()
        for row in due:
            job = job_from_row(row)
            assert job.next_due is not None
            # The unique key admits one claim of a due time, whoever else claims it at once.
            claimed += len(
                tx.execute(
                    "INSERT INTO runs (job_id, due, attempt, state, owner) VALUES (?, ?, 1, 'claimed', ?) "
                    "ON CONFLICT (job_id, due, attempt) DO NOTHING RETURNING id",
                    (job.id, job.next_due, self.owner.id),
                ).fetchall()
            )
            # From now, not from the due time: a backlog runs once, never once per interval.
            # Only from the due time read above: a claimer that moved it first has moved it.
            upcoming = job.schedule.next_due(max(job.next_due, now))
            tx.execute("UPDATE jobs SET next_due = ? WHERE id = ? AND next_due = ?", (upcoming, job.id, job.next_due))
        retries = tx.execute(
            "SELECT id, job_id, due, attempt FROM runs WHERE retry_at IS NOT NULL AND retry_at <= ? LIMIT ?",
            (now, CLAIM_BATCH),
        ).fetchall()
        for run_id, job_id, due_at, attempt in retries:
            taken = tx.execute(
                "UPDATE runs SET retry_at = NULL WHERE id = ? AND retry_at IS NOT NULL RETURNING id", (run_id,)
            ).fetchall()
            if taken and tx.execute("SELECT 1 FROM jobs WHERE id = ? AND state = 'active'", (job_id,)).fetchone():
                claimed += len(
                    tx.execute(
                        "INSERT INTO runs (job_id, due, attempt, state, owner) VALUES (?, ?, ?, 'claimed', ?) "
                        "ON CONFLICT (job_id, due, attempt) DO NOTHING RETURNING id",
                        (job_id, due_at, attempt + 1, self.owner.id),
                    ).fetchall()
                )
        if claimed:
            answer.pokes.add("executor")
        return claimed

    @staticmethod
    def _next_wake(tx: Tx) -> float | None:
        (due,) = tx.execute("SELECT min(next_due) FROM jobs WHERE state = 'active'").fetchone()
        (retry,) = tx.execute("SELECT min(retry_at) FROM runs WHERE retry_at IS NOT NULL").fetchone()
        times = [t for t in (due, retry) if t is not None]
        return min(times) if times else None

    def _claimed(self, tx: Tx) -> list[Fire]:
        """This store's claims not started yet (another node's are its own to run)."""
        fires = []
        for run_id, job_id, due, attempt in tx.execute(
            "SELECT id, job_id, due, attempt FROM runs WHERE state = 'claimed' AND owner = ? ORDER BY due, id",
            (self.owner.id,),
        ).fetchall():
            row = tx.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:  # cancelled after the claim
                tx.execute("UPDATE runs SET state = 'cancelled' WHERE id = ?", (run_id,))
                continue
            fires.append(Fire(run_id, job_from_row(row), due, attempt))
        return fires

    def _finish(self, tx: Tx, answer: Answer[Any], request: FinishRun, now: float) -> str:
        """Record how a run ended (ok, failed, skipped, suppressed); plan a retry or count the
        failure. Only while the run is still this owner's and the owner may act: a run that
        was recovered (its node taken for dead) stays as it was told."""
        run_id, outcome = request.run_id, request.outcome
        acting, params = self.owner.acting()
        row = tx.execute(
            f"SELECT job_id, attempt FROM runs WHERE id = ? AND owner = ? AND state IN ('claimed', 'running') "
            f"AND {acting}",
            (run_id, self.owner.id, *params),
        ).fetchone()
        if row is None:
            return "ignored"  # already settled, or no longer ours (a late report after a restart)
        job_id, attempt = row
        # A model's error may quote what it was sent (scrubbed), or hold a NUL, which
        # PostgreSQL's text refuses: the record of a run is kept, with U+FFFD in its place.
        detail = scrub(request.detail[:1000]).replace("\x00", "\ufffd")
        retry_at = None
        if outcome == "failed" and attempt < self._config.retry_attempts:
            retry_at = now + retry_delay(self._config, attempt)
        tx.execute(
            "UPDATE runs SET state = ?, finished_at = ?, detail = ?, retry_at = ? WHERE id = ?",
            (outcome, now, detail, retry_at, run_id),
        )
        if outcome == "failed" and retry_at is None:
            self._failed_due(tx, answer, job_id, detail)
        elif outcome != "failed":
            tx.execute("UPDATE jobs SET errors = 0 WHERE id = ?", (job_id,))
            tx.execute("UPDATE jobs SET state = 'done' WHERE id = ? AND kind = 'at'", (job_id,))
        tx.execute(
            "DELETE FROM runs WHERE job_id = ? AND id NOT IN "
            "(SELECT id FROM runs WHERE job_id = ? ORDER BY id DESC LIMIT ?)",
            (job_id, job_id, RUNS_KEPT),
        )
        if retry_at is not None:
            answer.wake(job_id)
        event = {"ok": "sched_job_completed", "failed": "sched_job_failed"}.get(outcome, "sched_suppressed")
        answer.emit(event, job_id=job_id, run_id=run_id, attempt=attempt, outcome=outcome, retry=retry_at is not None)
        return "retry" if retry_at is not None else outcome

    @staticmethod
    def _sync_heartbeats(
        tx: Tx, answer: Answer[Any], wanted: dict[str, float], dropped: frozenset[str] | None, now: float
    ) -> None:
        """A heartbeat job for each agent in *wanted* without one; the *dropped* agents' go
        (None: every agent's not in *wanted*, and a changed interval is set anew).

        Every node syncs from its own configuration, and the same rows come out whichever
        syncs first or twice (a job's id is its agent's). Only a start replaces what is
        stored: a node whose configuration differs (a rolling change) sets it once, and
        the others do not set theirs back every minute."""
        existing = {
            row[1]: job_from_row(row)
            for row in tx.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE purpose = ?", (HEARTBEAT,)).fetchall()
        }
        for agent, job in existing.items():
            changed = dropped is None and (agent not in wanted or float(job.schedule.spec) != wanted[agent])
            if changed or (dropped is not None and agent in dropped):
                tx.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
        for agent, interval in wanted.items():
            if agent in existing and (dropped is not None or float(existing[agent].schedule.spec) == interval):
                continue
            schedule = Schedule("every", repr(interval), "UTC", anchor=now)
            job = Job(f"heartbeat-{agent}", agent, "", "", schedule, "", "active", schedule.first_due(now), now,
                      "scheduler", purpose=HEARTBEAT)  # fmt: skip
            insert_job(tx, job)
            answer.wake(job.id)
