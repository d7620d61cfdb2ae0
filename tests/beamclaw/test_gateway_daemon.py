"""The gateway of a real daemon, checked by schemathesis against its own OpenAPI document."""

from __future__ import annotations

import re
import shutil
import signal
import sys
from pathlib import Path

import pytest
import trio

from tests.support.model_server import Reply, scripted_model

from .daemon import env, start_daemon, write_config

TOKEN = "schemathesis-gateway-token-0123456789"


@pytest.mark.skipif(shutil.which("schemathesis") is None, reason="schemathesis is not installed (a test extra)")
async def test_no_route_answers_with_a_server_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("BEAMCLAW_GATEWAY_TOKEN", TOKEN)
    async with scripted_model(repeat=Reply("ok")) as model:
        config = write_config(tmp_path, model, extra="[gateway.rate_limit]\nrequests = 100000\n")
        port = re.search(r"port = (\d+)", config.read_text()).group(1)  # type: ignore[union-attr]
        daemon = await start_daemon(config, home)
        try:
            with trio.fail_after(300):
                result = await trio.run_process(
                    [
                        sys.executable,
                        "-m",
                        "schemathesis.cli",
                        "run",
                        f"http://127.0.0.1:{port}/openapi.json",
                        "--checks",
                        "not_a_server_error",
                        "--max-examples",
                        "25",
                        "-H",
                        f"Authorization: Bearer {TOKEN}",
                        "--request-timeout",
                        "30",
                    ],
                    capture_stdout=True,
                    capture_stderr=True,
                    check=False,
                    env=env(home),
                )
        finally:
            daemon.send_signal(signal.SIGTERM)
            await daemon.wait()
    output = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, output[-4000:]
    assert "No issues found" in output or "passed" in output.lower()
