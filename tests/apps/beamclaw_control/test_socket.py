"""The owner-only socket: the management API over HTTP, every request the owner (an admin)."""

from __future__ import annotations

import os
import signal
import tomllib
from pathlib import Path

import httpx

from tests.beamclaw.daemon import api, api_client, start_daemon, write_config
from tests.support.model_server import scripted_model


async def test_the_socket_is_the_owners_and_answers_as_an_admin(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # TCP wants a token (and only a viewer's here); the socket wants none, and refuses nothing.
    extra = '[gateway.auth.tokens.watcher]\ntoken = { env = "WATCH_TOKEN" }\nrole = "viewer"\n'
    async with scripted_model() as model:
        config = write_config(tmp_path, model, extra=extra)
        port = tomllib.loads(config.read_text())["gateway"]["http"]["port"]
        os.environ["WATCH_TOKEN"] = "w" * 32
        try:
            daemon = await start_daemon(config, home)
        finally:
            del os.environ["WATCH_TOKEN"]
        try:
            assert (home / "control.sock").stat().st_mode & 0o777 == 0o600
            status = await api(home, "GET", "/v1/status")
            assert status.status_code == 200
            assert status.json()["pid"] == daemon.pid
            assert {"core", "gateway", "control"} <= {app["id"] for app in status.json()["apps"]}
            async with api_client(home) as client:
                # No Host or Origin check either: no browser reaches a Unix socket.
                tree = await client.get("/v1/supervision/tree", headers={"Origin": "http://evil.example"})
            assert tree.status_code == 200
            async with httpx.AsyncClient() as tcp:
                outside = await tcp.get(f"http://127.0.0.1:{port}/v1/status")
            assert outside.status_code == 401
        finally:
            daemon.send_signal(signal.SIGTERM)
            assert await daemon.wait() == 0
    assert not (home / "control.sock").exists()


async def test_the_socket_serves_with_the_gateway_disabled(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model() as model:
        daemon = await start_daemon(write_config(tmp_path, model, extra="[gateway]\nenabled = false\n"), home)
        try:
            status = (await api(home, "GET", "/v1/status")).json()
            assert status["gateway"] is None and "gateway" not in {app["id"] for app in status["apps"]}
        finally:
            daemon.send_signal(signal.SIGTERM)
            assert await daemon.wait() == 0
