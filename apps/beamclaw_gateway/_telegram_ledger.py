"""What the bot took from Telegram and what it still owes an answer for, in SQLite.

The delivery semantics, chosen so that a user never gets the same answer twice and no
message is dropped without the user being told:

- Into the bot, at least once. Every update a poll returns is stored in the inbox in
  the same transaction that advances the offset, so the offset (which confirms updates
  to Telegram on the next poll) never covers an update that is not stored here;
  Telegram delivers again whatever was not confirmed. A webhook's update is stored the
  same way (`store_pushed`) before the 200 that confirms it is sent.
- Preparing an update (who is asking, which agent, downloading a photo, transcribing
  a voice note) has no effect a user can see, so it may run again: a poller killed
  while preparing finds the update still in the inbox when it restarts.
- Acting on it, at most once. The update leaves the inbox and enters ``unanswered`` in
  one transaction *before* the act (the reply, or the turn handed to a session), and
  the act is shielded, so a poller killed mid-act finishes it first. The row is
  cleared once the user has the answer: the reply sent, or the turn's final message.
- Told, never silently lost. If the daemon dies between the two (a crash, SIGKILL, a
  power cut mid-turn, a shutdown with a turn running), the next start finds rows of an
  earlier boot and tells each user which message went unanswered, so they can send it
  again; it never replays a message whose answer may already have been sent.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import trio

import beamclaw_core as core

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS telegram_offsets (bot TEXT PRIMARY KEY, next_update INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS telegram_inbox (bot TEXT NOT NULL, update_id INTEGER NOT NULL, "
    "body TEXT NOT NULL, PRIMARY KEY (bot, update_id))",
    "CREATE TABLE IF NOT EXISTS telegram_unanswered (bot TEXT NOT NULL, update_id INTEGER NOT NULL, "
    "chat_id INTEGER NOT NULL, boot TEXT NOT NULL, preview TEXT NOT NULL, PRIMARY KEY (bot, update_id))",
)


def _connect(path: Path) -> sqlite3.Connection:
    # Autocommit; writes open their own transaction. FULL sync: a claim must survive a
    # power cut, or the answer it guards could be sent twice.
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10.0)
    db.execute("PRAGMA synchronous=FULL")
    return db


def _open(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    db = _connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    for statement in _SCHEMA:
        db.execute(statement)
    path.chmod(0o600)
    return db


def _store_pushed(path: Path, bot: str, update_id: int, body: str) -> None:
    db = _open(path)
    try:
        with core.immediate_transaction(db):
            row = db.execute("SELECT next_update FROM telegram_offsets WHERE bot = ?", (bot,)).fetchone()
            if row is not None and update_id < row[0]:
                return  # had already: Telegram sent it again
            db.execute(
                "INSERT OR IGNORE INTO telegram_inbox (bot, update_id, body) VALUES (?, ?, ?)", (bot, update_id, body)
            )
            db.execute(
                "INSERT INTO telegram_offsets (bot, next_update) VALUES (?, ?) ON CONFLICT(bot) "
                "DO UPDATE SET next_update = MAX(next_update, excluded.next_update)",
                (bot, update_id + 1),
            )
    finally:
        db.close()


async def store_pushed(path: Path, bot: str, update: dict[str, Any]) -> None:
    """Store an update a webhook received in *bot*'s inbox (unless it was had before),
    durably, before the webhook answers: a crash after the answer cannot lose it."""
    await trio.to_thread.run_sync(_store_pushed, path, bot, int(update["update_id"]), json.dumps(update))


@attrs.frozen
class Pending:
    """An update acted on but not yet answered; the turn's channel clears it when done.

    It holds a path, not a connection: the turn outlives the poller that took the update.
    """

    path: Path
    bot: str
    update_id: int

    def _clear(self) -> None:
        db = _connect(self.path)
        try:
            db.execute("DELETE FROM telegram_unanswered WHERE bot = ? AND update_id = ?", (self.bot, self.update_id))
        finally:
            db.close()

    async def answered(self) -> None:
        await trio.to_thread.run_sync(self._clear)


@attrs.frozen
class Unanswered:
    """An update an earlier run of the daemon acted on and never answered."""

    pending: Pending
    chat_id: int
    preview: str


@attrs.define
class Ledger:
    """One bot's offset, inbox and unanswered updates; owned by the channel process."""

    path: Path
    bot: str
    boot: str  # this run of the daemon: rows of another boot lost their turn
    db: sqlite3.Connection
    next_update: int = 0

    @classmethod
    async def open(cls, path: Path, bot: str, boot: str) -> Ledger:
        db = await trio.to_thread.run_sync(_open, path)
        row = db.execute("SELECT next_update FROM telegram_offsets WHERE bot = ?", (bot,)).fetchone()
        return cls(path, bot, boot, db, row[0] if row else 0)

    def close(self) -> None:
        self.db.close()

    def _receive(self, fresh: list[tuple[int, str]]) -> None:
        top = max(update_id for update_id, _ in fresh) + 1
        with core.immediate_transaction(self.db):
            self.db.executemany(
                "INSERT OR IGNORE INTO telegram_inbox (bot, update_id, body) VALUES (?, ?, ?)",
                [(self.bot, update_id, body) for update_id, body in fresh],
            )
            self.db.execute(
                "INSERT INTO telegram_offsets (bot, next_update) VALUES (?, ?) "
                "ON CONFLICT(bot) DO UPDATE SET next_update = excluded.next_update",
                (self.bot, top),
            )

    async def receive(self, updates: Any) -> int:
        """Store the updates not seen before and move the offset past them; how many were new.

        Ids below the offset are skipped, so an update Telegram sends again is never
        handled twice.
        """
        fresh = [
            (u["update_id"], json.dumps(u))
            for u in (updates if isinstance(updates, list) else [])
            if isinstance(u, dict) and type(u.get("update_id")) is int and u["update_id"] >= self.next_update
        ]
        if not fresh:
            return 0
        await trio.to_thread.run_sync(self._receive, fresh)
        self.next_update = max(update_id for update_id, _ in fresh) + 1
        return len(fresh)

    def inbox(self) -> list[dict[str, Any]]:
        """The stored updates not yet acted on, oldest first."""
        rows = self.db.execute(
            "SELECT body FROM telegram_inbox WHERE bot = ? ORDER BY update_id", (self.bot,)
        ).fetchall()
        return [json.loads(body) for (body,) in rows]

    def _claim(self, update_id: int, chat_id: int | None, preview: str) -> None:
        with core.immediate_transaction(self.db):
            self.db.execute("DELETE FROM telegram_inbox WHERE bot = ? AND update_id = ?", (self.bot, update_id))
            if chat_id is not None:
                self.db.execute(
                    "INSERT OR REPLACE INTO telegram_unanswered (bot, update_id, chat_id, boot, preview) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (self.bot, update_id, chat_id, self.boot, preview),
                )

    async def claim(self, update_id: int, chat_id: int | None, preview: str = "") -> Pending | None:
        """Take the update out of the inbox; with a *chat_id*, as owing that chat an answer.

        Not cancellable once begun (a worker thread is waited for), so the claim is whole
        or absent.
        """
        await trio.to_thread.run_sync(self._claim, update_id, chat_id, preview)
        return Pending(self.path, self.bot, update_id) if chat_id is not None else None

    def unanswered_before(self) -> list[Unanswered]:
        """Updates acted on by an earlier boot and never answered (their turn died with it)."""
        rows = self.db.execute(
            "SELECT update_id, chat_id, preview FROM telegram_unanswered WHERE bot = ? AND boot != ? "
            "ORDER BY update_id",
            (self.bot, self.boot),
        ).fetchall()
        return [Unanswered(Pending(self.path, self.bot, u), chat, preview) for u, chat, preview in rows]
