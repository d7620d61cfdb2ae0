"""What the apps' routes need of the daemon's configuration: the default agent, memory's
default number of hits, where the session store is.

Asked of the daemon's host process (`HOST`), which holds the configuration the daemon
runs with; an app served without the daemon (the apps' own tests) has no host, and
then the apps' defaults hold, the SQLite store in the data dir and the gateway's
``default_agent``.
"""

from __future__ import annotations

from typing import Any

import beamclaw_core as core
import beamclaw_memory as memory
import supervision as sv
from beamclaw_base import StoreConfig, structure_config
from beamclaw_gateway import context

from ._host import HOST, ShowConfig


async def _config() -> dict[str, Any] | None:
    """The daemon's configuration, or None when no host runs."""
    try:
        shown = await sv.call(HOST, ShowConfig(), timeout=5.0)
    except sv.NoProc:
        return None
    config: dict[str, Any] = shown["config"]
    return config


async def default_agent() -> str:
    """``[core] default_agent``: the agent made on first use, which needs no folder yet."""
    config = await _config()
    if config is None:
        return context().config.default_agent
    return core.parse_core_config(config.get("core", {})).default_agent


async def search_limit() -> int:
    """``[memory.search] default_limit``: the hits a search that names no limit returns."""
    config = await _config()
    table = {} if config is None else config.get("memory", {})
    return memory.parse_memory_config(table).search.default_limit


async def session_store() -> StoreConfig:
    """``[store]``: where the session store is (SQLite in the data dir when absent)."""
    config = await _config()
    return structure_config((config or {}).get("store", {}), StoreConfig, "store")
