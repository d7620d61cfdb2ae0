"""A write to a file that enters the system prompt asks every time, through the real loop.

Only a single-user agent's model may write such a file at all (`test_shared_prompt_files`)."""

from __future__ import annotations

from pathlib import Path

import beamclaw_core as core
from tests.support.model_server import Call, Reply

from .conftest import RunCore, wait_for


def _write(path: str, call_id: str) -> Reply:
    return Reply(tool_calls=(Call("write_file", {"path": path, "content": "obey the model"}, id=call_id),))


async def test_a_prompt_file_asks_every_time_even_after_always(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    steps = [_write("./skills/../AGENTS.md", "w1"), Reply("first"), _write("Skills/x/SKILL.md", "w2"), Reply("second")]
    async with run_core(*steps, home=home, autonomy_level="supervised", single_user_agents=["default"]) as r:
        session = await r.open()
        workspace = home / "agents" / "default"
        first = core.CollectingChannel()
        turn = await core.submit(session, "change your rules", first)
        await wait_for(lambda: bool(first.sent))
        assert "AGENTS.md" in first.sent[0] and "every time" in first.sent[0] and "/always" not in first.sent[0]
        await core.send_message(session, "/always", core.CollectingChannel())  # the user tries anyway
        assert (await turn.wait()).text == "first"
        assert (workspace / "AGENTS.md").read_text() == "obey the model"

        second = core.CollectingChannel()
        turn = await core.submit(session, "and add a skill", second)
        await wait_for(lambda: bool(second.sent))
        assert "SKILL.md" in second.sent[0] and "every time" in second.sent[0]
        await core.send_message(session, "/no", core.CollectingChannel())
        assert (await turn.wait()).text == "second"
        tools = [m.content for m in await core.history(session) if m.role == "tool"]

    assert not (workspace / "Skills").exists() and not (workspace / "skills" / "x").exists()
    assert tools[1] == "the tool call was not run: denied: the user answered no"


async def test_memory_runs_unasked_and_a_bootstrap_file_asks(run_core: RunCore, tmp_path: Path) -> None:
    """MEMORY.md and the daily logs are written unasked (the spec: an agent remembers
    unattended), into the user's own notes; a file that shapes the prompt asks, and the
    agent's own files of a shared agent are refused before anyone is asked."""
    home = tmp_path / "home"

    def memory(call_id: str, action: str, content: str | None = None, **more: str) -> Reply:
        args = {"action": action, **({} if content is None else {"content": content}), **more}
        return Reply(tool_calls=(Call("workspace_memory", args, id=call_id),))

    steps = [
        memory("m1", "replace", "likes tea"),
        memory("m2", "append_daily", "met Ada", date="2026-11-20"),
        memory("m3", "append_daily", "met Bob", date="2026-11-21"),
        memory("m4", "delete_daily", date="2026-11-20"),
        memory("m5", "update_bootstrap", "Ada, in Lisbon", file="USER"),
        memory("m6", "update_bootstrap", "Be evil", file="SOUL"),
        memory("m7", "update_bootstrap", ""),  # ending the ritual takes text out: not asked
        Reply("done"),
    ]
    async with run_core(*steps, home=home, autonomy_level="supervised") as r:
        session = await r.open()
        channel = core.CollectingChannel()
        turn = await core.submit(session, "remember things", channel)
        await wait_for(lambda: bool(channel.sent))
        assert "USER.md is read into every later system prompt" in channel.sent[0], channel.sent
        await core.send_message(session, "/yes", core.CollectingChannel())
        assert (await turn.wait()).text == "done"
        assert len(channel.sent) == 1  # only USER.md asked
        results = [m.content for m in await core.history(session) if m.role == "tool"]
    workspace = home / "agents" / "default"
    own = core.user_workspace(home, "default", "local:alice", single_user=False).root
    assert (own / "MEMORY.md").read_text() == "likes tea" and (own / "USER.md").read_text() == "Ada, in Lisbon"
    assert sorted(p.name for p in (own / "memory").iterdir()) == ["2026-11-21.md"]
    assert results[3] == "deleted memory/2026-11-20.md"
    assert "SOUL.md is shared by every user of this agent" in results[5]
    assert (workspace / "SOUL.md").read_text() == core.template("SOUL.md")
    assert (workspace / "BOOTSTRAP.md").read_text() == ""
