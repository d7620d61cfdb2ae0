"""The memory app's tree, run for a test beside the tools app's tree (its tools register
there), on real files in ``tmp_path``: the data dir, with each agent's workspace in
``agents/<agent>``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

import supervision as sv
from beamclaw_base import StoreConfig
from beamclaw_memory import EmbeddingConfig, MemoryConfig, SearchConfig, SearchResult, memory_tree, search
from beamclaw_tools import supervision_tree as tools_tree

T = TypeVar("T")
#: How long a test waits for something that happens behind its back (the watcher, a cast).
DEADLINE = 60.0


def workspace(data_dir: Path, agent: str = "default") -> Path:
    root = data_dir / "agents" / agent
    (root / "memory").mkdir(parents=True, exist_ok=True)
    return root


def memory_config(*, provider: str = "local", watch: float = 0.05, **search: Any) -> MemoryConfig:
    return MemoryConfig(
        watch_interval_seconds=watch,
        embedding=EmbeddingConfig(provider=provider, api_key=None),
        search=SearchConfig(**search),
    )


@contextlib.asynccontextmanager
async def running_memory(
    data_dir: Path,
    config: MemoryConfig | None = None,
    clock: Callable[[], float] = time.time,
    store: StoreConfig | None = None,
) -> AsyncIterator[None]:
    """The memory app; its kept documents on *store* (default: SQLite files in *data_dir*)."""
    tree = memory_tree(config or memory_config(), data_dir, clock, store or StoreConfig())
    root = sv.Supervisor(
        [tools_tree({}, data_dir).child_spec("tools"), tree.child_spec("memory")], name="test_root", intensity=50
    )
    async with sv.open_supervisor(root):
        yield


async def eventually(probe: Callable[[], Awaitable[T | None]], what: str, deadline: float = DEADLINE) -> T:
    """Poll *probe* until it gives something truthy; fail saying *what* after *deadline* seconds."""
    last: Any = None
    with trio.move_on_after(deadline):
        while True:
            last = await probe()
            if last:
                return last
            await trio.sleep(0.05)
    raise AssertionError(f"{what}: not within {deadline:g} s (last: {last!r})")


@attrs.frozen
class Found:
    result: SearchResult

    @property
    def paths(self) -> list[str]:
        return [hit.path for hit in self.result.hits]

    def has(self, text: str) -> bool:
        return any(text in hit.text for hit in self.result.hits)


async def find(agent: str, query: str, owner: str | None = None, limit: int = 6) -> Found:
    return Found(await search(agent, query, owner=owner, limit=limit))


def finds(agent: str, query: str, text: str, owner: str | None = None) -> Callable[[], Awaitable[Found | None]]:
    """A probe for `eventually`: the search, when one of its hits holds *text*."""

    async def probe() -> Found | None:
        found = await find(agent, query, owner)
        return found if found.has(text) else None

    return probe
