"""One A2A task's turn, run as a temporary process under the workers' supervisor.

A canceled task's worker is stopped (`stop_task`), and it stops its run in the
conversation on the way out: a canceled task's turn writes nothing more. A task canceled
through another node of a cluster reaches the worker as a change of its task (it
watches it), with the same end.
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

import attrs
import trio
from loguru import logger

import beamclaw_core as core
import beamclaw_obs as obs
import supervision as sv

from ._tasks import Client, UpdateTask, WatchTask, task_call

WORKERS: Final = "beamclaw_a2a.workers"
#: The most a stopped worker waits for its run to be told to stop.
_STOP_WAIT: Final = 5.0


@attrs.frozen
class TaskTurn:
    """What a task's worker runs: *text* as a turn of *client*'s conversation of *context_id*."""

    task_id: str
    client: Client
    context_id: str
    agent: str
    text: str


async def _run(task: TaskTurn, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    task_id = task.task_id
    await task_call(UpdateTask(task_id, "working", ""))
    handle: core.SessionHandle | None = None
    turn: core.Turn | None = None
    try:
        handle = await core.open_session(task.client.user(task.context_id), task.agent, "a2a")
        obs.emit("a2a_task_created", task_id=task_id, session_id=handle.id)
        turn = await core.submit(handle, task.text, core.CollectingChannel(), origin=task.client.origin)
        result = await _answer_unless_canceled(task, turn)
        if result is None:  # canceled through another node: the turn is stopped below
            return
    except Exception as exc:  # noqa: BLE001 - the task records the failure; the worker ends normally
        logger.opt(exception=exc).warning("a2a task {} failed", task_id)
        await task_call(UpdateTask(task_id, "failed", f"the agent could not answer: {type(exc).__name__}"))
        return
    finally:
        if handle is not None and turn is not None and turn.result is None:  # stopped before its answer
            with (
                trio.CancelScope(shield=True),
                trio.move_on_after(_STOP_WAIT),
                contextlib.suppress(sv.NoProc, sv.ProcessExited, sv.CallTimeout),
            ):
                await core.stop_turn(handle, turn)
    await task_call(UpdateTask(task_id, "completed" if result.ok else "failed", result.text))


async def _answer_unless_canceled(task: TaskTurn, turn: core.Turn) -> core.TurnResult | None:
    """The turn's result; None when the task is canceled meanwhile (through any node)."""
    current, changes = await task_call(WatchTask(task.task_id, task.client))
    async with changes, trio.open_nursery() as nursery:

        async def until_canceled() -> None:
            if current.state == "canceled":  # before the watch began
                nursery.cancel_scope.cancel()
            async for record in changes:
                if record.state == "canceled":
                    nursery.cancel_scope.cancel()

        nursery.start_soon(until_canceled)
        result = await turn.wait()
        nursery.cancel_scope.cancel()
        return result
    return None


async def start_task(task: TaskTurn) -> None:
    """Start the worker of a task, recording its turn's end in the task."""
    spec = sv.ChildSpec(task.task_id, _run, args=(task,), restart=sv.TEMPORARY, shutdown=0)
    await sv.start_child(WORKERS, spec)


async def stop_task(task_id: str) -> None:
    """Stop the task's worker, and with it its turn (a task that is canceled)."""
    for child in sv.which_children(WORKERS):
        if child.id == task_id and child.pid is not None:
            with contextlib.suppress(sv.NoProc, LookupError):
                await sv.terminate_child(WORKERS, child.pid)
