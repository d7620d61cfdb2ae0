"""The daily token budget: reserved before each model call, settled after, failing closed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio

import beamclaw_core as core
from beamclaw_base import StoreConfig, StoreError
from beamclaw_core import _loop
from beamclaw_core._messages import Message
from beamclaw_core._session import SessionInfo
from beamclaw_core._store_requests import AdjustTokens, AppendMessages, RecordTokens, ReserveTokens, TokensUsed
from tests.support.model_server import Call, Reply
from tests.support.stores import sql

from .conftest import RunCore, session_store


async def test_the_budget_refuses_a_call_that_would_pass_it(run_core: RunCore, store_config: StoreConfig) -> None:
    costly = Reply("expensive", prompt_tokens=2500, completion_tokens=1500)
    budget = {"daily_token_budget": 5000, "budget_completion_reserve": 200}
    async with run_core(costly, Reply("never"), store=store_config, **budget) as r:
        session = await r.open()
        assert (await core.send_message(session, "one", core.CollectingChannel())).ok
        assert await core.used_today("default") == 4000  # the reservation settled to real usage
        channel = core.CollectingChannel()
        refused = await core.send_message(session, "two", channel)
        assert not refused.ok
        assert refused.text == (
            "The daily token budget of agent 'default' (5,000 tokens) is used up; it resets at midnight UTC."
        )
        assert channel.finals == [refused.text] and len(r.model.requests) == 1
        # The refused message is kept: nothing the user sent is lost.
        assert [m.content for m in await core.history(session)] == ["one", "expensive", "two"]


async def test_per_agent_budgets_override_the_default(run_core: RunCore, store_config: StoreConfig) -> None:
    async with run_core(repeat=Reply("ok"), daily_token_budget=10, budgets={"rich": 0}, store=store_config) as r:
        poor = await r.open("u", "default")
        rich = await r.open("u", "rich")
        assert not (await core.send_message(poor, "hi", core.CollectingChannel())).ok
        assert (await core.send_message(rich, "hi", core.CollectingChannel())).ok


async def test_a_failed_call_gives_its_reservation_back(run_core: RunCore, store_config: StoreConfig) -> None:
    from tests.support.model_server import Status

    budget = {"daily_token_budget": 5000, "provider": {"max_retries": 0}}
    async with run_core(Status(400), store=store_config, **budget) as r:
        session = await r.open()
        assert not (await core.send_message(session, "x", core.CollectingChannel())).ok
        assert await core.used_today("default") == 0


def test_two_reservers_at_once_never_pass_the_limit(tmp_path: Path, store_config: StoreConfig) -> None:
    """Two handles on one store (as two nodes on one PostgreSQL) reserve at the same time:
    each reservation is checked against the total the other's left, so the total never
    passes the limit and no two reservations are granted on the same total."""
    limit, tokens, attempts = 1000, 7, 100

    def reserve(results: list[int]) -> None:
        with session_store(tmp_path, store_config) as db:
            for _ in range(attempts):
                total = db.transact(ReserveTokens("default", "2026-11-27", tokens, limit).run)
                if total is not None:
                    results.append(total)

    results: list[list[int]] = [[], []]
    threads = [threading.Thread(target=reserve, args=(mine,)) for mine in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    granted = sorted(results[0] + results[1])
    assert granted == list(range(tokens, limit + 1, tokens))  # 142 of the 200 attempts, every total once
    with session_store(tmp_path, store_config) as db:
        assert sql(db, "SELECT tokens FROM token_usage") == [(limit // tokens * tokens,)]


def test_a_settled_reservation_never_goes_below_nothing(tmp_path: Path, store_config: StoreConfig) -> None:
    with session_store(tmp_path, store_config) as db:
        db.transact(AdjustTokens("default", "2026-11-27", -50).run)  # nothing reserved yet: 0
        assert db.transact(TokensUsed("default", "2026-11-27").run, write=False) == 0
        assert db.transact(ReserveTokens("default", "2026-11-27", 100, 1000).run) == 100
        db.transact(AdjustTokens("default", "2026-11-27", 30).run)
        assert db.transact(TokensUsed("default", "2026-11-27").run, write=False) == 130
        db.transact(AdjustTokens("default", "2026-11-27", -500).run)
        assert db.transact(TokensUsed("default", "2026-11-27").run, write=False) == 0
        assert db.transact(ReserveTokens("default", "2026-11-27", 1001, 1000).run) is None  # alone past it
        assert sql(db, "SELECT tokens FROM token_usage") == [(0,)]


@pytest.mark.parametrize("persist", [True, False])
async def test_every_model_calls_tokens_are_recorded_with_the_reply_it_wrote(
    run_core: RunCore, store_config: StoreConfig, persist: bool
) -> None:
    """A tool-call round and the final reply each count, kept conversation or not."""
    steps = (
        Reply(tool_calls=(Call("jq", {"filter": ".", "input": "1"}),), prompt_tokens=100, completion_tokens=20),
        Reply("done", prompt_tokens=300, completion_tokens=4),
    )
    async with run_core(*steps, store=store_config, session_persistence=persist) as r:
        session = await r.open()
        assert (await core.send_message(session, "go", core.CollectingChannel())).ok
        days = await core.token_days(1)
    assert [(d.agent_id, d.prompt_tokens, d.completion_tokens) for d in days] == [("default", 400, 24)]


def test_a_replys_tokens_are_saved_in_the_replys_transaction(tmp_path: Path, store_config: StoreConfig) -> None:
    """An append that clashes saves neither the messages nor their tokens (the loop then
    records the tokens alone): the one transaction holds both."""
    info = SessionInfo("s1", "u", "default", "test")
    tokens = RecordTokens("default", "2026-11-27", 10, 5)
    with session_store(tmp_path, store_config) as db:
        db.transact(AppendMessages(info, frozenset(), 0, [Message("user", "hi")], tokens).run)
        with pytest.raises(StoreError):
            db.transact(AppendMessages(info, frozenset(), 0, [Message("assistant", "again")], tokens).run)
        assert sql(db, "SELECT prompt_tokens, completion_tokens FROM token_days") == [(10, 5)]


@pytest.mark.parametrize("cut", ["stopped", "crashed"])
async def test_a_calls_tokens_count_when_the_turn_ends_before_its_reply_is_saved(
    run_core: RunCore, store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch, cut: str
) -> None:
    """The model answered (its tokens are spent), then the turn was stopped or the loop
    crashed before the reply reached the session: the tokens are recorded alone."""
    handles: list[core.SessionHandle] = []

    async def cut_off(text: str) -> str:
        if cut == "crashed":
            raise RuntimeError("the loop crashed before the reply was saved")
        await core.stop_turn(handles[0])
        await trio.sleep(0)  # the stop cancels the step here
        raise AssertionError("not stopped")

    monkeypatch.setattr(_loop, "scrub_async", cut_off)
    async with run_core(Reply("never saved", prompt_tokens=30, completion_tokens=7), store=store_config) as r:
        handles.append(await r.open())
        result = await core.send_message(handles[0], "go", core.CollectingChannel())
        assert not result.ok
        days = await core.token_days(1)
    assert [(d.agent_id, d.prompt_tokens, d.completion_tokens) for d in days] == [("default", 30, 7)]
