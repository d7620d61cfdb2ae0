"""`beamclaw cluster status`: the cluster as its database sees it, from any machine that reaches it.

No daemon is needed: the members, their heartbeats, what each owns and who holds each
named lease are rows in PostgreSQL, read in one snapshot.
"""

from __future__ import annotations

import argparse
import sys
from typing import Final

import attrs

import beamclaw_cluster as cluster
from beamclaw_base import StoreError, open_store

from ._help import Commands, Help, add_group
from ._listing import Column, add_json_option, print_json, print_table, wants_json
from ._store_config import add_config_option, store_of

_HELP: Final = Help(
    "the cluster's nodes, their heartbeats, conversations owned and leases",
    "The nodes of the cluster this configuration's database holds (no daemon needed).",
    ["beamclaw cluster status", "beamclaw cluster status --json"],
)
_ACTIONS: Final = {
    "status": Help("nodes, heartbeats, conversations owned, named leases", "Show the cluster's nodes, how long "
                   "since each one's heartbeat, how many conversations each owns, and who holds each named "
                   "lease (a Telegram bot's poller).", ["beamclaw cluster status"]),
}  # fmt: skip


def add_parser(commands: Commands) -> None:
    for parser in add_group(commands, "cluster", _HELP, _ACTIONS).values():
        add_config_option(parser)
        add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    store = store_of(args)
    if store.backend != "postgres":
        print("beamclaw: no cluster: this configuration keeps its data in SQLite "
              '([store] backend = "postgres" for one)', file=sys.stderr)  # fmt: skip
        return 1
    try:
        database = open_store(store, cluster.SCHEMA, sqlite_file=None)
        try:
            status = database.transact(cluster.cluster_status, write=False)
        finally:
            database.close()
    except StoreError as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 1
    if wants_json(args):
        print_json(attrs.asdict(status))
        return 0
    if not status.nodes:
        print("no nodes: none has joined this database's cluster")
    else:
        print_table(
            [Column("NODE", whole=True), Column("INSTANCE", whole=True), Column("URL", whole=True),
             Column("STATE"), Column("HEARTBEAT", right=True), Column("CONVERSATIONS", right=True)],
            [(n.node_id, n.instance_id[:12], n.advertise_url, "alive" if n.alive else "dead",
              f"{n.heartbeat_age:.1f}s ago", n.conversations) for n in status.nodes],
        )  # fmt: skip
    if status.named_leases:
        print()
        print_table(
            [Column("LEASE", whole=True), Column("HOLDER", whole=True), Column("EPOCH", right=True),
             Column("EXPIRES", right=True)],
            [(lease.name, lease.node_id or "-", lease.epoch,
              f"in {lease.expires_in:.1f}s" if lease.expires_in > 0 else "expired") for lease in status.named_leases],
        )  # fmt: skip
    if status.orphaned:
        print(f"\n{status.orphaned} conversation(s) owned by dead nodes: taken over at their next message")
    return 0
