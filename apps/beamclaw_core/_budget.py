"""The daily token budget per agent: reserved before each model call, failing closed.

A reservation covers the prompt's estimated tokens plus a completion allowance;
after the call it is settled to the tokens actually used. When the store cannot be
asked, the call is refused: an unknown spend is not a free one. Every call's tokens
are also recorded per agent and day, prompt and completion apart, budget or not
(`usage_record`, saved with the reply it wrote): what the usage report shows.
"""

from __future__ import annotations

import contextlib
import datetime
from typing import Final

import attrs

import supervision as sv
from beamclaw_base import StoreError

from ._store import store_call
from ._store_requests import AdjustTokens, RecordTokens, ReserveTokens, TokensUsed

_FAILURES: Final = (sv.NoProc, sv.ProcessExited, sv.CallTimeout, StoreError)


class BudgetExceeded(Exception):
    """The call would pass the agent's daily budget; the message is for the user."""


def today() -> str:
    return datetime.datetime.now(datetime.UTC).date().isoformat()


@attrs.frozen
class Reservation:
    agent_id: str
    day: str
    tokens: int


async def reserve(agent_id: str, tokens: int, limit: int) -> Reservation | None:
    """Reserve *tokens* against *limit* (0: no budget, returns None)."""
    if limit <= 0:
        return None
    day = today()
    try:
        total = await store_call(ReserveTokens(agent_id, day, tokens, limit))
    except _FAILURES as exc:
        raise BudgetExceeded(
            f"The token budget cannot be checked right now ({type(exc).__name__}), so the model was not called."
        ) from None
    if total is None:
        raise BudgetExceeded(
            f"The daily token budget of agent {agent_id!r} ({limit:,} tokens) is used up; it resets at midnight UTC."
        )
    return Reservation(agent_id, day, tokens)


async def settle(reservation: Reservation | None, used: int) -> None:
    """Replace the reservation by the tokens actually *used*."""
    if reservation is None or used == reservation.tokens:
        return
    # If the store cannot be reached, the reservation stays counted: the budget errs on
    # the side of spending less.
    with contextlib.suppress(*_FAILURES):
        await store_call(AdjustTokens(reservation.agent_id, reservation.day, used - reservation.tokens))


async def used_today(agent_id: str) -> int:
    return await store_call(TokensUsed(agent_id, today()))


def usage_record(agent_id: str, prompt_tokens: int, completion_tokens: int) -> RecordTokens:
    """One model call's tokens for the agent's day, to be saved with the reply the call
    wrote (`Append`), or alone by `record_tokens` when that reply is not saved."""
    return RecordTokens(agent_id, today(), prompt_tokens, completion_tokens)


async def record_tokens(record: RecordTokens) -> None:
    """Save *record* alone; a store that cannot be reached loses it, never the turn (the
    budget's own count is `settle`'s)."""
    with contextlib.suppress(*_FAILURES):
        await store_call(record)
