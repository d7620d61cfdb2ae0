"""The requests the job store answers, each typed with its reply (`supervision.Request`)."""

from __future__ import annotations

import secrets
from typing import Literal

import attrs

import supervision as sv

from ._job import Fire, Job, RunRecord
from ._schedule import Schedule

#: How a run ended, as the executor reports it.
Outcome = Literal["ok", "failed", "skipped", "suppressed"]


@attrs.frozen
class AddJob(sv.Request[Job]):
    """A new active job (quota checked per agent and per user).

    Its id is drawn with the request, so a store that adds it again (a commit in doubt,
    tried once more) finds the job it added rather than adding a second; 64 random bits,
    so that jobs added through different nodes never share one.
    """

    agent_id: str
    user_id: str
    channel: str
    schedule: Schedule
    message: str
    created_by: str
    job_id: str = attrs.field(factory=lambda: secrets.token_hex(8))


@attrs.frozen
class ListJobs(sv.Request[list[Job]]):
    """Jobs not done (or all, *everything*), of one agent and/or user when given."""

    agent_id: str | None
    user_id: str | None
    everything: bool


@attrs.frozen
class FindJob(sv.Request[Job]):
    """The one job whose id starts with *prefix* (`JobError` for none or several)."""

    prefix: str


@attrs.frozen
class ChangeJob(sv.Request[Job]):
    """Cancel, pause or resume the job whose id starts with *prefix*."""

    action: Literal["cancel", "pause", "resume"]
    prefix: str


@attrs.frozen
class JobRuns(sv.Request[list[RunRecord]]):
    """The newest runs of the job whose id starts with *prefix*."""

    prefix: str


@attrs.frozen
class Claim(sv.Request[int]):
    """Claim what is due at *now*; the reply is how many were claimed."""

    now: float


@attrs.frozen
class NextWake(sv.Request[float | None]):
    """The nearest due time or retry time; None when nothing is planned."""


@attrs.frozen
class ClaimedFires(sv.Request[list[Fire]]):
    """The claims waiting for the executor, oldest due time first."""


@attrs.frozen
class RunningRuns(sv.Request[list[int]]):
    """The runs marked running (after an executor restart: none of them finished)."""


@attrs.frozen
class RunStarted(sv.Request[bool]):
    """The executor starts the claimed run *run_id*; False: it is no longer this store's
    to start (its node was taken for dead and another took the claim over)."""

    run_id: int


@attrs.frozen
class FinishRun(sv.Request[str]):
    """Record how a run ended; the reply is the outcome, or "retry" when one is planned."""

    run_id: int
    outcome: Outcome
    detail: str


@attrs.frozen
class DeliveredRecently(sv.Request[bool]):
    """Whether the reply with *digest* was delivered for the job since *since*."""

    job_id: str
    digest: str
    since: float


@attrs.frozen
class Delivered(sv.Request[None]):
    """The reply with *digest* was delivered for the job now."""

    job_id: str
    digest: str


@attrs.frozen
class SyncHeartbeats(sv.Request[None]):
    """A heartbeat job for each agent in *wanted* (agent -> interval in seconds) that has
    none; the ones of the agents in *dropped* go. *dropped* None (at start): every other
    agent's goes too, and a changed interval is set."""

    wanted: dict[str, float]
    dropped: frozenset[str] | None = None


@attrs.frozen
class RecoverRuns(sv.Request[float | None]):
    """Recover the runs whose owner is gone (see `_owner`); the reply is the seconds after
    which to look again (a third of the cluster's lease), None on one node (nothing can
    go while this store runs)."""


@attrs.frozen
class Poke:
    """Sent by the store, not asked: the runner's next wake may be sooner, or claims wait
    for the executor."""


#: Every request the store answers.
StoreRequest = (
    AddJob | ListJobs | FindJob | ChangeJob | JobRuns | Claim | NextWake | ClaimedFires | RunningRuns | RunStarted
    | FinishRun | DeliveredRecently | Delivered | SyncHeartbeats | RecoverRuns
)  # fmt: skip
