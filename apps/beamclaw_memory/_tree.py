"""The memory app's tree.

    beamclaw_memory (one_for_one)
    ├── embedder  (GenServer): the embedding model and the embedding cache
    ├── remembered (GenServer, PostgreSQL only): the one database of every agent's kept
    │             documents (on SQLite each agent has its own file)
    ├── listener  (process, PostgreSQL only): tells the indexes of the documents every node
    │             keeps, so that each node's index catches up with them
    ├── indexes   (DynamicSupervisor): one AgentIndex per agent in use (temporary)
    ├── agents    (GenServer): starts the indexes, one per agent
    ├── watcher   (process): picks up edits to the workspace files; restarts crashed indexes
    └── tools     memory_search and memory_get, registered while the app runs

one_for_one: an embedder crash leaves the indexes answering from keywords; an index
crash loses nothing (it is derived from the files and its own store, see `_index`).
With ``enabled = false`` the tree is empty, under the name `MEMORY_OFF`: no tools, and
core's calls are told so at once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import supervision as sv
from beamclaw_base import StoreConfig, listener
from beamclaw_tools import keep_registered

from ._agents import AGENTS, MEMORY_OFF, Agents
from ._config import MemoryConfig, parse_memory_config
from ._embedder import EMBEDDER, EmbedderServer
from ._index import INDEXES_SUP
from ._remembered import CHANNEL, SQLITE_FILES
from ._remembered_db import REMEMBERED_DB, RememberedDatabase
from ._tools import MemoryGetTool, MemorySearchTool
from ._watcher import watch


def memory_tree(
    config: MemoryConfig,
    data_dir: Path,
    clock: Any = time.time,
    store: StoreConfig = SQLITE_FILES,
) -> sv.Supervisor:
    """The tree; *store* says where the kept documents are (the derived indexes and the
    embedding cache are always SQLite files in *data_dir*)."""
    if not config.enabled:
        return sv.Supervisor([], name=MEMORY_OFF, intensity=10, period=10.0)
    # On PostgreSQL one database serves every agent's kept documents, and a listener
    # tells the indexes of the documents other nodes keep; on SQLite neither is needed.
    shared = [] if store.backend == "sqlite" else [
        sv.ChildSpec("remembered", RememberedDatabase.start, args=(store,), name=REMEMBERED_DB),
        sv.ChildSpec("listener", listener, args=(store, [CHANNEL])),
    ]  # fmt: skip
    return sv.Supervisor(
        [
            sv.ChildSpec(
                "embedder",
                EmbedderServer.start,
                args=(config.embedding, data_dir / "memory" / "embeddings.db"),
                name=EMBEDDER,
                backoff=sv.Backoff(initial=0.5, maximum=30.0),
            ),
            *shared,
            sv.DynamicSupervisor(intensity=100, period=10.0, name=INDEXES_SUP).child_spec("indexes"),
            sv.ChildSpec("agents", Agents.start, args=(data_dir, config, clock, store), name=AGENTS),
            sv.ChildSpec("watcher", watch, args=(config.watch_interval_seconds,)),
            keep_registered("tools", [MemorySearchTool(config.search.default_limit), MemoryGetTool()]),
        ],
        intensity=10,
        period=10.0,
        name="beamclaw_memory",
    )


def supervision_tree(table: dict[str, Any], data_dir: Path, store: StoreConfig = SQLITE_FILES) -> sv.Supervisor:
    return memory_tree(parse_memory_config(table), data_dir, store=store)
