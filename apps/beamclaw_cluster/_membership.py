"""This node's membership: who it is in the registry, the database it shares, and until
when it may act as a member."""

from __future__ import annotations

import math

import attrs
import trio

from beamclaw_base import Database


@attrs.define(eq=False)
class Membership:
    """One start of this node as a member of the cluster.

    The node process renews it; every process of the node may read it (a Trio task of the
    same process group, as an ETS table would be read in OTP). A membership is never
    revived: when the cluster took this node for dead, the node registers again as a new
    member with a new *instance_id*, and whatever held the old one (a conversation's
    lease) finds it over.
    """

    instance_id: str
    node_id: str
    advertise_url: str
    lease_seconds: float
    database: Database
    #: The secret the nodes sign forwarded requests with (`signed_headers`).
    secret: str = attrs.field(repr=False)
    #: Trio's clock time until which this member is surely still alive in the registry
    #: (the database's answer, minus a margin); past it the member acts no more.
    valid_until: float = -math.inf

    def alive(self) -> bool:
        """Whether this member may still act (write, poll, call a model for the cluster)."""
        return trio.current_time() < self.valid_until

    def renewed(self, seconds_left: float) -> None:
        """The registry keeps this member alive *seconds_left* more; trust a third less."""
        self.valid_until = trio.current_time() + seconds_left * 2 / 3

    def over(self) -> None:
        """The cluster took this member for dead: it acts no more."""
        self.valid_until = -math.inf
