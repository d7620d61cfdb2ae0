"""The core app's tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import supervision as sv

from ._cleaner import cleaner
from ._config import parse_core_config
from ._runtime import HttpClientOwner, Runtime
from ._sessions import SESSIONS_SUP, SessionsManager
from ._store import Store


def supervision_tree(table: dict[str, Any], data_dir: Path) -> sv.Supervisor:
    """store, the shared HTTP client, then the sessions' dynamic supervisor, the sessions
    process and the cleaner.

    rest_for_one: if the store restarts, everything after it restarts too, so no session
    keeps running on top of a store it no longer matches.
    """
    config = parse_core_config(table)
    runtime = Runtime(config, data_dir, sv.Registry(sv.UNIQUE, name="sessions"))
    path = data_dir / "sessions.db"
    return sv.Supervisor(
        [
            sv.ChildSpec("store", Store.start, args=(path,)),
            sv.ChildSpec("http", HttpClientOwner.start),
            sv.DynamicSupervisor(intensity=20, period=10.0, name=SESSIONS_SUP).child_spec("sessions_sup"),
            sv.ChildSpec("sessions", SessionsManager.start, args=(runtime,)),
            sv.ChildSpec("cleaner", cleaner, args=(config.cleanup_interval_seconds,)),
        ],
        strategy=sv.REST_FOR_ONE,
        intensity=5,
        period=10.0,
        name="beamclaw_core",
    )
