from __future__ import annotations

import importlib.util
import itertools
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import beamclaw_sandbox as sandbox
import supervision as sv
from beamclaw_tools import JqTool, ReadFileTool, Tool, ToolContext, ToolResult, ToolSession, WriteFileTool, run_tool
from tests.apps.beamclaw_sandbox.jail_support import SESSION, TABLE, Daemon, make_data_dir

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


@pytest.fixture
def control_socket(tmp_path: Path) -> Iterator[Path]:
    """A listening Unix socket where the daemon's control socket is, in the data dir."""
    path = tmp_path / "home" / "control.sock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(8)
        yield path


@pytest.fixture
async def daemon(tmp_path: Path, control_socket: Path) -> AsyncIterator[Daemon]:
    """The sandbox app running, and the tool context the agent loop would build from it."""
    home = tmp_path / "home"
    make_data_dir(home)
    skills = tmp_path / "bundled-skills"
    (skills / "hello").mkdir(parents=True)
    (skills / "hello" / "hello.sh").write_text("echo hello from the skill\n")
    async with sv.open_supervisor(sandbox.supervision_tree(TABLE, home)):
        jails = await sandbox.session_jails(SESSION)
        yield Daemon(home, ToolContext(home / "agents" / "default", home, jails=jails, readonly_dirs=(skills,)))
