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
