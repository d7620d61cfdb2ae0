"""`beamclaw pair [list]`, `pair CHANNEL CODE [--agent NAME]`, `pair revoke CHANNEL ID`,
`pair link CHANNEL ID USER`, `pair unlink CHANNEL ID`.

Owner-only as the other pairing commands: they open the session store itself (SQLite:
a file only the data dir's owner can open, 0600 in a 0700 directory), each change in one
transaction, daemon running or not; the daemon reads a link again at each message."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

import attrs

import beamclaw

if TYPE_CHECKING:
    from beamclaw_base import Database

from ._help import Commands, add_command
from ._listing import Column, add_json_option, print_json, print_table
from ._store_config import add_config_option, store_of
from ._terminal_safe import visible


def _db(args: argparse.Namespace) -> Database:
    import beamclaw_core as core

    return core.open_session_store(store_of(args), beamclaw.data_dir(create=True))


def _list(db: Database, as_json: bool) -> None:
    """The pending codes and the paired users. A user id and a display name are a stranger's
    own (a Telegram name): the table writes their controls out, never obeys them."""
    import beamclaw_core as core

    now = time.time()
    codes, users = db.transact(lambda tx: (core.pending(tx), core.paired(tx)), write=False)
    if as_json:
        print_json({"pending": [attrs.asdict(c) for c in codes], "paired": [attrs.asdict(u) for u in users]})
        return
    print("pending:" if codes else "no pending pairing requests")
    if codes:
        print_table(
            [Column("CHANNEL", whole=True), Column("CODE", whole=True), Column("USER", whole=True), Column("NAME"),
             Column("LEFT", right=True)],
            [(c.channel, c.code, c.user_id, c.display, f"{max(0, int((c.created_at + 3600 - now) // 60))} min")
             for c in codes],
        )  # fmt: skip
    print("paired:" if users else "nobody paired yet")
    if users:
        print_table(
            [Column("CHANNEL", whole=True), Column("USER", whole=True), Column("SPEAKS AS", whole=True),
             Column("AGENT", whole=True)],
            [(u.channel, u.user_id, u.linked_user or "", u.agent_id) for u in users],
        )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    import beamclaw_core as core

    words = args.words
    try:
        db = _db(args)
    except core.StoreError as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 1
    try:
        if not words or words == ["list"]:
            _list(db, as_json=args.json)
            return 0
        if words[0] == "revoke" and len(words) == 3:
            removed = db.transact(lambda tx: core.revoke(tx, words[1], words[2]))
            print(f"revoked {words[2]} on {words[1]}" if removed else f"{words[2]} was not paired on {words[1]}")
            return 0 if removed else 1
        if words[0] == "link" and len(words) == 4:
            linked_user = core.check_user_id(words[3])
            db.transact(lambda tx: core.link(tx, words[1], words[2], linked_user))
            print(visible(f"{words[2]} on {words[1]} now speaks as {words[3]}"))
            return 0
        if words[0] == "unlink" and len(words) == 3:
            unlinked = db.transact(lambda tx: core.unlink(tx, words[1], words[2]))
            said = f"{words[2]} on {words[1]} speaks as themselves" if unlinked else f"{words[2]} was not linked"
            print(visible(said))
            return 0 if unlinked else 1
        if len(words) == 2:
            agent = core.check_agent_exists(beamclaw.data_dir(), args.agent, core.CoreConfig().default_agent)
            user = db.transact(lambda tx: core.approve(tx, words[0], words[1], agent))
            print(visible(f"paired {user} on {words[0]} with agent {agent}"))
            return 0
    except (core.PairingError, core.InvalidAgentName, core.InvalidUserId, core.StoreError) as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 1
    finally:
        db.close()
    print("usage: beamclaw pair [list] | pair CHANNEL CODE [--agent NAME] | pair revoke CHANNEL USER_ID"
          " | pair link CHANNEL USER_ID USER | pair unlink CHANNEL USER_ID")  # fmt: skip
    return 2


def add_parser(commands: Commands) -> None:
    parser = add_command(
        commands,
        "pair",
        "approve, list or revoke chat users (pairing codes)",
        "A stranger who writes to the Telegram bot gets a pairing code; nothing reaches an agent "
        "until you approve the code here. Without words, list the pending codes and paired users. "
        "`link` makes a paired user speak as another user (your terminal's), so both continue one "
        "conversation; `unlink` undoes it.",
        ["beamclaw pair", "beamclaw pair telegram K7M2PQ9X --agent ops", "beamclaw pair revoke telegram tg:42",
         "beamclaw pair link telegram telegram:42 local:ada"],
    )  # fmt: skip
    parser.add_argument(
        "words", nargs="*", metavar="list | CHANNEL CODE | revoke CHANNEL USER_ID | link CHANNEL USER_ID USER"
    )
    parser.add_argument("--agent", default="default", help="the agent a newly paired user talks to")
    add_json_option(parser)
    add_config_option(parser)
