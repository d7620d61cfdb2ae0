from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from beamclaw_tools import JqTool, ReadFileTool, Tool, ToolContext, ToolResult, ToolSession, WriteFileTool, run_tool

#: The in-container client, loaded from the image's definition (the file the image ships).
BRIDGE_CLIENT = Path(__file__).resolve().parents[3] / "sandbox-image" / "beamclaw_bridge.py"
_loaded = itertools.count()


_clients: list[ModuleType] = []


def load_bridge_client(socket_path: Path) -> ModuleType:
    """A fresh copy of sandbox-image/beamclaw_bridge.py talking to *socket_path* (closed
    at the end of the test)."""
    spec = importlib.util.spec_from_file_location(f"beamclaw_bridge_{next(_loaded)}", BRIDGE_CLIENT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.SOCKET_PATH = str(socket_path)
    _clients.append(module)
    return module


@pytest.fixture(autouse=True)
def _close_bridge_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


class RealTools:
    """The callback the agent loop passes in the tool context, over real built-in tools;
    it records what each tool was called with."""

    def __init__(self, workspace: Path, data_dir: Path) -> None:
        self.tools: dict[str, Tool] = {t.definition.name: t for t in (ReadFileTool(), WriteFileTool(), JqTool())}
        self.context = ToolContext(workspace=workspace, data_dir=data_dir)
        self.session = ToolSession("s1", "default", "local:test")
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.seen.append((name, arguments))
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(f"no tool {name!r}", is_error=True)
        return await run_tool(tool, arguments, self.session, self.context)


@pytest.fixture
def real_tools(tmp_path: Path) -> RealTools:
    workspace = tmp_path / "home" / "agents" / "default"
    workspace.mkdir(parents=True)
    return RealTools(workspace, tmp_path / "home")
