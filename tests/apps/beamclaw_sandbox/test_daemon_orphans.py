"""kill -9 of the real daemon with a warm sandbox: its container is left behind, and the
next daemon on the same data dir removes it at start (the reaper). A real daemon
subprocess, a real engine; skipped, saying why, when no engine answers."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest
import trio

from beamclaw_sandbox._docker import LABEL_INSTANCE, LABEL_SANDBOX, instance_id
from tests.beamclaw.daemon import start_daemon, write_config
from tests.support.model_server import Agentic, Call, scripted_model

from .docker_support import IMAGE, docker_client, need_docker


@pytest.fixture(autouse=True)
def _docker() -> None:
    need_docker()


def _containers(home: Path) -> list[str]:
    client = docker_client()
    try:
        filters = {"label": [f"{LABEL_SANDBOX}=1", f"{LABEL_INSTANCE}={instance_id(home)}"]}
        # The low-level list (one call): containers.list() inspects each container it found,
        # and one the reaper removes in between makes that a 404.
        return sorted(c["Id"] for c in client.api.containers(all=True, filters=filters))
    finally:
        client.close()


async def test_the_reaper_removes_what_a_kill_9_left(tmp_path: Path) -> None:
    home = tmp_path / "home"
    extra = f'[sandbox]\nenabled = true\ndocker_image = "{IMAGE}"\nmemory_limit = "128m"\n'
    exec_call = Call("exec", {"code": "print('in the box')"})
    async with scripted_model(repeat=Agentic(exec_call, answer="ran it")) as model:
        config = write_config(tmp_path, model, extra=extra)
        url = f"http://127.0.0.1:{config.read_text().split('port = ')[1].split()[0]}"
        daemon = await start_daemon(config, home)
        try:
            async with httpx.AsyncClient(base_url=url, timeout=60) as http:
                body = {"model": "default", "user": "ada", "messages": [{"role": "user", "content": "run it"}]}
                response = await http.post("/v1/chat/completions", json=body)
            assert response.status_code == 200, response.text
            tool_results = [m for r in model.requests for m in r["messages"] if m["role"] == "tool"]
            assert tool_results and "in the box" in tool_results[-1]["content"], tool_results
            left = _containers(home)
            assert len(left) == 1  # the session's warm container
            daemon.send_signal(signal.SIGKILL)
            await daemon.wait()
            assert _containers(home) == left  # nobody removed it: an orphan now

            daemon = await start_daemon(config, home)
            with trio.fail_after(30):
                while _containers(home):
                    await trio.sleep(0.2)
            assert (await http_ok(url)) is True
        finally:
            if daemon.returncode is None:
                daemon.send_signal(signal.SIGTERM)
                with trio.move_on_after(20):
                    await daemon.wait()
                if daemon.returncode is None:
                    daemon.kill()
                    await daemon.wait()
    assert _containers(home) == []


async def http_ok(url: str) -> bool:
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        return (await http.get("/health")).status_code == 200
