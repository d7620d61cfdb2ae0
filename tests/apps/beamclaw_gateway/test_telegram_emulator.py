"""The Telegram channel against telegram-test-api, an independent Bot API emulator (npm).

The emulator answers getUpdates at once (no long polling) and does not know
sendChatAction (a 500 on every turn), which is what the poll floor and the quiet
logging of failing typing actions are for. Every HTML message the bot sends is judged
by `telegram_html_errors` (tests/support), which shares no code with the channel.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from loguru import logger

import supervision as sv
from beamclaw_gateway._telegram_bot import bot_name
from tests.support.model_server import Echo, Reply, Step
from tests.support.telegram_emulator import Emulator, ensure_installed, telegram_emulator
from tests.support.telegram_html import telegram_html_errors, visible

from .conftest import Gateway, RunGateway, free_port

TOKEN = "654321:emulated-telegram-token-abcdefgh"


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
    with trio.fail_after(timeout):
        while not await check():
            await trio.sleep(0.05)


@pytest.fixture(scope="session")
def emulator_installed() -> None:
    reason = ensure_installed()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def emulated(run_gateway: RunGateway, monkeypatch: pytest.MonkeyPatch, emulator_installed: None) -> Callable[..., Any]:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)

    @asynccontextmanager
    async def running(*steps: Step, repeat: Step | None = None) -> AsyncIterator[tuple[Gateway, Emulator]]:
        async with telegram_emulator(TOKEN, free_port()) as emulator:
            # api_base is the channel's Bot API root (gateway.channels.telegram.api_base).
            channel = {"enabled": True, "api_base": emulator.api_base, "dm_policy": "open",
                       "edit_interval_seconds": 0.0}  # fmt: skip
            async with run_gateway(*steps, repeat=repeat, gateway_table={"channels": {"telegram": channel}}) as g:
                yield g, emulator

    return running


async def test_a_message_in_and_the_streamed_reply_out(emulated: Callable[..., Any]) -> None:
    answer = "Here is **the answer**, streamed: " + " ".join(f"word{i}" for i in range(60))
    async with emulated(Reply(answer)) as (_, emulator):
        await until(lambda: _polls_at_least(emulator, 5))
        idle = await emulator.poll_times()
        # The emulator answers getUpdates at once; idle, the channel still polls ~2 times
        # a second, not ~1,000 (a lower bound on the gaps, with room for jitter).
        assert min(b - a for a, b in itertools.pairwise(idle)) >= 0.25
        await emulator.say(41, "hello bot")

        async def answered() -> bool:
            return any(m.get("parse_mode") == "HTML" for m in await emulator.bot_messages(41))

        await until(answered)
        (message,) = await emulator.bot_messages(41)  # one message: the draft, edited into the answer
        assert message["text"].startswith("Here is <b>the answer</b>, streamed: word0")
        assert telegram_html_errors(message["text"]) == [] and visible(message["text"]) == answer.replace("**", "")


async def _polls_at_least(emulator: Emulator, count: int) -> bool:
    return len(await emulator.poll_times()) >= count


async def test_a_long_reply_with_a_code_block_arrives_in_valid_pieces(emulated: Callable[..., Any]) -> None:
    code = "\n".join(f"for (i = {i}; i < n && ok; i++) {{ x <<= 1; }}  // {i}" for i in range(300))
    answer = f"The loop:\n\n```c\n{code}\n```\n\nThat is **all**."
    async with emulated(Reply(answer)) as (_, emulator):
        await emulator.say(42, "write it")

        async def done() -> bool:
            messages = await emulator.bot_messages(42)
            return bool(messages) and messages[-1]["text"].endswith("That is <b>all</b>.")

        await until(done)
        texts = [m["text"] for m in await emulator.bot_messages(42)]
        assert len(texts) >= 3
        for text in texts:
            assert telegram_html_errors(text) == [], text
            assert text.count('<pre><code class="language-c">') == 1  # closed at each cut, reopened
        lines = "\n".join(visible(t) for t in texts).split("\n")
        assert [line for line in lines if line.startswith("for (")] == code.split("\n")  # once each, in order


# A kill can land while httpx reads a response, which leaves one of httpx's async
# generators to the garbage collector (Trio finalizes it, and warns): that is what a kill
# at an arbitrary point means, not a leak of the channel's (its request bodies are not
# generators, see _telegram_api._Body). The test collects them before it ends, so none
# is reported in a later test.
@pytest.mark.filterwarnings("ignore:Async generator 'http(x|core)[.]:ResourceWarning")
async def test_a_channel_killed_again_and_again_answers_every_message_exactly_once(
    emulated: Callable[..., Any],
) -> None:
    records: list[Any] = []
    sink = logger.add(lambda message: records.append(message.record), level="INFO")
    users, rounds = (51, 52, 53), 4
    try:
        async with emulated(repeat=Echo()) as (g, emulator):
            pid = sv.whereis(bot_name(TOKEN))
            for round_ in range(rounds):
                for user in users:
                    await emulator.say(user, f"message {round_} from {user}")
                polls = len(await emulator.poll_times())
                assert pid is not None
                sv.kill(pid, RuntimeError(f"kill {round_}"))  # wherever it is: polling, storing, acting
                await until(lambda old=pid: _restarted(old))  # type: ignore[misc]
                pid = sv.whereis(bot_name(TOKEN))
                await until(lambda polls=polls: _polls_at_least(emulator, polls + 1))  # type: ignore[misc]

            async def all_answered() -> bool:
                counts = [len(await emulator.bot_messages(u)) for u in users]
                return sum(counts) >= len(users) * rounds

            await until(all_answered, timeout=60)
            polls = len(await emulator.poll_times())
            await until(lambda: _polls_at_least(emulator, polls + 3))  # time for a late duplicate to show
            for user in users:
                texts = [m["text"] for m in await emulator.bot_messages(user)]
                assert texts == [f"You said: message {r} from {user}" for r in range(rounds)]
            assert g.model.count == len(users) * rounds
    finally:
        logger.remove(sink)
        gc.collect()
    # The emulator has no sendChatAction: 12 turns, 4 restarts, one line in the log.
    typing = [r for r in records if "sendChatAction" in r["message"] or "send_typing" in r["message"]]
    assert len(typing) == 1 and typing[0]["exception"] is None


async def _restarted(old: sv.Pid) -> bool:
    return sv.whereis(bot_name(TOKEN)) not in (None, old)
