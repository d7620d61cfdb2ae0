"""``Idempotency-Key`` on /v1/chat/completions: one message, one turn, however often it is sent.

The keys are in the gateway's store, so each test runs on both backends; a key whose
first request was cut (its node died) is made by hand in the store, as the dead node
left it.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
import trio

import beamclaw_gateway as gateway
from beamclaw_base import StoreConfig, open_store
from beamclaw_gateway._http_api import INTERRUPTED_TURN
from beamclaw_gateway._idempotency import request_hash
from tests.support.model_server import Hold, Reply, Status
from tests.support.stores import sql

from .conftest import Gateway, RunGateway

#: Bounds a wait only so that a broken build fails instead of hanging (never a timing claim).
_HANG = 60.0
#: A key of the local principal whose request a dead node was serving.
_CUT = ("INSERT INTO idempotency_keys (principal, key, request_hash, state, owner, created_at) "
        "VALUES ('local', 'key-1', ?, 'started', 'a-dead-instance', ?)")  # fmt: skip


def _chat(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": "default", "messages": [{"role": "user", "content": text}], "user": "ada", **extra}


async def _post(client: httpx.AsyncClient, key: str | None, body: dict[str, Any]) -> httpx.Response:
    headers = {} if key is None else {"Idempotency-Key": key}
    return await client.post("/v1/chat/completions", json=body, headers=headers)


def _keys(g: Gateway, store: StoreConfig, statement: str, params: tuple[object, ...] = ()) -> list[Any]:
    db = open_store(store, gateway.SCHEMA, sqlite_file=g.home / "gateway.db")
    try:
        return sql(db, statement, params)
    finally:
        db.close()


async def test_a_retry_with_the_same_key_gets_the_first_answer_not_a_second_turn(
    run_gateway: RunGateway, store_config: StoreConfig
) -> None:
    async with run_gateway(Reply("only once"), Reply("another"), store=store_config) as g, g.client() as client:
        first = await _post(client, "key-1", _chat())
        again = await _post(client, "key-1", _chat())
        assert first.status_code == again.status_code == 200
        assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
        assert first.json()["choices"][0]["message"]["content"] == "only once"
        streamed_first = await _post(client, "key-2", _chat("go on", stream=True))
        streamed_again = await _post(client, "key-2", _chat("go on", stream=True))
        assert streamed_again.text == streamed_first.text and "another" in streamed_again.text
        assert streamed_again.headers["content-type"].startswith("text/event-stream")
        assert len(g.model.requests) == 2
        assert _keys(g, store_config, "SELECT key, state FROM idempotency_keys ORDER BY key") == [
            ("key-1", "done"), ("key-2", "done")
        ]  # fmt: skip


async def test_the_same_key_for_another_request_is_refused_and_runs_nothing(
    run_gateway: RunGateway, store_config: StoreConfig
) -> None:
    async with run_gateway(Reply("first"), store=store_config) as g, g.client() as client:
        assert (await _post(client, "key-1", _chat("one thing"))).status_code == 200
        other = await _post(client, "key-1", _chat("another thing"))
        assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency_key_reused"
        bad = await _post(client, "k" * 256, _chat())
        assert bad.status_code == 400 and "Idempotency-Key" in bad.json()["error"]["message"]
        assert len(g.model.requests) == 1


async def test_a_key_whose_request_is_still_running_is_a_409_then_its_answer(
    run_gateway: RunGateway, store_config: StoreConfig
) -> None:
    hold = Hold(then=Reply("late but once"))
    async with run_gateway(hold, store=store_config) as g, g.client() as client:
        async with trio.open_nursery() as nursery:
            answers: list[httpx.Response] = []

            async def first() -> None:
                answers.append(await _post(client, "key-1", _chat()))

            nursery.start_soon(first)
            with trio.fail_after(_HANG):
                await hold.reached.wait()
            running = await _post(client, "key-1", _chat())
            assert running.status_code == 409 and running.headers["Retry-After"] == "1"
            hold.release()
        again = await _post(client, "key-1", _chat())
        assert again.json() == answers[0].json()
        assert again.json()["choices"][0]["message"]["content"] == "late but once"
        assert len(g.model.requests) == 1


async def test_a_failure_worth_retrying_keeps_no_key(run_gateway: RunGateway, store_config: StoreConfig) -> None:
    async with run_gateway(Status(401), Reply("now it works"), store=store_config) as g, g.client() as client:
        assert (await _post(client, "key-1", _chat())).status_code == 502
        retried = await _post(client, "key-1", _chat())
        assert retried.status_code == 200 and retried.json()["choices"][0]["message"]["content"] == "now it works"


@pytest.mark.parametrize("answered", [True, False])
async def test_a_key_whose_node_died_mid_turn_is_answered_from_the_history(
    run_gateway: RunGateway, store_config: StoreConfig, answered: bool
) -> None:
    async with run_gateway(Reply("the answer"), store=store_config) as g, g.client() as client:
        # The conversation's history has the message (and, if the turn got that far, its
        # answer); the key is as the dead node left it: started, by an instance gone.
        body = _chat("what is it?")
        if answered:
            assert (await _post(client, None, body)).status_code == 200
        _keys(g, store_config, _CUT, (request_hash(body, None), time.time()))
        retried = await _post(client, "key-1", body)
        content = retried.json()["choices"][0]["message"]["content"]
        assert retried.status_code == 200
        assert content == ("the answer" if answered else INTERRUPTED_TURN)
        assert len(g.model.requests) == (1 if answered else 0)
        assert (await _post(client, "key-1", body)).json()["choices"][0]["message"]["content"] == content
