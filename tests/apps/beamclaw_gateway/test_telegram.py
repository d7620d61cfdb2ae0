"""The Telegram channel against a loopback fake of the Bot API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import beamclaw_core as core
import supervision as sv
from beamclaw_gateway._telegram_bot import bot_name
from tests.support.model_server import Hold, Reply, Step
from tests.support.telegram_api import FakeTelegram, fake_telegram

from .conftest import Gateway, RunGateway

TOKEN = "123456:test-telegram-token-abcdefghijkl"


async def eventually(check: Callable[[], bool], timeout: float = 15.0) -> None:
    with trio.fail_after(timeout):
        while not check():
            await trio.sleep(0.02)


@pytest.fixture
def telegram(run_gateway: RunGateway, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)

    @asynccontextmanager
    async def running(
        *steps: Step, repeat: Step | None = None, **telegram: Any
    ) -> AsyncIterator[tuple[Gateway, FakeTelegram]]:
        async with fake_telegram(TOKEN) as fake:
            channel = {"enabled": True, "api_base": fake.base_url, "poll_timeout_seconds": 2,
                       "edit_interval_seconds": 0.0, **telegram}  # fmt: skip
            async with run_gateway(*steps, repeat=repeat, gateway_table={"channels": {"telegram": channel}}) as g:
                yield g, fake

    return running


async def test_pairing_keeps_strangers_out_until_approved(telegram: Callable[..., Any]) -> None:
    async with telegram(Reply("Hello, paired friend.")) as (g, fake):
        fake.push(42, "hi there")
        await eventually(lambda: bool(fake.texts(42)))
        (invite,) = fake.texts(42)
        code = invite.split("beamclaw pair telegram ")[1].split()[0]
        fake.push(42, "hello? anyone?")
        await eventually(lambda: not fake.updates and fake.polls_in_flight == 1)
        assert fake.texts(42) == [invite] and g.model.count == 0  # one code a minute; nothing reached an agent
        db = core.open_database(g.home / "sessions.db")
        assert core.approve(db, "telegram", code, "default") == "telegram:42"
        fake.push(42, "now?")
        await eventually(lambda: "Hello, paired friend." in fake.texts(42))
        assert g.model.requests[0]["messages"][-1] == {"role": "user", "content": "now?"}
        assert any(a["action"] == "typing" for a in fake.actions)


async def test_a_long_reply_is_streamed_by_editing_and_split(telegram: Callable[..., Any]) -> None:
    answer = "**Bold start.** " + "word " * 1200
    async with telegram(Reply(answer), dm_policy="open") as (_, fake):
        fake.push(7, "tell me a lot")
        await eventually(lambda: len(fake.texts(7)) >= 2 and fake.texts(7)[0].startswith("<b>Bold start.</b>"))
        texts = fake.texts(7)
        assert all(len(t) <= 4096 for t in texts)
        assert " ".join(texts).replace("<b>Bold start.</b>", "**Bold start.**").split() == answer.split()
        assert fake.edits and fake.edits[-1]["parse_mode"] == "HTML"


async def test_a_channel_crash_mid_poll_loses_and_repeats_nothing(telegram: Callable[..., Any]) -> None:
    async with telegram(repeat=Reply("ack"), dm_policy="open") as (g, fake):
        fake.push(5, "one")
        await eventually(lambda: g.model.count == 1 and fake.polls_in_flight == 1)
        old = sv.whereis(bot_name(TOKEN))
        sv.kill(bot_name(TOKEN), RuntimeError("channel crash"))
        await eventually(lambda: sv.whereis(bot_name(TOKEN)) not in (None, old))
        for text in ("two", "three"):
            fake.push(5, text)
        await eventually(lambda: g.model.count == 3)
        await trio.sleep(0.3)
        assert g.model.count == 3 and fake.conflicts == 0
        users = [r["messages"][-1]["content"] for r in g.model.requests]
        assert users == ["one", "two", "three"]
        # Every reply arrived, the one that was being sent when the poller died too.
        await eventually(lambda: fake.texts(5).count("ack") == 3)


async def test_the_offset_survives_a_restart(telegram: Callable[..., Any], run_gateway: RunGateway) -> None:
    async with telegram(repeat=Reply("ack"), dm_policy="open") as (g, fake):
        fake.push(5, "first")
        await eventually(lambda: g.model.count == 1)
        home = g.home
    async with telegram(repeat=Reply("ack"), dm_policy="open") as (g, fake):
        assert g.home == home
        # A new fake forgets what was confirmed: it offers update 1 again, as Telegram would
        # before an offset is confirmed. The saved offset skips it.
        fake.push(5, "first")
        fake.push(5, "second")
        await eventually(lambda: g.model.count == 1)
        await trio.sleep(0.3)
        assert [r["messages"][-1]["content"] for r in g.model.requests] == ["second"]


async def test_429_and_refused_html_are_handled(telegram: Callable[..., Any]) -> None:
    async with telegram(Reply("fine REJECT-HTML text"), dm_policy="open") as (_, fake):
        too_many = {"description": "Too Many Requests", "parameters": {"retry_after": 1}}
        fake.fail_next["sendChatAction"] = [(429, too_many)]
        fake.push(9, "go")
        await eventually(lambda: any("fine" in t for t in fake.texts(9)))
        assert fake.calls.count("sendChatAction") == 2  # retried after retry_after
        assert fake.texts(9) == ["fine REJECT-HTML text"]  # sent as plain text after the HTML was refused
        assert "parse_mode" not in fake.sent[-1]


async def test_commands(telegram: Callable[..., Any]) -> None:
    async with telegram(Reply("first answer"), dm_policy="open") as (_, fake):
        fake.push(3, "remember this")
        await eventually(lambda: "first answer" in fake.texts(3))
        fake.push(3, "/stop")
        await eventually(lambda: "There is nothing to stop." in fake.texts(3))
        fake.push(3, "/new")
        await eventually(lambda: "New conversation." in fake.texts(3))
        handle = await core.open_session("telegram:3", "default", "telegram")
        assert await core.history(handle) == []
        fake.push(3, voice={"file_id": "v1", "duration": 2})
        await eventually(lambda: any("transcription" in t for t in fake.texts(3)))


async def test_a_photo_reaches_the_model(telegram: Callable[..., Any]) -> None:
    async with telegram(Reply("a cat"), dm_policy="open") as (g, fake):
        fake.files["files/p1"] = b"\xff\xd8fake-jpeg"
        fake.push(4, caption="what is this?", photo=[{"file_id": "p1", "file_size": 11, "width": 1, "height": 1}])
        await eventually(lambda: "a cat" in fake.texts(4))
        content = g.model.requests[0]["messages"][-1]["content"]
        assert content[0] == {"type": "text", "text": "what is this?"}
        assert content[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")


async def test_the_webhook_checks_its_secret(telegram: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TG_WEBHOOK_SECRET", "hook-secret-123")
    settings = {"mode": "webhook", "webhook_url": "https://example.org/webhook/telegram",
                "webhook_secret": {"env": "TG_WEBHOOK_SECRET"}, "dm_policy": "open"}  # fmt: skip
    async with telegram(Reply("via webhook"), **settings) as (g, fake):
        await eventually(lambda: fake.webhook is not None)
        assert fake.webhook["secret_token"] == "hook-secret-123"
        update = {"update_id": 77, "message": {"message_id": 1, "chat": {"id": 8, "type": "private"},
                                               "from": {"id": 8}, "text": "hello hook"}}  # fmt: skip
        async with g.client(headers={"Authorization": ""}) as http:
            wrong = await http.post("/webhook/telegram", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "x"})
            assert wrong.status_code == 401
            ok = await http.post(
                "/webhook/telegram", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "hook-secret-123"}
            )
            assert ok.status_code == 200 and ok.json() == {"ok": True}
            await eventually(lambda: "via webhook" in fake.texts(8))
            again = await http.post(
                "/webhook/telegram", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "hook-secret-123"}
            )
            assert again.status_code == 200
        await trio.sleep(0.3)
        assert g.model.count == 1  # the repeated update was not handled twice


async def test_stop_cancels_the_running_turn(telegram: Callable[..., Any]) -> None:
    hold = Hold(then=Reply("too late"))
    async with telegram(hold, Reply("after the stop"), dm_policy="open") as (_, fake):
        fake.push(6, "think for a long time")
        await eventually(hold.reached.is_set)
        fake.push(6, "/stop")
        await eventually(lambda: "Stopped." in fake.texts(6))
        hold.release()
        fake.push(6, "are you there?")
        await eventually(lambda: "after the stop" in fake.texts(6))
        assert "too late" not in fake.texts(6)


async def test_conflicts_are_backed_off_and_allowlist_is_kept(telegram: Callable[..., Any]) -> None:
    conflict = (409, {"description": "Conflict: terminated by other getUpdates request"})
    async with telegram(repeat=Reply("welcome"), dm_policy="allowlist", allow_from=["user11"]) as (g, fake):
        fake.fail_next["getUpdates"] = [conflict, conflict]
        fake.push(11, "let me in")  # allowed by username
        fake.push(12, "and me?")  # not on the list
        await eventually(lambda: "welcome" in fake.texts(11) and fake.texts(12), timeout=30)
        assert fake.calls.count("getUpdates") >= 3
        assert fake.texts(12) == ["Sorry, this bot only talks to people it knows."] and g.model.count == 1
