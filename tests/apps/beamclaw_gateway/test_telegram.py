"""The Telegram channel against a loopback fake of the Bot API."""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from loguru import logger

import beamclaw_core as core
import beamclaw_gateway as gateway
import beamclaw_gateway._telegram_bot as bot_module
import supervision as sv
from beamclaw_base import StoreConfig, open_store
from beamclaw_core._session_messages import Status
from beamclaw_gateway import supervision_tree as gateway_tree
from beamclaw_gateway._telegram_bot import bot_name
from beamclaw_gateway._telegram_ledger import Ledger
from tests.support.model_server import Echo, Hold, Reply, Step
from tests.support.stores import sql
from tests.support.telegram_api import FakeTelegram, fake_telegram
from tests.support.telegram_html import telegram_html_errors, visible

from .conftest import IN_DATA_DIR, Gateway, RunGateway

TOKEN = "123456:test-telegram-token-abcdefghijkl"


async def eventually(check: Callable[[], bool], timeout: float = 15.0) -> None:
    with trio.fail_after(timeout):
        while not check():
            await trio.sleep(0.02)


async def idle(user_id: str, timeout: float = 15.0) -> None:
    """Until the conversation has no run: a reply is on screen before its run is finished."""
    handle = await core.open_session(user_id, "default", "telegram")
    with trio.fail_after(timeout):
        while (await sv.call(handle.dest, Status())).turns:
            await trio.sleep(0.02)


@pytest.fixture
def telegram(run_gateway: RunGateway, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)

    @asynccontextmanager
    async def running(
        *steps: Step,
        repeat: Step | None = None,
        first_update: int = 1,
        instant: bool = False,
        gateway_extra: dict[str, Any] | None = None,
        store: StoreConfig = IN_DATA_DIR,
        **telegram: Any,
    ) -> AsyncIterator[tuple[Gateway, FakeTelegram]]:
        async with fake_telegram(TOKEN, first_update, instant) as fake:
            channel = {"enabled": True, "api_base": fake.base_url, "poll_timeout_seconds": 2,
                       "edit_interval_seconds": 0.0, **telegram}  # fmt: skip
            table = {"channels": {"telegram": channel}, **(gateway_extra or {})}
            async with run_gateway(*steps, repeat=repeat, gateway_table=table, store=store) as g:
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
        db = core.open_session_store(StoreConfig(), g.home)
        assert db.transact(lambda tx: core.approve(tx, "telegram", code, "default")) == "telegram:42"
        db.close()
        fake.push(42, "now?")
        await eventually(lambda: "Hello, paired friend." in fake.texts(42))
        assert g.model.requests[0]["messages"][-1] == {"role": "user", "content": "now?"}
        assert any(a["action"] == "typing" for a in fake.actions)


def sent_html(fake: FakeTelegram) -> list[str]:
    """Every text the channel sent or edited in as HTML."""
    return [m["text"] for m in [*fake.sent, *fake.edits] if m.get("parse_mode") == "HTML"]


async def test_a_long_reply_is_streamed_by_editing_and_split(telegram: Callable[..., Any]) -> None:
    answer = "**Bold start.** " + "word " * 1200
    async with telegram(Reply(answer), dm_policy="open") as (_, fake):
        fake.push(7, "tell me a lot")
        await eventually(lambda: len(fake.texts(7)) >= 2 and fake.texts(7)[0].startswith("<b>Bold start.</b>"))
        texts = fake.texts(7)
        assert all(telegram_html_errors(t) == [] for t in texts)  # each one valid, 4,096 visible at most
        assert " ".join(visible(t) for t in texts).split() == answer.replace("**", "").split()
        assert fake.edits and fake.edits[-1]["parse_mode"] == "HTML"


async def test_a_long_code_block_arrives_in_valid_pieces_and_a_refused_one_alone_as_plain(
    telegram: Callable[..., Any],
) -> None:
    code = "\n".join(f"if a[{i}] < b and c & d:  # step {i}" for i in range(400))
    answer = f"Here it is:\n\n```python\n{code}\n```\n\nDone, REJECT-HTML **end**."
    async with telegram(Reply(answer), dm_policy="open") as (_, fake):
        fake.push(8, "write the code")
        await eventually(lambda: any("Done" in t for t in fake.texts(8)))
        texts = fake.texts(8)
        assert len(texts) == 4
        html = sent_html(fake)
        assert all(telegram_html_errors(t) == [] for t in html)  # nothing refused but the marked piece
        assert sum('<pre><code class="language-python">' in t for t in html) >= 3  # reopened after each cut
        # The refused piece went out as its own plain text: nothing repeated, nothing lost.
        assert texts[-1].endswith("Done, REJECT-HTML end.") and "parse_mode" not in fake.sent[-1]
        lines = "\n".join([*(visible(t) for t in texts[:-1]), texts[-1]]).split("\n")
        assert [line for line in lines if line.startswith("if a[")] == code.split("\n")


async def test_a_channel_crash_mid_poll_loses_and_repeats_nothing(
    telegram: Callable[..., Any], store_config: StoreConfig
) -> None:
    async with telegram(repeat=Reply("ack"), dm_policy="open", store=store_config) as (g, fake):
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


async def test_the_offset_survives_a_restart(telegram: Callable[..., Any], store_config: StoreConfig) -> None:
    async with telegram(repeat=Reply("ack"), dm_policy="open", store=store_config) as (g, fake):
        fake.push(5, "first")
        await eventually(lambda: g.model.count == 1)
        home = g.home
    async with telegram(repeat=Reply("ack"), dm_policy="open", store=store_config) as (g, fake):
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
        await idle("telegram:3")
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


async def test_the_webhook_checks_its_secret(
    telegram: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, store_config: StoreConfig
) -> None:
    monkeypatch.setenv("TG_WEBHOOK_SECRET", "hook-secret-123")
    settings = {"mode": "webhook", "webhook_url": "https://example.org/webhook/telegram",
                "webhook_secret": {"env": "TG_WEBHOOK_SECRET"}, "dm_policy": "open"}  # fmt: skip
    async with telegram(Reply("via webhook"), store=store_config, **settings) as (g, fake):
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


async def test_a_conflict_that_persists_is_logged_as_an_error_once_and_polling_goes_on(
    telegram: Callable[..., Any],
) -> None:
    records: list[Any] = []
    sink = logger.add(lambda message: records.append(message.record), level="INFO")
    conflict = (409, {"description": "Conflict: terminated by other getUpdates request"})
    try:
        async with telegram(repeat=Echo(), dm_policy="open") as (_, fake):
            fake.fail_next["getUpdates"] = [conflict] * 5
            fake.push(13, "anyone?")
            await eventually(lambda: "You said: anyone?" in fake.texts(13), timeout=60)
    finally:
        logger.remove(sink)
    conflicts = [r for r in records if "409" in r["message"]]
    assert [r["level"].name for r in conflicts] == ["WARNING", "ERROR"]  # once when it starts, once when it lasts
    assert "something outside this cluster polls this bot's token" in conflicts[1]["message"]


# --- crash-proofing: the Bot API as it really behaves ------------------------------------

RESTARTED = (
    "Sorry, I was restarted before I could answer your message \u201cthink hard about this\u201d. Please send it again."
)


async def test_a_turn_cut_by_a_restart_is_reported_once_and_never_answered_twice(
    telegram: Callable[..., Any], store_config: StoreConfig
) -> None:
    hold = Hold(then=Reply("the answer that never came"))
    async with telegram(hold, dm_policy="open", store=store_config) as (_, fake):
        fake.push(5, "think hard about this")
        await eventually(hold.reached.is_set)
    # The daemon stopped mid-turn. The next one does not replay the message (its answer
    # might have been half sent) but tells the user, once.
    async with telegram(repeat=Echo(), dm_policy="open", first_update=10, store=store_config) as (g, fake):
        await eventually(lambda: RESTARTED in fake.texts(5))
        fake.push(5, "hello again")
        await eventually(lambda: "You said: hello again" in fake.texts(5))
        assert fake.texts(5) == [RESTARTED, "You said: hello again"] and g.model.count == 1
    async with telegram(repeat=Echo(), dm_policy="open", first_update=20, store=store_config) as (g, fake):
        await eventually(lambda: fake.polls_in_flight == 1)  # the notices go out before the first poll
        assert fake.texts(5) == [] and g.model.count == 0


def kill_channel(reason: str) -> Callable[[], None]:
    return lambda: sv.kill(bot_name(TOKEN), RuntimeError(reason))


async def new_channel(old: sv.Pid | None) -> sv.Pid:
    await eventually(lambda: sv.whereis(bot_name(TOKEN)) not in (None, old))
    pid = sv.whereis(bot_name(TOKEN))
    assert pid is not None
    return pid


async def test_a_kill_while_acting_or_preparing_neither_repeats_nor_loses_an_update(
    telegram: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, store_config: StoreConfig
) -> None:
    hello = "Hello! Send me a message to start. /new starts over."
    after_claim: list[Callable[[], None]] = []
    claim = Ledger.claim

    async def claim_then_maybe_die(self: Ledger, *args: Any) -> Any:
        pending = await claim(self, *args)
        if after_claim:
            after_claim.pop()()
        return pending

    monkeypatch.setattr(Ledger, "claim", claim_then_maybe_die)
    async with telegram(repeat=Reply("a cat"), dm_policy="open", store=store_config) as (g, fake):
        pid = await new_channel(None)
        # Killed right after claiming /start (committed: it will not be handled again),
        # before replying: the act is shielded, so the reply still goes out, once.
        after_claim.append(kill_channel("killed after the claim"))
        fake.push(3, "/start")
        pid = await new_channel(pid)
        await eventually(lambda: hello in fake.texts(3))
        # Killed while sending the reply to /new: it completes and is not sent again.
        fake.hooks["sendMessage"] = kill_channel("killed mid-act")
        fake.push(3, "/new")
        pid = await new_channel(pid)
        # Killed while downloading a photo (preparing, nothing sent yet): the next channel
        # prepares it again from the inbox, and the model sees it once.
        fake.files["files/p1"] = b"\xff\xd8fake-jpeg"
        fake.hooks["getFile"] = kill_channel("killed mid-prepare")
        fake.push(3, caption="what is this?", photo=[{"file_id": "p1", "file_size": 11, "width": 1, "height": 1}])
        await new_channel(pid)
        await eventually(lambda: "a cat" in fake.texts(3))
        await eventually(lambda: fake.polls_in_flight == 1 and not fake.updates)
        assert fake.texts(3) == [hello, "New conversation.", "a cat"] and g.model.count == 1
        assert fake.calls.count("getFile") == 2  # prepared twice, acted on once


async def test_polls_are_spaced_when_the_server_answers_at_once_and_failures_back_off(
    telegram: Callable[..., Any],
) -> None:
    async with telegram(repeat=Echo(), dm_policy="open", instant=True) as (_, fake):
        await eventually(lambda: len(fake.poll_times) >= 5)
        # Idle, without a floor this server drew ~1,000 polls a second; now they are 0.5 s
        # apart (checked with room for jitter: a lower bound only a hot loop breaks).
        gaps = [b - a for a, b in itertools.pairwise(fake.poll_times)]
        assert min(gaps) >= 0.25
        fake.push(4, "still there?")  # a poll that brings an update is followed at once
        await eventually(lambda: "You said: still there?" in fake.texts(4))
        # Failed polls wait 1 s, then 2 s (±25 %, so that nodes do not come back together):
        # never a hot loop on errors either.
        fake.fail_next["getUpdates"] = [(502, {"description": "Bad Gateway"})] * 2
        start = len(fake.poll_times)
        await eventually(lambda: len(fake.poll_times) >= start + 3)
        failing = fake.poll_times[start - 1 :]
        assert failing[2] - failing[1] >= 0.7 and failing[3] - failing[2] >= 1.45


async def test_a_failing_typing_action_is_logged_once_in_one_line(telegram: Callable[..., Any]) -> None:
    records: list[Any] = []
    sink = logger.add(lambda message: records.append(message.record), level="INFO")
    try:
        async with telegram(repeat=Reply("ok"), dm_policy="open") as (_, fake):
            fake.fail_next["sendChatAction"] = [(500, {"description": "Internal Server Error"})] * 3
            for turn in range(1, 5):
                fake.push(2, f"turn {turn}")
                await eventually(lambda turn=turn: fake.texts(2).count("ok") == turn)  # type: ignore[misc]
    finally:
        logger.remove(sink)
    typing = [r for r in records if "sendChatAction" in r["message"] or "send_typing" in r["message"]]
    assert [r["level"].name for r in typing] == ["WARNING", "INFO"]  # failing (once), then working again
    assert "works again after 3 failures" in typing[1]["message"]
    assert all(r["exception"] is None and "\n" not in r["message"] for r in typing)


async def test_a_crash_looping_channel_is_back_in_seconds_and_the_http_server_is_untouched(
    telegram: Callable[..., Any], tmp_path: Path
) -> None:
    async with telegram(repeat=Echo(), dm_policy="open") as (g, fake):
        before = sv.inspect_tree("beamclaw_gateway")
        pid, polls = await new_channel(None), 0
        for kill in range(3):
            await eventually(lambda polls=polls: len(fake.poll_times) > polls)  # type: ignore[misc]
            polls = len(fake.poll_times)  # it runs (it polled): a crash of a channel, not of its start
            sv.kill(pid, RuntimeError(f"crash {kill}"))
            pid = await new_channel(pid)
        fake.push(6, "after three crashes")
        await eventually(lambda: "You said: after three crashes" in fake.texts(6))
        after = sv.inspect_tree("beamclaw_gateway")
        http = [next(c for c in tree["children"] if c["id"] == "http") for tree in (before, after)]
        assert http[0]["pid"] == http[1]["pid"] and after["restarts"] == 0
        telegram_tree = next(c for c in after["children"] if c["id"] == "telegram")
        assert [c["id"] for c in telegram_tree["children"]] == ["store", "sender", "channel"]
        assert telegram_tree["restarts"] == 0 and telegram_tree["children"][2]["restarts"] == 3
        assert g.model.count == 1
    # The channel's restart delay is capped at 5 s (±20 % jitter), and a channel that
    # keeps crashing escalates from the telegram subtree less often than the gateway's
    # intensity allows: it cannot take the HTTP server down.
    gateway_spec = gateway_tree({"channels": {"telegram": {"enabled": True}}}, tmp_path)
    subtree = next(c for c in gateway_spec.children if c.id == "telegram").start.args[0]  # type: ignore[attr-defined]
    channel = next(c for c in subtree.children if c.id == "channel")
    assert channel.backoff is not None and max(channel.backoff.delay(n) for n in range(50)) <= 6.0
    quickest = [channel.backoff.delay(n, random.Random(0)) * 0 + min(5.0, 0.5 * 2**n) * 0.8 for n in range(50)]
    escalation_every = sum(quickest[: subtree.intensity])  # the fastest a crash loop uses up the subtree
    assert gateway_spec.intensity >= gateway_spec.period / escalation_every + 1


async def test_a_reply_nobody_waits_for_reaches_the_telegram_chat(telegram: Callable[..., Any]) -> None:
    """While the bot runs it offers `core.outbound` for telegram users: what the scheduler
    delivers (a job's reply) is sent to the user's private chat; once it stops, nothing is."""
    async with telegram(Reply("unused"), dm_policy="open") as (_, fake):
        channel = core.outbound_channel("telegram:77")
        assert channel is not None
        await channel.send("Your report is ready.")
        await eventually(lambda: fake.texts(77) == ["Your report is ready."])
        assert core.outbound_channel("telegram:not-a-number") is None
    assert core.outbound_channel("telegram:77") is None


async def test_a_webhook_update_answered_200_survives_a_channel_crash_and_is_handled_once(
    telegram: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, store_config: StoreConfig
) -> None:
    """Telegram forgets an update once the webhook answered 200: the update must be stored
    by then. The channel is crashed the moment it takes the update up (whichever step it
    reaches first), after the 200; the next channel answers it, once."""
    armed: list[str] = []

    def crash_if_armed() -> None:
        if armed:
            raise RuntimeError(armed.pop())

    receive, drain = Ledger.receive, bot_module._drain

    async def receive_or_crash(self: Ledger, updates: Any) -> int:
        crash_if_armed()
        return await receive(self, updates)

    async def drain_or_crash(bot: Any) -> None:
        crash_if_armed()
        await drain(bot)

    monkeypatch.setattr(Ledger, "receive", receive_or_crash)
    monkeypatch.setattr(bot_module, "_drain", drain_or_crash)
    monkeypatch.setenv("TG_WEBHOOK_SECRET", "hook-secret-123")
    settings = {"mode": "webhook", "webhook_url": "https://example.org/webhook/telegram",
                "webhook_secret": {"env": "TG_WEBHOOK_SECRET"}, "dm_policy": "open"}  # fmt: skip
    update = {"update_id": 90, "message": {"message_id": 1, "chat": {"id": 8, "type": "private"},
                                           "from": {"id": 8}, "text": "hello hook"}}  # fmt: skip
    secret = {"X-Telegram-Bot-Api-Secret-Token": "hook-secret-123"}
    async with telegram(repeat=Reply("via webhook"), store=store_config, **settings) as (g, fake):
        await eventually(lambda: fake.webhook is not None)
        pid = await new_channel(None)
        async with g.client(headers={"Authorization": ""}) as http:
            armed.append("crashed as it took the update")
            assert (await http.post("/webhook/telegram", json=update, headers=secret)).status_code == 200
            await new_channel(pid)
            await eventually(lambda: "via webhook" in fake.texts(8))
            assert (await http.post("/webhook/telegram", json=update, headers=secret)).status_code == 200
        await idle("telegram:8")
        await trio.sleep(0.3)
        assert not armed and fake.texts(8) == ["via webhook"] and g.model.count == 1


async def test_an_update_claimed_already_is_not_acted_on_again(
    telegram: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, store_config: StoreConfig
) -> None:
    """Each update is read from the inbox twice (as two drains, or two nodes, might): the
    second claim finds it gone and acts on nothing, so nothing is answered twice."""
    inbox = Ledger.inbox

    async def read_twice(self: Ledger) -> list[dict[str, Any]]:
        return [update for update in await inbox(self) for _ in range(2)]

    monkeypatch.setattr(Ledger, "inbox", read_twice)
    hello = "Hello! Send me a message to start. /new starts over."
    async with telegram(repeat=Reply("once"), dm_policy="open", store=store_config) as (g, fake):
        fake.push(5, "/start")
        fake.push(5, "a question")
        await eventually(lambda: "once" in fake.texts(5))
        await idle("telegram:5")
        await eventually(lambda: fake.polls_in_flight == 1 and not fake.updates)
        assert fake.texts(5) == [hello, "once"] and g.model.count == 1


#: gateway.db as BeamClaw wrote it before it had versions (user_version 0).
_UNVERSIONED_LEDGER = (
    "CREATE TABLE telegram_offsets (bot TEXT PRIMARY KEY, next_update INTEGER NOT NULL)",
    "CREATE TABLE telegram_inbox (bot TEXT NOT NULL, update_id INTEGER NOT NULL, "
    "body TEXT NOT NULL, PRIMARY KEY (bot, update_id))",
    "CREATE TABLE telegram_unanswered (bot TEXT NOT NULL, update_id INTEGER NOT NULL, "
    "chat_id INTEGER NOT NULL, boot TEXT NOT NULL, preview TEXT NOT NULL, PRIMARY KEY (bot, update_id))",
)


async def test_a_gateway_db_from_before_versions_opens_with_its_rows(
    telegram: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "home" / "gateway.db"
    path.parent.mkdir(parents=True)
    bot = bot_name(TOKEN).rpartition(":")[2]
    stored = {"update_id": 3, "message": {"message_id": 3, "chat": {"id": 5, "type": "private"}, "from": {"id": 5},
                                          "text": "stored before the upgrade"}}  # fmt: skip
    with sqlite3.connect(path) as db:
        for statement in _UNVERSIONED_LEDGER:
            db.execute(statement)
        db.execute("INSERT INTO telegram_offsets VALUES (?, 4)", (bot,))
        db.execute("INSERT INTO telegram_inbox VALUES (?, 3, ?)", (bot, json.dumps(stored)))
        db.execute("INSERT INTO telegram_unanswered VALUES (?, 2, 5, 'an-earlier-boot', 'asked before')", (bot,))
    async with telegram(repeat=Echo(), dm_policy="open", first_update=4) as (_, fake):
        await eventually(lambda: "You said: stored before the upgrade" in fake.texts(5))
        fake.push(5, "and after")
        await eventually(lambda: "You said: and after" in fake.texts(5))
        told = (
            "Sorry, I was restarted before I could answer your message \u201casked before\u201d. Please send it again."
        )
        assert fake.texts(5) == [told, "You said: stored before the upgrade", "You said: and after"]
        await idle("telegram:5")
    with sqlite3.connect(path) as db:  # version 1 (the same tables), then on to the current one
        assert db.execute("PRAGMA user_version").fetchone() == (gateway.SCHEMA.version,)
        assert db.execute("SELECT bot, next_update FROM telegram_offsets").fetchall() == [(bot, 5)]
        assert db.execute("SELECT count(*) FROM telegram_inbox").fetchone() == (0,)


async def test_a_webhook_update_that_cannot_be_stored_gets_a_503_so_telegram_sends_it_again(
    telegram: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, store_config: StoreConfig
) -> None:
    monkeypatch.setenv("TG_WEBHOOK_SECRET", "hook-secret-123")
    settings = {"mode": "webhook", "webhook_url": "https://example.org/webhook/telegram",
                "webhook_secret": {"env": "TG_WEBHOOK_SECRET"}, "dm_policy": "open"}  # fmt: skip
    update = {"update_id": 5, "message": {"message_id": 1, "chat": {"id": 8, "type": "private"},
                                          "from": {"id": 8}, "text": "hello hook"}}  # fmt: skip
    async with telegram(Reply("never"), store=store_config, **settings) as (g, fake):
        await eventually(lambda: fake.webhook is not None)
        db = open_store(store_config, gateway.SCHEMA, sqlite_file=g.home / "gateway.db")
        try:
            sql(db, "DROP TABLE telegram_inbox")  # a store that refuses the write
        finally:
            db.close()
        async with g.client(headers={"Authorization": ""}) as http:
            answer = await http.post(
                "/webhook/telegram", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "hook-secret-123"}
            )
        assert answer.status_code == 503 and "could not be stored; send it again" in answer.text
        assert g.model.count == 0
