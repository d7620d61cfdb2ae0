"""The daemon's routes over TCP, under the roles the server binds to each token."""

from __future__ import annotations

import signal
import tomllib
from pathlib import Path

import httpx
import pytest
import trio

from tests.beamclaw.daemon import start_daemon, write_config
from tests.support.model_server import scripted_model
from tests.support.sse_client import Event, read_events

_TOKENS = {"viewer": "v" * 32, "operator": "o" * 32, "admin": "a" * 32}
_CONFIG = "".join(
    f'[gateway.auth.tokens.the-{role}]\ntoken = {{ env = "{role.upper()}_TOKEN" }}\nrole = "{role}"\n'
    for role in _TOKENS
)
#: What a viewer may not do (an admin's routes).
_ADMINS_ONLY = [
    ("POST", "/v1/supervision/kill", {"path": "control/sighup"}),
    ("POST", "/v1/stop", {}),
    ("POST", "/v1/reload", {}),
    ("GET", "/v1/logs", None),
    ("GET", "/v1/names", None),
    ("POST", "/v1/names/beamclaw.host/send", {"message": 1}),
    ("GET", "/v1/config", None),
    ("GET", "/v1/env-names", None),
    ("GET", "/v1/processes/beamclaw.host", None),
    ("GET", "/v1/doctor", None),
]


def _as(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {_TOKENS[role]}"}


async def _events(port: int, role: str, until: str, found: list[Event]) -> int:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    status, _ = await read_events(
        stream, "/v1/supervision/events", lambda event: until in str(event), headers=_as(role), found=found
    )
    return status


async def test_each_role_reaches_only_its_routes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for role, token in _TOKENS.items():
        monkeypatch.setenv(f"{role.upper()}_TOKEN", token)
    home = tmp_path / "home"
    async with scripted_model() as model:
        config = write_config(tmp_path, model, extra=_CONFIG)
        port = tomllib.loads(config.read_text())["gateway"]["http"]["port"]
        daemon = await start_daemon(config, home, tmp_path / "stderr")
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                assert (await http.get("/v1/status")).status_code == 401
                status = await http.get("/v1/status", headers=_as("viewer"))
                assert status.status_code == 200 and status.json()["pid"] == daemon.pid
                assert (await http.get("/v1/supervision/tree", headers=_as("viewer"))).status_code == 200
                found: list[Event] = []
                assert await _events(port, "viewer", "ready", found) == 200 and found == [("ready", {})]
                for method, path, body in _ADMINS_ONLY:
                    for role in ("viewer", "operator"):
                        refused = await http.request(method, path, json=body, headers=_as(role))
                        assert refused.status_code == 403, (role, path, refused.text)
                        assert "needs the admin role" in refused.json()["error"]["message"]
                deliveries = await http.get("/v1/users/local:ada/deliveries", headers=_as("viewer"))
                assert deliveries.status_code == 403

                # An admin kills a process; a viewer watching the events sees it come back.
                seen: list[Event] = []
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_events, port, "viewer", "'kind': 'restart', 'supervisor': 'control'", seen)
                    with trio.fail_after(60):
                        while not seen:
                            await trio.sleep(0.05)
                    killed = await http.post(
                        "/v1/supervision/kill", json={"path": "control/sighup"}, headers=_as("admin")
                    )
                    assert killed.status_code == 200, killed.text
                restart = seen[-1][1]
                assert restart["child_id"] == "sighup" and restart["restarts"] == 1
                crash = next(data for name, data in seen if name == "supervision" and data["kind"] == "crash")
                assert crash["pid"] == killed.json()["pid"] and "killed on purpose" in crash["reason"]
        finally:
            daemon.send_signal(signal.SIGTERM)
            assert await daemon.wait() == 0
