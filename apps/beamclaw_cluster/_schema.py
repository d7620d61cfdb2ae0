"""The cluster's tables: the nodes, who owns each conversation, and the named leases.

PostgreSQL only (a cluster refuses to start on SQLite), and logged tables on purpose: a
lease table emptied by crash recovery would restart epochs at 1 and let a node that was
cut off write again with an old epoch that matches.
"""

from __future__ import annotations

from typing import Final

from beamclaw_base import Schema, Step

_V1: Final = """
CREATE TABLE cluster_nodes (
    instance_id TEXT PRIMARY KEY,
    node_id TEXT NOT NULL,
    advertise_url TEXT NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    stopped_at timestamptz
);
CREATE TABLE conversation_leases (
    session_id TEXT PRIMARY KEY,
    owner TEXT REFERENCES cluster_nodes(instance_id) ON DELETE SET NULL,
    epoch BIGINT NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversation_leases_owner ON conversation_leases(owner);
CREATE TABLE named_leases (
    name TEXT PRIMARY KEY,
    owner TEXT,
    epoch BIGINT NOT NULL,
    expires_at timestamptz NOT NULL
);
"""

SCHEMA: Final = Schema("cluster", (Step(sqlite="", postgres=_V1),))
