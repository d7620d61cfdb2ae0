"""The scheduler app's tree.

    beamclaw_scheduler (one_for_one)
    ├── store     (GenServer): jobs and the run log (scheduler.db, or PostgreSQL)
    ├── jobs      (DynamicSupervisor): one temporary worker per run in progress
    ├── executor  (GenServer): starts the workers, at most max_concurrent_runs at once
    ├── runner    (process): timers only; claims what is due and pokes the executor
    ├── tools     the agent's scheduler tool, registered while the app runs
    └── listener  (PostgreSQL only): wakes the runner when any node adds or resumes a job

one_for_one: each keeps its state in the store, so each restarts alone. The runner and
the executor ride through a restart of the store (their calls wait for it).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any, Final

import supervision as sv
from beamclaw_base import StoreConfig, listener
from beamclaw_core import CoreConfig
from beamclaw_tools import keep_registered

from ._config import SchedulerConfig, parse_scheduler_config
from ._executor import JOBS_SUP, Executor, Perform
from ._jobs import WAKE_CHANNEL, Clock
from ._runner import heartbeat_plan, runner
from ._store import EXECUTOR, STORE, JobStore
from ._tool import SchedulerTool
from ._turns import JobTurns

#: Where the jobs are unless the release says otherwise: scheduler.db in the data dir.
_IN_DATA_DIR: Final = StoreConfig()


def scheduler_tree(
    config: SchedulerConfig,
    path: Path | None,
    perform: Perform,
    clock: Clock,
    plan: Any,
    *,
    store: StoreConfig = _IN_DATA_DIR,
) -> sv.Supervisor:
    """The tree from its parts (tests give a MockClock's clock and their own *perform*);
    the jobs are in *path* (SQLite) unless *store* says PostgreSQL."""
    children = [
        sv.ChildSpec("store", JobStore.start, args=(path, config, clock, store), name=STORE),
        sv.DynamicSupervisor(intensity=1000, period=1.0, name=JOBS_SUP).child_spec("jobs"),
        sv.ChildSpec("executor", Executor.start, args=(perform, config.max_concurrent_runs), name=EXECUTOR),
        sv.ChildSpec("runner", runner, args=(clock, plan), backoff=sv.Backoff(initial=0.1, maximum=5.0)),
        keep_registered("tools", [SchedulerTool(clock, config.min_interval_seconds)]),
    ]
    if store.backend == "postgres":
        wake = sv.ChildSpec("listener", listener, args=(store, [WAKE_CHANNEL]), backoff=sv.Backoff(maximum=5.0))
        children.append(wake)
    return sv.Supervisor(
        children,
        intensity=10,
        period=10.0,
        name="beamclaw_scheduler",
    )


def supervision_tree(
    table: dict[str, Any],
    data_dir: Path,
    store: StoreConfig = _IN_DATA_DIR,
) -> sv.Supervisor:
    config = parse_scheduler_config(table)
    default_agent = CoreConfig().default_agent
    plan = functools.partial(heartbeat_plan, config.heartbeat, data_dir, default_agent)
    perform = JobTurns(config, data_dir, time.time)
    return scheduler_tree(config, data_dir / "scheduler.db", perform, time.time, plan, store=store)
