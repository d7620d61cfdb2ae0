"""Pairing: how an unknown chat user becomes allowed, one short code at a time.

A channel (Telegram, say) asks for a code when a stranger writes; the operator
approves it from the command line (``beamclaw pair telegram CODE``). Codes are 8
characters from an alphabet without look-alikes, valid 60 minutes, at most 3 pending
per channel. The allowlist is kept in the session database, so it survives restarts.

A paired user can be linked to another user id (``beamclaw pair link``): the owner's
Telegram account to their terminal user, say, so both continue one conversation
(`speaker`). Only the owner links, from the command line; revoking a user drops the link.
These functions do their work in the transaction they are given (`beamclaw_base.Tx`):
the store process runs them for the daemon, and the CLI in a transaction of its own
(``db.transact(...)``), daemon running or not. Each check and the write it guards share
that one transaction.
"""

from __future__ import annotations

import secrets
import time
from typing import Final, final

import attrs

from beamclaw_base import Tx

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
    #: The user this one speaks as (`link`), or None: their own id.
    linked_user: str | None = None


def _purge(tx: Tx, now: float) -> None:
    tx.execute("DELETE FROM pairing_requests WHERE created_at < ?", (now - CODE_TTL,))


def request_code(tx: Tx, channel: str, user_id: str, display: str = "", now: float | None = None) -> str:
    """A code for *user_id* on *channel* (the same one while it is pending); in a write
    transaction, so the count of pending codes holds until the new one is in."""
    now = time.time() if now is None else now
    _purge(tx, now)
    row = tx.execute(
        "SELECT code FROM pairing_requests WHERE channel = ? AND user_id = ?", (channel, user_id)
    ).fetchone()
    if row is not None:
        return str(row[0])
    (pending,) = tx.execute("SELECT count(*) FROM pairing_requests WHERE channel = ?", (channel,)).fetchone()
    if pending >= MAX_PENDING:
        raise PairingError(
            f"{channel} already has {MAX_PENDING} pairing requests waiting; approve them with "
            f"`beamclaw pair {channel} CODE` or let them expire (60 minutes)"
        )
    code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
    # The display name is a stranger's own text: a NUL (which PostgreSQL's TEXT refuses) is
    # dropped, it names nobody.
    tx.execute(
        "INSERT INTO pairing_requests (channel, code, user_id, display, created_at) VALUES (?, ?, ?, ?, ?)",
        (channel, code, user_id, display.replace("\0", ""), now),
    )
    return code


def approve(tx: Tx, channel: str, code: str, agent_id: str, now: float | None = None) -> str:
    """Allow the user who asked for *code*; return their user id."""
    now = time.time() if now is None else now
    code = code.strip().upper()
    _purge(tx, now)
    row = tx.execute("SELECT user_id FROM pairing_requests WHERE channel = ? AND code = ?", (channel, code)).fetchone()
    if row is None:
        raise PairingError(f"no pending {channel} pairing code {code!r} (codes expire after 60 minutes)")
    user_id = str(row[0])
    tx.execute(
        "INSERT INTO pairing_allow (channel, user_id, agent_id, approved_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(channel, user_id) DO UPDATE SET agent_id = excluded.agent_id, "
        "approved_at = excluded.approved_at",
        (channel, user_id, agent_id, now),
    )
    tx.execute("DELETE FROM pairing_requests WHERE channel = ? AND user_id = ?", (channel, user_id))
    return user_id


def revoke(tx: Tx, channel: str, user_id: str) -> bool:
    """Take *user_id*'s pairing on *channel* away, and their link with it (both or neither:
    a link left behind would come back with the next pairing); False when they were not paired."""
    tx.execute("DELETE FROM pairing_links WHERE channel = ? AND user_id = ?", (channel, user_id))
    removed = tx.execute("DELETE FROM pairing_allow WHERE channel = ? AND user_id = ?", (channel, user_id))
    return removed.rowcount > 0


def link(tx: Tx, channel: str, user_id: str, linked_user: str, now: float | None = None) -> None:
    """Make the paired *user_id* on *channel* speak as *linked_user* (checked by the caller:
    `check_user_id`); `PairingError` if they are not paired: a stranger is never linked."""
    now = time.time() if now is None else now
    if allowed_agent(tx, channel, user_id) is None:
        raise PairingError(f"{user_id} is not paired on {channel}: pair them first (beamclaw pair {channel} CODE)")
    tx.execute(
        "INSERT INTO pairing_links (channel, user_id, linked_user, linked_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(channel, user_id) DO UPDATE SET linked_user = excluded.linked_user, "
        "linked_at = excluded.linked_at",
        (channel, user_id, linked_user, now),
    )


def unlink(tx: Tx, channel: str, user_id: str) -> bool:
    """Let *user_id* speak as themselves again; False when they were not linked."""
    removed = tx.execute("DELETE FROM pairing_links WHERE channel = ? AND user_id = ?", (channel, user_id))
    return removed.rowcount > 0


def speaker(tx: Tx, channel: str, user_id: str, *, listed: bool, canonical: str | None) -> str:
    """Whom *user_id* on *channel* speaks as: the user they are linked to; else *canonical*
    (``BEAMCLAW_USER``) when the owner vouched for them (paired, or *listed* in the
    channel's ``allow_from``); else themselves. A stranger (``dm_policy = "open"``) is
    always themselves."""
    row = tx.execute(
        "SELECT linked_user FROM pairing_links WHERE channel = ? AND user_id = ?", (channel, user_id)
    ).fetchone()
    if row is not None and allowed_agent(tx, channel, user_id) is not None:
        return str(row[0])
    if canonical and (listed or allowed_agent(tx, channel, user_id) is not None):
        return canonical
    return user_id


def allowed_agent(tx: Tx, channel: str, user_id: str) -> str | None:
    """The agent *user_id* was paired with on *channel*, or None if they are not allowed."""
    row = tx.execute(
        "SELECT agent_id FROM pairing_allow WHERE channel = ? AND user_id = ?", (channel, user_id)
    ).fetchone()
    return None if row is None else str(row[0])


def pending(tx: Tx, now: float | None = None) -> list[PendingCode]:
    now = time.time() if now is None else now
    rows = tx.execute(
        "SELECT channel, code, user_id, display, created_at FROM pairing_requests WHERE created_at >= ? "
        "ORDER BY created_at",
        (now - CODE_TTL,),
    ).fetchall()
    return [PendingCode(*row) for row in rows]


def paired(tx: Tx) -> list[Paired]:
    rows = tx.execute(
        "SELECT a.channel, a.user_id, a.agent_id, a.approved_at, l.linked_user FROM pairing_allow AS a "
        "LEFT JOIN pairing_links AS l ON l.channel = a.channel AND l.user_id = a.user_id ORDER BY a.approved_at"
    ).fetchall()
    return [Paired(*row) for row in rows]
