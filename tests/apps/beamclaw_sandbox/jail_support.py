"""What the bubblewrap jail's tests share: a data dir as the daemon's looks, and `attack`.

The fixtures that start the sandbox app over it (``daemon``, ``control_socket``) are in
conftest.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import attrs

from beamclaw_tools import BashTool, ToolContext, ToolResult, ToolSession, run_tool

SESSION = ToolSession("s1", "default", "local:mallory")
SECRET_CHAT = "alice-told-the-agent-her-passphrase-7731"
#: Limits low enough for the tests to reach quickly.
TABLE = {"pids_limit": 48, "memory_limit": "256m", "bubblewrap": {"file_size_limit": "1m"}}


@attrs.frozen
class Daemon:
    """What a jailed command must not reach: a data dir as the daemon's looks."""

    home: Path
    context: ToolContext

    @property
    def workspace(self) -> Path:
        return self.context.workspace


def make_data_dir(home: Path) -> None:
    """Two agents' workspaces and a sessions database holding `SECRET_CHAT`."""
    (home / "agents" / "default").mkdir(parents=True)
    (home / "agents" / "other").mkdir(parents=True)
    (home / "agents" / "other" / "secret.txt").write_text("the other agent's notes\n")
    db = sqlite3.connect(home / "sessions.db")
    with db:
        db.execute("CREATE TABLE messages (user TEXT, content TEXT)")
        db.execute("INSERT INTO messages VALUES ('local:alice', ?)", (SECRET_CHAT,))
    db.close()


async def attack(daemon: Daemon, script: str, *, isolation: str = "bubblewrap", timeout: float = 20) -> ToolResult:
    """Run *script* as the agent would past the deny list: from a file, with ``bash``."""
    (daemon.workspace / "attack.sh").write_text(script)
    tool = BashTool(timeout=timeout, output_limit=64_000, isolation=isolation)  # type: ignore[arg-type]
    return await run_tool(tool, {"command": "bash attack.sh"}, SESSION, daemon.context)
