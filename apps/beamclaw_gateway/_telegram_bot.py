"""The Telegram channel process: polling (or webhook) updates, policy, and turns.

Exactly one process polls per bot token (it registers a name derived from the
token), and it closes its HTTP connections when it stops, so a restarted channel
never overlaps its previous long poll; a 409 Conflict (another poller, or a webhook
set elsewhere) is backed off from and logged once. The offset is saved after each
update is handled, so a restart neither loses nor repeats one; ids at or below the
saved one are skipped. An unknown user gets a pairing code (at most one reply a
minute) and nothing reaches an agent until the owner pairs them.
"""

from __future__ import annotations

import base64
import hashlib
import sqlite3
import time
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import trio
from loguru import logger

import beamclaw_core as core
import supervision as sv

from ._config import GatewayConfig, TelegramConfig
from ._telegram_api import BotApi, TelegramError
from ._telegram_channel import TelegramChannel

CHANNEL: Final = "telegram"
SENDER: Final = "beamclaw_gateway.telegram_sender"
MAX_PHOTO: Final = 5 * 1024 * 1024
_REPLY_INTERVAL: Final = 60.0


def _open_offsets(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS telegram_offsets (bot TEXT PRIMARY KEY, next_update INTEGER NOT NULL)")
    path.chmod(0o600)
    return db


@attrs.define
class _Bot:
    config: TelegramConfig
    gateway: GatewayConfig
    api: BotApi  # for sending: its client belongs to the sender process, which outlives this one
    client: httpx.AsyncClient
    poll_api: BotApi  # for the long poll: its client is this process's own, closed when it stops
    db: sqlite3.Connection
    bot_id: str
    next_update: int = 0
    last_reply: dict[str, float] = attrs.field(factory=dict)
    conflicts: int = 0

    def save_offset(self, update_id: int) -> None:
        self.next_update = update_id + 1
        self.db.execute(
            "INSERT INTO telegram_offsets (bot, next_update) VALUES (?, ?) "
            "ON CONFLICT(bot) DO UPDATE SET next_update = excluded.next_update",
            (self.bot_id, self.next_update),
        )

    def may_reply(self, user: str) -> bool:
        """At most one automatic reply (pairing code, refusal) a minute per user."""
        now = time.monotonic()
        if now - self.last_reply.get(user, -1e9) < _REPLY_INTERVAL:
            return False
        self.last_reply[user] = now
        return True


async def _agent_for(bot: _Bot, user: dict[str, Any], uid: str, chat_id: int) -> str | None:
    """The agent this user may talk to, or None after telling them why not (rate-limited)."""
    config = bot.config
    listed = str(user.get("id")) in config.allow_from or (user.get("username") or "") in config.allow_from
    if config.dm_policy == "open" or listed:
        return config.agent
    if config.dm_policy == "pairing":
        agent = await core.paired_agent(CHANNEL, uid)
        if agent is not None:
            return agent
        if bot.may_reply(uid):
            try:
                code = await core.pairing_code(CHANNEL, uid, user.get("username") or user.get("first_name") or "")
                text = (f"Hi! I don't know you yet. To pair, ask my owner to run:\n\n"
                        f"beamclaw pair telegram {code}\n\nThe code is valid for 60 minutes.")  # fmt: skip
            except core.PairingError:
                text = "Hi! I can't take new pairing requests right now; please try again later."
            await bot.api.call("sendMessage", chat_id=chat_id, text=text)
        return None
    if bot.may_reply(uid):
        await bot.api.call("sendMessage", chat_id=chat_id, text="Sorry, this bot only talks to people it knows.")
    return None


async def _photo(bot: _Bot, message: dict[str, Any]) -> tuple[str, ...]:
    sizes = [p for p in message.get("photo") or [] if (p.get("file_size") or 0) <= MAX_PHOTO]
    if not sizes:
        return ()
    best = max(sizes, key=lambda p: p.get("file_size") or 0)
    info = await bot.api.call("getFile", file_id=best["file_id"])
    data = await bot.api.download(info["file_path"], MAX_PHOTO)
    return (f"data:image/jpeg;base64,{base64.b64encode(data).decode()}",)


async def _voice(bot: _Bot, message: dict[str, Any], chat_id: int) -> str | None:
    transcription = bot.gateway.transcription
    if not transcription.base_url:
        await bot.api.call("sendMessage", chat_id=chat_id, text=(
            "I can't listen to voice messages here: no transcription service is configured "
            "([gateway.transcription] base_url). Please type your message."))  # fmt: skip
        return None
    info = await bot.api.call("getFile", file_id=message["voice"]["file_id"])
    audio = await bot.api.download(info["file_path"], 20 * 1024 * 1024)
    headers = {}
    if transcription.api_key is not None:
        headers["Authorization"] = f"Bearer {transcription.api_key.get('voice transcription')}"
    response = await bot.client.post(
        transcription.base_url.rstrip("/") + "/audio/transcriptions",
        headers=headers,
        timeout=120,
        files={"file": ("voice.ogg", audio, "audio/ogg")},
        data={"model": transcription.model},
    )
    if response.status_code != 200:
        await bot.api.call("sendMessage", chat_id=chat_id, text="Sorry, I couldn't transcribe that voice message.")
        return None
    text: str = response.json().get("text", "")
    return text


async def handle_update(bot: _Bot, update: dict[str, Any]) -> None:
    """One update: policy, commands, attachments, then a turn for the agent."""
    message = update.get("message")
    if not isinstance(message, dict) or message.get("chat", {}).get("type") != "private":
        return  # edits, channel posts and groups are not conversations with the agent
    chat_id = int(message["chat"]["id"])
    user = message.get("from") or {}
    uid = f"telegram:{user.get('id')}"
    agent = await _agent_for(bot, user, uid, chat_id)
    if agent is None:
        return
    handle = await core.open_session(uid, agent, CHANNEL)
    text = (message.get("text") or message.get("caption") or "").strip()
    command = text.split()[0].split("@")[0].lower() if text.startswith("/") else ""
    if command == "/start":
        await bot.api.call("sendMessage", chat_id=chat_id, text="Hello! Send me a message to start. /new starts over.")
        return
    if command == "/new":
        await core.reset_session(handle)
        await bot.api.call("sendMessage", chat_id=chat_id, text="New conversation.")
        return
    if command == "/stop":
        if not await core.stop_turn(handle):
            await bot.api.call("sendMessage", chat_id=chat_id, text="There is nothing to stop.")
        return
    images = await _photo(bot, message)
    if message.get("voice"):
        spoken = await _voice(bot, message, chat_id)
        if spoken is None:
            return
        text = spoken
    if not text and not images:
        return
    channel = TelegramChannel(bot.api, chat_id, bot.config.edit_interval_seconds)
    await core.submit(handle, text or "(a photo)", channel, images)


async def _handle_safely(bot: _Bot, update: dict[str, Any]) -> None:
    try:
        await handle_update(bot, update)
    except (TelegramError, core.InvalidAgentName, sv.NoProc, sv.CallTimeout) as exc:
        logger.warning("Telegram update {} not handled: {}", update.get("update_id"), exc)
    update_id = update.get("update_id")
    if isinstance(update_id, int):
        bot.save_offset(update_id)


async def _poll(bot: _Bot) -> None:
    await bot.poll_api.call("deleteWebhook", drop_pending_updates=False)
    poll = bot.config.poll_timeout_seconds
    while True:
        try:
            updates = await bot.poll_api.call(
                "getUpdates", http_timeout=poll + 15, timeout=poll, offset=bot.next_update, allowed_updates=["message"]
            )
        except TelegramError as exc:
            await _back_off(bot, exc)
            continue
        bot.conflicts = 0
        for update in updates or []:
            # Never the same update twice, even if Telegram sends one again.
            if (
                isinstance(update, dict)
                and isinstance(update.get("update_id"), int)
                and (update["update_id"] >= bot.next_update)
            ):
                await _handle_safely(bot, update)


async def _back_off(bot: _Bot, exc: TelegramError) -> None:
    if exc.code == 409:
        if bot.conflicts == 0:  # logged once per streak, not on every retry
            logger.warning("Telegram: another poller or a webhook holds this bot ({}); backing off", exc)
        bot.conflicts += 1
        await trio.sleep(min(30.0, 0.5 * 2.0**bot.conflicts))
    else:
        logger.warning("Telegram getUpdates failed: {}; retrying", exc)
        await trio.sleep(min(30.0, exc.retry_after or 3.0))


async def _webhook(bot: _Bot, url: str) -> None:
    secret = bot.config.webhook_secret.get("the Telegram webhook") if bot.config.webhook_secret else None
    await bot.poll_api.call("setWebhook", url=url, secret_token=secret, allowed_updates=["message"])
    while True:
        message = await sv.receive()
        if isinstance(message, tuple) and message[0] == "update":
            update = message[1]
            if isinstance(update.get("update_id"), int) and update["update_id"] >= bot.next_update:
                await _handle_safely(bot, update)


async def telegram_bot(
    gateway: GatewayConfig, data_dir: Path, webhook_url: str, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """The channel: polls (or takes webhook updates) until cancelled."""
    config = gateway.channels.telegram
    token = config.token.get("the Telegram channel")
    bot_id = _bot_id(token)
    sv.register(bot_name(token))  # a second poller for the same token fails here, not at Telegram
    db = await trio.to_thread.run_sync(_open_offsets, data_dir / "gateway.db")
    row = db.execute("SELECT next_update FROM telegram_offsets WHERE bot = ?", (bot_id,)).fetchone()
    shared = await core.owned_http_client(SENDER)  # replies outlive this process: see HttpClientOwner
    client = httpx.AsyncClient(trust_env=False)
    bot = _Bot(
        config,
        gateway,
        BotApi(shared, config.api_base, token),
        shared,
        BotApi(client, config.api_base, token),
        db,
        bot_id,
        row[0] if row else 0,
    )
    task_status.started()
    try:
        if config.mode == "webhook":
            await _webhook(bot, webhook_url)
        else:
            await _poll(bot)
    finally:
        # Even when the process is killed: the long poll's connection must close now, so
        # the next poller does not meet it at Telegram (409).
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            await client.aclose()
        db.close()


def _bot_id(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def bot_name(token: str) -> str:
    """The registered name of the channel process for the bot with *token* (one per token)."""
    return f"beamclaw_gateway.telegram:{_bot_id(token)}"


async def webhook_update(token: str, update: dict[str, Any]) -> bool:
    """Hand a webhook update to the channel; False when the channel is not running."""
    try:
        return sv.send(bot_name(token), ("update", update))
    except sv.NoProc:
        return False
