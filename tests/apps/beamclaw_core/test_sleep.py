"""Idle conversations sleep (their processes stop) and the next message wakes them, history
and all; a conversation at work, or waiting for an approval, is never put to sleep."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import beamclaw_core as core
import supervision as sv
from beamclaw_base import StoreConfig
from beamclaw_core import _idle_sleep
from tests.support.model_server import Call, Hold, Reply

from .conftest import RunCore, wait_for

IDLE = {"maintenance": {"idle_seconds": 0.3}}


async def test_an_idle_conversation_sleeps_and_a_message_wakes_it(run_core: RunCore, store_config: StoreConfig) -> None:
    async with run_core(repeat=Reply("hello"), store=store_config, **IDLE) as r:
        ada, bob = await r.open("local:ada"), await r.open("local:bob")
        await core.send_message(ada, "first", core.CollectingChannel())
        await core.send_message(bob, "first", core.CollectingChannel())
        await wait_for(lambda: sv.count_children(core.SESSIONS_SUP).active == 0)
        assert [e.data["session_id"] for e in r.events if e.name == "session_sleep"].count(ada.id) == 1
        # The next message wakes the conversation where it was.
        result = await core.send_message(ada, "second", core.CollectingChannel())
        assert result.ok and result.text == "hello"
        assert [m.content for m in await core.history(ada)] == ["first", "hello", "second", "hello"]
        assert await core.running_sessions() == [ada.id]


async def test_a_message_racing_the_sleep_is_answered(run_core: RunCore, store_config: StoreConfig) -> None:
    async with run_core(repeat=Reply("awake"), store=store_config, **IDLE) as r:
        ada = await r.open("local:ada")
        for _ in range(20):  # messages sent as the conversation falls asleep, again and again
            await trio.sleep(0.29)
            result = await core.send_message(ada, "still there?", core.CollectingChannel())
            assert (result.ok, result.text) == (True, "awake")
        assert len(await core.history(ada)) == 40


async def test_a_turn_in_progress_or_waiting_for_approval_keeps_it_awake(
    run_core: RunCore, store_config: StoreConfig
) -> None:
    hold = Hold(Reply("slow answer"))
    steps = [hold, Reply(tool_calls=(Call("bash", {"command": "command echo hi"}),))]
    async with run_core(*steps, repeat=Reply("done"), autonomy_level="supervised", store=store_config, **IDLE) as r:
        ada = await r.open("local:ada")
        slow = await core.submit(ada, "take your time", core.CollectingChannel())
        await hold.reached.wait()
        await trio.sleep(1.0)  # well past idle_seconds, the model still thinking
        assert ada.id in await core.running_sessions()
        hold.release()
        assert (await slow.wait()).text == "slow answer"
        channel = core.CollectingChannel()
        turn = await core.submit(ada, "run it", channel)
        await wait_for(lambda: any("Approve bash" in s for s in channel.sent))
        await trio.sleep(1.0)  # well past idle_seconds, waiting for the user
        assert ada.id in await core.running_sessions()
        await core.submit(ada, "/yes", core.CollectingChannel())
        assert (await turn.wait()).text == "done"


async def test_a_long_history_is_summarised_before_it_sleeps_and_kept_when_the_model_fails(
    run_core: RunCore, store_config: StoreConfig
) -> None:
    from tests.support.model_server import Status

    long = "words " * 150
    # Each compaction first asks for the memory flush: nothing to keep, then a failed one.
    steps = [Reply(long), Reply(long), Reply(long), Reply("NOTHING"), Reply("They talked at length."), Reply(long),
             Status(500), Status(500)]  # fmt: skip
    upkeep = {"maintenance": {"idle_seconds": 0.3, "idle_compaction": True, "compact_above_pct": 20,
                              "compact_to_pct": 10}}  # fmt: skip
    provider = {"context_window": 2000, "max_retries": 0}
    async with run_core(*steps, provider=provider, store=store_config, **upkeep) as r:
        ada = await r.open("local:ada")
        # Queued at once: a conversation with runs waiting is never idle, however slow the machine.
        turns = [await core.submit(ada, f"tell me more {n}", core.CollectingChannel()) for n in range(3)]
        for turn in turns:
            await turn.wait()
        await wait_for(lambda: any(e.name == "session_sleep" for e in r.events))
        summarised = await core.history(ada)
        assert summarised[0].content == f"{core.SUMMARY_HEADER}\nThey talked at length."
        assert len(summarised) < 6 and [e.data["reason"] for e in r.named("maintenance_compact_complete")] == ["idle"]
        # Woken, it talks on; idle again, the summary fails: the history stays whole.
        await core.send_message(ada, "and then?", core.CollectingChannel())
        before = await core.history(ada)
        await wait_for(lambda: [e.name for e in r.events].count("session_sleep") == 2)
        assert await core.history(ada) == before


async def test_the_heap_is_given_back_once_a_wave_of_conversations_sleeps(
    run_core: RunCore, store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_idle_sleep, "TRIM_AFTER", 3)
    async with run_core(repeat=Reply("hello"), store=store_config, **IDLE) as r:
        sessions = [await r.open(user) for user in ("local:ada", "local:bob", "local:cy")]
        async with trio.open_nursery() as nursery:  # the three turns end together: one wave
            for session in sessions:
                nursery.start_soon(core.send_message, session, "hi", core.CollectingChannel())

        def trims() -> list[dict[str, Any]]:
            return [e.data for e in r.events if e.name == "heap_trimmed"]

        # A slow store may let one conversation sleep before the others' turns end (then it
        # is the last awake one, and trims alone): every sleeper is in some trim, once.
        await wait_for(lambda: sum(t["sessions"] for t in trims()) == 3)
        assert all(isinstance(t["released_kib"], int) for t in trims())  # glibc: malloc_trim was called
        assert sv.count_children(core.SESSIONS_SUP).active == 0


async def test_the_heap_is_given_back_when_the_last_awake_conversation_sleeps(
    run_core: RunCore, store_config: StoreConfig
) -> None:
    async with run_core(repeat=Reply("hello"), store=store_config, **IDLE) as r:
        await core.send_message(await r.open("local:ada"), "hi", core.CollectingChannel())
        await wait_for(lambda: any(e.name == "heap_trimmed" for e in r.events))
        assert [e.data["sessions"] for e in r.events if e.name == "heap_trimmed"] == [1]  # far fewer than TRIM_AFTER
