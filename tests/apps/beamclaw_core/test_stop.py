"""/stop ends the turn where it stands, without crashing (or restarting) the loop."""

from __future__ import annotations

import trio

import beamclaw_core as core
import supervision as sv
from tests.support.model_server import Call, Hold, Reply

from .conftest import RunCore, loop_of, wait_for


async def _stop_when(turn: core.Turn, session: core.SessionHandle, reached: trio.Event) -> core.TurnResult:
    with trio.fail_after(20):
        await reached.wait()
    assert await core.stop_turn(session)
    return await turn.wait()


async def test_stopping_while_the_model_answers_a_tool_runs_or_an_approval_waits(run_core: RunCore) -> None:
    model_held = Hold(then=Reply("too late"))
    steps = [
        model_held,
        Reply(tool_calls=(Call("bash", {"command": "sleep 30"}, id="sleepy"),)),
        Reply(tool_calls=(Call("bash", {"command": "command echo hi"}, id="asked"),)),
        Reply("still here"),
    ]
    async with run_core(*steps, autonomy_level="supervised", tools={"bash": {"isolation": "none"}}) as r:
        session = await r.open()
        loop = loop_of(session).whereis()

        # While the model is answering.
        turn = await core.submit(session, "slow model", core.CollectingChannel())
        result = await _stop_when(turn, session, model_held.reached)
        assert (result.text, result.error) == ("Stopped.", core.TurnError.STOPPED)

        # While a tool is running: approved, then stopped; its call gets a result.
        channel = core.CollectingChannel()
        turn = await core.submit(session, "a long command", channel)
        await wait_for(lambda: bool(channel.sent))
        await core.send_message(session, "/yes", core.CollectingChannel())
        await trio.sleep(0.5)
        assert await core.stop_turn(session)
        assert (await turn.wait()).error is core.TurnError.STOPPED

        # While an approval waits.
        channel = core.CollectingChannel()
        turn = await core.submit(session, "ask me", channel)
        await wait_for(lambda: bool(channel.sent))
        assert await core.stop_turn(session)
        assert (await turn.wait()).error is core.TurnError.STOPPED

        # Nothing crashed or restarted, the history is valid, and the next turn works.
        assert loop_of(session).whereis() == loop
        assert (await core.send_message(session, "and now?", core.CollectingChannel())).text == "still here"
        history = await core.history(session)
        assert core.answered_history(history) == history
        assert [m.tool_call_id for m in history if m.role == "tool"] == ["sleepy", "asked"]
        assert not await core.stop_turn(session)  # nothing to stop
        await r.settle()
        assert not [e for e in r.named("child_exited") if e.data.get("child_id") == "loop"]


async def test_many_stops_in_a_row_never_add_up_to_an_escalation(run_core: RunCore) -> None:
    holds = [Hold(then=Reply("late")) for _ in range(8)]
    async with run_core(*holds, Reply("fine")) as r:
        session = await r.open()
        loop = loop_of(session).whereis()
        for held in holds:
            turn = await core.submit(session, "again", core.CollectingChannel())
            assert (await _stop_when(turn, session, held.reached)).error is core.TurnError.STOPPED
        assert loop_of(session).whereis() == loop
        assert (await core.send_message(session, "done?", core.CollectingChannel())).text == "fine"
        tree = sv.inspect_tree(core.SESSIONS_SUP)
        assert all(child["restarts"] == 0 for child in tree["children"])
