"""A secret in a tool result, a model reply or a summary reaches no history, log, event or channel."""

from __future__ import annotations

import json
from pathlib import Path

import trio

import beamclaw_core as core
import beamclaw_memory as memory
from tests.support.model_server import Call, Reply

from .conftest import RunCore, wait_for

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
        Reply(f"- the user keeps {SECRET} in creds.txt"),  # the memory flush, into the user's memory
        Reply(f"Summary: the user keeps {SECRET} in creds.txt."),  # the compaction summary
        Reply("ok"),
    ]
    channels = [core.CollectingChannel(), core.CollectingChannel()]
    async with run_core(*steps, home=home, provider={"context_window": 600}, memory={}) as r:
        session = await r.open()
        await core.send_message(session, "what is in creds.txt?", channels[0])
        await core.send_message(session, "now something long " + "z" * 2000, channels[1])
        history = await core.history(session)
        kept = await memory.search("default", "user keeps creds", owner="local:alice", limit=6)
        await r.settle()
        events = repr([e.data for e in r.events])
        names = {e.name for e in r.events}

    assert history[0].content.startswith(core.SUMMARY_HEADER) and "[REDACTED]" in history[0].content
    stored = b"".join(p.read_bytes() for p in home.glob("sessions.db*"))
    # The memory: what the flush kept and what the memory app indexed (conversations too).
    assert any(h.path.startswith("kept/") and "the user keeps [REDACTED] in creds.txt" in h.text for h in kept.hits)
    indexed = list(home.glob("memory/default/**/*"))
    assert any(p.name == "chunks.db" for p in indexed)
    stored += b"".join(p.read_bytes() for p in indexed if p.is_file())
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
    async with run_core(*steps, home=home, autonomy_level="full") as r:  # write_file asks under supervised
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


async def _asked_and_refused(session: core.SessionHandle) -> core.CollectingChannel:
    """Send a message whose turn asks for an approval; answer /no; the channel that was asked."""
    channel = core.CollectingChannel()
    turn = await core.submit(session, "go", channel)
    await wait_for(lambda: bool(channel.sent))
    await core.send_message(session, "/no", core.CollectingChannel())
    await turn.wait()
    return channel


async def test_arguments_written_with_escapes_are_shown_and_logged_decoded_and_scrubbed(
    run_core: RunCore, tmp_path: Path
) -> None:
    """The outside attack: the approval question showed the model's raw JSON, ``\\u0073k-…``,
    which a reader decodes to the held key; the log file had the same."""
    from beamclaw_obs import register_secret

    held = "Zq8vT3kLmN4pR7sK2wY9aB6cXe5fGh1JpQ"
    register_secret(held)
    escaped = "".join(f"\\u{ord(c):04x}" for c in held)
    raw = '{"command": "command echo ' + escaped + "; echo \\u0067hp_Zk3mQ9vR2xLp7TnB4wYc8HdF1sJe6GuA0oKi" + '"}'
    home = tmp_path / "home"
    async with run_core(Reply(tool_calls=(Call("bash", raw, id="b"),)), Reply("ok"), home=home,
                        autonomy_level="supervised") as r:  # fmt: skip
        session = await r.open()
        channel = await _asked_and_refused(session)
        await r.settle()
        events = repr([e.data for e in r.events])
    question = channel.sent[0]
    assert question.startswith('Approve bash with {"command": "command echo [REDACTED]; echo [REDACTED]"}'), question
    logs = (home / "logs" / "beamclaw.log").read_text()
    for text in (question, logs, events):
        decoded = json.loads(json.dumps(text).replace("\\\\u", "\\u"))  # what a reader's decoder makes of it
        assert held not in decoded and "ghp_Zk3mQ9vR2xLp7TnB4wYc8HdF1sJe6GuA0oKi" not in decoded


async def test_a_reply_past_the_limit_is_cut_off_with_an_error_and_nothing_freezes(run_core: RunCore) -> None:
    """The outside attack: a 10 MB reply was read, scrubbed and stored on the event loop."""
    huge = Reply("postgres://u:p@" * 700_000)  # 10.5 MB
    async with run_core(huge, Reply("small " * 20_000), provider={"max_retries": 0}) as r:
        session = await r.open()
        r.model.chunk_size = 100_000
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await trio.sleep(0.01)
                ticks += 1

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tick)
            result = await core.send_message(session, "go", core.CollectingChannel())
            assert not result.ok and "longer than 1,000,000 characters" in result.text
            assert "core.providers.scripted.max_reply_chars" in result.text
            long = await core.send_message(session, "again", core.CollectingChannel())  # 120 KB: scrubbed off the loop
            assert long.ok and long.text == ("small " * 20_000).strip()
            nursery.cancel_scope.cancel()
        assert ticks > 0  # the loop kept turning while the replies were read
        assert all(len(m.content) < 200_000 for m in await core.history(session))


async def test_a_lone_surrogate_from_the_model_is_replaced_not_a_crash(run_core: RunCore) -> None:
    """``"\\ud800"`` in a model's JSON is a character UTF-8 cannot hold: SQLite, the log and RE2 refuse it."""
    steps = [Reply("half \ud800 a pair", tool_calls=(Call("jq", {"filter": ".", "input": '"\ud83d"'}, id="j"),)),
             Reply("done \udfff")]  # fmt: skip
    async with run_core(*steps) as r:
        session = await r.open()
        result = await core.send_message(session, "go", core.CollectingChannel())
        assert result.ok and result.text == "done ?"
        history = await core.history(session)
        assert history[1].content == "half ? a pair"
        assert all(m.content.encode() for m in history)  # every message can be written as UTF-8


async def test_the_approval_reason_and_tool_call_ids_are_scrubbed_too(run_core: RunCore, tmp_path: Path) -> None:
    """The outside attack, again: the reason quoted the model's path whole, and a call's id
    (chosen by the model) was stored as sent."""
    from beamclaw_obs import register_secret

    held = "Zq8vT3kLmN4pR7sK2wY9aB6cXe5fGh1JpQ"
    register_secret(held)
    write = Call("write_file", {"path": f"skills/{held}/SKILL.md", "content": "x"}, id=held)
    home = tmp_path / "home"
    async with run_core(
        Reply(tool_calls=(write,)), Reply("ok"), home=home, autonomy_level="supervised", single_user_agents=["default"]
    ) as r:  # only a single-user agent's model may write a skill: it is asked
        session = await r.open()
        channel = await _asked_and_refused(session)
        history = await core.history(session)
    assert held not in channel.sent[0] and "SKILL.md" in channel.sent[0]
    call = history[1].tool_calls[0]
    assert call.id.startswith("call_") and held not in call.id and history[2].tool_call_id == call.id
    stored = b"".join(p.read_bytes() for p in home.glob("sessions.db*"))
    assert held.encode() not in stored
