"""The tool registry process: which tools exist, by name.

Apps register their own tools at start (the scheduler its cron tool, MCP its
discovered tools), so core never has to import them.
"""

from __future__ import annotations

from typing import Final, TypeVar

import attrs

import supervision as sv
from beamclaw_base import RetryPolicy, retry

from ._tool import Tool, ToolDefinition

REGISTRY: Final = "beamclaw_tools.registry"
#: Seconds a call waits for a registry that is being restarted (it is back in milliseconds).
RESTART_WAIT: Final = 2.0
#: A read the registry died during is asked once more, at once (`RESTART_WAIT` covers its restart).
_READ_AGAIN: Final = RetryPolicy(attempts=2, wait_initial=0.0, wait_max=0.0)

R = TypeVar("R")


# --- what the registry is asked (each typed with its reply, `supervision.Request`) ---------


@attrs.frozen
class RegisterTool(sv.Request[None]):
    """Add *tool*, replacing one of the same name."""

    tool: Tool


@attrs.frozen
class UnregisterTool(sv.Request[bool]):
    """Remove the tool called *name*; the reply is whether there was one."""

    name: str


@attrs.frozen
class LookupTool(sv.Request[Tool | None]):
    """The tool called *name*, or None."""

    name: str


@attrs.frozen
class ListTools(sv.Request[list[Tool]]):
    """Every registered tool."""


#: Every request the registry answers.
RegistryRequest = RegisterTool | UnregisterTool | LookupTool | ListTools


class ToolRegistry(sv.GenServer):
    def init(self, tools: tuple[Tool, ...] = ()) -> dict[str, Tool]:
        sv.register(REGISTRY)
        return {tool.definition.name: tool for tool in tools}

    def handle_call(self, request: RegistryRequest, caller: sv.Caller, tools: dict[str, Tool]) -> sv.Reply:
        match request:
            case RegisterTool(tool):
                return sv.Reply(None, {**tools, tool.definition.name: tool})
            case UnregisterTool(name):
                return sv.Reply(name in tools, {k: v for k, v in tools.items() if k != name})
            case LookupTool(name):
                return sv.Reply(tools.get(name), tools)
            case ListTools():
                return sv.Reply(list(tools.values()), tools)
        raise ValueError(f"unknown tool registry request {request!r}")


async def _read(request: sv.Request[R]) -> R:
    """A read from the registry, asked again (at once) of its replacement if it died
    meanwhile: a read changes nothing, so unlike a write it is safe to repeat."""
    return await retry(
        lambda: sv.call(REGISTRY, request, restart_wait=RESTART_WAIT),
        _READ_AGAIN,
        lambda exc: isinstance(exc, sv.ProcessExited),
    )


async def register_tool(tool: Tool) -> None:
    """Add *tool*, replacing one of the same name."""
    if not isinstance(tool, Tool):
        raise TypeError(f"{tool!r} does not implement the Tool protocol")
    await sv.call(REGISTRY, RegisterTool(tool), restart_wait=RESTART_WAIT)


async def unregister_tool(name: str) -> bool:
    """Remove the tool called *name*; return whether there was one."""
    return await sv.call(REGISTRY, UnregisterTool(name), restart_wait=RESTART_WAIT)


async def lookup_tool(name: str) -> Tool | None:
    return await _read(LookupTool(name))


async def list_tools() -> list[Tool]:
    return await _read(ListTools())


async def tool_definitions() -> list[ToolDefinition]:
    return [tool.definition for tool in await list_tools()]
