"""The executor: runs each claimed due time in a temporary worker of its own.

Workers live under ``jobs`` (a DynamicSupervisor beside the executor, not below it),
so a crash of the executor stops no job in progress; on its restart it watches the
workers still running and takes the claims still waiting from the store. At most
``max_concurrent_runs`` run at once; the rest wait in claim order, so ten thousand jobs
due in one second never crowd out the chat turns of the users.

A worker records its outcome, a crash included (and a failed run is retried, see
`_store`); one killed outright is recorded failed by the executor, which monitors it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Final

import attrs
import trio

import supervision as sv
from beamclaw_obs import emit

from ._job import Fire
from ._requests import ClaimedFires, FinishRun, Outcome, Poke, RunningRuns, RunStarted
from ._store import store_call

JOBS_SUP: Final = "beamclaw_scheduler.jobs"
#: Runs a fire; returns its outcome and a detail.
Perform = Callable[[Fire], Awaitable[tuple[Outcome, str]]]


def worker_name(run_id: int) -> str:
    return f"beamclaw_scheduler.run:{run_id}"


async def _work(fire: Fire, perform: Perform, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run *fire* and record how it went; a crash is recorded (with its reason) and
    raised on, so the supervisor reports it too."""
    task_status.started()
    try:
        outcome, detail = await perform(fire)
    except Exception as exc:
        await store_call(FinishRun(fire.run_id, "failed", _describe(exc)))
        raise
    await store_call(FinishRun(fire.run_id, outcome, detail))


@attrs.define
class _State:
    perform: Perform
    limit: int
    queue: deque[Fire] = attrs.field(factory=deque)
    waiting: set[int] = attrs.field(factory=set)
    #: run id -> the monitor of its worker
    running: dict[int, sv.Ref] = attrs.field(factory=dict)
    by_ref: dict[sv.Ref, int] = attrs.field(factory=dict)


def _describe(reason: Any) -> str:
    if isinstance(reason, BaseException):
        return f"the job crashed: {type(reason).__name__}: {reason}"
    return f"the job stopped: {reason}"


class Executor(sv.GenServer):
    async def init(self, perform: Perform, limit: int) -> _State:
        state = _State(perform, limit)
        for run_id in await store_call(RunningRuns()):
            pid = sv.whereis(worker_name(run_id))
            if pid is not None:
                self._watch(state, run_id, pid)
            else:
                await store_call(FinishRun(run_id, "failed", "the executor restarted while it ran"))
        await self._take_claims(state)
        return state

    @staticmethod
    def _watch(state: _State, run_id: int, pid: sv.Pid) -> None:
        ref = sv.monitor(pid)
        state.running[run_id] = ref
        state.by_ref[ref] = run_id

    async def _take_claims(self, state: _State) -> None:
        for fire in await store_call(ClaimedFires()):
            if fire.run_id not in state.waiting and fire.run_id not in state.running:
                state.queue.append(fire)
                state.waiting.add(fire.run_id)
        await self._start_more(state)

    async def _start_more(self, state: _State) -> None:
        while state.queue and len(state.running) < state.limit:
            fire = state.queue.popleft()
            state.waiting.discard(fire.run_id)
            if not await store_call(RunStarted(fire.run_id)):
                continue  # its node was taken for dead: the claim is recovered elsewhere
            emit("sched_job_fired", job_id=fire.job.id, run_id=fire.run_id, due=fire.due, attempt=fire.attempt)
            spec = sv.ChildSpec(
                ("run", fire.run_id), _work, args=(fire, state.perform), restart=sv.TEMPORARY,
                name=worker_name(fire.run_id), label=f"job {fire.job.id} try {fire.attempt}",
            )  # fmt: skip
            pid = await sv.start_child(JOBS_SUP, spec)
            assert pid is not None
            self._watch(state, fire.run_id, pid)

    async def handle_info(self, message: object, state: _State) -> sv.NoReply:
        match message:
            case Poke():
                await self._take_claims(state)
            case sv.Down(ref=ref, reason=reason) if ref in state.by_ref:
                run_id = state.by_ref.pop(ref)
                del state.running[run_id]
                if not sv.is_normal(reason):
                    await store_call(FinishRun(run_id, "failed", _describe(reason)))
                await self._start_more(state)
        return sv.NoReply(state)
