"""Pairing codes: alphabet, expiry, the per-channel limit, approval and revocation, persisted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import beamclaw_core as core

T0 = 1_800_000_000.0


@pytest.fixture
def db(tmp_path: Path) -> sqlite3.Connection:
    return core.open_database(tmp_path / "sessions.db")


def test_codes_use_the_alphabet_and_repeat_while_pending(db: sqlite3.Connection) -> None:
    code = core.request_code(db, "telegram", "tg:1", "Ada", now=T0)
    assert len(code) == 8 and set(code) <= set(core.PAIRING_ALPHABET)
    assert not set(code) & set("01IO")
    assert core.request_code(db, "telegram", "tg:1", now=T0 + 60) == code
    assert [p.user_id for p in core.pending(db, now=T0 + 60)] == ["tg:1"]


def test_at_most_three_pending_per_channel(db: sqlite3.Connection) -> None:
    for i in range(3):
        core.request_code(db, "telegram", f"tg:{i}", now=T0)
    with pytest.raises(core.PairingError, match="telegram already has 3 pairing requests waiting"):
        core.request_code(db, "telegram", "tg:9", now=T0)
    core.request_code(db, "discord", "d:1", now=T0)  # another channel has its own limit
    # After an hour they have expired, and there is room again.
    core.request_code(db, "telegram", "tg:9", now=T0 + 3601)
    assert [p.user_id for p in core.pending(db, now=T0 + 3601)] == ["tg:9"]


def test_a_code_expires_after_sixty_minutes(db: sqlite3.Connection) -> None:
    code = core.request_code(db, "telegram", "tg:1", now=T0)
    with pytest.raises(core.PairingError, match="no pending telegram pairing code"):
        core.approve(db, "telegram", code, "default", now=T0 + 3601)
    assert core.allowed_agent(db, "telegram", "tg:1") is None


def test_approve_and_revoke_persist(tmp_path: Path, db: sqlite3.Connection) -> None:
    code = core.request_code(db, "telegram", "tg:1", now=T0)
    assert core.approve(db, "telegram", code.lower(), "ada", now=T0 + 10) == "tg:1"
    reopened = core.open_database(tmp_path / "sessions.db")
    assert core.allowed_agent(reopened, "telegram", "tg:1") == "ada"
    assert [(p.user_id, p.agent_id) for p in core.paired(reopened)] == [("tg:1", "ada")]
    assert core.pending(reopened, now=T0 + 10) == []
    with pytest.raises(core.PairingError):
        core.approve(reopened, "telegram", code, "ada", now=T0 + 20)  # used up
    assert core.revoke(reopened, "telegram", "tg:1") is True
    assert core.revoke(reopened, "telegram", "tg:1") is False
    assert core.allowed_agent(db, "telegram", "tg:1") is None


def test_a_version_one_database_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT NOT NULL, "
                "channel TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, "
                "allowlist TEXT NOT NULL DEFAULT '[]')")  # fmt: skip
    old.execute("INSERT INTO sessions VALUES ('s', 'u', 'a', '', 1, 1, '[]')")
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    db = core.open_database(path)
    assert db.execute("PRAGMA user_version").fetchone() == (core.SCHEMA_VERSION,)
    assert db.execute("SELECT id FROM sessions").fetchall() == [("s",)]
    core.request_code(db, "telegram", "tg:1")


def test_a_paired_user_is_linked_and_a_stranger_never_is(db: sqlite3.Connection) -> None:
    with pytest.raises(core.PairingError, match="telegram:7 is not paired on telegram: pair them first"):
        core.link(db, "telegram", "telegram:7", "local:ada")
    assert core.paired(db) == []  # the refused link left nothing behind
    core.approve(db, "telegram", core.request_code(db, "telegram", "telegram:7", now=T0), "default", now=T0)
    core.link(db, "telegram", "telegram:7", "local:ada", now=T0 + 1)
    assert [p.linked_user for p in core.paired(db)] == ["local:ada"]
    assert core.unlink(db, "telegram", "telegram:7") is True and core.unlink(db, "telegram", "telegram:7") is False
    core.link(db, "telegram", "telegram:7", "local:ada")
    assert core.revoke(db, "telegram", "telegram:7") is True  # revoking drops the link too
    core.approve(db, "telegram", core.request_code(db, "telegram", "telegram:7", now=T0), "default", now=T0)
    assert [p.linked_user for p in core.paired(db)] == [None]


def test_whom_a_chat_user_speaks_as(db: sqlite3.Connection) -> None:
    core.approve(db, "telegram", core.request_code(db, "telegram", "telegram:1"), "default")
    core.approve(db, "telegram", core.request_code(db, "telegram", "telegram:2"), "default")
    core.link(db, "telegram", "telegram:2", "local:bob")
    # Without BEAMCLAW_USER: themselves, unless linked.
    assert core.speaker(db, "telegram", "telegram:1", listed=False, canonical=None) == "telegram:1"
    assert core.speaker(db, "telegram", "telegram:2", listed=False, canonical=None) == "local:bob"
    # With it: the paired and the listed are the one user; a link still wins; a stranger never is.
    assert core.speaker(db, "telegram", "telegram:1", listed=False, canonical="ada") == "ada"
    assert core.speaker(db, "telegram", "telegram:3", listed=True, canonical="ada") == "ada"
    assert core.speaker(db, "telegram", "telegram:2", listed=False, canonical="ada") == "local:bob"
    assert core.speaker(db, "telegram", "telegram:666", listed=False, canonical="ada") == "telegram:666"
