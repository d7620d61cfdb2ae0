"""A2A tasks shared by several nodes: a message is one task wherever it is sent, any node
answers for any task, and only a dead node's tasks are failed.

The node under test runs on PostgreSQL; the other nodes are rows in the registry and
writes to the shared tables (a second daemon is the daemon tests' business).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import trio

import beamclaw_a2a as a2a
import beamclaw_cluster as cluster
import beamclaw_core as core
import supervision as sv
from beamclaw_base import Database, StoreConfig, open_store
from tests.support.model_server import Hold, Reply
from tests.support.stores import sql

from .conftest import RunA2A

_NODE = {"enabled": True, "node_id": "node-a", "advertise_url": "http://127.0.0.1:18801", "lease_seconds": 3.0,
         "secret": {"env": "BEAMCLAW_CLUSTER_SECRET"}}  # fmt: skip
#: A task of alice's that the node *instance* is working on.
_WORKING = ("INSERT INTO tasks (id, context_id, state, request, reply, created_at, updated_at, owner, instance) "
            "VALUES (?, 'ctx', 'working', 'asked', '', 0, 0, 'alice', ?)")  # fmt: skip
#: Bounds a wait only so that a broken build fails instead of hanging (never a timing claim).
_HANG = 60.0


@pytest.fixture
def registry(postgres_store_config: StoreConfig) -> Iterator[Database]:
    db = open_store(postgres_store_config, cluster.SCHEMA, sqlite_file=None)
    yield db
    db.close()


def _other_node(db: Database, name: str, *, alive: bool = True) -> str:
    instance = uuid.uuid4().hex
    db.transact(lambda tx: cluster._nodes.register(tx, instance, name, f"http://{name}.internal:18800", 30.0))
    if not alive:
        sql(db, "UPDATE cluster_nodes SET expires_at = now() - interval '1 second' WHERE instance_id = ?", (instance,))
    return instance


def _message(message_id: str, text: str = "hello", context_id: str = "ctx") -> dict[str, Any]:
    return {"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}],
                        "contextId": context_id}}  # fmt: skip


async def test_a_message_sent_twice_is_one_task_run_once(run_a2a: RunA2A, store_config: StoreConfig) -> None:
    async with run_a2a(Reply("once"), Reply("bob's"), store=store_config) as a:
        first = await a.rpc("SendMessage", _message("m-1"))
        again = await a.rpc("SendMessage", _message("m-1"))
        streamed = await a.stream("SendStreamingMessage", _message("m-1"))
        task = first["result"]["task"]
        assert again["result"]["task"]["id"] == task["id"] == streamed[0]["result"]["task"]["id"]
        assert again["result"]["task"]["artifacts"][0]["parts"][0]["text"] == "once"
        assert len(a.model.requests) == 1
        assert (await a.rpc("ListTasks", {}))["result"]["totalSize"] == 1
        a.client = a2a.Client("bob")  # another client's message id is its own
        other = await a.rpc("SendMessage", _message("m-1"))
        assert other["result"]["task"]["id"] != task["id"]
        assert other["result"]["task"]["artifacts"][0]["parts"][0]["text"] == "bob's"


@pytest.mark.postgres
async def test_a_watcher_here_hears_of_a_task_another_node_finished(
    run_a2a: RunA2A, postgres_store_config: StoreConfig
) -> None:
    async with run_a2a(store=postgres_store_config) as a:
        with a.tasks() as db:  # a task node A made and runs
            sql(db, _WORKING, ("t-a", "instance-of-node-a"))
            events = await a.handle('{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": "t-a"}}')
            assert not isinstance(events, dict)
            with trio.fail_after(_HANG):
                first = await anext(events)
                assert first["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
                # Node A finishes it: its change and its notification, as its task manager writes them.
                sql(db, "UPDATE tasks SET state = 'completed', reply = 'done on A', updated_at = 1 WHERE id = 't-a'")
                sql(db, "SELECT pg_notify('bc_a2a', 't-a')")
                rest = [event["result"] async for event in events]
        assert rest[0]["artifactUpdate"]["artifact"]["parts"][0]["text"] == "done on A"
        assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.postgres
async def test_only_the_tasks_of_a_dead_node_are_failed(
    run_a2a: RunA2A, postgres_store_config: StoreConfig, registry: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEAMCLAW_CLUSTER_SECRET", "cluster-secret-of-the-test-0123456789")
    async with run_a2a(store=postgres_store_config, cluster=_NODE) as a:
        live, dead = _other_node(registry, "node-b"), _other_node(registry, "node-c", alive=False)
        with a.tasks() as db:
            for task_id, instance in (("on-live", live), ("on-dead", dead)):
                sql(db, _WORKING, (task_id, instance))
        with trio.fail_after(_HANG):  # the recovery runs every lease time
            while (await a.rpc("GetTask", {"id": "on-dead"}))["result"]["status"]["state"] != "TASK_STATE_FAILED":
                await trio.sleep(0.2)
        # One statement failed every dead node's task: the live node's was looked at, and kept.
        assert (await a.rpc("GetTask", {"id": "on-live"}))["result"]["status"]["state"] == "TASK_STATE_WORKING"


@pytest.mark.postgres
async def test_a_message_for_a_conversation_another_node_owns_is_not_made_a_task_here(
    run_a2a: RunA2A, postgres_store_config: StoreConfig, registry: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEAMCLAW_CLUSTER_SECRET", "cluster-secret-of-the-test-0123456789")
    async with run_a2a(Hold(then=Reply("late")), store=postgres_store_config, cluster=_NODE) as a:
        other = _other_node(registry, "node-b")
        conversation = core.session_id(a.client.user("theirs"), "default")
        registry.transact(lambda tx: cluster.acquire(tx, conversation, other))
        with pytest.raises(core.OwnedElsewhere) as elsewhere:  # the gateway forwards the request there
            await a.rpc("SendMessage", _message("m-1", context_id="theirs"))
        assert elsewhere.value.where.node_id == "node-b"
        assert (await a.rpc("ListTasks", {}))["result"]["totalSize"] == 0
        assert a.model.requests == []


@pytest.mark.postgres
async def test_a_task_canceled_through_another_node_stops_its_turn_here(
    run_a2a: RunA2A, postgres_store_config: StoreConfig
) -> None:
    hold = Hold(then=Reply("too late"))
    async with run_a2a(hold, store=postgres_store_config) as a:
        params = {**_message("m-1"), "configuration": {"returnImmediately": True}}
        task_id = (await a.rpc("SendMessage", params))["result"]["task"]["id"]
        with trio.fail_after(_HANG):
            await hold.reached.wait()
        with a.tasks() as db:  # node B cancels it: its change and its notification
            sql(db, "UPDATE tasks SET state = 'canceled' WHERE id = ?", (task_id,))
            sql(db, "SELECT pg_notify('bc_a2a', ?)", (task_id,))
        with trio.fail_after(_HANG):  # the worker stops, its turn with it, though the model never answered
            while sv.which_children("beamclaw_a2a.workers"):
                await trio.sleep(0.05)
        hold.release()
        assert (await a.rpc("GetTask", {"id": task_id}))["result"]["status"]["state"] == "TASK_STATE_CANCELED"
