"""The gateway of a real daemon, checked by schemathesis against its own OpenAPI document."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import trio

from .daemon import environment, free_port, start_daemon

TOKEN = "schemathesis-gateway-token-0123456789"
#: Left to their own tests: the management routes that stop, reload or crash parts of the
#: daemon on purpose (an admin's token may), and the streams that never end by themselves.
_NOT_FUZZED = r"^/v1/(stop|reload|supervision/(kill|events)|names/.*|logs|users/.*/deliveries)$"


async def _echo_model(port: int) -> trio.Process:
    """The scripted model as its own process (echo mode), as a user would run it."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.support.model_server", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with trio.fail_after(30):
        while True:
            try:
                async with httpx.AsyncClient() as http:
                    await http.get(f"http://127.0.0.1:{port}/v1/models")
            except httpx.TransportError:
                await trio.sleep(0.1)
            else:
                return process


@pytest.mark.skipif(shutil.which("schemathesis") is None, reason="schemathesis is not installed (a test extra)")
async def test_no_route_answers_with_a_server_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("BEAMCLAW_GATEWAY_TOKEN", TOKEN)
    model_port, gateway_port = free_port(), free_port()
    config = tmp_path / "config.toml"
    config.write_text(
        f'[core]\ndefault_provider = "local"\n[core.providers.local]\nbase_url = "http://127.0.0.1:{model_port}/v1"\n'
        f'model = "echo"\n[gateway.http]\nport = {gateway_port}\n[gateway.rate_limit]\nrequests = 100000\n'
    )
    model = await _echo_model(model_port)
    daemon = await start_daemon(config, home)
    try:
        with trio.fail_after(300):
            result = await trio.run_process(
                [
                    sys.executable,
                    "-m",
                    "schemathesis.cli",
                    "run",
                    f"http://127.0.0.1:{gateway_port}/openapi.json",
                    "--checks",
                    "not_a_server_error",
                    "--max-examples",
                    "25",
                    "-H",
                    f"Authorization: Bearer {TOKEN}",
                    "--request-timeout",
                    "30",
                    "--exclude-path-regex",
                    _NOT_FUZZED,
                ],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=environment(home),
            )
    finally:
        daemon.send_signal(signal.SIGTERM)
        model.kill()
        await daemon.wait()
        await model.wait()
    output = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, output[-4000:]
