"""A running obs + tools + mcp tree against real MCP servers (stdio subprocesses, HTTP on loopback)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

import beamclaw_mcp as mcp
import beamclaw_obs as obs
import beamclaw_tools as tools
import supervision as sv

STDIO = [sys.executable, "-m", "tests.support.mcp_server"]


@attrs.define
class RunningMcp:
    home: Path
    supervisor: sv.Pid

    async def status(self, name: str) -> mcp.ServerStatus:
        (found,) = [s for s in await mcp.server_statuses() if s.name == name]
        return found

    async def until(
        self, name: str, check: Callable[[mcp.ServerStatus], bool], timeout: float = 30.0
    ) -> mcp.ServerStatus:
        """The status of *name* once *check* holds (real processes: poll)."""
        with trio.move_on_after(timeout):
            while not check(status := await self.status(name)):
                await trio.sleep(0.02)
            return status
        raise AssertionError(f"the status of {name} never got there: {await self.status(name)}")

    async def tool(self, name: str) -> tools.Tool:
        found = await tools.lookup_tool(name)
        assert found is not None, f"no tool {name}: {[t.definition.name for t in await tools.list_tools()]}"
        return found

    async def call(self, name: str, args: dict[str, Any] | str) -> tools.ToolResult:
        session = tools.ToolSession("s", "default", "u")
        return await tools.run_tool(await self.tool(name), args, session, tools.ToolContext(self.home, self.home))


RunMcp = Callable[..., AbstractAsyncContextManager[RunningMcp]]


@pytest.fixture
def run_mcp(tmp_path: Path) -> RunMcp:
    """``async with run_mcp({"servers": {...}}) as m:`` the MCP app with its servers, and a tool registry."""

    @asynccontextmanager
    async def running(table: dict[str, Any]) -> AsyncIterator[RunningMcp]:
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        spec = sv.Supervisor(
            [
                obs.supervision_tree({"log_level": "DEBUG"}, home).child_spec("obs"),
                tools.supervision_tree({}, home).child_spec("tools"),
                mcp.supervision_tree(table, home).child_spec("mcp"),
            ],
            name="test_root",
        )
        async with sv.open_supervisor(spec) as sup:
            yield RunningMcp(home, sup)

    return running


def stdio(*extra: str, **table: Any) -> dict[str, Any]:
    """A server table running the test server over stdio."""
    return {"command": [*STDIO, *extra], "cwd": str(Path(__file__).parents[3]), **table}
