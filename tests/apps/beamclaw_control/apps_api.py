"""The management API of the apps (scheduler, memory, MCP, sandbox, pairing) served on
loopback by the gateway's real app, beside the real apps it reaches, with four tokens:
two operators (alice, bob), a viewer and an admin."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

import beamclaw_control as control
import beamclaw_gateway as gateway
import beamclaw_mcp as mcp
import beamclaw_obs as obs
import beamclaw_scheduler as scheduler
import supervision as sv
from tests.apps.beamclaw_core.conftest import tree as core_tree
from tests.apps.beamclaw_gateway.conftest import free_port
from tests.support.model_server import Reply, scripted_model

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
VIEWER = "viewer-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"
#: Memory that indexes at once, by keywords only (no embedding model to load).
FAST_MEMORY = {"watch_interval_seconds": 0.1, "embedding": {"provider": "none"}}


@attrs.define
class Api:
    url: str
    home: Path

    def client(self, token: str | None) -> httpx.AsyncClient:
        """A client holding *token* (None: no token at all)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)

    async def get(self, token: str, path: str, **params: Any) -> httpx.Response:
        async with self.client(token) as http:
            return await http.get(path, params=params)

    async def post(self, token: str, path: str, body: Any = None) -> httpx.Response:
        async with self.client(token) as http:
            return await http.post(path, json={} if body is None else body)


def _auth(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for name, value in (("ALICE_TOKEN", ALICE), ("BOB_TOKEN", BOB), ("VIEWER_TOKEN", VIEWER), ("ADMIN_TOKEN", ADMIN)):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("BEAMCLAW_GATEWAY_TOKEN", raising=False)
    return {
        "tokens": {
            "alice": {"token": {"env": "ALICE_TOKEN"}},
            "bob": {"token": {"env": "BOB_TOKEN"}},
            "viewer": {"token": {"env": "VIEWER_TOKEN"}, "role": "viewer"},
            "root": {"token": {"env": "ADMIN_TOKEN"}, "role": "admin"},
        }
    }


@asynccontextmanager
async def running_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, mcp_table: dict[str, Any] | None = None
) -> AsyncIterator[Api]:
    """obs, tools, memory, sandbox, core, the scheduler (no heartbeat), MCP (*mcp_table*)
    and the gateway's HTTP server with every management blueprint."""
    home = tmp_path / "home"
    port = free_port()
    config = gateway.parse_gateway_config({"http": {"port": port}, "auth": _auth(monkeypatch), "mcp_endpoint": False})
    events: list[obs.ObsEvent] = []
    async with scripted_model(repeat=Reply("ok")) as model:
        base = core_tree(home, model.base_url, events, {}, {}, memory_table=FAST_MEMORY)
        spec = sv.Supervisor(
            [
                *base.children,
                scheduler.supervision_tree({"heartbeat": {"enabled": False}}, home).child_spec("scheduler"),
                mcp.supervision_tree(mcp_table or {}, home).child_spec("mcp"),
                sv.ChildSpec(
                    "http", functools.partial(gateway.serve_http, config, home, control.blueprints()), shutdown=5.0
                ),
            ],
            name="beamclaw",
        )
        async with sv.open_supervisor(spec):
            yield Api(f"http://127.0.0.1:{port}", home)
