"""A secret in a tool result, a model reply or a summary reaches no history, log, event or channel."""

from __future__ import annotations

import json
from pathlib import Path

import beamclaw_core as core
from tests.support.model_server import Call, Reply

from .conftest import RunCore

SECRET = "sk-proj-Zq8vT3xLmN4pR7sK2wY9aB6cD1eF0gH5"
GITHUB = "ghp_Zk3mQ9vR2xLp7TnB4wYc8HdF1sJe6GuA0oKi"  # random-looking: gitleaks checks entropy


async def test_secrets_reach_no_history_log_event_summary_or_channel(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = home / "agents" / "default"
    workspace.mkdir(parents=True)
    (workspace / "creds.txt").write_text(f"OPENAI_API_KEY={SECRET}\ntoken: {GITHUB}\n")
    steps = [
        Reply(tool_calls=(Call("read_file", {"path": "creds.txt"}, id="r"),)),
        Reply(f"The key is {SECRET} and the token {GITHUB}."),
        Reply(f"Summary: the user keeps {SECRET} in creds.txt."),  # the compaction summary
        Reply("ok"),
    ]
    channels = [core.CollectingChannel(), core.CollectingChannel()]
    async with run_core(*steps, home=home, provider={"context_window": 600}) as r:
        session = await r.open()
        await core.send_message(session, "what is in creds.txt?", channels[0])
        await core.send_message(session, "now something long " + "z" * 2000, channels[1])
        history = await core.history(session)
        await r.settle()
        events = repr([e.data for e in r.events])
        names = {e.name for e in r.events}

    assert history[0].content.startswith(core.SUMMARY_HEADER) and "[REDACTED]" in history[0].content
    stored = b"".join(p.read_bytes() for p in home.glob("sessions.db*"))
    logs = (home / "logs" / "beamclaw.log").read_text()
    outputs = repr([(c.sent, c.drafts, c.finals) for c in channels])
    for secret in (SECRET, GITHUB):
        assert secret not in repr(history)
        assert secret.encode() not in stored
        assert secret not in logs
        assert secret not in events
        assert secret not in outputs
    # What is sent on to the model after the tool ran is scrubbed too.
    later = repr(r.model.requests[1:])
    assert SECRET not in later and "[REDACTED]" in later
    assert {"tool_call_start", "tool_call_result", "compaction_complete"} <= names


async def test_tool_call_arguments_are_stored_scrubbed_but_run_as_sent(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    steps = [
        Reply(tool_calls=(Call("write_file", {"path": "creds.env", "content": f"api_key={SECRET}\n"}, id="w"),)),
        Reply("saved"),
    ]
    async with run_core(*steps, home=home) as r:
        session = await r.open()
        result = await core.send_message(session, "keep my key", core.CollectingChannel())
        history = await core.history(session)
        await r.settle()
        events = repr([e.data for e in r.events])

    assert result.ok
    # The tool ran with the arguments the model sent ...
    assert SECRET in (home / "agents" / "default" / "creds.env").read_text()
    # ... while what is kept of the call, and what goes back to the model, is scrubbed.
    (call,) = history[1].tool_calls
    assert SECRET not in call.arguments and "[REDACTED]" in call.arguments
    assert json.loads(call.arguments)["path"] == "creds.env"
    assert SECRET.encode() not in b"".join(p.read_bytes() for p in home.glob("sessions.db*"))
    assert SECRET not in events
    assert SECRET not in repr(r.model.requests[1:])
