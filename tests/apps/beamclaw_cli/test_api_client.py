"""The CLI's client of the management API, against a real daemon's socket."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import trio

from beamclaw_cli._api_client import ApiError, NoDaemon, call, call_blocking, running
from tests.beamclaw.daemon import start_daemon, write_config
from tests.support.model_server import scripted_model


async def test_no_daemon_is_said_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEAMCLAW_HOME", str(tmp_path))
    with pytest.raises(NoDaemon, match=r"no BeamClaw daemon is running .*start one with `python -m beamclaw run`"):
        await call("GET", "/v1/status")
    with pytest.raises(NoDaemon, match=r"no BeamClaw daemon is running"):
        call_blocking("GET", "/v1/status")
    assert not await running()


async def test_answers_and_errors_of_a_running_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("BEAMCLAW_HOME", str(home))
    async with scripted_model() as model:
        daemon = await start_daemon(write_config(tmp_path, model), home)
        try:
            assert await running()
            assert (await call("GET", "/v1/status"))["pid"] == daemon.pid
            with pytest.raises(ApiError) as raised:
                await call("GET", "/v1/no-such-route")
            assert raised.value.status == 404
            # the blocking client (`status`'s) gives the same answers and errors
            blocking = await trio.to_thread.run_sync(call_blocking, "GET", "/v1/status")
            assert blocking["pid"] == daemon.pid and blocking["apps"] == (await call("GET", "/v1/status"))["apps"]
            with pytest.raises(ApiError) as refused:
                await trio.to_thread.run_sync(call_blocking, "GET", "/v1/no-such-route")
            assert (refused.value.status, refused.value.code, str(refused.value)) == (
                404,
                raised.value.code,
                str(raised.value),
            )
        finally:
            daemon.send_signal(signal.SIGTERM)
            await daemon.wait()
