"""Whose claims a job store makes, and when another owner's runs are over.

Every run row names the owner that claimed it. On one node the owner is this start of
the job store: the runs of an earlier start (the daemon stopped or was killed while
they ran) are over as soon as the store starts again, as they always were. In a
cluster the owner is the node's membership (`beamclaw_cluster.Membership`): a run is
over when its owner is no longer a live member of the registry, by the database's
clock, whichever node looks; the runs of a live node are never touched, however long
they take (GoClaw's mistake was to reset every running job at a node's start).
"""

from __future__ import annotations

import uuid

import attrs

from beamclaw_cluster import ALIVE


@attrs.frozen
class Owner:
    """The owner this store claims as: *id* in the run rows; *cluster* when liveness is
    the node registry's (``cluster_nodes``), not this store's own start."""

    id: str = attrs.field(factory=lambda: uuid.uuid4().hex)
    cluster: bool = False

    def alive(self, column: str) -> tuple[str, tuple[str, ...]]:
        """A SQL condition, and its parameters, true when the owner named in *column* is
        alive (a run without an owner was claimed before owners were recorded: over)."""
        if self.cluster:
            return f"EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.instance_id = {column} AND {ALIVE})", ()
        return f"coalesce({column}, '') = ?", (self.id,)

    def acting(self) -> tuple[str, tuple[str, ...]]:
        """A SQL condition true while this owner may still claim, start and finish runs:
        in a cluster, while the registry holds it alive (checked in the same transaction,
        so a node taken for dead starts and finishes nothing more)."""
        if self.cluster:
            return f"EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.instance_id = ? AND {ALIVE})", (self.id,)
        return "1 = 1", ()
