"""A2A's JSON-RPC: method names old and new, answer shapes, errors, streams, the card.

Called on the running service directly; over HTTP in tests/apps/beamclaw_gateway/test_a2a_routes.py.
"""

from __future__ import annotations

from tests.support.a2a_events import assert_subscription_completed
from tests.support.model_server import Hold, Reply

from .conftest import BASE_URL, RunA2A


async def test_the_0_3_names_and_shapes(run_a2a: RunA2A) -> None:
    async with run_a2a(Reply("old style")) as a:
        answer = await a.rpc(
            "message/send",
            {
                "message": {
                    "kind": "message",
                    "messageId": "1",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}],
                }
            },
        )
        task = answer["result"]
        assert task["kind"] == "task" and task["status"]["state"] == "completed"
        assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "old style"}]


async def test_json_rpc_errors(run_a2a: RunA2A) -> None:
    async with run_a2a() as a:
        parse = await a.handle(b"{nope")
        assert isinstance(parse, dict) and parse["error"]["code"] == -32700 and parse["id"] is None
        invalid = await a.handle(b'{"id": 3, "method": "SendMessage"}')
        assert isinstance(invalid, dict) and invalid["error"]["code"] == -32600 and invalid["id"] == 3
        assert (await a.rpc("Fly", {}))["error"]["code"] == -32601
        assert (await a.rpc("SendMessage", {"message": {"parts": []}}))["error"]["code"] == -32602
        assert (await a.rpc("SendMessage", []))["error"]["code"] == -32602
        push = await a.rpc("CreateTaskPushNotificationConfig", {})
        assert push["error"]["code"] == -32003
        assert a.model.count == 0


async def test_the_card_says_where_and_what(run_a2a: RunA2A) -> None:
    async with run_a2a() as a:
        for method in ("GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"):
            card = (await a.rpc(method, {}))["result"]
            assert card["name"] == "BeamClaw"
            assert card["supportedInterfaces"][0] == {
                **card["supportedInterfaces"][0],
                "url": f"{BASE_URL}/a2a",
                "protocolBinding": "JSONRPC",
            }
            assert card["capabilities"]["streaming"] is True and card["skills"][0]["id"] == "chat"


async def test_subscribe_to_a_working_task(run_a2a: RunA2A) -> None:
    hold = Hold(then=Reply("done at last"))
    async with run_a2a(hold) as a:
        message = {"messageId": "1", "role": "ROLE_USER", "parts": [{"text": "take your time"}]}
        sent = await a.rpc("SendMessage", {"message": message, "configuration": {"returnImmediately": True}})
        task_id = sent["result"]["task"]["id"]
        answer = await a.handle(
            f'{{"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {{"id": "{task_id}"}}}}'
        )
        assert not isinstance(answer, dict)
        events = []
        async for event in answer:
            events.append(event)
            if len(events) == 1:
                hold.release()
        assert_subscription_completed(events, task_id, 9)
        ended = await a.rpc("SubscribeToTask", {"id": task_id})
        assert ended["error"]["code"] == -32600 and "has ended" in ended["error"]["message"]


async def test_a_megabyte_of_token_lookalikes_is_refused_before_anything_reads_it(run_a2a: RunA2A) -> None:
    # 250,000 characters that look like the start of a JWT over and over: refused by the
    # cap (32,000) before the scrubber or the agent sees them.
    async with run_a2a() as a:
        refused = await a.rpc("SendMessage", {"message": {"messageId": "1", "parts": [{"text": "eyJ-" * 62_500}]}})
        assert refused["error"]["code"] == -32602 and "at most 32000" in refused["error"]["message"]
        assert a.model.count == 0 and (await a.rpc("ListTasks", {}))["result"]["totalSize"] == 0
