"""GET /ws with a real WebSocket client (trio-websocket)."""

from __future__ import annotations

import json
from typing import Any

import trio
from trio_websocket import open_websocket_url

from tests.support.model_server import Call, Reply

from .conftest import Gateway, RunGateway


def _headers(g: Gateway, **extra: str) -> list[tuple[bytes, bytes]]:
    headers = {"X-User-Id": "ws-tester", **extra}
    if g.token:
        headers["Authorization"] = f"Bearer {g.token}"
    return [(k.encode(), v.encode()) for k, v in headers.items()]


async def _until(ws: Any, kind: str) -> list[dict[str, Any]]:
    events = []
    with trio.fail_after(20):
        while True:
            event = json.loads(await ws.get_message())
            events.append(event)
            if event["type"] == kind:
                return events


async def test_a_streamed_turn_with_tool_events(run_gateway: RunGateway) -> None:
    steps = [Reply(tool_calls=(Call("jq", {"filter": ".n", "input": '{"n": 3}'}),)), Reply("n is three. " * 12)]
    async with run_gateway(*steps, token="ws-token-1234567890") as g:
        url = g.url.replace("http", "ws") + "/ws"
        async with open_websocket_url(url, extra_headers=_headers(g)) as ws:
            await ws.send_message(json.dumps({"type": "message", "id": "m1", "text": "what is n?"}))
            events = await _until(ws, "run_completed")
        kinds = [e["type"] for e in events]
        assert kinds[0] == "run_started" and kinds[-1] == "run_completed"
        assert events[kinds.index("tool_call")]["name"] == "jq"
        assert events[kinds.index("tool_result")]["result"] == "3"
        text = "".join(e["text"] for e in events if e["type"] == "chunk")
        assert text == ("n is three. " * 12).strip() == events[-1]["text"]
        assert all(e["id"] == "m1" for e in events) and events[-1]["ok"] is True


async def test_duplicates_and_bad_messages(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Reply("once")) as g:
        url = g.url.replace("http", "ws") + "/ws"
        async with open_websocket_url(url, extra_headers=_headers(g)) as ws:
            await ws.send_message(json.dumps({"type": "message", "id": "same", "text": "hi"}))
            await _until(ws, "run_completed")
            await ws.send_message(json.dumps({"type": "message", "id": "same", "text": "hi"}))
            assert json.loads(await ws.get_message()) == {"type": "duplicate", "id": "same"}
            await ws.send_message("not json")
            assert "must be JSON" in json.loads(await ws.get_message())["error"]
            await ws.send_message(json.dumps({"type": "message", "id": "x", "text": "", "agent": "default"}))
            assert "'text' must be a non-empty string" in json.loads(await ws.get_message())["error"]
            await ws.send_message(json.dumps({"type": "message", "id": "y", "text": "hi", "agent": 5}))
            assert "'agent' must be a string naming an agent" in json.loads(await ws.get_message())["error"]
        assert g.model.count == 1


async def test_origin_and_token_are_checked(run_gateway: RunGateway) -> None:
    table = {"http": {"allowed_origins": ["https://ok.example"]}}
    async with run_gateway(gateway_table=table, token="ws-token-1234567890") as g:
        url = g.url.replace("http", "ws") + "/ws"
        # The handshakes are refused with plain HTTP answers; httpx reads them whole.
        upgrade = {
            "Connection": "Upgrade",
            "Upgrade": "websocket",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        }
        async with g.client() as http:
            evil = await http.get("/ws", headers={**upgrade, "Origin": "https://evil.example"})
            assert evil.status_code == 403 and "not in gateway.http.allowed_origins" in evil.json()["error"]["message"]
        async with g.client(headers={"Authorization": ""}) as http:
            assert (await http.get("/ws", headers=upgrade)).status_code == 401
        async with open_websocket_url(url, extra_headers=_headers(g, Origin="https://ok.example")) as ws:
            await ws.send_message(json.dumps({"type": "nonsense"}))
            assert json.loads(await ws.get_message())["type"] == "error"


async def test_each_message_counts_against_its_users_rate_limit(run_gateway: RunGateway) -> None:
    limits = {"requests": 2, "requests_per_address": 100, "window_seconds": 60}
    async with run_gateway(repeat=Reply("ok"), gateway_table={"rate_limit": limits}) as g:
        url = g.url.replace("http", "ws") + "/ws"
        async with open_websocket_url(url, extra_headers=_headers(g)) as ws:
            for n in range(2):
                await ws.send_message(json.dumps({"type": "message", "id": f"a{n}", "text": "hi", "user": "ada"}))
                await _until(ws, "run_completed")
            await ws.send_message(json.dumps({"type": "message", "id": "a2", "text": "hi", "user": "ada"}))
            refused = json.loads(await ws.get_message())
            assert refused["type"] == "error" and refused["error"].startswith("rate limit reached; retry in")
            await ws.send_message(json.dumps({"type": "message", "id": "b0", "text": "hi", "user": "bob"}))
            assert (await _until(ws, "run_completed"))[-1]["ok"] is True
