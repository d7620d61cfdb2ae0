"""The job store process: holds the job database and answers the scheduler's requests.

The database is ``scheduler.db`` in the data dir (SQLite) or the configured PostgreSQL
database (`beamclaw_base.StoreConfig`); what each request does, and the guarantees of
exactly once per due time, are in `_jobs`. The store tells the runner and the executor
of a change (a `Poke`) and emits its events only after the change is committed.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import trio

import supervision as sv
from beamclaw_base import Database, StoreConfig, StoreError, open_store
from beamclaw_obs import emit

from ._config import SchedulerConfig
from ._jobs import Answer, Clock, JobError, Jobs, Whom
from ._requests import Poke, StoreRequest
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
        db = await _open(store, path)
        jobs = Jobs(db, config, clock)
        try:
            _tell(await jobs.recover())
        except BaseException:
            db.close()
            raise
        return _State(db, jobs)

    async def handle_call(self, request: StoreRequest, caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
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
