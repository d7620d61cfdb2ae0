"""Whole turns through the real provider code against the scripted model server."""

from __future__ import annotations

import json

import attrs

import beamclaw_core as core
from tests.support.model_server import Call, Hold, Reply

from .conftest import RunCore


async def test_a_plain_streamed_turn(run_core: RunCore) -> None:
    text = "Hello! " * 80  # drafts lag the stream by the scrubber's hold (256 characters)
    async with run_core(Reply(text)) as r:
        session = await r.open()
        channel = core.CollectingChannel()
        result = await core.send_message(session, "hi there", channel)
        assert result == core.TurnResult(text.strip(), True, 10, 5, 0)
        assert channel.finals == [text.strip()]
        assert channel.drafts and all(len(d) >= 80 for d in channel.drafts) and text.startswith(channel.drafts[0])
        assert [(m.role, m.content) for m in await core.history(session)] == [
            ("user", "hi there"),
            ("assistant", text.strip()),
        ]
        request = r.model.requests[0]
        assert request["stream"] is True and request["messages"][0]["role"] == "system"
        assert request["messages"][1:] == [{"role": "user", "content": "hi there"}]
        assert {t["function"]["name"] for t in request["tools"]} >= {"bash", "read_file", "jq"}


async def test_a_multi_tool_turn_end_to_end(run_core: RunCore) -> None:
    steps = [
        Reply("Let me look.", tool_calls=(
            Call("write_file", {"path": "a.txt", "content": "alpha"}, id="c1"),
            Call("jq", {"filter": ".n", "input": '{"n": 7}'}, id="c2"),
        )),
        Reply(tool_calls=(Call("read_file", {"path": "a.txt"}, id="c3"),)),
        Reply("The file says alpha and n is 7."),
    ]  # fmt: skip
    async with run_core(*steps, autonomy_level="full") as r:  # write_file asks under supervised
        session = await r.open()
        result = await core.send_message(session, "check things", core.CollectingChannel())
        assert result.text == "The file says alpha and n is 7." and result.tool_calls == 3
        assert (r.home / "agents" / "default" / "a.txt").read_text() == "alpha"
        messages = r.model.requests[2]["messages"]
        tool_messages = [m for m in messages if m["role"] == "tool"]
        assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
            ("c1", "wrote 5 characters to a.txt"),
            ("c2", "7"),
            ("c3", "alpha"),
        ]
        assistant = [m for m in messages if m["role"] == "assistant"]
        assert assistant[0]["tool_calls"][0]["function"]["name"] == "write_file"
        await r.settle()
        assert [e.data["tool"] for e in r.named("tool_call_result")] == ["write_file", "jq", "read_file"]
        done = r.named("turn_complete")[-1].data
        assert done["outcome"] == "ok"
        # The whole turn: its three model calls and three tools, and what lay between.
        model_time = sum(e.data["duration_ms"] for e in r.named("llm_response"))
        assert isinstance(done["total_duration_ms"], float) and done["total_duration_ms"] >= model_time


async def test_runs_wait_in_order_while_the_loop_is_busy(run_core: RunCore) -> None:
    async with run_core(Reply("one"), Reply("two"), Reply("three")) as r:
        session = await r.open()
        turns = [await core.submit(session, f"msg {i}", core.CollectingChannel()) for i in range(3)]
        results = [await turn.wait() for turn in turns]
        assert [res.text for res in results] == ["one", "two", "three"]
        users = [m.content for m in await core.history(session) if m.role == "user"]
        assert users == ["msg 0", "msg 1", "msg 2"]


async def test_text_tool_calls_are_parsed_when_the_model_has_no_native_ones(run_core: RunCore) -> None:
    call = json.dumps({"name": "jq", "arguments": {"filter": ".a", "input": '{"a": 1}'}})
    steps = [Reply(f"<think>plan</think><tool_call>{call}</tool_call>"), Reply("<think>ok</think>a is 1")]
    async with run_core(*steps) as r:
        session = await r.open()
        result = await core.send_message(session, "what is a?", core.CollectingChannel())
        assert result.text == "a is 1"
        tool = [m for m in await core.history(session) if m.role == "tool"]
        assert tool[0].content == "1"


async def test_calls_written_in_the_spec_formats_run_and_bad_ones_are_answered_with_why(run_core: RunCore) -> None:
    hostile = (
        '<tool_call><name>jq</name><args>["not", "an", "object"]</args></tool_call>'
        "<tool_call><name>no_such_tool</name><args>{}</args></tool_call>"
        "<toolcall><toolcall><name>jq</name></toolcall></toolcall>"
        "<invoke><name>jq</name><args>" + "[" * 50_000 + "</args></invoke>"
        "<tool_call><name>jq</name><args>{"
    )
    fenced = '```json\n{"tool": "jq", "args": {"filter": ".a", "input": "{\\"a\\": 2}"}}\n```'
    steps = [Reply(hostile), Reply(f"Trying again.\n{fenced}"), Reply("a is 2")]
    async with run_core(*steps) as r:
        session = await r.open()
        result = await core.send_message(session, "what is a?", core.CollectingChannel())
        assert result.text == "a is 2"
        second = r.model.requests[1]["messages"]
        answers = [m["content"] for m in second if m["role"] == "tool"]
        assert len(answers) == 5 and all(a.startswith("the tool call was not run: ") for a in answers)
        assert "the args of jq must be a JSON object, not list" in answers[0]
        assert "there is no tool called 'no_such_tool'" in answers[1]
        assert "inside another one" in answers[2]
        assert "not valid JSON" in answers[3]
        assert "opened and never closed" in answers[4]
        third = r.model.requests[2]["messages"]
        assert [m["content"] for m in third if m["role"] == "tool"][-1] == "2"
        assert third[-2]["content"] == "Trying again."  # the block is the call, not text
        await r.settle()
        assert [e.data["tool"] for e in r.named("tool_call_result")] == ["jq"]


async def test_a_call_written_inside_the_models_reasoning_is_not_run(run_core: RunCore) -> None:
    thought = '<think>The page said: <tool_call><name>jq</name><args>{"filter": "."}</args></tool_call></think>'
    async with run_core(Reply(f"{thought}Nothing to run.")) as r:
        session = await r.open()
        result = await core.send_message(session, "go", core.CollectingChannel())
        assert result.text == "Nothing to run." and result.tool_calls == 0
        await r.settle()
        assert not r.named("tool_call_result")


async def test_tool_rounds_are_capped_then_a_final_answer_is_asked_for(run_core: RunCore) -> None:
    loop_call = Reply(tool_calls=(Call("jq", {"filter": ".", "input": "1"}),))
    async with run_core(loop_call, loop_call, Reply("final"), agentic_loop={"max_tool_iterations": 2}) as r:
        session = await r.open()
        result = await core.send_message(session, "go", core.CollectingChannel())
        assert result.text == "final" and result.tool_calls == 2
        assert "tools" not in r.model.requests[2]  # the last call offers no tools


async def test_sessions_are_per_user_and_agent_or_per_channel(run_core: RunCore) -> None:
    async with run_core(repeat=Reply("ok")) as r:
        a = await r.open("u1", "default", "tui")
        b = await r.open("u1", "default", "telegram")
        c = await r.open("u2", "default", "tui")
        assert a.id == b.id == core.session_id("u1", "default") and c.id != a.id
    async with run_core(repeat=Reply("ok"), session_sharing="per_channel") as r:
        a = await r.open("u1", "default", "tui")
        b = await r.open("u1", "default", "telegram")
        assert a.id != b.id and b.id == core.session_id("u1", "default", "telegram", per_channel=True)


@attrs.define
class _Unwatched(core.ReplyOnlyChannel):
    """A channel nobody watches the reply grow in (as a JSON answer's, the scheduler's)."""

    sent: list[str] = attrs.field(factory=list)

    async def send(self, text: str) -> None:
        self.sent.append(text)


async def test_a_stalled_model_server_is_asked_again_when_nobody_watches_the_reply(run_core: RunCore) -> None:
    """A server that takes the request and never answers is given up on after the read
    timeout and asked again, not waited on for the whole max_reply_seconds."""
    provider = {"timeout_seconds": 0.2, "max_retries": 1, "max_reply_seconds": 5.0}
    async with run_core(Hold(), Reply("answered"), provider=provider) as r:
        result = await core.send_message(await r.open(), "hi", _Unwatched())
        assert (result.ok, result.text) == (True, "answered")
        assert len(r.model.requests) == 2
