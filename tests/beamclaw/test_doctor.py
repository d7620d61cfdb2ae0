"""`beamclaw doctor` checks what will actually run: the daemon's own config, the model
answering, each enabled channel, the port; each fix names the real file."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.support.model_server import Reply, scripted_model
from tests.support.telegram_api import fake_telegram

from .daemon import cli, running_daemon, write_config


async def _doctor(home: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = await cli(home, "doctor", *args, env=env)
    return done.returncode, done.stdout.decode() + done.stderr.decode()


async def test_it_checks_the_running_daemons_config_and_its_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hi")) as model:
        config = write_config(tmp_path, model)
        async with running_daemon(config, home):
            code, out = await _doctor(home, env={"OPENROUTER_API_KEY": ""})
            assert f"a daemon is running with {config}: checking what it runs" in out
            assert "OPENROUTER_API_KEY" not in out  # config.toml's provider is not the one that runs
            assert f"model 'scripted-model' at {model.base_url} answers in " in out
            assert "the gateway at http://127.0.0.1:" in out and "answers: ok" in out
            assert "Docker" not in out  # nothing uses it
            assert code == 0 and out.splitlines()[-1].startswith("all good"), out


async def test_a_model_server_that_is_down_or_does_not_serve_the_model_is_a_problem(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model() as model:
        config = write_config(tmp_path, model)
        config.write_text(config.read_text().replace('model = "scripted-model"', 'model = "llama3.1"'))
        code, out = await _doctor(home, "--config", str(config))
        assert code == 1
        fix = f"fix: set core.providers.scripted.model in {config}"
        assert f"does not serve 'llama3.1' (it serves: scripted-model)\n    {fix}" in out
        url = model.base_url
    code, out = await _doctor(home, "--config", str(config))  # the server has stopped
    assert code == 1 and f"the model server at {url} does not answer (ConnectError)" in out
    assert f"fix: start it, or fix core.providers.scripted.base_url in {config}" in out


async def test_a_base_url_without_a_scheme_and_telegram_without_a_token_are_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = tmp_path / "my.toml"
    config.write_text(
        '[core]\ndefault_provider = "local"\n[core.providers.local]\nbase_url = "127.0.0.1:11434"\nmodel = "x"\n'
    )
    code, out = await _doctor(home, "--config", str(config))
    assert code == 1
    assert "core.providers.local.base_url is '127.0.0.1:11434', which is not an http:// or https:// URL" in out
    assert "did you mean 'http://127.0.0.1:11434'?" in out and f"fix: edit {config}" in out
    ran = await cli(home, "run", "--config", str(config))  # the same one line, before anything starts
    assert ran.returncode == 2 and b"did you mean 'http://127.0.0.1:11434'?" in ran.stderr

    async with scripted_model() as model:
        config = write_config(tmp_path, model, extra="[gateway.channels.telegram]\nenabled = true\n")
        code, out = await _doctor(home, "--config", str(config), env={"TELEGRAM_BOT_TOKEN": ""})
        assert code == 1 and "Telegram is enabled but TELEGRAM_BOT_TOKEN is not set" in out
        assert f"or set gateway.channels.telegram.enabled = false in {config}" in out
        ran = await cli(home, "run", "--config", str(config), env={"TELEGRAM_BOT_TOKEN": ""})
        assert ran.returncode == 2 and b"TELEGRAM_BOT_TOKEN (the bot's token) is not set" in ran.stderr

        token = "4242:" + "A" * 35
        async with fake_telegram(token) as telegram:
            extra = f'[gateway.channels.telegram]\nenabled = true\napi_base = "{telegram.base_url}"\n'
            config = write_config(tmp_path, model, extra=extra)
            code, out = await _doctor(home, "--config", str(config), env={"TELEGRAM_BOT_TOKEN": token})
            assert "✓ Telegram bot @beamclaw_test_bot answers" in out
            code, out = await _doctor(home, "--config", str(config), env={"TELEGRAM_BOT_TOKEN": "4242:" + "B" * 35})
            assert code == 1 and "Telegram refuses the bot token in TELEGRAM_BOT_TOKEN: Unauthorized" in out
            assert "B" * 35 not in out


async def test_a_port_in_use_is_named_with_the_key_to_change(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model() as model:
        config = write_config(tmp_path, model)
        port = int(config.read_text().split("port = ")[1].split()[0])
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", port))
            taken.listen()
            code, out = await _doctor(home, "--config", str(config))
        assert code == 1 and f"the gateway cannot listen on 127.0.0.1:{port}: Address already in use" in out
        assert f"fix: stop what uses it, or set gateway.http.port in {config}" in out
        code, out = await _doctor(home, "--config", str(config))
        assert f"the gateway's port 127.0.0.1:{port} is free" in out and code == 0, out


async def test_it_says_who_embeds_the_memory_and_names_a_remote_that_does_not_answer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hi")) as model:
        config = write_config(tmp_path, model)
        code, out = await _doctor(home, "--config", str(config))
        assert "memory: the local embedder wordllama:l2_supercat:256 loads (offline)" in out, out
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        remote = f'[memory.embedding]\nprovider = "openai"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        config.write_text(config.read_text() + remote)
        code, out = await _doctor(home, "--config", str(config))
        assert code == 1
        assert f"memory: the embeddings server at http://127.0.0.1:{port}/v1/embeddings could not be reached" in out
        assert f"fix: start it, or fix memory.embedding (base_url, model, api_key) in {config}" in out
