"""The core app's tree."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import supervision as sv
from beamclaw_base import StoreConfig
from beamclaw_tools import keep_registered

from ._cleaner import cleaner
from ._config import SkillConfig, parse_core_config
from ._http_client import HttpClientOwner
from ._idle_sleep import sleeper
from ._maintenance import maintenance
from ._runtime import HTTP_CLIENT, Runtime
from ._sessions import SESSIONS_SUP, SessionsManager, running_trees, stop_tree
from ._skill_catalog import ReadSkillTool, SkillsCatalog, SkillSearchTool, watch_skills
from ._skill_run import RunSkillTool
from ._store import Store
from ._workspace_tool import WorkspaceMemoryTool

#: The default store: SQLite files in the data dir.
_IN_DATA_DIR: Final = StoreConfig()


def supervision_tree(
    table: dict[str, Any], data_dir: Path, clock: Callable[[], float] = time.time, store: StoreConfig = _IN_DATA_DIR
) -> sv.Supervisor:
    """store, the shared HTTP client, the sessions' dynamic supervisor, the sessions
    process, the sleeper (idle conversations stop, see `_idle_sleep`), the skills catalog
    and its watcher, core's own tools, the cleaner and maintenance (see `_maintenance`);
    *clock* is the wall clock the last two go by, *store* where the conversations are kept
    (``[store]``; SQLite in *data_dir* by default).

    rest_for_one: if the store restarts, everything after it restarts too, so no session
    keeps running on top of a store it no longer matches. What the sessions use but can
    do without for a moment (skills, the cleaner, maintenance) comes after them.
    """
    config = parse_core_config(table)
    runtime = Runtime(config, data_dir, sv.Registry(sv.UNIQUE, name="sessions"))

    def single_user(agent_id: str) -> bool:
        return runtime.config.single_user(agent_id)  # the config of now: a reload replaces it

    def skill_settings(name: str) -> SkillConfig:
        return runtime.config.skills.get(name, SkillConfig())

    bundled = Path(config.bundled_skills_dir) if config.bundled_skills_dir else None
    watched = (*([bundled] if bundled and bundled.is_dir() else []), data_dir / "skills", data_dir / "agents")
    return sv.Supervisor(
        [
            sv.ChildSpec("store", Store.start, args=(store, data_dir), backoff=sv.Backoff(initial=0.05, maximum=2.0)),
            sv.ChildSpec("http", HttpClientOwner.start, args=(HTTP_CLIENT,)),
            sv.DynamicSupervisor(intensity=20, period=10.0, name=SESSIONS_SUP).child_spec("sessions_sup"),
            sv.ChildSpec("sessions", SessionsManager.start, args=(runtime,)),
            sv.ChildSpec("sleeper", sleeper, args=(runtime, running_trees, stop_tree)),
            sv.ChildSpec("skills", SkillsCatalog.start, args=(bundled, data_dir, skill_settings)),
            sv.ChildSpec("skills_watcher", watch_skills, args=(watched, config.skills_watch_debounce_ms)),
            keep_registered(
                "tools",
                [WorkspaceMemoryTool(single_user), SkillSearchTool(), ReadSkillTool(), RunSkillTool(skill_settings)],
            ),
            sv.ChildSpec("cleaner", cleaner, args=(config.cleanup_interval_seconds, clock)),
            sv.ChildSpec("maintenance", maintenance, args=(runtime, clock)),
        ],
        strategy=sv.REST_FOR_ONE,
        # Each child restarts in milliseconds and loses nothing (history is in the store),
        # so many restarts are absorbed here; past 20 in 10 s the fault is likely above
        # them and the whole app is restarted by the root.
        intensity=20,
        period=10.0,
        name="beamclaw_core",
    )
