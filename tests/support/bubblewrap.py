"""Whether real bubblewrap can jail commands here, for tests that need it (they skip, saying why, when not)."""

from __future__ import annotations

import functools

import pytest
import trio

from beamclaw_sandbox import BubblewrapJail, parse_sandbox_config


@functools.cache
def bubblewrap_problem() -> str | None:
    """None when `BubblewrapJail` works on this machine; else its own account of why not."""
    return trio.run(BubblewrapJail(parse_sandbox_config({})).check)


def requires_bubblewrap() -> pytest.MarkDecorator:
    problem = bubblewrap_problem()
    return pytest.mark.skipif(problem is not None, reason=f"bubblewrap cannot jail commands here: {problem}")
