"""The usage report: each agent's tokens per UTC day, and today's spend against its budget.

What the management API's usage route and the console's Usage page show. The days come
from what every model call records (`_budget.usage_record`, the ``token_days`` table);
the budget's spend is the budget's own count (reservations included), the one a call
is checked against.
"""

from __future__ import annotations

import datetime
from typing import final

import attrs

import supervision as sv

from ._budget import today, used_today
from ._runtime import RESTART_WAIT
from ._sessions import SESSIONS, CurrentRuntime
from ._store import store_call
from ._store_requests import TokenDays
from ._workspace import agent_names


@final
@attrs.frozen
class TokenDay:
    """One agent's model calls of one UTC day."""

    day: str
    agent_id: str
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@final
@attrs.frozen
class BudgetUse:
    """An agent's daily budget (None: it has none) and what it has used of it today: the
    budget's count under a budget, else the tokens recorded today."""

    agent_id: str
    daily_tokens: int | None
    used_today: int


async def token_days(days: int) -> list[TokenDay]:
    """The last *days* UTC days (today included) of every agent, newest first."""
    if days < 1:
        raise ValueError("days must be at least 1")
    since = (datetime.date.fromisoformat(today()) - datetime.timedelta(days=days - 1)).isoformat()
    return [TokenDay(*row) for row in await store_call(TokenDays(since))]


async def budgets() -> list[BudgetUse]:
    """Every agent's budget and today's use of it (the agents with a budget override too)."""
    runtime = await sv.call(SESSIONS, CurrentRuntime(), restart_wait=RESTART_WAIT)
    config = runtime.config
    agents = sorted({*agent_names(runtime.data_dir, config.default_agent), *config.budgets})
    recorded = {row.agent_id: row.total_tokens for row in await token_days(1)}
    found = []
    for agent in agents:
        limit = config.budget_for(agent)
        used = await used_today(agent) if limit > 0 else recorded.get(agent, 0)
        found.append(BudgetUse(agent, limit if limit > 0 else None, used))
    return found
