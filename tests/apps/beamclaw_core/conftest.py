"""A running obs + tools + sandbox + core tree against the scripted model server, for core tests."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

import beamclaw_cluster as cluster
import beamclaw_core as core
import beamclaw_memory as memory
import beamclaw_obs as obs
import beamclaw_sandbox as sandbox
import beamclaw_tools as tools
import supervision as sv
from beamclaw_base import Database, StoreConfig
from tests.support.model_server import ScriptedModel, Step, scripted_model


class Collect(obs.Backend):
    """Keeps every event, for assertions."""

    def setup(self, sink: list[obs.ObsEvent]) -> list[obs.ObsEvent]:
        return sink

    def handle_event(self, event: obs.ObsEvent, sink: list[obs.ObsEvent]) -> None:
        sink.append(event)


def core_table(base_url: str, **overrides: Any) -> dict[str, Any]:
    provider = {"base_url": base_url, "model": "scripted-model", "max_retries": 2}
    provider.update(overrides.pop("provider", {}))
    table: dict[str, Any] = {
        "default_provider": "scripted",
        "providers": {"scripted": provider},
        "cleanup_interval_seconds": 3600.0,
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(table.get(key), dict):
            table[key] = {**table[key], **value}
        else:
            table[key] = value
    return table


@attrs.define
class Running:
    home: Path
    model: ScriptedModel
    supervisor: sv.Pid
    events: list[obs.ObsEvent]

    def named(self, name: str) -> list[obs.ObsEvent]:
        return [e for e in self.events if e.name == name]

    async def open(self, user: str = "local:alice", agent: str = "default", channel: str = "") -> core.SessionHandle:
        """The conversation of *user* with *agent*, created first as `beamclaw agent create` would."""
        if agent != "default":
            await trio.to_thread.run_sync(core.Workspace.of(self.home, agent).seed)
        return await core.open_session(user, agent, channel)

    async def settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()


def tree(home: Path, base_url: str, events: list[obs.ObsEvent], core_overrides: dict[str, Any],
         tools_table: dict[str, Any], *, memory_table: dict[str, Any] | None = None,
         clock: Callable[[], float] = time.time, sandbox_table: dict[str, Any] | None = None,
         store: StoreConfig | None = None, cluster_table: dict[str, Any] | None = None) -> sv.Supervisor:  # fmt: skip
    """The apps core needs; the memory app only when *memory_table* is given (core does
    without), the cluster app only with *cluster_table*; *clock* is core's wall clock,
    *store* where core keeps its conversations (SQLite in *home* by default)."""
    with_memory = [] if memory_table is None else [memory.supervision_tree(memory_table, home).child_spec("memory")]
    with_cluster = (
        [] if cluster_table is None else [cluster.supervision_tree(cluster_table, home, store).child_spec("cluster")]
    )
    return sv.Supervisor(
        [
            obs.supervision_tree({"log_level": "DEBUG"}, home).child_spec("obs"),
            sv.ChildSpec("collect", Collect.start, args=(events,)),
            *with_cluster,
            tools.supervision_tree(tools_table, home).child_spec("tools"),
            *with_memory,
            sandbox.supervision_tree(sandbox_table or {}, home).child_spec("sandbox"),  # the jails bash runs in
            core.supervision_tree(
                core_table(base_url, **core_overrides), home, clock, store or StoreConfig()
            ).child_spec("core"),
        ],
        name="test_root",
    )


RunCore = Callable[..., AbstractAsyncContextManager[Running]]


@pytest.fixture
def run_core(tmp_path: Path) -> RunCore:
    """``async with run_core(*steps, core={...}, tools={...}, memory={...}) as r:`` a running tree;
    ``store=store_config`` runs core's store on that backend, ``cluster={...}`` makes it a
    node of a cluster (its ``[cluster]`` table; the store must be PostgreSQL)."""

    @asynccontextmanager
    async def running(
        *steps: Step, repeat: Step | None = None, tools: dict[str, Any] | None = None,
        home: Path | None = None, memory: dict[str, Any] | None = None,
        clock: Callable[[], float] = time.time, sandbox: dict[str, Any] | None = None,
        store: StoreConfig | None = None, cluster: dict[str, Any] | None = None, **core_overrides: Any,
    ) -> AsyncIterator[Running]:  # fmt: skip
        events: list[obs.ObsEvent] = []
        home = home or tmp_path / "home"
        async with scripted_model(*steps, repeat=repeat) as model:
            spec = tree(home, model.base_url, events, core_overrides, tools or {}, memory_table=memory, clock=clock,
                        sandbox_table=sandbox, store=store, cluster_table=cluster)  # fmt: skip
            async with sv.open_supervisor(spec) as sup:
                yield Running(home, model, sup, events)

    return running


@contextmanager
def session_store(home: Path, config: StoreConfig) -> Iterator[Database]:
    """Core's store as the command line opens it, for a test that reads or changes rows
    (with `tests.support.stores.sql`); closed after the block."""
    db = core.open_session_store(config, home)
    try:
        yield db
    finally:
        db.close()


async def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> None:
    """Poll *predicate* until it holds (real sockets are involved, so blocking is not enough)."""
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.005)


def loop_of(handle: core.SessionHandle) -> sv.ViaName:
    return handle.dest.registry.via(("loop", handle.id))
