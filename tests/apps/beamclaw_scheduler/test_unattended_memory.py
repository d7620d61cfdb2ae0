"""An agent remembers unattended: a heartbeat turn (nobody there to answer) writes its
daily log under ``supervised`` without asking, into that user's own notes, on a real daemon."""

from __future__ import annotations

from pathlib import Path

import trio

import beamclaw_core as core
from tests.beamclaw.daemon import cli, running_daemon, write_config
from tests.support.model_server import Call, Reply, scripted_model

BEAT = (
    "[scheduler]\nmin_interval_seconds = 1\n"
    '[scheduler.heartbeat]\ndefault_interval_seconds = 2\nactive_hours = [0, 0]\ntarget = "last"\n'
)


async def test_a_heartbeat_turn_writes_the_daily_log_without_asking(tmp_path: Path) -> None:
    home = tmp_path / "home"
    note = Call("workspace_memory", {"action": "append_daily", "content": "UNATTENDED: plants watered"}, id="m1")
    async with (
        scripted_model(Reply("hello ada"), Reply(tool_calls=(note,)), repeat=Reply("HEARTBEAT_OK")) as model,
        running_daemon(write_config(tmp_path, model, autonomy="supervised", extra=BEAT), home),
    ):
        assert (await cli(home, "chat", "--user", "local:ada", "hello")).returncode == 0
        ada = core.user_workspace(home, "default", "local:ada", single_user=False)
        ada.write("HEARTBEAT.md", "- water the plants\n")
        with trio.fail_after(30):
            while not any("UNATTENDED" in ada.read(f"memory/{day}.md") for day in ada.daily_logs()):
                await trio.sleep(0.2)
    assert not (home / "agents" / "default" / "memory").exists() or not any(
        (home / "agents" / "default" / "memory").iterdir()
    )  # the user's own log, not the agent's
