"""One line of `beamclaw doctor`'s report: what was found, and how to fix it."""

from __future__ import annotations

import attrs


@attrs.frozen
class Check:
    status: str  # ok | warn | fail
    what: str
    fix: str = ""
