"""Wake-ups through the shared database: PostgreSQL's LISTEN/NOTIFY, fanned out to processes.

A writer calls `notify` inside its transaction; PostgreSQL delivers the notification to
every node's `listener` when (and only if) the transaction commits. The listener sends a
`Notified` message to every process of the channel's group (`notify_group`). A
notification is not durable: one sent while a listener was disconnected is lost, so
after every (re)connection the listener sends ``Notified(channel, None)``, and the
receiver reads the state again from the tables. Payloads are ids, never data (and under
8,000 bytes, PostgreSQL's limit).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Final

import attrs
import trio
from loguru import logger

import supervision as sv

from ._store import StoreConfig, Tx


@attrs.frozen
class Notified:
    """*channel* was notified with *payload*; None: the listener (re)connected, and what
    was notified meanwhile is unknown (read the state again)."""

    channel: str
    payload: str | None


def notify_group(channel: str) -> tuple[str, str]:
    """The process group whose members receive *channel*'s `Notified` messages."""
    return ("beamclaw.notify", channel)


def notify(tx: Tx, channel: str, payload: str = "") -> None:
    """Wake every node's listeners of *channel* when *tx* commits (nothing on SQLite, one node)."""
    if tx.dialect == "postgres":
        tx.execute("SELECT pg_notify(?, ?)", (channel, payload))


_POLL: Final = 1.0
_BACKOFF_MAX: Final = 5.0


def _deliver(channel: str, payload: str | None) -> None:
    for pid in sv.pg.members(notify_group(channel)):
        try:
            sv.send(pid, Notified(channel, payload))
        except sv.MailboxFull:  # a receiver that is behind reads the state at its next wake-up
            logger.debug("a notification of {} was dropped: a mailbox is full", channel)


def _listen(dsn: str, channels: Sequence[str], token: trio.lowlevel.TrioToken, stop: threading.Event) -> None:
    import psycopg  # noqa: PLC0415 - PostgreSQL only

    backoff = 0.1
    while not stop.is_set():
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as connection:
                for channel in channels:
                    connection.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(channel)))
                backoff = 0.1
                for channel in channels:
                    trio.from_thread.run_sync(_deliver, channel, None, trio_token=token)
                while not stop.is_set():
                    for note in connection.notifies(timeout=_POLL):
                        trio.from_thread.run_sync(_deliver, note.channel, note.payload, trio_token=token)
        except psycopg.Error as exc:
            logger.warning("store listener: {}; connecting again in {:.1f} s", exc, backoff)
            stop.wait(backoff)
            backoff = min(backoff * 2, _BACKOFF_MAX)
        except trio.RunFinishedError:
            return


async def listener(config: StoreConfig, channels: Sequence[str], task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """A process: LISTEN on *channels* of *config*'s PostgreSQL database, for as long as it runs."""
    if config.backend != "postgres" or config.dsn is None:
        raise ValueError("the store listener needs PostgreSQL")
    dsn = config.dsn.get("the store listener")
    stop = threading.Event()
    task_status.started()
    try:
        await trio.to_thread.run_sync(
            _listen, dsn, tuple(channels), trio.lowlevel.current_trio_token(), stop, abandon_on_cancel=True
        )
    finally:
        stop.set()  # the thread sees it within a second and closes its connection
