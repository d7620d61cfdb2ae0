"""Running the real daemon and CLI as subprocesses, for the tests of tests/beamclaw/."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx_sse
import trio

from tests.support.model_server import ScriptedModel


def environment(home: Path) -> dict[str, str]:
    return {**os.environ, "BEAMCLAW_HOME": str(home), "BEAMCLAW_USER": "local:ada"}


def write_config(tmp_path: Path, model: ScriptedModel, autonomy: str = "full", extra: str = "") -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f'[core]\ndefault_provider = "scripted"\nautonomy_level = "{autonomy}"\n'
        f'[core.providers.scripted]\nbase_url = "{model.base_url}"\nmodel = "scripted-model"\n'
        f"[gateway.http]\nport = {free_port()}\n{extra}"
    )
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def control(home: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """One control request; the final answer."""
    stream = await trio.open_unix_socket(str(home / "control.sock"))
    async with stream:
        await stream.send_all(json.dumps(payload).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n") or b'"done": true' not in data.splitlines()[-1]:
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            data += chunk
    answer: dict[str, Any] = json.loads(data.splitlines()[-1])
    return answer


def api_client(home: Path) -> httpx.AsyncClient:
    """An HTTP client of the daemon's management API on its owner-only socket."""
    transport = httpx.AsyncHTTPTransport(uds=str(home / "control.sock"))
    return httpx.AsyncClient(transport=transport, base_url="http://beamclaw", timeout=httpx.Timeout(30.0, read=None))


async def api(home: Path, method: str, path: str, json: Any = None) -> httpx.Response:
    """One request to the management API on the socket."""
    async with api_client(home) as client:
        return await client.request(method, path, json=json)


async def chat(home: Path, user: str, text: str, agent: str = "default") -> dict[str, Any]:
    """One turn through ``POST /v1/chat``, read to its end: the stream's last event (``reply``)."""
    last: dict[str, Any] = {}
    async with (
        api_client(home) as client,
        httpx_sse.aconnect_sse(client, "POST", "/v1/chat", json={"user": user, "agent": agent, "text": text}) as source,
    ):
        assert source.response.status_code == 200, await source.response.aread()
        async for event in source.aiter_sse():
            last = {"event": event.event, **event.json()}
    assert last.get("event") == "reply", last
    return last


async def session_of(home: Path, user: str, agent: str = "default") -> str:
    """The id of *user*'s conversation with *agent* (opened through the API if need be)."""
    opened = await api(home, "POST", "/v1/sessions", {"user": user, "agent": agent})
    assert opened.status_code == 200, opened.text
    session: str = opened.json()["session"]["id"]
    return session


async def history(home: Path, user: str, agent: str = "default") -> dict[str, Any]:
    """``GET /v1/sessions/<id>/history`` of *user*'s conversation with *agent*: its session and messages."""
    answer = await api(home, "GET", f"/v1/sessions/{await session_of(home, user, agent)}/history")
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


async def ping(home: Path) -> bool:
    """Whether the daemon answers its status on the socket."""
    try:
        return (await api(home, "GET", "/v1/status")).status_code == 200
    except httpx.TransportError:
        return False


@asynccontextmanager
async def running_daemon(config: Path, home: Path) -> AsyncIterator[trio.Process]:
    """A daemon for the block, stopped with SIGTERM after it (the test may stop it first)."""
    daemon = await start_daemon(config, home)
    try:
        yield daemon
    finally:
        if daemon.returncode is None:
            daemon.send_signal(signal.SIGTERM)
            await daemon.wait()


#: Every daemon a test started: the autouse fixture of conftest.py kills those a failed
#: test left running, so none outlives its test (and holds a port or a data dir).
STARTED: list[trio.Process] = []


async def start_daemon(
    config: Path, home: Path, stderr: Path | None = None, umask: int = -1, timeout: float = 30
) -> trio.Process:
    """A daemon answering on its control socket; its stderr to *stderr* (else nowhere),
    started under *umask* when one is given; `trio.TooSlowError` after *timeout* seconds."""
    with stderr.open("wb") if stderr is not None else open(os.devnull, "wb") as sink:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "beamclaw", "run", "--config", str(config)],
            env=environment(home), stderr=sink, umask=umask,
        )  # fmt: skip
    STARTED.append(process)
    with trio.fail_after(timeout):
        while not await ping(home):
            assert process.poll() is None, "the daemon exited during start-up"
            await trio.sleep(0.05)
    return process


async def cli(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``beamclaw ARGS`` for the data dir *home*; *env* adds to (or, with "", empties) variables."""
    return await trio.run_process(
        [sys.executable, "-m", "beamclaw", *args], env={**environment(home), **(env or {})}, capture_stdout=True,
        capture_stderr=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
