"""Principals on a real daemon: a token rotated by `beamclaw reload`, an approval that only the
channel that asked (or the owner's `beamclaw approve`) answers."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import httpx
import pytest
import trio

from tests.support.model_server import Call, Reply, scripted_model

from .daemon import cli, running_daemon, write_config

WEB = "web-token-0123456789abcdef"
ROTATED = "web-rotated-0123456789abcdef"


def _port(config: Path) -> int:
    found = re.search(r"port = (\d+)", config.read_text())
    assert found is not None
    return int(found.group(1))


async def test_beamclaw_reload_rotates_a_named_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("WEB_TOKEN", WEB)
    extra = '[gateway.auth.tokens.web]\ntoken = { env = "WEB_TOKEN" }\n'
    async with scripted_model(repeat=Reply("hi")) as model:
        config = write_config(tmp_path, model, extra=extra)
        async with running_daemon(config, home), httpx.AsyncClient(timeout=30) as http:
            url = f"http://127.0.0.1:{_port(config)}/v1/models"
            assert (await http.get(url)).status_code == 401  # a token is configured: none is no one
            assert (await http.get(url, headers={"Authorization": f"Bearer {WEB}"})).status_code == 200
            reloaded = await cli(home, "reload", env={"WEB_TOKEN": ROTATED})
            assert reloaded.returncode == 0, reloaded.stderr
            assert (await http.get(url, headers={"Authorization": f"Bearer {WEB}"})).status_code == 401
            assert (await http.get(url, headers={"Authorization": f"Bearer {ROTATED}"})).status_code == 200


async def test_only_the_asking_channel_or_the_owner_answers_an_approval(tmp_path: Path) -> None:
    home = tmp_path / "home"
    steps = [Reply(tool_calls=(Call("bash", {"command": "command echo ran"}, id="b"),)), Reply("it ran")]
    async with scripted_model(*steps) as model:
        config = write_config(tmp_path, model, autonomy="supervised")
        async with running_daemon(config, home), httpx.AsyncClient(timeout=60) as http, trio.open_nursery() as nursery:
            answers: list[httpx.Response] = []

            async def ask() -> None:
                body = {"messages": [{"role": "user", "content": "run it"}], "user": "local:ada"}
                answers.append(await http.post(f"http://127.0.0.1:{_port(config)}/v1/chat/completions", json=body))

            nursery.start_soon(ask)
            session = hashlib.sha256(b"local:ada\x00default").hexdigest()
            with trio.fail_after(30):
                while True:
                    refused = await cli(home, "chat", "/yes")  # the owner's terminal: another channel
                    if b"nothing waiting for approval here" in refused.stdout:
                        break
                    await trio.sleep(0.1)  # the question is not asked yet
            assert answers == []
            approved = await cli(home, "approve", session[:12], "yes")
            assert (approved.returncode, approved.stdout) == (0, b"answered yes\n")
        assert answers[0].json()["choices"][0]["message"]["content"].endswith("it ran")
