"""A2A's tasks: kept in the store, got, listed and canceled, scrubbed, each its client's own."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import beamclaw_a2a as a2a
import supervision as sv
from beamclaw_base import StoreConfig
from tests.support.model_server import Hold, Reply
from tests.support.stores import sql

from .conftest import RunA2A

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


async def test_get_list_and_cancel_by_hand(run_a2a: RunA2A, store_config: StoreConfig) -> None:
    hold = Hold(then=Reply("late"))
    async with run_a2a(hold, store=store_config) as a:
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


async def test_a_task_is_its_clients_own(run_a2a: RunA2A, store_config: StoreConfig) -> None:
    async with run_a2a(Reply("for alice"), store=store_config) as a:
        sent = await a.rpc("SendMessage", {"message": {"messageId": "1", "parts": [{"text": "hi"}], "contextId": "c"}})
        task_id = sent["result"]["task"]["id"]
        a.client = a2a.Client("bob")
        assert (await a.rpc("GetTask", {"id": task_id}))["error"]["code"] == -32001
        assert (await a.rpc("CancelTask", {"id": task_id}))["error"]["code"] == -32001
        assert (await a.rpc("ListTasks", {}))["result"]["totalSize"] == 0
        a.client = a2a.Client("root", sees_all=True)
        assert (await a.rpc("GetTask", {"id": task_id}))["result"]["id"] == task_id


async def test_task_texts_are_scrubbed_before_they_are_stored_and_returned(
    run_a2a: RunA2A, store_config: StoreConfig
) -> None:
    reply = f"Done. The token I used: {GITHUB_TOKEN}"
    async with run_a2a(Reply(reply), Reply(reply), store=store_config) as a:
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
        with a.tasks() as db:
            stored = sql(db, "SELECT request || reply FROM tasks")
        assert len(stored) == 2 and not any("hunter2" in s or GITHUB_TOKEN in s for (s,) in stored)


async def test_records_stored_raw_before_are_scrubbed_on_the_way_out_and_kept(
    run_a2a: RunA2A, store_config: StoreConfig
) -> None:
    async with run_a2a(store=store_config) as a:
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
        with a.tasks() as db:
            columns = "id, context_id, state, request, reply, created_at, updated_at"
            sql(db, f"INSERT INTO tasks ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?)", raw)
        a.client = a2a.Client("root", sees_all=True)  # a record from before tasks had owners
        got = await a.rpc("GetTask", {"id": "old-task"})
        assert GITHUB_TOKEN not in json.dumps(got)
        assert got["result"]["history"][0]["parts"][0]["text"] == "old request with [REDACTED]"
        listed = await a.rpc("ListTasks", {"contextId": "old-ctx"})
        assert listed["result"]["totalSize"] == 1 and GITHUB_TOKEN not in json.dumps(listed)
        with a.tasks() as db:  # scrubbed on the way out, never rewritten
            assert sql(db, "SELECT request FROM tasks WHERE id = 'old-task'") == [(raw[3],)]


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


#: Text that breaks careless SQL or placeholder rewriting, and is still a fine message.
HOSTILE = (
    "50% off: %s %(name)s %% ?; DROP TABLE tasks; -- 'single' \"double\" back\\slash "
    "\u202eevil\u202c \U0001f600 \u0001\u001f \uffff"
)


async def test_hostile_task_text_is_kept_exactly_and_a_nul_is_refused_clearly(
    run_a2a: RunA2A, store_config: StoreConfig
) -> None:
    async with run_a2a(Reply(f"echo: {HOSTILE}"), Reply("before\x00after"), store=store_config) as a:
        # A NUL has no place in a text column (PostgreSQL refuses it): the client is told where.
        nul = await a.rpc("SendMessage", {"message": {"messageId": "0", "parts": [{"text": "a\x00b"}]}})
        assert nul["error"]["code"] == -32602
        assert "NUL character (U+0000) at character 1" in nul["error"]["message"]
        assert (await a.rpc("ListTasks", {}))["result"]["totalSize"] == 0 and a.model.count == 0
        sent = (await a.rpc("SendMessage", {"message": {"messageId": "1", "parts": [{"text": HOSTILE}]}}))["result"]
        got = (await a.rpc("GetTask", {"id": sent["task"]["id"]}))["result"]
        for task in (sent["task"], got):
            assert task["history"][0]["parts"][0]["text"] == HOSTILE
            assert task["artifacts"][0]["parts"][0]["text"] == f"echo: {HOSTILE}"
        with a.tasks() as db:
            stored = sql(db, "SELECT request, reply FROM tasks WHERE id = ?", (got["id"],))
        assert [tuple(row) for row in stored] == [(HOSTILE, f"echo: {HOSTILE}")]
        # An agent's reply holding a NUL ends the task all the same, the NUL shown as U+FFFD.
        said = (await a.rpc("SendMessage", {"message": {"messageId": "2", "parts": [{"text": "go"}]}}))["result"]
        assert said["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert said["task"]["artifacts"][0]["parts"][0]["text"] == "before\ufffdafter"


async def test_a_task_cut_by_a_restart_has_failed_when_the_daemon_is_back(
    run_a2a: RunA2A, store_config: StoreConfig
) -> None:
    hold = Hold(then=Reply("never sent"))
    async with run_a2a(hold, store=store_config) as a:
        message = {"messageId": "1", "parts": [{"text": "slow one"}], "contextId": "c"}
        sent = await a.rpc("SendMessage", {"message": message, "configuration": {"returnImmediately": True}})
        task_id = sent["result"]["task"]["id"]
        await hold.reached.wait()
    async with run_a2a(store=store_config) as a:
        got = (await a.rpc("GetTask", {"id": task_id}))["result"]
        assert got["status"]["state"] == "TASK_STATE_FAILED"
        assert got["status"]["message"]["parts"][0]["text"] == "the daemon restarted while this task was working"
        assert (await a.rpc("ListTasks", {"contextId": "c"}))["result"]["totalSize"] == 1


def _old_a2a_db(path: Path, version: int) -> None:
    """An a2a.db as earlier BeamClaws left it: version 1 (its user_version still 0, no
    owners) or 2, with one finished task."""
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE tasks (id TEXT PRIMARY KEY, context_id TEXT NOT NULL, state TEXT NOT NULL, "
            "request TEXT NOT NULL, reply TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, "
            "updated_at REAL NOT NULL); CREATE INDEX tasks_context ON tasks(context_id, created_at);"
        )
        db.execute("INSERT INTO tasks VALUES ('old', 'ctx', 'completed', 'asked long ago', 'answered', 1.0, 2.0)")
        if version == 2:
            db.execute("ALTER TABLE tasks ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
            db.execute("UPDATE tasks SET owner = 'alice'")
            db.execute("PRAGMA user_version = 2")


@pytest.mark.parametrize("version", [1, 2])
async def test_an_a2a_db_of_an_earlier_version_opens_with_its_tasks(
    run_a2a: RunA2A, tmp_path: Path, version: int
) -> None:
    _old_a2a_db(tmp_path / "home" / "a2a.db", version)
    async with run_a2a() as a:
        if version == 1:  # a task from before owners: only an admin sees it
            assert (await a.rpc("GetTask", {"id": "old"}))["error"]["code"] == -32001
            a.client = a2a.Client("root", sees_all=True)
        got = (await a.rpc("GetTask", {"id": "old"}))["result"]
        assert got["history"][0]["parts"][0]["text"] == "asked long ago"
        assert got["artifacts"][0]["parts"][0]["text"] == "answered"
    with sqlite3.connect(tmp_path / "home" / "a2a.db") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (a2a.SCHEMA.version,)


async def test_an_a2a_db_of_a_newer_beamclaw_is_refused_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "home" / "a2a.db"
    _old_a2a_db(path, 2)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 4")
    with pytest.raises(sv.StartError, match="has format version 4, newer than this BeamClaw's 3; upgrade BeamClaw"):
        async with sv.open_supervisor(a2a.supervision_tree({}, tmp_path / "home")):
            pass
    with sqlite3.connect(path) as db:  # left as it was
        assert db.execute("PRAGMA user_version").fetchone() == (4,)
        assert db.execute("SELECT request FROM tasks").fetchall() == [("asked long ago",)]
