"""What the bot took from Telegram and what it still owes an answer for, in the gateway's store.

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
  the act is shielded, so a poller killed mid-act finishes it first. A claim that finds
  the update gone from the inbox (claimed already) acts on nothing. The row is
  cleared once the user has the answer: the reply sent, or the turn's final message.
- Told, never silently lost. If the daemon dies between the two (a crash, SIGKILL, a
  power cut mid-turn, a shutdown with a turn running), the next start finds rows of an
  earlier boot and tells each user which message went unanswered, so they can send it
  again; it never replays a message whose answer may already have been sent.

The tables are in the gateway's store (``gateway.db`` in the data dir with
``synchronous=FULL``, or PostgreSQL): one `Database`, held by the gateway's store process
(`_store`) and shared by the channel, the webhook route and each turn's `Pending`.
"""

from __future__ import annotations

import json
from typing import Any, Final

import attrs
from loguru import logger

import beamclaw_cluster as cluster
from beamclaw_base import Database, Schema, Step, StoreError, Tx, notify

from ._idempotency import STEP as IDEMPOTENCY_KEYS
from ._telegram_lease import PollerLease, hold

#: The ledger's tables. Files from before versions (``user_version`` 0, the same tables)
#: open as version 1 unchanged. Telegram's ids pass 2**31 (supergroup chats are below
#: -2**31), hence BIGINT on PostgreSQL; SQLite's INTEGER holds 64 bits already.
SCHEMA: Final = Schema(
    "gateway",
    (
        Step(
            sqlite="""
CREATE TABLE IF NOT EXISTS telegram_offsets (bot TEXT PRIMARY KEY, next_update INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS telegram_inbox (bot TEXT NOT NULL, update_id INTEGER NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (bot, update_id));
CREATE TABLE IF NOT EXISTS telegram_unanswered (bot TEXT NOT NULL, update_id INTEGER NOT NULL,
    chat_id INTEGER NOT NULL, boot TEXT NOT NULL, preview TEXT NOT NULL, PRIMARY KEY (bot, update_id));
""",
            postgres="""
CREATE TABLE IF NOT EXISTS telegram_offsets (bot TEXT PRIMARY KEY, next_update BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS telegram_inbox (bot TEXT NOT NULL, update_id BIGINT NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (bot, update_id));
CREATE TABLE IF NOT EXISTS telegram_unanswered (bot TEXT NOT NULL, update_id BIGINT NOT NULL,
    chat_id BIGINT NOT NULL, boot TEXT NOT NULL, preview TEXT NOT NULL, PRIMARY KEY (bot, update_id));
""",
        ),
        IDEMPOTENCY_KEYS,  # version 2: the chat route's Idempotency-Key (`_idempotency`)
    ),
)
#: The PostgreSQL channel a stored webhook update is announced on (its payload: the bot).
WEBHOOK_CHANNEL: Final = "beamclaw_telegram"


def _advance(tx: Tx, bot: str, next_update: int) -> None:
    """Move *bot*'s offset to *next_update*, never back."""
    tx.execute(
        "INSERT INTO telegram_offsets (bot, next_update) VALUES (?, ?) ON CONFLICT (bot) DO UPDATE SET next_update = "
        "CASE WHEN excluded.next_update > telegram_offsets.next_update THEN excluded.next_update "
        "ELSE telegram_offsets.next_update END",
        (bot, next_update),
    )


def _offset(tx: Tx, bot: str) -> int:
    row = tx.execute("SELECT next_update FROM telegram_offsets WHERE bot = ?", (bot,)).fetchone()
    return int(row[0]) if row else 0


def _take_in(tx: Tx, bot: str, updates: list[tuple[int, str]]) -> int:
    """Store the updates at or past the stored offset (one below it was had, and maybe
    acted on already, by this node or the poller before it) and move the offset past
    them; the offset now."""
    offset = _offset(tx, bot)
    fresh = [(bot, update_id, body) for update_id, body in updates if update_id >= offset]
    if not fresh:
        return offset
    tx.executemany(
        "INSERT INTO telegram_inbox (bot, update_id, body) VALUES (?, ?, ?) ON CONFLICT (bot, update_id) DO NOTHING",
        fresh,
    )
    offset = max(update_id for _, update_id, _ in fresh) + 1
    _advance(tx, bot, offset)
    return offset


def _store_pushed(tx: Tx, bot: str, update_id: int, body: str) -> None:
    if update_id < _offset(tx, bot):
        return  # had already: Telegram sent it again
    _take_in(tx, bot, [(update_id, body)])
    notify(tx, WEBHOOK_CHANNEL, bot)  # the node that acts on webhook updates may be another one


async def store_pushed(db: Database, bot: str, update: dict[str, Any]) -> None:
    """Store an update a webhook received in *bot*'s inbox (unless it was had before),
    durably, before the webhook answers: a crash after the answer cannot lose it."""
    update_id, body = int(update["update_id"]), json.dumps(update)
    await db.run(lambda tx: _store_pushed(tx, bot, update_id, body))


@attrs.frozen
class Pending:
    """An update acted on but not yet answered; the turn's channel clears it when done.

    It holds the gateway's `Database`, not the channel: the turn outlives the poller that
    took the update.
    """

    db: Database = attrs.field(eq=False)
    bot: str
    update_id: int

    async def answered(self) -> None:
        """Clear the row: the user has the answer. If the store cannot be reached the row
        stays, and the next start tells the user the message may have gone unanswered."""
        bot, update_id = self.bot, self.update_id
        try:
            await self.db.run(
                lambda tx: tx.execute(
                    "DELETE FROM telegram_unanswered WHERE bot = ? AND update_id = ?", (bot, update_id)
                )
            )
        except StoreError as exc:
            logger.warning("Telegram update {} was answered, but its ledger row stays: {}", update_id, exc)


@attrs.frozen
class Unanswered:
    """An update a run that is gone acted on and never answered."""

    pending: Pending
    chat_id: int
    preview: str
    #: The run that claimed it (see `Ledger.boot`).
    claimer: str


@attrs.define
class Ledger:
    """One bot's offset, inbox and unanswered updates, as the channel process sees them."""

    db: Database
    bot: str
    #: Who claims updates: this run of the daemon on one node; in a cluster (*members*
    #: True), this node's membership's instance id, so that rows of a member that is not
    #: alive can be told apart from a live node's turns still running.
    boot: str
    members: bool = False
    next_update: int = 0
    #: In a cluster, the bot's lease this node holds: every update stored is stored under it.
    lease: PollerLease | None = None

    @classmethod
    async def open(cls, db: Database, bot: str, boot: str, *, members: bool = False) -> Ledger:
        return cls(db, bot, boot, members, await db.run(lambda tx: _offset(tx, bot), write=False, inline=True))

    async def reopen(self, lease: PollerLease) -> None:
        """This node took the bot's lease: poll on from the stored offset, under *lease*."""
        bot = self.bot
        self.boot, self.lease = lease.instance_id, lease
        self.next_update = await self.db.run(lambda tx: _offset(tx, bot), write=False, inline=True)

    async def receive(self, updates: Any) -> int:
        """Store the updates not seen before and move the offset past them; how many were new.

        Ids below the offset are skipped, so an update Telegram sends again is never
        handled twice. In a cluster, nothing is stored unless this node still holds the
        bot's lease (`cluster.LeaseLost`).
        """
        fresh = [
            (u["update_id"], json.dumps(u))
            for u in (updates if isinstance(updates, list) else [])
            if isinstance(u, dict) and type(u.get("update_id")) is int and u["update_id"] >= self.next_update
        ]
        if not fresh:
            return 0
        bot, lease = self.bot, self.lease

        def take_in(tx: Tx) -> int:
            if lease is not None:
                hold(tx, lease)
            return _take_in(tx, bot, fresh)

        self.next_update = await self.db.run(take_in)
        return len(fresh)

    async def inbox(self) -> list[dict[str, Any]]:
        """The stored updates not yet acted on, oldest first."""
        bot = self.bot
        rows = await self.db.run(
            lambda tx: tx.execute(
                "SELECT body FROM telegram_inbox WHERE bot = ? ORDER BY update_id", (bot,)
            ).fetchall(),
            write=False,
            inline=True,
        )
        return [json.loads(body) for (body,) in rows]

    def _claim(self, tx: Tx, update_id: int, chat_id: int | None, preview: str) -> bool:
        found = tx.execute("DELETE FROM telegram_inbox WHERE bot = ? AND update_id = ?", (self.bot, update_id))
        taken = found.rowcount > 0
        if taken and chat_id is not None:
            tx.execute(
                "INSERT INTO telegram_unanswered (bot, update_id, chat_id, boot, preview) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (bot, update_id) DO UPDATE SET chat_id = excluded.chat_id, boot = excluded.boot, "
                "preview = excluded.preview",
                (self.bot, update_id, chat_id, self.boot, preview),
            )
        return taken

    async def claim(self, update_id: int, chat_id: int | None, preview: str = "") -> Pending | None:
        """Take the update out of the inbox; with a *chat_id*, as owing that chat an answer.

        The `Pending` row when this claim took the update owing *chat_id* an answer; None
        when it owes nothing (*chat_id* None) or the update was not in the inbox any more
        (taken by another claim: act on nothing, or it would be answered twice). Whole or
        absent: one transaction (the caller shields it). A NUL in *preview* (PostgreSQL's
        text refuses it) is stored as U+FFFD: the preview is only ever shown.
        """
        shown = preview.replace("\x00", "\ufffd")
        taken = await self.db.run(lambda tx: self._claim(tx, update_id, chat_id, shown))
        return Pending(self.db, self.bot, update_id) if taken and chat_id is not None else None

    async def orphaned(self) -> list[Unanswered]:
        """Updates acted on and never answered by a run that is gone (its turn died with
        it): an earlier boot on one node; in a cluster, a member that is not alive (a live
        node's turns are its own to answer)."""
        bot, boot = self.bot, self.boot
        gone = (
            f"NOT EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.instance_id = u.boot AND {cluster.ALIVE})"
            if self.members
            else "1 = 1"
        )
        rows = await self.db.run(
            lambda tx: tx.execute(
                "SELECT u.update_id, u.chat_id, u.preview, u.boot FROM telegram_unanswered u "
                f"WHERE u.bot = ? AND u.boot <> ? AND {gone} ORDER BY u.update_id",
                (bot, boot),
            ).fetchall(),
            write=False,
            inline=True,
        )
        return [Unanswered(Pending(self.db, bot, u), chat, preview, claimer) for u, chat, preview, claimer in rows]

    async def adopt(self, item: Unanswered) -> bool:
        """Make *item* this run's to tell the user about; False when another node did
        first (it tells them: a user is told once)."""
        return await self._move(item, item.claimer, self.boot)

    async def give_back(self, item: Unanswered) -> None:
        """The user could not be told now: leave *item* to the next look at the ledger."""
        await self._move(item, self.boot, item.claimer)

    async def _move(self, item: Unanswered, claimer: str, to: str) -> bool:
        bot, update_id = self.bot, item.pending.update_id
        moved = await self.db.run(
            lambda tx: (
                tx.execute(
                    "UPDATE telegram_unanswered SET boot = ? WHERE bot = ? AND update_id = ? AND boot = ?",
                    (to, bot, update_id, claimer),
                ).rowcount
            )
        )
        return bool(moved == 1)
