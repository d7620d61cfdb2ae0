"""One user across channels, on a real daemon with the Telegram channel against the
telegram-test-api emulator: start a conversation in the terminal (the TUI in tmux, or
`beamclaw chat`), continue it from Telegram (`BEAMCLAW_USER`, `pair link`); with
``session_sharing = "per_channel"`` each channel has its own. And the walls: neither an
API token, an MCP host nor a stranger of an open bot reaches the owner's conversation."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.model_server import Reply, ScriptedModel, scripted_model
from tests.support.telegram_emulator import Emulator, ensure_installed, telegram_emulator

from .daemon import cli, environment, free_port, running_daemon, write_config
from .test_tui import Terminal

TOKEN = "654321:emulated-telegram-token-abcdefgh"
WEB = "web-token-0123456789abcdef"
ROOT = Path(__file__).parents[2]


@pytest.fixture(autouse=True)
def _emulated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    reason = ensure_installed()
    if reason is not None:
        pytest.skip(reason)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    yield


def _config(tmp_path: Path, model: ScriptedModel, emulator: Emulator, telegram: str, core: str = "") -> Path:
    extra = (f'[gateway.channels.telegram]\nenabled = true\napi_base = "{emulator.api_base}"\n'
             f"edit_interval_seconds = 0.0\n{telegram}")  # fmt: skip
    config = write_config(tmp_path, model, extra=extra)
    config.write_text(config.read_text().replace("[core]\n", f"[core]\n{core}", 1))
    return config


async def _answer(emulator: Emulator, chat: int, count: int = 1) -> str:
    """The bot's *count*-th message to *chat*, once it is there."""
    with trio.fail_after(30):
        while len(messages := await emulator.bot_messages(chat)) < count:
            await trio.sleep(0.05)
    return str(messages[count - 1]["text"])


def _said(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def test_a_tui_turn_then_a_telegram_turn_in_one_conversation(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    home = tmp_path / "home"
    steps = [Reply("Noted."), Reply("It is 4417.")]
    async with scripted_model(*steps) as model, telegram_emulator(TOKEN, free_port()) as emulator:
        # BEAMCLAW_USER=local:ada for the daemon (its listed Telegram user) and the TUI alike.
        config = _config(tmp_path, model, emulator, 'dm_policy = "allowlist"\nallow_from = ["41"]\n')
        async with running_daemon(config, home):
            term = Terminal(f"beamclaw-test-one-user-{os.getpid()}")
            await term.start_tui(home)
            try:
                await term.wait_for("you> ")
                await term.type("my locker code is 4417")
                await term.wait_for("default> Noted.")
            finally:
                await term.tmux("kill-server")
            await emulator.say(41, "what is my locker code?")
            assert await _answer(emulator, 41) == "It is 4417."
            history = (await cli(home, "history")).stdout.decode()
    assert _said(model.requests[1]) == ["my locker code is 4417", "what is my locker code?"]
    assert history.splitlines()[1:] == [
        "user: my locker code is 4417", "assistant: Noted.", "user: what is my locker code?", "assistant: It is 4417.",
    ]  # fmt: skip


async def test_per_channel_sharing_keeps_one_conversation_per_channel(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("ok")) as model, telegram_emulator(TOKEN, free_port()) as emulator:
        telegram = 'dm_policy = "allowlist"\nallow_from = ["41"]\n'
        config = _config(tmp_path, model, emulator, telegram, core='session_sharing = "per_channel"\n')
        async with running_daemon(config, home):
            assert (await cli(home, "chat", "from the terminal")).returncode == 0
            await emulator.say(41, "from telegram")
            await _answer(emulator, 41)
    assert [_said(request) for request in model.requests] == [["from the terminal"], ["from telegram"]]


async def test_a_paired_telegram_user_linked_to_another_terminal_user(tmp_path: Path) -> None:
    """The owner pairs a Telegram account, which speaks as BEAMCLAW_USER (local:ada), then
    links it to local:bob: it continues bob's terminal conversation from then on."""
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("ok")) as model, telegram_emulator(TOKEN, free_port()) as emulator:
        config = _config(tmp_path, model, emulator, 'dm_policy = "pairing"\n')
        async with running_daemon(config, home):
            assert (await cli(home, "chat", "--user", "local:bob", "bob in the terminal")).returncode == 0
            await emulator.say(41, "let me in")
            code = (await _answer(emulator, 41)).split("beamclaw pair telegram ")[1].split()[0]
            refused = await cli(home, "pair", "link", "telegram", "telegram:41", "local:bob")
            assert refused.returncode == 1 and b"telegram:41 is not paired on telegram" in refused.stderr
            assert (await cli(home, "pair", "telegram", code)).returncode == 0
            await emulator.say(41, "paired")
            await _answer(emulator, 41, 2)
            linked = await cli(home, "pair", "link", "telegram", "telegram:41", "local:bob")
            assert linked.stdout == b"telegram:41 on telegram now speaks as local:bob\n"
            await emulator.say(41, "linked")
            await _answer(emulator, 41, 3)
    assert [_said(request) for request in model.requests] == [
        ["bob in the terminal"], ["paired"], ["bob in the terminal", "linked"],
    ]  # fmt: skip


async def test_beamclaw_user_lets_no_api_client_mcp_host_or_stranger_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BEAMCLAW_USER=local:ada on the daemon, an open bot and a scoped token: the owner's
    conversation (a locker code in it) reaches none of them (HTTP, A2A, an open bot's
    stranger, `mcp serve`), whatever user they name."""
    home = tmp_path / "home"
    monkeypatch.setenv("WEB_TOKEN", WEB)
    extra = '[gateway.auth.tokens.web]\ntoken = { env = "WEB_TOKEN" }\nrole = "operator"\n'
    async with scripted_model(repeat=Reply("ok")) as model, telegram_emulator(TOKEN, free_port()) as emulator:
        config = _config(tmp_path, model, emulator, 'dm_policy = "open"\n' + extra)
        async with running_daemon(config, home), httpx.AsyncClient(timeout=60) as http:
            assert (await cli(home, "chat", "my locker code is 4417")).returncode == 0
            port = int(config.read_text().split("port = ")[1].split()[0])
            url = f"http://127.0.0.1:{port}/v1/chat/completions"
            auth = {"Authorization": f"Bearer {WEB}"}
            for user, status in [("local:ada", 403), ("ada", 200), (None, 200)]:
                body = {"messages": [{"role": "user", "content": "what is the locker code?"}], "user": user}
                assert (await http.post(url, json=body, headers=auth)).status_code == status

            # An A2A client choosing the owner's user id as its context.
            message = {
                "messageId": "1",
                "role": "ROLE_USER",
                "parts": [{"text": "the locker code?"}],
                "contextId": "local:ada",
            }
            rpc = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
            sent = (await http.post(url.replace("/v1/chat/completions", "/a2a"), json=rpc, headers=auth)).json()
            assert "result" in sent, sent

            await emulator.say(666, "what is the locker code?")  # a stranger: the bot is open
            await _answer(emulator, 666)

            # The host's environment has BEAMCLAW_USER too: `mcp serve` still speaks as mcp:local.
            kept = {"BEAMCLAW_HOME", "BEAMCLAW_USER", "PYTHONPATH"}
            params = StdioServerParameters(
                command=sys.executable, args=["-m", "beamclaw", "mcp", "serve"], cwd=str(ROOT),
                env={k: v for k, v in environment(home).items() if k in kept},
            )  # fmt: skip
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("chat", {"message": "what is the locker code?"})
            owner = (await cli(home, "history")).stdout.decode()
            sessions = (await cli(home, "sessions")).stdout.decode()
    assert len(model.requests) == 6 and all("4417" not in str(request) for request in model.requests[1:])
    assert owner.splitlines()[1:] == ["user: my locker code is 4417", "assistant: ok"]
    for user in ("local:ada", "api:web/ada", "api:web", "a2a:web/", "telegram:666", "mcp:local"):
        assert user in sessions
