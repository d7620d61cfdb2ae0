"""The conversations over the management API: each operator reaches its own users'
only, a viewer none, an admin all; bad names and ids get clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from beamclaw_base import StoreConfig
from tests.support.model_server import Echo

from .session_api import ADMIN, ALICE, BOB, VIEWER, serving, tokens  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("tokens")


async def test_an_operator_lists_and_reads_only_its_own_users_sessions(
    tmp_path: Path, store_config: StoreConfig
) -> None:
    async with serving(tmp_path, repeat=Echo(), store=store_config) as api:
        alices = await api.chat(ALICE, text="alice's secret plan", user="notes")
        await api.chat(BOB, text="hello")
        session = alices[-1][1]["session"]
        async with api.client(BOB) as bob, api.client(ALICE) as alice, api.client(ADMIN) as admin:
            listed = (await bob.get("/v1/sessions")).json()
            assert [s["user_id"] for s in listed["sessions"]] == ["api:bob"] and listed["total"] == 1
            for method, path, body in [
                ("GET", f"/v1/sessions/{session}", None),
                ("GET", f"/v1/sessions/{session[:12]}/history", None),
                ("POST", f"/v1/sessions/{session}/stop", {}),
                ("DELETE", f"/v1/sessions/{session}", {}),
                ("POST", f"/v1/sessions/{session}/approval", {"answer": "yes"}),
            ]:
                refused = await bob.request(method, path, json=body)
                assert refused.status_code == 403, (method, path, refused.text)
                assert refused.json()["error"]["code"] == "forbidden"
            assert (await bob.post("/v1/chat", json={"text": "hi", "session": session})).status_code == 403
            assert (await bob.post("/v1/sessions", json={"user": "api:alice/notes"})).status_code == 403

            mine = (await alice.get("/v1/sessions")).json()["sessions"]
            assert [(s["id"], s["user_id"], s["agent_id"], s["channel"]) for s in mine] == [
                (session, "api:alice/notes", "default", "cli")
            ]
            assert mine[0]["running"] is True and mine[0]["last_active"] > 0
            assert 0 < mine[0]["context_used"] < mine[0]["context_window"]
            history = (await alice.get(f"/v1/sessions/{session[:12]}/history")).json()
            assert [(m["role"], m["content"]) for m in history["messages"]] == [
                ("user", "alice's secret plan"),
                ("assistant", "You said: alice's secret plan"),
            ]
            one = (await alice.get(f"/v1/sessions/{session[:12]}")).json()
            assert one["context"]["messages"] == 2 and one["session"]["id"] == session
            assert {s["user_id"] for s in (await admin.get("/v1/sessions")).json()["sessions"]} == {
                "api:alice/notes",
                "api:bob",
            }
            assert (await alice.request("DELETE", f"/v1/sessions/{session}", json={})).json() == {"dropped": 2}
            after = (await alice.get(f"/v1/sessions/{session}/history")).json()
            assert after["messages"] == []


async def test_a_viewer_reads_metadata_but_no_conversation(tmp_path: Path) -> None:
    async with serving(tmp_path, repeat=Echo()) as api:
        session = (await api.chat(ALICE, text="hi"))[-1][1]["session"]
        assert await api.chat(VIEWER, text="let me talk") == [("status", 403)]
        async with api.client(VIEWER) as viewer:
            for method, path, body in [
                ("GET", "/v1/sessions", None),
                ("POST", "/v1/sessions", {"user": "x"}),
                ("GET", f"/v1/sessions/{session}/history", None),
                ("POST", f"/v1/sessions/{session}/approval", {"answer": "yes"}),
                ("POST", f"/v1/sessions/{session}/stop", {}),
            ]:
                assert (await viewer.request(method, path, json=body)).status_code == 403, path
            assert (await viewer.get("/v1/agents")).json() == {"agents": [{"name": "default", "default": True}]}
        assert len(api.model.requests) == 1


async def test_opening_stopping_and_approving_say_what_happened(tmp_path: Path) -> None:
    async with serving(tmp_path, repeat=Echo()) as api, api.client(ALICE) as alice:
        opened = await alice.post("/v1/sessions", json={"user": "work", "channel": "console"})
        session = opened.json()["session"]
        assert (session["user_id"], session["agent_id"], session["channel"]) == ("api:alice/work", "default", "console")
        assert (await alice.post(f"/v1/sessions/{session['id']}/stop", json={})).json() == {"stopped": False}
        waiting = await alice.post(f"/v1/sessions/{session['id']}/approval", json={"answer": "yes"})
        assert waiting.status_code == 409 and "not waiting" in waiting.json()["error"]["message"]
        refused = [
            await alice.post("/v1/sessions", json={"user": "work", "agent": "nobody"}),
            await alice.post("/v1/sessions", json={"user": "work", "channel": "telegram"}),
            await alice.post("/v1/sessions", json={"user": "bad\x1b[2Jname"}),
            await alice.post(f"/v1/sessions/{session['id']}/approval", json={"answer": "maybe"}),
            await alice.get("/v1/sessions?limit=0"),
            await alice.get("/v1/sessions/zzz"),
            await alice.get("/v1/sessions/0123456789abcdef"),
        ]
        assert [r.status_code for r in refused] == [404, 400, 400, 400, 400, 404, 404]
        assert "nobody" in refused[0].json()["error"]["message"]
        assert "channel" in refused[1].json()["error"]["message"]
