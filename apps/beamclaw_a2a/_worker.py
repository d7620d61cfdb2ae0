"""One A2A task's turn, run as a temporary process under the workers' supervisor."""

from __future__ import annotations

from typing import Any, Final

import trio
from loguru import logger

import beamclaw_core as core
import supervision as sv

from ._tasks import task_call

WORKERS: Final = "beamclaw_a2a.workers"


async def _run(
    task_id: str, context_id: str, agent: str, text: str, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    task_status.started()
    await task_call("update", task_id, "working", "")
    try:
        handle = await core.open_session(f"a2a:{context_id}", agent, "a2a")
        result = await core.send_message(handle, text, core.CollectingChannel())
    except Exception as exc:  # noqa: BLE001 - the task records the failure; the worker ends normally
        logger.opt(exception=exc).warning("a2a task {} failed", task_id)
        await task_call("update", task_id, "failed", f"the agent could not answer: {type(exc).__name__}")
        return
    await task_call("update", task_id, "completed" if result.ok else "failed", result.text)


async def start_task(task_id: str, context_id: str, agent: str, text: str) -> None:
    spec = sv.ChildSpec(task_id, _run, args=(task_id, context_id, agent, text), restart=sv.TEMPORARY)
    await sv.start_child(WORKERS, spec)
