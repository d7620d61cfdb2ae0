"""Keeping an app's own tools registered, even across a restart of the registry.

Apps other than tools (core's workspace tool, the scheduler's cron tool, MCP's
discovered tools) register theirs at start. A restarted registry starts with the
built-ins only, so the process started here watches it and registers again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import trio

import supervision as sv

from ._registry import REGISTRY, register_tool
from ._tool import Tool


async def _register_all(tools: Sequence[Tool]) -> None:
    await sv.wait_for_name(REGISTRY, timeout=10)
    for tool in tools:
        await register_tool(tool)


async def _keep_registered(tools: Sequence[Tool], task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    await _register_all(tools)
    task_status.started()
    while True:
        await _registry_down(sv.monitor(REGISTRY))
        await _register_all(tools)


async def _registry_down(ref: sv.Ref) -> None:
    await sv.receive(match=lambda m: isinstance(m, sv.Down) and m.ref == ref)


def keep_registered(child_id: str, tools: Sequence[Tool]) -> sv.ChildSpec:
    """A child that registers *tools* at start and again whenever the registry restarts."""
    return sv.ChildSpec(child_id, _keep_registered, args=(tuple(tools),))
