"""A2A's tasks: kept in a2a.db, got, listed and canceled, scrubbed, each its client's own."""

from __future__ import annotations

import json
import sqlite3

import beamclaw_a2a as a2a
from tests.support.model_server import Hold, Reply

from .conftest import RunA2A

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


async def test_get_list_and_cancel_by_hand(run_a2a: RunA2A) -> None:
    hold = Hold(then=Reply("late"))
    async with run_a2a(hold) as a:
        sent = await a.rpc(
            "SendMessage",
            {
                "message": {"messageId": "1", "role": "ROLE_USER", "parts": [{"text": "slow one"}]},
                "configuration": {"returnImmediately": True},
            },
        )
        task = sent["result"]["task"]
        assert task["status"]["state"] in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
        canceled = await a.rpc("CancelTask", {"id": task["id"]})
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        again = await a.rpc("tasks/cancel", {"id": task["id"]})
        assert again["error"]["code"] == -32002
        hold.release()
        got = await a.rpc("tasks/get", {"id": task["id"]})
        assert got["result"]["kind"] == "task" and got["result"]["status"]["state"] == "canceled"
        assert (await a.rpc("GetTask", {"id": "nope"}))["error"]["code"] == -32001


async def test_a_task_is_its_clients_own(run_a2a: RunA2A) -> None:
    async with run_a2a(Reply("for alice")) as a:
        sent = await a.rpc("SendMessage", {"message": {"messageId": "1", "parts": [{"text": "hi"}], "contextId": "c"}})
        task_id = sent["result"]["task"]["id"]
        a.client = a2a.Client("bob")
        assert (await a.rpc("GetTask", {"id": task_id}))["error"]["code"] == -32001
        assert (await a.rpc("CancelTask", {"id": task_id}))["error"]["code"] == -32001
        assert (await a.rpc("ListTasks", {}))["result"]["totalSize"] == 0
        a.client = a2a.Client("root", sees_all=True)
        assert (await a.rpc("GetTask", {"id": task_id}))["result"]["id"] == task_id


async def test_task_texts_are_scrubbed_before_they_are_stored_and_returned(run_a2a: RunA2A) -> None:
    reply = f"Done. The token I used: {GITHUB_TOKEN}"
    async with run_a2a(Reply(reply), Reply(reply)) as a:
        asked = "deploy with api_key=hunter2hunter2 please"
        sent = await a.rpc("SendMessage", {"message": {"messageId": "1", "parts": [{"text": asked}],
                                                       "contextId": "ctx-s"}})  # fmt: skip
        task_id = sent["result"]["task"]["id"]
        message = {"messageId": "2", "parts": [{"text": asked}], "contextId": "ctx-s"}
        streamed = json.dumps(await a.stream("SendStreamingMessage", {"message": message}))
        got = await a.rpc("GetTask", {"id": task_id})
        listed = await a.rpc("ListTasks", {"contextId": "ctx-s"})
        legacy = await a.rpc("tasks/get", {"id": task_id})
        for answer in (json.dumps(sent), streamed, json.dumps(got), json.dumps(listed), json.dumps(legacy)):
            assert "hunter2hunter2" not in answer and GITHUB_TOKEN not in answer
        assert "[REDACTED]" in got["result"]["history"][0]["parts"][0]["text"]
        assert got["result"]["artifacts"][0]["parts"][0]["text"] == "Done. The token I used: [REDACTED]"
        with sqlite3.connect(a.home / "a2a.db") as db:
            stored = db.execute("SELECT request || reply FROM tasks").fetchall()
        assert len(stored) == 2 and not any("hunter2" in s or GITHUB_TOKEN in s for (s,) in stored)


async def test_records_stored_raw_before_are_scrubbed_on_the_way_out_and_kept(run_a2a: RunA2A) -> None:
    async with run_a2a() as a:
        await a.rpc("ListTasks", {})  # the task manager has made its tables
        raw = (
            "old-task",
            "old-ctx",
            "completed",
            f"old request with {GITHUB_TOKEN}",
            f"reply {GITHUB_TOKEN}",
            1.0,
            1.0,
        )
        with sqlite3.connect(a.home / "a2a.db") as db:
            columns = "id, context_id, state, request, reply, created_at, updated_at"
            db.execute(f"INSERT INTO tasks ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?)", raw)
        a.client = a2a.Client("root", sees_all=True)  # a record from before tasks had owners
        got = await a.rpc("GetTask", {"id": "old-task"})
        assert GITHUB_TOKEN not in json.dumps(got)
        assert got["result"]["history"][0]["parts"][0]["text"] == "old request with [REDACTED]"
        listed = await a.rpc("ListTasks", {"contextId": "old-ctx"})
        assert listed["result"]["totalSize"] == 1 and GITHUB_TOKEN not in json.dumps(listed)
        with sqlite3.connect(a.home / "a2a.db") as db:  # scrubbed on the way out, never rewritten
            assert db.execute("SELECT request FROM tasks WHERE id = 'old-task'").fetchone()[0] == raw[3]


async def test_requests_and_task_changes_are_events(run_a2a: RunA2A) -> None:
    from tests.apps.beamclaw_core.conftest import wait_for

    async with run_a2a(Reply("done")) as a:
        sent = await a.rpc("SendMessage", {"message": {"messageId": "1", "parts": [{"text": "hi"}]}})
        task_id = sent["result"]["task"]["id"]

        def named(name: str) -> list[dict[str, object]]:
            return [e.data for e in a.events if e.name == name]

        await wait_for(lambda: {"task_id": task_id, "state": "completed"} in named("a2a_task_updated"))
        assert named("a2a_request") == [{"method": "POST", "path": "/a2a", "rpc_method": "SendMessage"}]
        [created] = named("a2a_task_created")
        assert created["task_id"] == task_id and isinstance(created["session_id"], str)
        assert [e["state"] for e in named("a2a_task_updated")] == ["working", "completed"]
