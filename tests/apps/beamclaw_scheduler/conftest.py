"""The scheduler's tree on Trio's MockClock: wall time follows the virtual clock, and a
scripted *perform* stands in for the agent's turn (the real turn is tested end to end
on a daemon, in tests/beamclaw/test_scheduler_daemon.py)."""

from __future__ import annotations

import contextlib
import datetime as dt
import zoneinfo
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import attrs
import trio

import supervision as sv
from beamclaw_base import StoreConfig
from beamclaw_scheduler import Fire, SchedulerConfig, scheduler_tree
from beamclaw_tools import supervision_tree as tools_tree

PARIS = zoneinfo.ZoneInfo("Europe/Paris")


def at(*fields: int, zone: dt.tzinfo = PARIS) -> float:
    return dt.datetime(*fields, tzinfo=zone).timestamp()  # type: ignore[misc]


@attrs.define
class Script:
    """Records every fire at the (virtual) wall time it ran; answers with *outcome*."""

    clock: Callable[[], float]
    outcome: Callable[[Fire], tuple[str, str]] = lambda fire: ("ok", "done")
    fires: list[tuple[float, Fire]] = attrs.field(factory=list)

    async def __call__(self, fire: Fire) -> tuple[str, str]:
        self.fires.append((self.clock(), fire))
        return self.outcome(fire)

    def dues(self, job_id: str | None = None) -> list[float]:
        return [fire.due for _, fire in self.fires if job_id is None or fire.job.id == job_id]


def virtual_clock(start: float) -> Callable[[], float]:
    """Wall time that starts at *start* and moves with Trio's (mock) clock."""
    origin = trio.current_time()
    return lambda: start + (trio.current_time() - origin)


@contextlib.asynccontextmanager
async def running_scheduler(
    tmp_path: Path,
    script: Script,
    clock: Callable[[], float],
    plan: dict[str, float] | None = None,
    store: StoreConfig = StoreConfig(),  # noqa: B008 - frozen, never changed
    **config: Any,
) -> AsyncIterator[None]:
    settings = SchedulerConfig(**config)
    tree = scheduler_tree(settings, tmp_path / "scheduler.db", script, clock, lambda: dict(plan or {}), store=store)
    root = sv.Supervisor(
        [tools_tree({}, tmp_path).child_spec("tools"), tree.child_spec("scheduler")], name="test_root", intensity=50
    )
    async with sv.open_supervisor(root):
        yield
