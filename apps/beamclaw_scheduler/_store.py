"""The job store process: holds the job database and answers the scheduler's requests.

The database is ``scheduler.db`` in the data dir (SQLite) or the configured PostgreSQL
database (`beamclaw_base.StoreConfig`); what each request does, and the guarantees of
exactly once per due time, are in `_jobs`. The store tells the runner and the executor
of a change (a `Poke`) and emits its events only after the change is committed.

In a cluster the store claims as the node's membership (see `_owner`), and takes the
new one when the node had to join again (it was taken for dead): the claims of the old
one are recovered by whichever node looks next, this one included.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import trio

import beamclaw_cluster as cluster
import supervision as sv
from beamclaw_base import Database, StoreConfig, StoreError, open_store
from beamclaw_obs import emit

from ._config import SchedulerConfig
from ._jobs import Answer, Clock, JobError, Jobs, Whom
from ._owner import Owner
from ._requests import Poke, RecoverRuns, StoreRequest
from ._tables import SCHEMA

STORE: Final = "beamclaw_scheduler.store"
RUNNER: Final = "beamclaw_scheduler.runner"
EXECUTOR: Final = "beamclaw_scheduler.executor"
_NAMES: Final[dict[Whom, str]] = {"runner": RUNNER, "executor": EXECUTOR}

R = TypeVar("R")


@attrs.define
class _State:
    db: Database
    jobs: Jobs
    #: The node's membership in a cluster, None on one node.
    member: cluster.Membership | None


def _tell(answer: Answer[Any]) -> None:
    """What a committed request has to say: its events, and a `Poke` to the runner (its
    next wake may be sooner) or the executor (claims wait), best effort."""
    for event, data in answer.events:
        emit(event, **data)
    for whom in sorted(answer.pokes):
        with contextlib.suppress(sv.NoProc):
            sv.send(_NAMES[whom], Poke())


async def _open(store: StoreConfig, path: Path | None) -> Database:
    """The database, opened on the loop for SQLite (a local file, as every statement after
    it) and in a thread for PostgreSQL (a connection over the network)."""
    if store.backend == "sqlite":
        return open_store(store, SCHEMA, sqlite_file=path)
    return await trio.to_thread.run_sync(lambda: open_store(store, SCHEMA, sqlite_file=path))


class JobStore(sv.GenServer):
    """The one process that answers job requests (see `_jobs` for what each one does)."""

    async def init(self, path: Path | None, config: SchedulerConfig, clock: Clock, store: StoreConfig) -> _State:
        member = await cluster.membership()  # the cluster app starts before this one
        db = await _open(store, path)
        if member is None:
            jobs = Jobs(db, config, clock)
        else:
            jobs = Jobs(db, config, clock, Owner(member.instance_id, cluster=True), member.lease_seconds / 3)
        try:
            _tell(await jobs.answer(RecoverRuns()))
        except BaseException:
            db.close()
            raise
        return _State(db, jobs, member)

    @staticmethod
    async def _rejoined(state: _State) -> None:
        """Claim as the node's new membership once the old one is over (see `_node` of the cluster)."""
        if state.member is None or state.member.alive():
            return
        with contextlib.suppress(sv.NoProc, sv.CallTimeout, sv.ProcessExited):
            member = await cluster.membership()
            if member is not None and member.instance_id != state.jobs.owner.id:
                state.member = member
                state.jobs.owner = Owner(member.instance_id, cluster=True)

    async def handle_call(self, request: StoreRequest, caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
        await self._rejoined(state)
        try:
            answer = await state.jobs.answer(request)
        except (JobError, StoreError) as exc:  # the caller's to report; the store goes on
            sv.reply_error(caller, exc)
            return sv.NoReply(state)
        _tell(answer)
        return sv.Reply(answer.reply, state)

    def terminate(self, reason: Any, state: _State) -> None:
        state.db.close()


async def store_call(request: sv.Request[R], timeout: float = 10.0) -> R:
    """A request to the job store, riding through a restart of it."""
    return await sv.call(STORE, request, timeout=timeout, restart_wait=2.0)
