"""Pairing: how an unknown chat user becomes allowed, one short code at a time.

A channel (Telegram, say) asks for a code when a stranger writes; the operator
approves it from the command line (``beamclaw pair telegram CODE``). Codes are 8
characters from an alphabet without look-alikes, valid 60 minutes, at most 3 pending
per channel. The allowlist is kept in the session database, so it survives restarts.
These functions take an open SQLite connection: the store process calls them for the
daemon, and the CLI calls them directly.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from typing import Final, final

import attrs

ALPHABET: Final = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH: Final = 8
CODE_TTL: Final = 3600.0
MAX_PENDING: Final = 3


class PairingError(ValueError):
    """A pairing request or approval that cannot be done; the message says why."""


@final
@attrs.frozen
class PendingCode:
    channel: str
    code: str
    user_id: str
    display: str
    created_at: float


@final
@attrs.frozen
class Paired:
    channel: str
    user_id: str
    agent_id: str
    approved_at: float


def _purge(db: sqlite3.Connection, now: float) -> None:
    db.execute("DELETE FROM pairing_requests WHERE created_at < ?", (now - CODE_TTL,))


def request_code(
    db: sqlite3.Connection, channel: str, user_id: str, display: str = "", now: float | None = None
) -> str:
    """A code for *user_id* on *channel* (the same one while it is pending)."""
    now = time.time() if now is None else now
    with db:
        db.execute("BEGIN IMMEDIATE")
        _purge(db, now)
        row = db.execute(
            "SELECT code FROM pairing_requests WHERE channel = ? AND user_id = ?", (channel, user_id)
        ).fetchone()
        if row is not None:
            return str(row[0])
        (pending,) = db.execute("SELECT count(*) FROM pairing_requests WHERE channel = ?", (channel,)).fetchone()
        if pending >= MAX_PENDING:
            raise PairingError(
                f"{channel} already has {MAX_PENDING} pairing requests waiting; approve them with "
                f"`beamclaw pair {channel} CODE` or let them expire (60 minutes)"
            )
        code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
        db.execute(
            "INSERT INTO pairing_requests (channel, code, user_id, display, created_at) VALUES (?, ?, ?, ?, ?)",
            (channel, code, user_id, display, now),
        )
        return code


def approve(db: sqlite3.Connection, channel: str, code: str, agent_id: str, now: float | None = None) -> str:
    """Allow the user who asked for *code*; return their user id."""
    now = time.time() if now is None else now
    code = code.strip().upper()
    with db:
        db.execute("BEGIN IMMEDIATE")
        _purge(db, now)
        row = db.execute(
            "SELECT user_id FROM pairing_requests WHERE channel = ? AND code = ?", (channel, code)
        ).fetchone()
        if row is None:
            raise PairingError(f"no pending {channel} pairing code {code!r} (codes expire after 60 minutes)")
        user_id = str(row[0])
        db.execute(
            "INSERT INTO pairing_allow (channel, user_id, agent_id, approved_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(channel, user_id) DO UPDATE SET agent_id = excluded.agent_id, "
            "approved_at = excluded.approved_at",
            (channel, user_id, agent_id, now),
        )
        db.execute("DELETE FROM pairing_requests WHERE channel = ? AND user_id = ?", (channel, user_id))
        return user_id


def revoke(db: sqlite3.Connection, channel: str, user_id: str) -> bool:
    with db:
        removed = db.execute("DELETE FROM pairing_allow WHERE channel = ? AND user_id = ?", (channel, user_id))
        return removed.rowcount > 0


def allowed_agent(db: sqlite3.Connection, channel: str, user_id: str) -> str | None:
    """The agent *user_id* was paired with on *channel*, or None if they are not allowed."""
    row = db.execute(
        "SELECT agent_id FROM pairing_allow WHERE channel = ? AND user_id = ?", (channel, user_id)
    ).fetchone()
    return None if row is None else str(row[0])


def pending(db: sqlite3.Connection, now: float | None = None) -> list[PendingCode]:
    now = time.time() if now is None else now
    rows = db.execute(
        "SELECT channel, code, user_id, display, created_at FROM pairing_requests WHERE created_at >= ? "
        "ORDER BY created_at",
        (now - CODE_TTL,),
    ).fetchall()
    return [PendingCode(*row) for row in rows]


def paired(db: sqlite3.Connection) -> list[Paired]:
    rows = db.execute(
        "SELECT channel, user_id, agent_id, approved_at FROM pairing_allow ORDER BY approved_at"
    ).fetchall()
    return [Paired(*row) for row in rows]
