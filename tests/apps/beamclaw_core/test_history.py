"""Every tool call a model sees is answered, whatever crashed while the tool ran.

The scripted model refuses an invalid history exactly as api.openai.com does, so a
turn after each crash proves the conversation is not broken for good.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import beamclaw_core as core
import supervision as sv
from beamclaw_base import StoreConfig, Tx
from beamclaw_core import INTERRUPTED, Message, ToolCall, answered_history
from beamclaw_core._session_messages import Append
from tests.support.model_server import Call, Reply, invalid_tool_history

from .conftest import RunCore, Running, session_store, wait_for

CALL = ToolCall("c1", "bash", "{}")
ASK = Message("assistant", "", tool_calls=(CALL,))
RESULT = Message("tool", "done", tool_call_id="c1", name="bash")
CLOSED = Message("tool", INTERRUPTED, tool_call_id="c1", name="bash")
HI, OK = Message("user", "hi"), Message("assistant", "ok")


def _openai(history: list[Message]) -> list[dict[str, object]]:
    return [m.to_openai() for m in history]


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([HI, ASK, RESULT, OK], None),
        ([HI, ASK], [HI, ASK, CLOSED]),
        ([ASK, HI], [ASK, CLOSED, HI]),
        ([HI, RESULT, OK], [HI, OK]),
        ([ASK, RESULT, RESULT], [ASK, RESULT]),
        ([ASK, Message("tool", "x", tool_call_id="other")], [ASK, CLOSED]),
    ],
    ids=["valid", "open-at-the-end", "open-before-a-user-turn", "orphan-result", "answered-twice", "wrong-id"],
)  # fmt: skip
def test_answered_history(history: list[Message], expected: list[Message] | None) -> None:
    repaired = answered_history(history)
    assert repaired == (history if expected is None else expected)
    assert invalid_tool_history(_openai(repaired)) is None
    assert (invalid_tool_history(_openai(history)) is None) == (expected is None)  # the strict model agrees


async def _kill_while_a_tool_runs(r: Running, victim: str) -> None:
    session = await r.open()
    turn = await core.submit(session, "run something slow", core.CollectingChannel())
    await wait_for(lambda: bool(r.named("tool_call_start")))
    dest: object = {
        "session": session.dest,
        "session tree": f"session:{session.id}",
        "store": "beamclaw_core.store",
        "sessions_sup": core.SESSIONS_SUP,
    }[victim]
    sv.kill(dest, RuntimeError(f"injected crash of {victim}"))  # type: ignore[arg-type]
    await turn.wait()


@pytest.mark.parametrize("victim", ["session", "session tree", "store", "sessions_sup"])
async def test_a_crash_while_a_tool_runs_never_breaks_the_conversation(run_core: RunCore, victim: str) -> None:
    slow = Reply(tool_calls=(Call("bash", {"command": "sleep 30"}, id="slow"),))
    async with run_core(slow, Reply("recovered"), autonomy_level="full") as r:
        await _kill_while_a_tool_runs(r, victim)
        session = await r.open()
        result = await core.send_message(session, "try again", core.CollectingChannel())
        assert result.ok and result.text == "recovered"
        assert r.model.refusals == []
        history = await core.history(session)
        assert answered_history(history) == history
        assert [(m.tool_call_id, m.content) for m in history if m.role == "tool"] == [("slow", INTERRUPTED)]


async def test_a_history_left_open_by_a_killed_daemon_is_closed_on_restore(
    run_core: RunCore, tmp_path: Path, store_config: StoreConfig
) -> None:
    home = tmp_path / "home"
    async with run_core(home=home, store=store_config) as r:
        session = await r.open()
    # What a kill -9 while a tool ran leaves stored: the call saved, its result never.
    info = core.SessionInfo(session.id, session.user_id, session.agent_id, session.channel)
    left = [(info.id, seq, message.to_record()) for seq, message in enumerate([Message("user", "run it"), ASK])]

    def kill_minus_9(tx: Tx) -> None:
        tx.execute(
            "INSERT INTO sessions (id, user_id, agent_id, channel, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 0, 0) ON CONFLICT (id) DO NOTHING",
            (info.id, info.user_id, info.agent_id, ""),
        )
        tx.executemany("INSERT INTO messages (session_id, seq, message) VALUES (?, ?, ?)", left)

    with session_store(home, store_config) as db:
        db.transact(kill_minus_9)
    async with run_core(Reply("back"), home=home, store=store_config) as r:
        session = await r.open()
        stored = await core.history(session)
        assert stored[-1] == Message("tool", INTERRUPTED, tool_call_id="c1", name="bash")
        assert (await core.send_message(session, "hello?", core.CollectingChannel())).text == "back"
        assert r.model.refusals == []
        await r.settle()
        assert r.named("history_repaired")[0].data["messages_after"] == 3
    # The repair was saved, not only made in memory.
    async with run_core(home=home, store=store_config) as r:
        assert len(await core.history(await r.open())) == 5


async def test_no_request_goes_out_with_an_unanswered_call(run_core: RunCore) -> None:
    """Even a history that bypassed every repair is answered in the request itself."""
    async with run_core(Reply("fine")) as r:
        session = await r.open()
        await sv.call(session.dest, Append([Message("user", "x"), ASK, RESULT, RESULT, Message("user", "y")]))
        result = await core.send_message(session, "and now?", core.CollectingChannel())
        assert result.text == "fine" and r.model.refusals == []
        roles = [m["role"] for m in r.model.requests[0]["messages"]]
        assert roles == ["system", "user", "assistant", "tool", "user", "user"]
