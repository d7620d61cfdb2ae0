"""Real daemons as nodes of a cluster on a real PostgreSQL: any node answers any
conversation, and a node's death (kill -9) costs its conversations the lease time, not
their data."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
from trio_websocket import open_websocket_url

import beamclaw_core as core
import beamclaw_gateway as gateway
from beamclaw_base import StoreConfig, open_store
from tests.support.model_server import Echo, Hold, Reply, ScriptedModel, scripted_model
from tests.support.postgres import DSN_VARIABLE
from tests.support.stores import sql
from tests.support.telegram_emulator import Emulator, ensure_installed, telegram_emulator

from .daemon import free_port, start_daemon

pytestmark = pytest.mark.postgres

_SECRET_VARIABLE = "BEAMCLAW_CLUSTER_SECRET"


@attrs.frozen
class Node:
    name: str
    url: str
    home: Path
    process: trio.Process


def _config(tmp_path: Path, name: str, port: int, model: ScriptedModel, lease_seconds: float, *, extra: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[store]\nbackend = "postgres"\ndsn = {{ env = "{DSN_VARIABLE}" }}\n'
        f'[cluster]\nenabled = true\nnode_id = "{name}"\nadvertise_url = "http://127.0.0.1:{port}"\n'
        f'lease_seconds = {lease_seconds}\nsecret = {{ env = "{_SECRET_VARIABLE}" }}\n'
        f'[core]\ndefault_provider = "scripted"\nautonomy_level = "full"\n'
        f'[core.providers.scripted]\nbase_url = "{model.base_url}"\nmodel = "scripted-model"\n'
        f"[gateway.http]\nport = {port}\n{extra}",
        encoding="utf-8",
    )
    return path


async def _stop(process: trio.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    await process.wait()


@asynccontextmanager
async def _nodes(
    tmp_path: Path, model: ScriptedModel, *names: str, lease_seconds: float = 3.0, extra: str = ""
) -> AsyncIterator[list[Node]]:
    async with AsyncExitStack() as stack:
        nodes = []
        for name in names:
            port, home = free_port(), tmp_path / name
            process = await start_daemon(
                _config(tmp_path, name, port, model, lease_seconds, extra=extra), home, tmp_path / f"{name}.log"
            )
            stack.push_async_callback(_stop, process)
            nodes.append(Node(name, f"http://127.0.0.1:{port}", home, process))
        yield nodes


async def _chat(http: httpx.AsyncClient, node: Node, user: str, text: str) -> httpx.Response:
    body = {"model": "default", "user": user, "messages": [{"role": "user", "content": text}]}
    return await http.post(f"{node.url}/v1/chat/completions", json=body, timeout=60)


def _history(store: StoreConfig, tmp_path: Path, user: str) -> list[str]:
    db = core.open_session_store(store, tmp_path)
    try:
        rows = sql(
            db, "SELECT message FROM messages WHERE session_id = ? ORDER BY seq", (core.session_id(user, "default"),)
        )
    finally:
        db.close()
    return [core.Message.from_record(text).content for (text,) in rows]


async def test_either_node_answers_one_conversation_and_a_killed_owners_conversation_moves_with_its_history(
    tmp_path: Path, postgres_store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_SECRET_VARIABLE, "cluster-secret-of-the-test-0123456789")
    async with (
        scripted_model(repeat=Echo()) as model,
        _nodes(tmp_path, model, "node-a", "node-b") as (a, b),
        httpx.AsyncClient() as http,
    ):
        first = await _chat(http, a, "alice", "one")
        assert first.status_code == 200, first.text
        through_b = await _chat(http, b, "alice", "two")  # owned by node-a: forwarded there
        assert through_b.status_code == 200, through_b.text
        assert through_b.json()["choices"][0]["message"]["content"] == "You said: two"
        assert _history(postgres_store_config, tmp_path, "api:alice") == [
            "one",
            "You said: one",
            "two",
            "You said: two",
        ]

        os.kill(a.process.pid, signal.SIGKILL)
        await a.process.wait()
        answered = None
        with trio.fail_after(60):  # the lease time plus a few seconds; 503s meanwhile
            while answered is None:
                response = await _chat(http, b, "alice", "three")
                if response.status_code == 200:
                    answered = response
                else:
                    assert response.status_code == 503, response.text
                    assert "Retry-After" in response.headers
                    await trio.sleep(0.5)
        assert answered.json()["choices"][0]["message"]["content"] == "You said: three"
    assert _history(postgres_store_config, tmp_path, "api:alice") == [
        "one", "You said: one", "two", "You said: two", "three", "You said: three",
    ]  # fmt: skip


async def test_a_forged_forwarded_request_is_refused(
    tmp_path: Path, postgres_store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_SECRET_VARIABLE, "cluster-secret-of-the-test-0123456789")
    async with (
        scripted_model(repeat=Echo()) as model,
        _nodes(tmp_path, model, "node-a") as (a,),
        httpx.AsyncClient() as http,
    ):
        forged = {"X-BeamClaw-Principal": "local", "X-BeamClaw-Signed-At": "0", "X-BeamClaw-Signature": "0" * 64}
        body = {"model": "default", "user": "mallory", "messages": [{"role": "user", "content": "hi"}]}
        response = await http.post(f"{a.url}/v1/chat/completions", json=body, headers=forged)
        assert response.status_code == 401
        assert model.requests == []


async def _rpc(http: httpx.AsyncClient, node: Node, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await http.post(f"{node.url}/a2a", json=body, timeout=60)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def test_a_message_or_a_retried_request_is_one_turn_through_either_node(
    tmp_path: Path, postgres_store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_SECRET_VARIABLE, "cluster-secret-of-the-test-0123456789")
    hold = Hold(then=Reply("done on node-a"))
    async with (
        scripted_model(hold, repeat=Echo()) as model,
        _nodes(tmp_path, model, "node-a", "node-b") as (a, b),
        httpx.AsyncClient() as http,
    ):
        message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "slow"}], "contextId": "c1"}
        params = {"message": message, "configuration": {"returnImmediately": True}}
        task_id = (await _rpc(http, a, "SendMessage", params))["result"]["task"]["id"]
        with trio.fail_after(60):
            await hold.reached.wait()
        # The same message through node-b (node-a owns the conversation): the same task.
        assert (await _rpc(http, b, "SendMessage", params))["result"]["task"]["id"] == task_id
        # A watcher on node-b hears of the task that node-a finishes.
        subscribe = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}
        states = []
        with trio.fail_after(60):
            async with http.stream("POST", f"{b.url}/a2a", json=subscribe, timeout=60) as events:
                async for line in events.aiter_lines():
                    if line.startswith("data: "):
                        result = json.loads(line.removeprefix("data: "))["result"]
                        if "task" in result:
                            hold.release()
                        elif "statusUpdate" in result:
                            states.append(result["statusUpdate"]["status"]["state"])
        assert states[-1] == "TASK_STATE_COMPLETED"
        got = await _rpc(http, b, "GetTask", {"id": task_id})
        assert got["result"]["artifacts"][0]["parts"][0]["text"] == "done on node-a"

        # A chat request retried with its Idempotency-Key through the other node: its answer again.
        body = {"model": "default", "user": "bob", "messages": [{"role": "user", "content": "hi"}]}
        key = {"Idempotency-Key": "retry-me"}
        first = await http.post(f"{a.url}/v1/chat/completions", json=body, headers=key, timeout=60)
        again = await http.post(f"{b.url}/v1/chat/completions", json=body, headers=key, timeout=60)
        assert first.status_code == again.status_code == 200, again.text
        assert again.json() == first.json()
        assert len(model.requests) == 2  # the task's turn and the chat's, each once


_TOKEN = "654321:emulated-telegram-token-abcdefgh"


def _telegram_table(emulator: Emulator) -> str:
    return (
        "[gateway.channels.telegram]\nenabled = true\n"
        f'api_base = "{emulator.api_base}"\ndm_policy = "open"\nedit_interval_seconds = 0.0\n'
    )


async def _answers(emulator: Emulator, chats: list[int]) -> list[str]:
    return [m.get("text", "") for chat in chats for m in await emulator.bot_messages(chat)]


async def test_the_telegram_poller_killed_is_taken_over_with_every_update_answered_once(
    tmp_path: Path, postgres_store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = ensure_installed()
    if reason is not None:
        pytest.skip(reason)
    monkeypatch.setenv(_SECRET_VARIABLE, "cluster-secret-of-the-test-0123456789")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", _TOKEN)
    ledger = open_store(postgres_store_config, gateway.SCHEMA, sqlite_file=None)
    chats = [101, 102]
    try:
        async with (
            telegram_emulator(_TOKEN, free_port()) as emulator,
            scripted_model(repeat=Echo()) as model,
            _nodes(tmp_path, model, "node-a", "node-b", extra=_telegram_table(emulator)) as nodes,
        ):
            await emulator.say(101, "m1")
            with trio.fail_after(60):  # bounded only so that a hang fails
                while "You said: m1" not in await _answers(emulator, chats) or sql(
                    ledger, "SELECT 1 FROM telegram_unanswered"
                ):
                    await trio.sleep(0.1)
            pollers = {by for _, by in await emulator.polls()}
            assert len(pollers) == 1, pollers  # one node polls, the other waits for the lease
            [holder] = [n for n in nodes if pollers == {f"BeamClaw (node {n.name})"}]
            [other] = [n for n in nodes if n is not holder]

            os.kill(holder.process.pid, signal.SIGKILL)
            await holder.process.wait()
            sent = [(101, "m2"), (102, "m3"), (101, "m4"), (102, "m5")]
            for user, text in sent:
                await emulator.say(user, text)
            expected = ["You said: m1"] + [f"You said: {text}" for _, text in sent]
            with trio.fail_after(90):  # the lease time plus a few seconds, bounded only against a hang
                while not set(expected) <= set(await _answers(emulator, chats)):
                    await trio.sleep(0.2)
            answers = await _answers(emulator, chats)
            assert sorted(a for a in answers if a in expected) == sorted(expected)  # each once
            assert not [a for a in answers if a.startswith("Sorry")], answers  # nothing was cut off
            # The polls never interleave: the holder's, then (after its death) only the other's.
            order = [by for _, by in await emulator.polls()]
            switch = order.index(f"BeamClaw (node {other.name})")
            assert set(order[:switch]) == {f"BeamClaw (node {holder.name})"}
            assert set(order[switch:]) == {f"BeamClaw (node {other.name})"}
    finally:
        ledger.close()


async def test_a_frozen_owner_is_given_up_and_its_conversation_taken_over_and_it_cannot_write_after(
    tmp_path: Path, postgres_store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node cut off (SIGSTOP: alive to the kernel, silent to the cluster) past its lease:
    a request forwarded to it is given up, the conversation moves, and when the node comes
    back (SIGCONT) nothing it does reaches the conversation (fencing)."""
    monkeypatch.setenv(_SECRET_VARIABLE, "cluster-secret-of-the-test-0123456789")
    async with (
        scripted_model(repeat=Echo()) as model,
        _nodes(tmp_path, model, "node-a", "node-b") as (a, b),
        httpx.AsyncClient() as http,
    ):
        assert (await _chat(http, a, "carol", "one")).status_code == 200
        os.kill(a.process.pid, signal.SIGSTOP)
        try:
            answered = None
            with trio.fail_after(90):  # bounded only so that a hang fails
                while answered is None:
                    response = await _chat(http, b, "carol", "two")
                    if response.status_code == 200:
                        answered = response
                    else:
                        assert response.status_code == 503, response.text
                        await trio.sleep(0.5)
        finally:
            os.kill(a.process.pid, signal.SIGCONT)
        assert answered.json()["choices"][0]["message"]["content"] == "You said: two"
        # node-a comes back with its old membership: it is told it moved, and writes nothing.
        late = await _chat(http, a, "carol", "three")
        assert late.status_code in {200, 503}, late.text
        await trio.sleep(1)
    history = _history(postgres_store_config, tmp_path, "api:carol")
    assert history[:4] == ["one", "You said: one", "two", "You said: two"]
    assert history.count("three") <= 1 and history[4:] in ([], ["three", "You said: three"])


async def test_a_websocket_message_for_a_conversation_another_node_owns_is_answered_from_there(
    tmp_path: Path, postgres_store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_SECRET_VARIABLE, "cluster-secret-of-the-test-0123456789")
    async with (
        scripted_model(repeat=Echo()) as model,
        _nodes(tmp_path, model, "node-a", "node-b") as (a, b),
        httpx.AsyncClient() as http,
    ):
        assert (await _chat(http, a, "dave", "one")).status_code == 200  # node-a owns it now
        url = b.url.replace("http", "ws") + "/ws"
        async with open_websocket_url(url, extra_headers=[(b"X-User-Id", b"dave")]) as ws:
            await ws.send_message(json.dumps({"type": "message", "id": "w1", "text": "two"}))
            events = []
            with trio.fail_after(60):  # bounded only so that a hang fails
                while not events or events[-1]["type"] != "run_completed":
                    events.append(json.loads(await ws.get_message()))
    assert events[-1]["ok"] is True and events[-1]["text"] == "You said: two", events
    assert "".join(e["text"] for e in events if e["type"] == "chunk") == "You said: two"
    assert _history(postgres_store_config, tmp_path, "api:dave") == ["one", "You said: one", "two", "You said: two"]
