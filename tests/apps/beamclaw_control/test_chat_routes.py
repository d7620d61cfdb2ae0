"""A chat turn over the management API, streamed as server-sent events: drafts, tool
cards, an approval asked and answered from its own route, and the reply."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import trio

from tests.support.model_server import Call, Echo, Reply

from .session_api import ADMIN, ALICE, BOB, Api, serving, sse_events, tokens  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("tokens")

_REPLY = ("n is 7, as jq read it. " * 30).strip()  # drafts lag the stream by the scrubber's hold (256 characters)
_TOOL_TURN = (Reply(tool_calls=(Call("jq", {"filter": ".n", "input": '{"n": 7}'}, id="c1"),)), Reply(_REPLY))


async def test_the_stream_carries_drafts_a_tool_card_pair_and_the_reply(tmp_path: Path) -> None:
    async with serving(tmp_path, *_TOOL_TURN) as api:
        events = await api.chat(ALICE, text="what is n?", user="maths")
    names = [name for name, _ in events]
    assert names[0] == "typing"
    cards = [(name, data) for name, data in events if name.startswith("tool_")]
    assert cards == [
        ("tool_started", {"name": "jq", "arguments": '{"filter": ".n", "input": "{\\"n\\": 7}"}'}),
        ("tool_finished", {"name": "jq", "result": "7", "is_error": False}),
    ]
    drafts = [data["text"] for name, data in events if name == "draft"]
    assert len(drafts) > 1 and all(_REPLY.startswith(text) for text in drafts)
    assert names.index("tool_finished") < names.index("draft") < names.index("final")
    assert ("final", {"text": _REPLY}) in events
    reply_name, reply = events[-1]
    assert reply_name == "reply" and reply["ok"] is True and reply["text"] == _REPLY
    assert len(reply["session"]) == 64


async def test_the_stream_ends_when_the_turn_is_settled_not_at_its_next_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream's look for a dead session is made once an hour here: the reply must still
    come, since a settled turn closes the stream's channel itself."""
    monkeypatch.setattr("beamclaw_control._chat_routes._POLL", 3600.0)
    async with serving(tmp_path, Reply("done")) as api:
        with trio.fail_after(60):  # only stops a hang
            events = await api.chat(ALICE, text="hi", user="quick")
    assert events[-1][0] == "reply" and events[-1][1]["text"] == "done"


_BASH = Call("bash", {"command": "command echo approved-and-ran"}, id="b")  # `command` is not allowlisted: it asks
_ASKS_FOR_BASH = (Reply(tool_calls=(_BASH,)), Reply("ran it"))


async def _until_approval(
    api: Api, seen: list[tuple[str, object]], asked: trio.Event, token: str = ALICE, **body: str
) -> None:
    chat = {"text": "run it", **body}
    async with api.client(token) as http, http.stream("POST", "/v1/chat", json=chat) as response:
        assert response.status_code == 200
        async for event in sse_events(response):
            seen.append(event)
            if event[0] == "approval":
                asked.set()


async def test_an_approval_event_then_yes_from_the_approval_route_runs_the_tool(tmp_path: Path) -> None:
    async with serving(tmp_path, *_ASKS_FOR_BASH) as api:
        seen: list[tuple[str, object]] = []
        asked = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_until_approval, api, seen, asked)
            with trio.fail_after(30):
                await asked.wait()
            question = next(data for name, data in seen if name == "approval")
            assert isinstance(question, dict) and "bash" in question["question"] and "/yes" in question["question"]
            path = f"/v1/sessions/{question['session']}/approval"
            async with api.client(BOB) as bob:  # another operator's word is refused
                assert (await bob.post(path, json={"answer": "yes"})).status_code == 403
            assert not any(name == "tool_started" for name, _ in seen)
            async with api.client(ALICE) as alice:
                assert (await alice.post(path, json={"answer": "yes"})).json() == {"answer": "yes"}
        started = [data for name, data in seen if name == "tool_started"]
        finished = [data for name, data in seen if name == "tool_finished"]
        assert [d["name"] for d in started] == ["bash"]  # type: ignore[index]
        assert "approved-and-ran" in finished[0]["result"]  # type: ignore[index]
        assert seen[-1] == ("reply", {"ok": True, "text": "ran it", "session": question["session"]})
        assert not any(name == "message" for name, _ in seen)  # the question came as an event, not a text


async def test_an_operator_answers_no_approval_another_clients_run_asked_for_its_user(tmp_path: Path) -> None:
    """The admin's run in alice's conversation asks: alice's token, which may act as that
    user, still approves nothing of it (as a ``/yes`` of hers would not); the admin does."""
    async with serving(tmp_path, *_ASKS_FOR_BASH) as api:
        seen: list[tuple[str, object]] = []
        asked = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(functools.partial(_until_approval, api, seen, asked, ADMIN, user="api:alice"))
            with trio.fail_after(30):
                await asked.wait()
            question = next(data for name, data in seen if name == "approval")
            assert isinstance(question, dict)
            path = f"/v1/sessions/{question['session']}/approval"
            async with api.client(ALICE) as alice:
                refused = await alice.post(path, json={"answer": "yes"})
            assert refused.status_code == 409 and refused.json()["error"]["code"] == "nothing_waits"
            assert not any(name == "tool_started" for name, _ in seen)
            async with api.client(ADMIN) as admin:
                assert (await admin.post(path, json={"answer": "yes"})).json() == {"answer": "yes"}
        assert [d["name"] for n, d in seen if n == "tool_started"] == ["bash"]  # type: ignore[index]


async def test_a_chat_names_its_conversation_by_session_id_and_refuses_a_bad_body(tmp_path: Path) -> None:
    async with serving(tmp_path, repeat=Echo()) as api:
        session = (await api.chat(ALICE, text="first", user="s"))[-1][1]["session"]
        again = await api.chat(ALICE, text="second", session=session[:10], channel="console")
        assert again[-1] == ("reply", {"ok": True, "text": "You said: second", "session": session})
        assert await api.chat(ALICE, text="") == [("status", 400)]
        assert await api.chat(ALICE, text="hi", channel="telegram") == [("status", 400)]
        assert await api.chat(ALICE, text="hi", agent="nobody") == [("status", 404)]
        assert await api.chat(ALICE, text="hi", user="api:bob") == [("status", 403)]
