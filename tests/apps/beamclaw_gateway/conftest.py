"""A running obs + tools + core + gateway tree against the scripted model, for gateway tests."""

from __future__ import annotations

import base64
import os
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

import beamclaw_a2a as a2a
import beamclaw_gateway as gateway
import beamclaw_obs as obs
import supervision as sv
from beamclaw_base import StoreConfig
from tests.apps.beamclaw_core.conftest import tree as core_tree
from tests.support.model_server import ScriptedModel, Step, scripted_model

#: The apps' stores in the test's home, unless a test gives its `store_config`.
IN_DATA_DIR = StoreConfig()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@attrs.define
class Gateway:
    url: str
    home: Path
    model: ScriptedModel
    token: str | None
    events: list[obs.ObsEvent]

    def client(self, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
        """A client that sends the gateway token (unless *headers* replace it)."""
        auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.AsyncClient(base_url=self.url, headers={**auth, **(headers or {})}, timeout=30)


RunGateway = Callable[..., AbstractAsyncContextManager[Gateway]]


async def ws_upgrade(port: int, headers: dict[str, str] | None = None) -> tuple[bytes, trio.SocketStream]:
    """A WebSocket handshake to /ws by hand: the response's head (lowercase) and the open stream.

    By hand, since a client library hides what a refused handshake answered (and may leave
    its socket to the garbage collector).
    """
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    await stream.send_all(
        f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n".encode()
    )
    answer = b""
    with trio.fail_after(60):
        while b"\r\n\r\n" not in answer:
            chunk = await stream.receive_some()
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n\r\n")[0].lower(), stream


@pytest.fixture
def run_gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunGateway:
    """``async with run_gateway(*steps, gateway={...}, token=...) as g:`` a daemon with its HTTP API;
    the gateway and A2A keep their data in *store* (core keeps SQLite in the home)."""

    @asynccontextmanager
    async def running(
        *steps: Step,
        repeat: Step | None = None,
        gateway_table: dict[str, Any] | None = None,
        token: str | None = None,
        store: StoreConfig = IN_DATA_DIR,
        **core_overrides: Any,
    ) -> AsyncIterator[Gateway]:
        if token is None:
            monkeypatch.delenv("BEAMCLAW_GATEWAY_TOKEN", raising=False)
        else:
            monkeypatch.setenv("BEAMCLAW_GATEWAY_TOKEN", token)
        home = tmp_path / "home"
        events: list[obs.ObsEvent] = []
        port = free_port()
        table = {**(gateway_table or {})}
        table["http"] = {"port": port, **table.get("http", {})}
        async with scripted_model(*steps, repeat=repeat) as model:
            base = core_tree(home, model.base_url, events, core_overrides, {})
            spec = sv.Supervisor(
                [
                    *base.children,
                    a2a.supervision_tree({}, home, store).child_spec("a2a"),
                    gateway.supervision_tree(table, home, store).child_spec("gateway"),
                ],
                name="beamclaw",
            )
            async with sv.open_supervisor(spec):
                yield Gateway(f"http://127.0.0.1:{port}", home, model, token, events)
            await trio.lowlevel.checkpoint()

    return running
