"""The daily token budget: reserved before each model call, settled after, failing closed."""

from __future__ import annotations

import beamclaw_core as core
from tests.support.model_server import Reply

from .conftest import RunCore


async def test_the_budget_refuses_a_call_that_would_pass_it(run_core: RunCore) -> None:
    costly = Reply("expensive", prompt_tokens=2500, completion_tokens=1500)
    async with run_core(costly, Reply("never"), daily_token_budget=5000, budget_completion_reserve=200) as r:
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


async def test_per_agent_budgets_override_the_default(run_core: RunCore) -> None:
    async with run_core(repeat=Reply("ok"), daily_token_budget=10, budgets={"rich": 0}) as r:
        poor = await r.open("u", "default")
        rich = await r.open("u", "rich")
        assert not (await core.send_message(poor, "hi", core.CollectingChannel())).ok
        assert (await core.send_message(rich, "hi", core.CollectingChannel())).ok


async def test_a_failed_call_gives_its_reservation_back(run_core: RunCore) -> None:
    from tests.support.model_server import Status

    async with run_core(Status(400), daily_token_budget=5000, provider={"max_retries": 0}) as r:
        session = await r.open()
        assert not (await core.send_message(session, "x", core.CollectingChannel())).ok
        assert await core.used_today("default") == 0
