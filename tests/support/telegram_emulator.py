"""The npm package telegram-test-api, an independent Bot API emulator, run for the tests.

`telegram_emulator` starts it (``node serve.js <port>`` in tests/support/telegram-test-api,
which installs it with ``npm ci``: `.ci/run` does, and so does `ensure_installed` when
node_modules is missing and npm is on PATH) and talks to its client API: a user's
message in (POST /sendMessage), the bot's messages out (POST /getUpdatesHistory,
each with its latest text, edits applied). serve.js gives its getUpdates Telegram's
offset semantics; otherwise it is the emulator as published (no long polling: it
answers getUpdates at once; no sendChatAction: a 500).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio

DIRECTORY = Path(__file__).parent / "telegram-test-api"


def ensure_installed() -> str | None:
    """Install the emulator if need be; the reason it cannot run, or None when it can."""
    if shutil.which("node") is None:
        return "node is not on PATH, so the telegram-test-api emulator cannot run"
    if (DIRECTORY / "node_modules" / "telegram-test-api" / "package.json").is_file():
        return None
    npm = shutil.which("npm")
    if npm is None:
        return f"telegram-test-api is not installed and npm is not on PATH (run npm ci in {DIRECTORY})"
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"], cwd=DIRECTORY, capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        return f"npm ci in {DIRECTORY} failed: {done.stderr.strip()[-500:]}"
    return None


@attrs.define
class Emulator:
    api_base: str
    token: str
    http: httpx.AsyncClient

    async def say(self, user_id: int, text: str) -> None:
        """A private message from *user_id* to the bot."""
        user = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}", "username": f"user{user_id}"}
        message = {"botToken": self.token, "from": user, "chat": {**user, "type": "private"}, "text": text, "date": 0}
        response = await self.http.post(f"{self.api_base}/sendMessage", json=message)
        response.raise_for_status()

    async def bot_messages(self, chat_id: int) -> list[dict[str, Any]]:
        """What the bot sent to *chat_id*, oldest first, each as last edited."""
        response = await self.http.post(f"{self.api_base}/getUpdatesHistory", json={"token": self.token})
        response.raise_for_status()
        return [
            item["message"]
            for item in response.json()["result"]
            if "chat_id" in item["message"] and str(item["message"]["chat_id"]) == str(chat_id)
        ]

    async def poll_times(self) -> list[float]:
        """When each getUpdates arrived, in seconds."""
        return [at for at, _ in await self.polls()]

    async def polls(self) -> list[tuple[float, str]]:
        """Each getUpdates in the order they arrived: when (in seconds) and who sent it
        (its User-Agent)."""
        response = await self.http.get(f"{self.api_base}/beamclaw/polls")
        return [(poll["at"] / 1000, poll["by"]) for poll in response.json()["result"]]


@asynccontextmanager
async def telegram_emulator(token: str, port: int) -> AsyncIterator[Emulator]:
    process = await trio.lowlevel.open_process(
        ["node", "serve.js", str(port)], cwd=DIRECTORY, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        assert process.stdout is not None
        seen = b""
        with trio.fail_after(30):
            while b"listening" not in seen:
                data = await process.stdout.receive_some()
                if not data:
                    raise RuntimeError(f"telegram-test-api exited: {seen.decode(errors='replace')}")
                seen += data
        async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
            yield Emulator(f"http://127.0.0.1:{port}", token, http)
    finally:
        with trio.CancelScope(shield=True):
            process.terminate()
            with trio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            if process.stdout is not None:
                await process.stdout.aclose()
