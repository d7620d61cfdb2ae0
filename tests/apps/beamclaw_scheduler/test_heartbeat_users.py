"""A heartbeat runs in the conversation of the user its HEARTBEAT.md belongs to, on a real daemon."""

from __future__ import annotations

from pathlib import Path

import trio

import beamclaw_core as core
from tests.beamclaw.daemon import cli, history, running_daemon, write_config
from tests.support.model_server import Reply, scripted_model

BEAT = (
    "[scheduler]\nmin_interval_seconds = 1\n"
    '[scheduler.heartbeat]\ndefault_interval_seconds = 2\nactive_hours = [0, 0]\ntarget = "last"\n'
)


async def _user_turns(home: Path, user: str) -> list[str]:
    answer = await history(home, user)
    return [m["content"] for m in answer["messages"] if m["role"] == "user"]


async def test_a_heartbeat_written_by_one_user_never_runs_in_anothers_conversation(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(Reply("hello ada"), Reply("hello bob"), repeat=Reply("Your plants need water.")) as model,
        running_daemon(write_config(tmp_path, model, extra=BEAT), home),
    ):
        assert (await cli(home, "chat", "--user", "local:ada", "hello")).returncode == 0
        assert (await cli(home, "chat", "--user", "local:bob", "hello")).returncode == 0  # bob: the last active
        # What workspace_memory's update_heartbeat writes in ada's turn (the agent's own is the template).
        ada = core.user_workspace(home, "default", "local:ada", single_user=False)
        ada.write("HEARTBEAT.md", "- ADA-CHECK: remind me to water the plants\n")
        with trio.fail_after(30):
            while not any("ADA-CHECK" in turn for turn in await _user_turns(home, "local:ada")):
                await trio.sleep(0.2)
        await trio.sleep(3)  # a few more beats
        assert not any("Heartbeat" in turn for turn in await _user_turns(home, "local:bob"))
        assert await _user_turns(home, "heartbeat:default") == []  # nor in the agent's own
