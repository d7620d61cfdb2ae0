"""The management API's session, chat and agent routes on loopback, for their tests.

A real tree (obs, tools, sandbox, core) against the scripted model, and the gateway's
HTTP server with the control blueprints, configured with tokens as a deployment would:
``alice`` and ``bob`` operators (each acting as its own users only), a ``viewer``, and
the legacy token as the admin.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import pytest
import trio

import beamclaw_control as control
import beamclaw_gateway as gateway
import beamclaw_obs as obs
import supervision as sv
from beamclaw_base import StoreConfig
from tests.apps.beamclaw_core.conftest import tree as core_tree
from tests.apps.beamclaw_gateway.conftest import free_port
from tests.support.model_server import ScriptedModel, Step, scripted_model

ALICE: Final = "alice-token-0123456789abcdef"
BOB: Final = "bob-token-0123456789abcdef"
VIEWER: Final = "viewer-token-0123456789abcdef"
ADMIN: Final = "admin-token-0123456789abcdef"
_AUTH: Final = {
    "tokens": {
        "alice": {"token": {"env": "ALICE_TOKEN"}},
        "bob": {"token": {"env": "BOB_TOKEN"}},
        "viewer": {"token": {"env": "VIEWER_TOKEN"}, "role": "viewer"},
    }
}


@attrs.define
class Api:
    url: str
    home: Path
    model: ScriptedModel
    events: list[obs.ObsEvent]

    def client(self, token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)

    async def chat(self, token: str, **body: Any) -> list[tuple[str, Any]]:
        """The events of one ``POST /v1/chat`` (a refusal: ``[("status", code)]``)."""
        async with self.client(token) as http, http.stream("POST", "/v1/chat", json=body) as response:
            if response.status_code != 200:
                return [("status", response.status_code)]
            return [event async for event in sse_events(response)]


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, Any]]:
    """Each server-sent event of *response*: its name and its data, parsed."""
    name = ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


@pytest.fixture
def tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, value in {"ALICE_TOKEN": ALICE, "BOB_TOKEN": BOB, "VIEWER_TOKEN": VIEWER,
                            "BEAMCLAW_GATEWAY_TOKEN": ADMIN}.items():  # fmt: skip
        monkeypatch.setenv(variable, value)


@asynccontextmanager
async def serving(
    home: Path, *steps: Step, repeat: Step | None = None, store: StoreConfig | None = None, **core_overrides: Any
) -> AsyncIterator[Api]:
    """The API on a free loopback port while the block runs (take the `tokens` fixture);
    core keeps its conversations in *store* (SQLite in *home* by default)."""
    events: list[obs.ObsEvent] = []
    port = free_port()
    config = gateway.parse_gateway_config({"http": {"port": port}, "auth": _AUTH})
    async with scripted_model(*steps, repeat=repeat) as model:
        base = core_tree(home, model.base_url, events, core_overrides, {}, store=store)
        http = functools.partial(gateway.serve_http, config, home, control.blueprints())
        spec = sv.Supervisor([*base.children, sv.ChildSpec("http", http, shutdown=5.0)], name="beamclaw")
        async with sv.open_supervisor(spec):
            yield Api(f"http://127.0.0.1:{port}", home, model, events)
        await trio.lowlevel.checkpoint()
