"""Approval: allowlist, autonomy, and asking the channel for /yes, /no or /always."""

from __future__ import annotations

import pytest

import beamclaw_core as core
from beamclaw_core._approval import allow_keys
from beamclaw_tools import Autonomy, BashTool, JqTool, WriteFileTool
from tests.support.model_server import Call, Reply

from .conftest import RunCore, wait_for

#: A line that asks by default: its output goes to a file.
ECHO = Reply(tool_calls=(Call("bash", {"command": "echo ran > out; cat out"}, id="b1"),))


def test_the_policy_order() -> None:
    bash, jq = BashTool(), JqTool()
    assert core.decide(jq, Autonomy.READ_ONLY, set())[0] is core.Decision.APPROVE
    # /always allows the simple commands that asked, not the tool: a name allows nothing more.
    assert core.decide(bash, Autonomy.SUPERVISED, {"bash"}, {"command": "make"})[0] is core.Decision.ASK
    assert core.decide(bash, Autonomy.SUPERVISED, {"bash\x00make"}, {"command": "make"})[0] is core.Decision.APPROVE
    decision, reason = core.decide(bash, Autonomy.SUPERVISED, {"bash\x00make"}, '{"command": "make; ls; make test"}')
    assert (decision, reason) == (core.Decision.ASK, "not in the allow list: `make test`")
    assert core.decide(bash, Autonomy.FULL, set(), {"command": "make"})[0] is core.Decision.APPROVE
    assert core.decide(bash, Autonomy.READ_ONLY, set(), {"command": "ls -la"})[0] is core.Decision.APPROVE
    decision, reason = core.decide(bash, Autonomy.READ_ONLY, set(), {"command": "ls > out"})
    assert (
        decision is core.Decision.DENY
        and reason == "bash: not in the allow list: `ls > out`, and this agent is read_only"
    )
    decision, reason = core.decide(bash, Autonomy.FULL, set(), {"command": "ls; rm -rf ~"})
    assert decision is core.Decision.DENY and "matches the deny rule 'rm * ~ *'" in reason


def test_write_file_asks_under_supervised_as_adr_011_says() -> None:
    write, note = WriteFileTool(), {"path": "notes/plan.md", "content": "x"}
    assert core.decide(write, Autonomy.SUPERVISED, set(), note) == (core.Decision.ASK, "")
    assert core.decide(write, Autonomy.SUPERVISED, {"write_file"}, note)[0] is core.Decision.APPROVE  # /always
    assert core.decide(write, Autonomy.FULL, set(), note)[0] is core.Decision.APPROVE
    assert core.decide(write, Autonomy.READ_ONLY, set(), note)[0] is core.Decision.DENY
    assert allow_keys(write, note) == ("write_file",)


def test_always_adds_the_exact_simple_commands_that_asked() -> None:
    bash = BashTool()
    assert allow_keys(bash, {"command": "ls; git push origin 'my branch'"}) == ("bash\x00git push origin 'my branch'",)
    assert allow_keys(bash, {"command": "make $TARGET"}) == ()  # no exact pattern for a computed word
    assert allow_keys(bash, {"command": "find . -delete"}) == ()  # an ask rule would ask again
    assert allow_keys(JqTool(), {"filter": "."}) == ("jq",)


async def _ask_and_answer(run_core: RunCore, answer: str) -> tuple[core.TurnResult, list[core.Message], list[str]]:
    async with run_core(ECHO, Reply("after")) as r:
        session = await r.open()
        channel = core.CollectingChannel()
        turn = await core.submit(session, "please run it", channel)
        await wait_for(lambda: bool(channel.sent))
        assert channel.sent[0].startswith(
            'Approve bash with {"command": "echo ran > out; cat out"}? (not in the allow list: `echo ran > out`.) '
            "Reply /yes, /no or /always (allow `echo ran > out` for the rest of this conversation)."
        )
        ack = await core.send_message(session, answer, core.CollectingChannel())
        assert ack.text == f"approval: {answer.strip('/')}"
        result = await turn.wait()
        await r.settle()
        events = [e.name for e in r.events if e.name.startswith("approval")]
        return result, await core.history(session), events


@pytest.mark.parametrize("answer", ["/yes", "/always"])
async def test_yes_runs_the_tool(run_core: RunCore, answer: str) -> None:
    result, history, events = await _ask_and_answer(run_core, answer)
    assert result.text == "after"
    assert [m.content for m in history if m.role == "tool"] == ["exit code: 0\nran"]
    assert events == ["approval_requested", "approval_resolved"]


async def test_no_denies_the_tool(run_core: RunCore) -> None:
    result, history, _ = await _ask_and_answer(run_core, "/no")
    assert result.text == "after"
    assert [m.content for m in history if m.role == "tool"] == [
        "the tool call was not run: denied: the user answered no"
    ]


async def test_always_adds_to_the_session_allowlist(run_core: RunCore) -> None:
    async with run_core(ECHO, Reply("one"), ECHO, Reply("two")) as r:
        session = await r.open()
        channel = core.CollectingChannel()
        turn = await core.submit(session, "first", channel)
        await wait_for(lambda: bool(channel.sent))
        await core.send_message(session, "/always", core.CollectingChannel())
        assert (await turn.wait()).text == "one"
        second = core.CollectingChannel()
        assert (await core.send_message(session, "second", second)).text == "two"
        assert second.sent == []  # not asked again
        assert [m.content for m in await core.history(session) if m.role == "tool"] == ["exit code: 0\nran"] * 2


async def test_always_allows_what_was_asked_not_every_later_command(run_core: RunCore) -> None:
    other = Reply(tool_calls=(Call("bash", {"command": "echo ran > out; make"}, id="b2"),))
    async with run_core(ECHO, Reply("one"), other, Reply("two")) as r:
        session = await r.open()
        channel = core.CollectingChannel()
        turn = await core.submit(session, "first", channel)
        await wait_for(lambda: bool(channel.sent))
        assert "(allow `echo ran > out` for the rest of this conversation)" in channel.sent[0]
        await core.send_message(session, "/always", core.CollectingChannel())
        assert (await turn.wait()).text == "one"
        second = core.CollectingChannel()
        turn = await core.submit(session, "second", second)
        await wait_for(lambda: bool(second.sent))  # another command: asked again
        assert second.sent[0].startswith(
            'Approve bash with {"command": "echo ran > out; make"}? (not in the allow list: `make`.)'
        )
        await core.send_message(session, "/no", core.CollectingChannel())
        assert (await turn.wait()).text == "two"


async def test_yes_through_another_channel_approves_nothing_and_the_owner_may_answer(run_core: RunCore) -> None:
    async with run_core(ECHO, Reply("one")) as r:
        session = await r.open()
        channel = core.CollectingChannel()
        turn = await core.submit(session, "first", channel)
        await wait_for(lambda: bool(channel.sent))
        elsewhere = await core.open_session(session.user_id, session.agent_id, "mcp")
        refused = await core.send_message(elsewhere, "/yes", core.CollectingChannel())
        assert (refused.ok, refused.text) == (False, "There is nothing waiting for approval here.")
        assert turn.result is None
        assert await core.answer_approval(elsewhere, "yes") == "yes"  # the owner's explicit answer
        assert (await turn.wait()).text == "one"
        assert await core.answer_approval(elsewhere, "yes") == "none"


async def test_read_only_denies_without_asking_and_full_runs_without_asking(run_core: RunCore) -> None:
    async with run_core(ECHO, Reply("done"), autonomy_level="read_only") as r:
        session = await r.open()
        channel = core.CollectingChannel()
        assert (await core.send_message(session, "go", channel)).text == "done"
        assert channel.sent == []
        (tool,) = [m for m in await core.history(session) if m.role == "tool"]
        assert "not in the allow list: `echo ran > out`, and this agent is read_only" in tool.content
        assert not (r.home / "agents" / "default" / "out").exists()
    async with run_core(ECHO, Reply("done"), autonomy_level="full") as r:
        session = await r.open()
        channel = core.CollectingChannel()
        assert (await core.send_message(session, "go", channel)).text == "done"
        assert channel.sent == [] and (r.home / "agents" / "default").is_dir()


async def test_no_answer_in_time_denies(run_core: RunCore) -> None:
    async with run_core(ECHO, Reply("gave up"), agentic_loop={"approval_timeout_seconds": 0.2}) as r:
        session = await r.open()
        channel = core.CollectingChannel()
        assert (await core.send_message(session, "go", channel)).text == "gave up"
        assert channel.sent[-1] == "No answer to the approval request; the tool call was denied."
        (tool,) = [m for m in await core.history(session) if m.role == "tool"]
        assert tool.content == "the tool call was not run: denied: the approval request timed out"


async def test_an_answer_with_nothing_pending_is_refused(run_core: RunCore) -> None:
    async with run_core() as r:
        session = await r.open()
        result = await core.send_message(session, "/yes", core.CollectingChannel())
        assert not result.ok and result.text == "There is nothing waiting for approval."
        assert await core.history(session) == []
