"""The A2A app's tree: the task manager, then the supervisor of the tasks' workers; on
PostgreSQL also the listener of the other nodes' changes to tasks and the recovery of
the tasks of nodes that died."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import supervision as sv
from beamclaw_base import StoreConfig, listener

from ._config import parse_a2a_config
from ._tasks import CHANNEL, TaskManager, fail_interrupted
from ._worker import WORKERS

#: The default store: SQLite files in the data dir.
_IN_DATA_DIR: Final = StoreConfig()


def supervision_tree(table: dict[str, Any], data_dir: Path, store: StoreConfig = _IN_DATA_DIR) -> sv.Supervisor:
    """The app's tree; its tasks are kept in *store* (SQLite: ``a2a.db`` in *data_dir*)."""
    config = parse_a2a_config(table)  # a bad table stops the daemon at start, naming the key
    shared = []
    if store.backend == "postgres":  # other nodes may change the tasks, and die with some running
        shared = [
            sv.ChildSpec("listener", listener, args=(store, [CHANNEL])),
            sv.ChildSpec("recovery", fail_interrupted),
        ]
    return sv.Supervisor(
        [
            sv.ChildSpec("tasks", TaskManager.start, args=(data_dir / "a2a.db", config, store)),
            sv.DynamicSupervisor(intensity=50, period=10.0, name=WORKERS).child_spec("workers"),
            *shared,  # last: a restart of theirs touches no running task
        ],
        strategy=sv.REST_FOR_ONE,
        # Tasks are persisted by the task manager, so a restart of it (and of the
        # workers after it) loses nothing; absorb many before escalating.
        intensity=10,
        period=10.0,
        name="beamclaw_a2a",
    )
