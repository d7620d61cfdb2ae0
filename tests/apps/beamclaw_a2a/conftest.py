"""The A2A app running over core against the scripted model, its service called directly.

No HTTP here: what the gateway adds (the routes, the principal, the cap from its config,
the event stream's framing) is tested in tests/apps/beamclaw_gateway/test_a2a_routes.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

import beamclaw_a2a as a2a
import beamclaw_obs as obs
import supervision as sv
from beamclaw_base import Database, StoreConfig, open_store
from tests.apps.beamclaw_core.conftest import tree as core_tree
from tests.support.model_server import ScriptedModel, Step, scripted_model

BASE_URL = "http://a2a.test"
#: Tasks in a2a.db in the test's home, unless a test gives its `store_config`.
IN_DATA_DIR = StoreConfig()


@attrs.define
class A2A:
    home: Path
    model: ScriptedModel
    client: a2a.Client = a2a.Client("alice")
    #: Every event emitted meanwhile.
    events: list[obs.ObsEvent] = attrs.field(factory=list)
    store: StoreConfig = IN_DATA_DIR

    @contextmanager
    def tasks(self) -> Iterator[Database]:
        """The tasks' store, opened beside the running task manager (for `sql`)."""
        db = open_store(self.store, a2a.SCHEMA, sqlite_file=self.home / "a2a.db")
        try:
            yield db
        finally:
            db.close()

    async def handle(self, body: bytes | str) -> dict[str, Any] | AsyncIterator[dict[str, Any]]:
        """*body* as the running service answers it for `client`."""
        service = await a2a.a2a_service()
        return await service.handle(body, BASE_URL, self.client)

    async def rpc(self, method: str, params: Any, rid: Any = 1) -> dict[str, Any]:
        """A JSON-RPC request whose answer is one object (not a stream)."""
        answer = await self.handle(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        assert isinstance(answer, dict)
        return answer

    async def stream(self, method: str, params: Any, rid: Any = 1) -> list[dict[str, Any]]:
        """The events of a streaming request, to its end."""
        answer = await self.handle(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        assert not isinstance(answer, dict), answer
        return [event async for event in answer]


RunA2A = Callable[..., AbstractAsyncContextManager[A2A]]


@pytest.fixture
def run_a2a(tmp_path: Path) -> RunA2A:
    """``async with run_a2a(*steps) as a:`` obs, tools, sandbox, core and the A2A app, its
    tasks in *store* (SQLite in the test's home unless given); again, the same home.
    *cluster* (a ``[cluster]`` table, the store PostgreSQL) makes it a node of a cluster,
    core's conversations in the same store."""

    @asynccontextmanager
    async def running(
        *steps: Step, repeat: Step | None = None, store: StoreConfig = IN_DATA_DIR,
        cluster: dict[str, Any] | None = None,
    ) -> AsyncIterator[A2A]:  # fmt: skip
        home = tmp_path / "home"
        events: list[obs.ObsEvent] = []
        async with scripted_model(*steps, repeat=repeat) as model:
            clustered: dict[str, Any] = {} if cluster is None else {"store": store, "cluster_table": cluster}
            base = core_tree(home, model.base_url, events, {}, {}, **clustered)
            tasks = a2a.supervision_tree({}, home, store).child_spec("a2a")
            spec = sv.Supervisor([*base.children, tasks], name="beamclaw")
            async with sv.open_supervisor(spec):
                yield A2A(home, model, events=events, store=store)

    return running
