"""A2A: the official a2a-sdk client against /a2a, and the JSON-RPC rules by hand."""

from __future__ import annotations

import gc
import json
import sqlite3
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb

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


async def test_get_list_and_cancel_by_hand(run_gateway: RunGateway) -> None:
    hold = Hold(then=Reply("late"))
    async with run_gateway(hold) as g:
        sent = await _rpc(
            g,
            "SendMessage",
            {
                "message": {"messageId": "1", "role": "ROLE_USER", "parts": [{"text": "slow one"}]},
                "configuration": {"returnImmediately": True},
            },
        )
        task = sent["result"]["task"]
        assert task["status"]["state"] in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
        canceled = await _rpc(g, "CancelTask", {"id": task["id"]})
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        again = await _rpc(g, "tasks/cancel", {"id": task["id"]})
        assert again["error"]["code"] == -32002
        hold.release()
        got = await _rpc(g, "tasks/get", {"id": task["id"]})
        assert got["result"]["kind"] == "task" and got["result"]["status"]["state"] == "canceled"
        assert (await _rpc(g, "GetTask", {"id": "nope"}))["error"]["code"] == -32001


async def test_the_0_3_names_and_shapes(run_gateway: RunGateway) -> None:
    async with run_gateway(Reply("old style")) as g:
        answer = await _rpc(
            g,
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


async def test_json_rpc_errors(run_gateway: RunGateway) -> None:
    async with run_gateway() as g, g.client() as http:
        parse = (await http.post("/a2a", content=b"{nope", headers={"Content-Type": "application/json"})).json()
        assert parse["error"]["code"] == -32700 and parse["id"] is None
        invalid = (await http.post("/a2a", json={"id": 3, "method": "SendMessage"})).json()
        assert invalid["error"]["code"] == -32600 and invalid["id"] == 3
        assert (await _rpc(g, "Fly", {}))["error"]["code"] == -32601
        assert (await _rpc(g, "SendMessage", {"message": {"parts": []}}))["error"]["code"] == -32602
        assert (await _rpc(g, "SendMessage", []))["error"]["code"] == -32602
        push = await _rpc(g, "CreateTaskPushNotificationConfig", {})
        assert push["error"]["code"] == -32003
        for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
            card = (await http.get(path)).json()
            assert card["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"
            assert card["capabilities"]["streaming"] is True and card["skills"][0]["id"] == "chat"
        assert g.model.count == 0


async def test_subscribe_to_a_working_task(run_gateway: RunGateway) -> None:
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
        assert all(e["id"] == 9 for e in events)
        assert events[0]["result"]["task"]["id"] == task_id
        assert events[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert any("artifactUpdate" in e["result"] for e in events)
        ended = await _rpc(g, "SubscribeToTask", {"id": task_id})
        assert ended["error"]["code"] == -32600 and "has ended" in ended["error"]["message"]


GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


async def test_task_texts_are_scrubbed_before_they_are_stored_and_returned(run_gateway: RunGateway) -> None:
    reply = f"Done. The token I used: {GITHUB_TOKEN}"
    async with run_gateway(Reply(reply), Reply(reply)) as g:
        asked = "deploy with api_key=hunter2hunter2 please"
        sent = await _rpc(g, "SendMessage", {"message": {"messageId": "1", "parts": [{"text": asked}],
                                                         "contextId": "ctx-s"}})  # fmt: skip
        task_id = sent["result"]["task"]["id"]
        message = {"messageId": "2", "parts": [{"text": asked}], "contextId": "ctx-s"}
        request = {"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage", "params": {"message": message}}
        async with g.client() as http, http.stream("POST", "/a2a", json=request) as stream:
            streamed = "".join([line async for line in stream.aiter_lines()])
        got = await _rpc(g, "GetTask", {"id": task_id})
        listed = await _rpc(g, "ListTasks", {"contextId": "ctx-s"})
        legacy = await _rpc(g, "tasks/get", {"id": task_id})
        for answer in (json.dumps(sent), streamed, json.dumps(got), json.dumps(listed), json.dumps(legacy)):
            assert "hunter2hunter2" not in answer and GITHUB_TOKEN not in answer
        assert "[REDACTED]" in got["result"]["history"][0]["parts"][0]["text"]
        assert got["result"]["artifacts"][0]["parts"][0]["text"] == "Done. The token I used: [REDACTED]"
        with sqlite3.connect(g.home / "a2a.db") as db:
            stored = db.execute("SELECT request || reply FROM tasks").fetchall()
        assert len(stored) == 2 and not any("hunter2" in s or GITHUB_TOKEN in s for (s,) in stored)


async def test_records_stored_raw_before_are_scrubbed_on_the_way_out_and_kept(run_gateway: RunGateway) -> None:
    async with run_gateway() as g:
        await _rpc(g, "ListTasks", {})  # the task manager has made its tables
        raw = (
            "old-task",
            "old-ctx",
            "completed",
            f"old request with {GITHUB_TOKEN}",
            f"reply {GITHUB_TOKEN}",
            1.0,
            1.0,
        )
        with sqlite3.connect(g.home / "a2a.db") as db:
            columns = "id, context_id, state, request, reply, created_at, updated_at"
            db.execute(f"INSERT INTO tasks ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?)", raw)
        got = await _rpc(g, "GetTask", {"id": "old-task"})
        assert GITHUB_TOKEN not in json.dumps(got)
        assert got["result"]["history"][0]["parts"][0]["text"] == "old request with [REDACTED]"
        listed = await _rpc(g, "ListTasks", {"contextId": "old-ctx"})
        assert listed["result"]["totalSize"] == 1 and GITHUB_TOKEN not in json.dumps(listed)
        with sqlite3.connect(g.home / "a2a.db") as db:  # scrubbed on the way out, never rewritten
            assert db.execute("SELECT request FROM tasks WHERE id = 'old-task'").fetchone()[0] == raw[3]


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


async def test_a_megabyte_of_token_lookalikes_is_refused_before_anything_reads_it(run_gateway: RunGateway) -> None:
    # 250,000 characters that look like the start of a JWT over and over: refused by the
    # cap (32,000) before the scrubber or the agent sees them.
    async with run_gateway() as g:
        refused = await _rpc(g, "SendMessage", {"message": {"messageId": "1", "parts": [{"text": "eyJ-" * 62_500}]}})
        assert refused["error"]["code"] == -32602 and "at most 32000" in refused["error"]["message"]
        assert g.model.count == 0 and (await _rpc(g, "ListTasks", {}))["result"]["totalSize"] == 0
