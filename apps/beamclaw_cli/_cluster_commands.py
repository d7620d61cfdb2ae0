"""`beamclaw cluster status` and `beamclaw tree --cluster`: the cluster as its database
sees it, from any machine that reaches it.

No daemon is needed: the members, their heartbeats, what each owns and who holds each
named lease are rows in PostgreSQL, read in one snapshot. Every node's tree is then
asked of each live node's gateway at its advertised URL, with the configured gateway
token (``[gateway.http] token``) when its variable is set.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, Final

import attrs

import beamclaw

if TYPE_CHECKING:
    import beamclaw_cluster as cluster
    from beamclaw_base import StoreConfig

from ._help import Commands, Help, add_group
from ._listing import Column, add_json_option, print_json, print_table, wants_json
from ._store_config import add_config_option, store_of
from ._terminal_safe import as_text, console
from ._tree_view import render

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


def _status(store: StoreConfig) -> cluster.ClusterStatus | None:
    """The cluster as *store* holds it (blocks); None, said on stderr, if it cannot be read."""
    import beamclaw_cluster as cluster
    from beamclaw_base import StoreError, open_store

    if store.backend != "postgres":
        print("beamclaw: no cluster: this configuration keeps its data in SQLite "
              '([store] backend = "postgres" for one)', file=sys.stderr)  # fmt: skip
        return None
    try:
        database = open_store(store, cluster.SCHEMA, sqlite_file=None)
        try:
            return database.transact(cluster.cluster_status, write=False)
        finally:
            database.close()
    except StoreError as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return None


def _token_headers(config: dict[str, Any]) -> dict[str, str]:
    """The configured gateway token as an Authorization header, when its variable is set."""
    import beamclaw_gateway as gateway

    token = gateway.parse_gateway_config(config.get("gateway", {})).http.token
    value = None if token is None else token.get_optional()
    return {} if value is None else {"Authorization": f"Bearer {value}"}


async def cluster_tree(args: argparse.Namespace) -> int:
    """`beamclaw tree --cluster`: every node's tree, one after another; a dead or
    unreachable node is shown as such (and makes the exit status 1)."""
    import trio

    import beamclaw_gateway as gateway

    if args.watch:
        print("beamclaw: --watch redraws one daemon's tree; leave out --cluster for it", file=sys.stderr)
        return 2
    config = beamclaw.load_config(args.config)
    status = await trio.to_thread.run_sync(_status, beamclaw.store_config(config))
    if status is None:
        return 1
    headers = _token_headers(config)
    entries = await gateway.node_trees(status.nodes, lambda: headers)
    if args.json:
        print(json.dumps(entries, indent=2))
    else:
        _draw(entries)
    return 0 if all(entry["tree"] is not None for entry in entries) else 1


def _draw(entries: list[dict[str, Any]]) -> None:
    if not entries:
        print("no nodes: none has joined this database's cluster")
    out = console()
    for entry in entries:
        where = f"node {entry['node_id']} at {entry['url']}"
        if entry["tree"] is None:
            out.print(as_text(f"{where}: {entry['state']} ({entry['error']})", style="red"))
        else:
            out.print(as_text(f"{where}: alive"))
            out.print(render(entry["tree"]))
        out.print()


def run(args: argparse.Namespace) -> int:
    status = _status(store_of(args))
    if status is None:
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
