"""The Telegram ledger on each store backend: every update in at least once, acted on at
most once, and what an earlier run left unanswered found again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import beamclaw_gateway as gateway
from beamclaw_base import Database, StoreConfig, open_store
from beamclaw_gateway._telegram_ledger import Ledger, store_pushed
from tests.support.stores import sql

#: A supergroup's chat id: below -2**31, as Telegram gives them.
SUPERGROUP = -1001234567890123


@pytest.fixture
def db(store_config: StoreConfig, tmp_path: Path) -> Iterator[Database]:
    database = open_store(store_config, gateway.SCHEMA, sqlite_file=tmp_path / "gateway.db", synchronous="FULL")
    yield database
    database.close()


def _update(update_id: int, text: str) -> dict[str, Any]:
    chat = {"id": SUPERGROUP, "type": "private"}
    return {"update_id": update_id, "message": {"message_id": update_id, "chat": chat, "text": text}}


async def test_received_claimed_answered_and_a_second_claim_acts_on_nothing(db: Database) -> None:
    ledger = await Ledger.open(db, "bot-a", "boot-1")
    updates = [_update(7, "hi"), _update(8, "a NUL \x00 in a body is kept")]
    assert await ledger.receive(updates) == 2
    assert await ledger.receive(updates) == 0  # sent again: below the offset
    assert await ledger.inbox() == updates
    pending = await ledger.claim(7, SUPERGROUP, "hi \x00 there")
    assert pending is not None
    # The same update claimed again (another drain, another node) is not there to take:
    # nothing is owed twice, and the row of the first claim stays as it was.
    assert await ledger.claim(7, SUPERGROUP, "again") is None
    rows = sql(db, "SELECT update_id, chat_id, boot, preview FROM telegram_unanswered WHERE bot = ?", ("bot-a",))
    assert [tuple(row) for row in rows] == [(7, SUPERGROUP, "boot-1", "hi \ufffd there")]
    # The next run of the daemon finds the offset, the inbox and what went unanswered.
    later = await Ledger.open(db, "bot-a", "boot-2")
    assert later.next_update == 9 and await later.inbox() == [updates[1]]
    [unanswered] = await later.orphaned()
    assert (unanswered.chat_id, unanswered.preview) == (SUPERGROUP, "hi \ufffd there")
    assert await ledger.orphaned() == []  # its own turn may still be running
    await pending.answered()
    assert await later.orphaned() == []
    # Taken owing nothing (an edit, a group message): out of the inbox, no row.
    assert await later.claim(8, None) is None
    assert await later.inbox() == [] and sql(db, "SELECT update_id FROM telegram_unanswered") == []


async def test_a_webhook_update_stored_twice_is_kept_once(db: Database) -> None:
    big = 2**31 + 5  # ids pass 32 bits
    update = _update(big, "pushed")
    await store_pushed(db, "bot-a", update)
    await store_pushed(db, "bot-a", update)
    ledger = await Ledger.open(db, "bot-a", "boot-1")
    assert ledger.next_update == big + 1 and await ledger.inbox() == [update]
    assert await ledger.claim(big, SUPERGROUP, "pushed") is not None
    await store_pushed(db, "bot-a", update)  # again once it was taken: not back in the inbox
    await store_pushed(db, "bot-a", _update(big - 1, "older"))  # below the offset: had already
    assert await ledger.inbox() == []
    assert [tuple(row) for row in sql(db, "SELECT next_update FROM telegram_offsets")] == [(big + 1,)]
    # Another bot's ledger in the same store is its own.
    other = await Ledger.open(db, "bot-b", "boot-1")
    assert other.next_update == 0 and await other.inbox() == []
