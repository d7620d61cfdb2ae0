from __future__ import annotations

from pathlib import Path

import pytest

from beamclaw_tools import ToolContext, ToolSession


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    data = tmp_path / "home"
    workspace = data / "agents" / "default"
    workspace.mkdir(parents=True)
    return ToolContext(workspace=workspace, data_dir=data)


@pytest.fixture
def session() -> ToolSession:
    return ToolSession(id="s1", agent_id="default", user_id="local:test")
