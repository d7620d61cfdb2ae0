"""One line of `beamclaw doctor`'s report: the daemon's checks and the CLI's share it."""

from beamclaw_control import Check

__all__ = ["Check"]
