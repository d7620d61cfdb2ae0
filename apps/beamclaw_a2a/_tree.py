"""The A2A app's tree: the task manager, then the supervisor of the tasks' workers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import supervision as sv
from beamclaw_base import StoreConfig

from ._config import parse_a2a_config
from ._tasks import TaskManager
from ._worker import WORKERS

#: The default store: SQLite files in the data dir.
_IN_DATA_DIR: Final = StoreConfig()


def supervision_tree(table: dict[str, Any], data_dir: Path, store: StoreConfig = _IN_DATA_DIR) -> sv.Supervisor:
    """The app's tree; its tasks are kept in *store* (SQLite: ``a2a.db`` in *data_dir*)."""
    config = parse_a2a_config(table)  # a bad table stops the daemon at start, naming the key
    return sv.Supervisor(
        [
            sv.ChildSpec("tasks", TaskManager.start, args=(data_dir / "a2a.db", config, store)),
            sv.DynamicSupervisor(intensity=50, period=10.0, name=WORKERS).child_spec("workers"),
        ],
        strategy=sv.REST_FOR_ONE,
        # Tasks are persisted by the task manager, so a restart of it (and of the
        # workers after it) loses nothing; absorb many before escalating.
        intensity=10,
        period=10.0,
        name="beamclaw_a2a",
    )
