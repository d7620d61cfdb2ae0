"""A loop that crashes mid-turn is restarted: history intact, queue drained, the user told."""

from __future__ import annotations

import beamclaw_core as core
import supervision as sv
from tests.support.model_server import Call, Hold, Reply

from .conftest import RunCore, loop_of, wait_for


async def test_a_crash_while_the_model_answers(run_core: RunCore) -> None:
    hold = Hold(then=Reply("too late"))
    async with run_core(Reply("earlier answer"), hold, Reply("second answer")) as r:
        session = await r.open()
        await core.send_message(session, "earlier", core.CollectingChannel())
        first, second = core.CollectingChannel(), core.CollectingChannel()
        run1 = await core.submit(session, "first", first)
        await wait_for(hold.reached.is_set)
        run2 = await core.submit(session, "second", second)
        old_loop = loop_of(session).whereis()
        sv.kill(loop_of(session), RuntimeError("injected crash"))

        failed = await run1.wait()
        assert not failed.ok and "something went wrong" in failed.text and "injected crash" in failed.text
        assert first.finals == [failed.text]  # the user was told, not left waiting
        answered = await run2.wait()
        assert answered.ok and answered.text == "second answer" and second.finals == ["second answer"]
        assert loop_of(session).whereis() not in (None, old_loop)
        hold.release()

        contents = [(m.role, m.content) for m in await core.history(session)]
        assert contents == [
            ("user", "earlier"), ("assistant", "earlier answer"),
            ("user", "first"), ("user", "second"), ("assistant", "second answer"),
        ]  # fmt: skip
        await r.settle()
        crashed = [e for e in r.named("child_exited") if e.data["child_id"] == "loop" and e.data["crashed"]]
        assert len(crashed) == 1 and "injected crash" in crashed[0].data["traceback"]
        assert [e.data["child_id"] for e in r.named("child_restarted")] == ["loop"]


async def test_a_crash_while_a_tool_runs_leaves_a_valid_history(run_core: RunCore) -> None:
    steps = [Reply(tool_calls=(Call("bash", {"command": "sleep 30"}, id="slow"),)), Reply("recovered")]
    async with run_core(*steps, autonomy_level="full") as r:
        session = await r.open()
        turn = await core.submit(session, "run something slow", core.CollectingChannel())
        await wait_for(lambda: bool(r.named("tool_call_start")))
        sv.kill(loop_of(session), RuntimeError("crash in a tool"))
        assert not (await turn.wait()).ok
        result = await core.send_message(session, "try again", core.CollectingChannel())
        assert result.text == "recovered"
        history = await core.history(session)
        repaired = [m for m in history if m.role == "tool"]
        assert [(m.tool_call_id, m.content) for m in repaired] == [
            ("slow", "error: this tool call was interrupted (the agent restarted) before it returned a result")
        ]
        # The model saw a well-formed history: the tool call answered before the next user turn.
        roles = [m["role"] for m in r.model.requests[1]["messages"]]
        assert roles == ["system", "user", "assistant", "tool", "user"]


async def test_a_loop_crashing_again_and_again_escalates_but_keeps_history(run_core: RunCore) -> None:
    async with run_core(repeat=Reply("fine")) as r:
        session = await r.open()
        await core.send_message(session, "remember me", core.CollectingChannel())
        killed: list[sv.Pid | None] = [None]
        for _ in range(7):  # past the session supervisor's intensity (5 in 10 s)
            await wait_for(lambda: loop_of(session).whereis() not in killed)
            killed.append(loop_of(session).whereis())
            sv.kill(killed[-1], RuntimeError("again"))
        await wait_for(lambda: loop_of(session).whereis() not in killed)
        result = await core.send_message(session, "still there?", core.CollectingChannel())
        assert result.text == "fine"
        assert [m.content for m in await core.history(session)][:2] == ["remember me", "fine"]
