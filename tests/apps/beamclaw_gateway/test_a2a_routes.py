"""A2A over the gateway's HTTP: the official a2a-sdk client against /a2a, the card's
well-known addresses, the event stream's framing, and the chat cap applied to tasks.

What the A2A app decides itself (methods, shapes, errors, tasks) is tested on its
service directly, in tests/apps/beamclaw_a2a/.
"""

from __future__ import annotations

import gc
import json
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb

from tests.support.a2a_events import assert_subscription_completed
from tests.support.model_server import Hold, Reply

from .conftest import Gateway, RunGateway


def _message(text: str, context_id: str = "") -> pb.SendMessageRequest:
    message = pb.Message(message_id="m-" + text[:8], role=pb.ROLE_USER, parts=[pb.Part(text=text)])
    if context_id:
        message.context_id = context_id
    return pb.SendMessageRequest(message=message)


async def _rpc(g: Gateway, method: str, params: Any, rid: Any = 1) -> dict[str, Any]:
    async with g.client() as http:
        answer = await http.post("/a2a", json={"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    assert answer.status_code == 200
    result: dict[str, Any] = answer.json()
    return result


# The a2a-sdk client, like openai's, leaves stream generators to the garbage collector.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_the_official_client_sends_and_streams(run_gateway: RunGateway) -> None:
    async with run_gateway(Reply("Hello, agent to agent."), Reply("Streamed reply. " * 8), Reply("Third.")) as g:
        async with httpx.AsyncClient(timeout=30) as http:
            client = await create_client(g.url, ClientConfig(streaming=False, httpx_client=http))
            card = client._card
            assert card.name == "BeamClaw" and card.supported_interfaces[0].url == f"{g.url}/a2a"
            (event,) = [e async for e in client.send_message(_message("hello", "ctx-1"))]
            task = event.task
            assert task.status.state == pb.TASK_STATE_COMPLETED and task.context_id == "ctx-1"
            assert task.artifacts[0].parts[0].text == "Hello, agent to agent."

            streaming = await create_client(g.url, ClientConfig(streaming=True, httpx_client=http))
            events = [e async for e in streaming.send_message(_message("stream please", "ctx-1"))]
            kinds = [e.WhichOneof("payload") for e in events]
            assert kinds[0] == "task" and kinds[-1] == "status_update"
            assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED
            assert "artifact_update" in kinds
            fetched = await streaming.get_task(pb.GetTaskRequest(id=events[0].task.id))
            assert fetched.status.state == pb.TASK_STATE_COMPLETED
            listed = await streaming.list_tasks(pb.ListTasksRequest(context_id="ctx-1"))
            assert listed.total_size == 2
            await client.close()
            await streaming.close()
        gc.collect()  # what the client left behind is collected here, where its warnings are expected
        # Both tasks continued one conversation: the context is the session.
        assert [m["content"] for m in g.model.requests[1]["messages"][1:]] == [
            "hello",
            "Hello, agent to agent.",
            "stream please",
        ]


async def test_the_card_and_json_rpc_errors_over_http(run_gateway: RunGateway) -> None:
    async with run_gateway() as g, g.client() as http:
        parse = (await http.post("/a2a", content=b"{nope", headers={"Content-Type": "application/json"})).json()
        assert parse["error"]["code"] == -32700 and parse["id"] is None
        invalid = (await http.post("/a2a", json={"id": 3, "method": "SendMessage"})).json()
        assert invalid["error"]["code"] == -32600 and invalid["id"] == 3
        assert (await _rpc(g, "Fly", {}))["error"]["code"] == -32601
        for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
            card = (await http.get(path)).json()
            assert card["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"
            assert card["supportedInterfaces"][0]["url"] == f"{g.url}/a2a"
            assert card["capabilities"]["streaming"] is True and card["skills"][0]["id"] == "chat"
        assert g.model.count == 0


async def test_subscribe_to_a_working_task_as_server_sent_events(run_gateway: RunGateway) -> None:
    hold = Hold(then=Reply("done at last"))
    async with run_gateway(hold) as g:
        message = {"messageId": "1", "role": "ROLE_USER", "parts": [{"text": "take your time"}]}
        sent = await _rpc(g, "SendMessage", {"message": message, "configuration": {"returnImmediately": True}})
        task_id = sent["result"]["task"]["id"]
        request = {"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": task_id}}
        events = []
        async with g.client() as http, http.stream("POST", "/a2a", json=request) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line.removeprefix("data: ")))
                    if len(events) == 1:
                        hold.release()
        assert_subscription_completed(events, task_id, 9)


async def test_task_text_is_capped_where_chat_text_is(run_gateway: RunGateway) -> None:
    table = {"http": {"max_user_chars": 100}}
    async with run_gateway(repeat=Reply("ok"), gateway_table=table) as g:

        def send(text: str) -> dict[str, Any]:
            return {"message": {"messageId": "1", "parts": [{"text": text}]}, "configuration": {"blocking": False}}

        assert "result" in await _rpc(g, "SendMessage", send("x" * 100))
        refused = await _rpc(g, "SendMessage", send("x" * 101))
        assert refused["error"]["code"] == -32602
        assert refused["error"]["message"] == "params.message has 101 characters of text; at most 100 are accepted"
        listed = await _rpc(g, "ListTasks", {})
        assert listed["result"]["totalSize"] == 1  # the refused one was never stored
