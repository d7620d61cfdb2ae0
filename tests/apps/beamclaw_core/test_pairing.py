"""Pairing codes: alphabet, expiry, the per-channel limit, approval and revocation, persisted."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

import beamclaw_core as core
import supervision as sv
from beamclaw_base import Database, StoreConfig, Tx
from tests.support.stores import sql

from .conftest import RunCore

T0 = 1_800_000_000.0
R = TypeVar("R")


@pytest.fixture
def db(tmp_path: Path, store_config: StoreConfig) -> Iterator[Database]:
    store = core.open_session_store(store_config, tmp_path)
    yield store
    store.close()


def at(db: Database, work: Callable[[Tx], R]) -> R:
    """*work* in one transaction, as the store process and the command line run it."""
    return db.transact(work)


def test_codes_use_the_alphabet_and_repeat_while_pending(db: Database) -> None:
    code = at(db, lambda tx: core.request_code(tx, "telegram", "tg:1", "Ada", now=T0))
    assert len(code) == 8 and set(code) <= set(core.PAIRING_ALPHABET)
    assert not set(code) & set("01IO")
    assert at(db, lambda tx: core.request_code(tx, "telegram", "tg:1", now=T0 + 60)) == code
    assert [p.user_id for p in at(db, lambda tx: core.pending(tx, now=T0 + 60))] == ["tg:1"]


def test_at_most_three_pending_per_channel(db: Database) -> None:
    for i in range(3):
        at(db, functools.partial(core.request_code, channel="telegram", user_id=f"tg:{i}", now=T0))
    with pytest.raises(core.PairingError, match="telegram already has 3 pairing requests waiting"):
        at(db, lambda tx: core.request_code(tx, "telegram", "tg:9", now=T0))
    at(db, lambda tx: core.request_code(tx, "discord", "d:1", now=T0))  # another channel has its own limit
    # After an hour they have expired, and there is room again.
    at(db, lambda tx: core.request_code(tx, "telegram", "tg:9", now=T0 + 3601))
    assert [p.user_id for p in at(db, lambda tx: core.pending(tx, now=T0 + 3601))] == ["tg:9"]


def test_a_code_expires_after_sixty_minutes(db: Database) -> None:
    code = at(db, lambda tx: core.request_code(tx, "telegram", "tg:1", now=T0))
    with pytest.raises(core.PairingError, match="no pending telegram pairing code"):
        at(db, lambda tx: core.approve(tx, "telegram", code, "default", now=T0 + 3601))
    assert at(db, lambda tx: core.allowed_agent(tx, "telegram", "tg:1")) is None


def test_approve_and_revoke_persist(tmp_path: Path, store_config: StoreConfig, db: Database) -> None:
    code = at(db, lambda tx: core.request_code(tx, "telegram", "tg:1", now=T0))
    assert at(db, lambda tx: core.approve(tx, "telegram", code.lower(), "ada", now=T0 + 10)) == "tg:1"
    reopened = core.open_session_store(store_config, tmp_path)
    assert at(reopened, lambda tx: core.allowed_agent(tx, "telegram", "tg:1")) == "ada"
    assert [(p.user_id, p.agent_id) for p in at(reopened, core.paired)] == [("tg:1", "ada")]
    assert at(reopened, lambda tx: core.pending(tx, now=T0 + 10)) == []
    with pytest.raises(core.PairingError):
        at(reopened, lambda tx: core.approve(tx, "telegram", code, "ada", now=T0 + 20))  # used up
    assert at(reopened, lambda tx: core.revoke(tx, "telegram", "tg:1")) is True
    assert at(reopened, lambda tx: core.revoke(tx, "telegram", "tg:1")) is False
    reopened.close()
    assert at(db, lambda tx: core.allowed_agent(tx, "telegram", "tg:1")) is None


def test_a_display_name_with_a_nul_is_kept_without_it(db: Database) -> None:
    at(db, lambda tx: core.request_code(tx, "telegram", "tg:1", "A\0da", now=T0))
    assert [p.display for p in at(db, lambda tx: core.pending(tx, now=T0))] == ["Ada"]


def test_a_version_one_database_is_upgraded(tmp_path: Path) -> None:
    old = sqlite3.connect(tmp_path / "sessions.db")
    old.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT NOT NULL, "
                "channel TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, "
                "allowlist TEXT NOT NULL DEFAULT '[]')")  # fmt: skip
    old.execute("INSERT INTO sessions VALUES ('s', 'u', 'a', '', 1, 1, '[]')")
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    db = core.open_session_store(StoreConfig(), tmp_path)
    assert sql(db, "SELECT id FROM sessions") == [("s",)]
    at(db, lambda tx: core.request_code(tx, "telegram", "tg:1"))
    db.close()
    upgraded = sqlite3.connect(tmp_path / "sessions.db")
    assert upgraded.execute("PRAGMA user_version").fetchone() == (core.SCHEMA_VERSION,)
    upgraded.close()


def test_a_paired_user_is_linked_and_a_stranger_never_is(db: Database) -> None:
    with pytest.raises(core.PairingError, match="telegram:7 is not paired on telegram: pair them first"):
        at(db, lambda tx: core.link(tx, "telegram", "telegram:7", "local:ada"))
    assert at(db, core.paired) == []  # the refused link left nothing behind
    _pair(db, "telegram:7")
    at(db, lambda tx: core.link(tx, "telegram", "telegram:7", "local:ada", now=T0 + 1))
    assert [p.linked_user for p in at(db, core.paired)] == ["local:ada"]
    assert at(db, lambda tx: core.unlink(tx, "telegram", "telegram:7")) is True
    assert at(db, lambda tx: core.unlink(tx, "telegram", "telegram:7")) is False
    at(db, lambda tx: core.link(tx, "telegram", "telegram:7", "local:ada"))
    assert at(db, lambda tx: core.revoke(tx, "telegram", "telegram:7")) is True  # revoking drops the link too
    _pair(db, "telegram:7")
    assert [p.linked_user for p in at(db, core.paired)] == [None]


def _pair(db: Database, user_id: str) -> None:
    code = at(db, lambda tx: core.request_code(tx, "telegram", user_id, now=T0))
    at(db, lambda tx: core.approve(tx, "telegram", code, "default", now=T0))


#: A trigger that makes every DELETE from pairing_allow fail, in each backend's own words.
_REFUSE_UNPAIRING = {
    "sqlite": [
        "CREATE TRIGGER refuse_unpairing BEFORE DELETE ON pairing_allow BEGIN SELECT RAISE(ABORT, 'refused'); END"
    ],
    "postgres": [
        "CREATE FUNCTION refuse_unpairing() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$ "
        "LANGUAGE plpgsql",
        "CREATE TRIGGER refuse_unpairing BEFORE DELETE ON pairing_allow FOR EACH ROW "
        "EXECUTE FUNCTION refuse_unpairing()",
    ],
}


def test_a_revoke_that_fails_half_way_changes_nothing(db: Database) -> None:
    """The link goes first, then the pairing: when the second fails, the first is undone
    (a user left paired but unlinked would speak as someone else than the owner set)."""
    _pair(db, "telegram:7")
    at(db, lambda tx: core.link(tx, "telegram", "telegram:7", "local:ada"))
    for statement in _REFUSE_UNPAIRING[db.dialect]:
        sql(db, statement)
    with pytest.raises(core.StoreError, match="refused"):
        at(db, lambda tx: core.revoke(tx, "telegram", "telegram:7"))
    assert [(p.user_id, p.linked_user) for p in at(db, core.paired)] == [("telegram:7", "local:ada")]


def test_whom_a_chat_user_speaks_as(db: Database) -> None:
    _pair(db, "telegram:1")
    _pair(db, "telegram:2")
    at(db, lambda tx: core.link(tx, "telegram", "telegram:2", "local:bob"))

    def speaker(user_id: str, listed: bool, canonical: str | None) -> str:
        return at(db, lambda tx: core.speaker(tx, "telegram", user_id, listed=listed, canonical=canonical))

    # Without BEAMCLAW_USER: themselves, unless linked.
    assert speaker("telegram:1", False, None) == "telegram:1"
    assert speaker("telegram:2", False, None) == "local:bob"
    # With it: the paired and the listed are the one user; a link still wins; a stranger never is.
    assert speaker("telegram:1", False, "ada") == "ada"
    assert speaker("telegram:3", True, "ada") == "ada"
    assert speaker("telegram:2", False, "ada") == "local:bob"
    assert speaker("telegram:666", False, "ada") == "telegram:666"


async def test_a_channel_past_its_pending_codes_is_told_so_and_the_store_goes_on(
    run_core: RunCore, store_config: StoreConfig
) -> None:
    """The fourth stranger gets `PairingError` (the channel answers them politely); the
    store process that refused is the same one, so no conversation was restarted."""
    from beamclaw_core._store import STORE

    async with run_core(store=store_config) as r:
        codes = [await core.pairing_code("telegram", f"telegram:{n}", "") for n in range(3)]
        before = sv.whereis(STORE)
        with pytest.raises(core.PairingError, match="telegram already has 3 pairing requests waiting"):
            await core.pairing_code("telegram", "telegram:9", "")
        assert sv.whereis(STORE) == before and r.named("child_restarted") == []
        assert await core.pairing_code("telegram", "telegram:0", "") == codes[0]
