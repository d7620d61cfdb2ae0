"""Maintenance in virtual time (Trio's MockClock) over real SQLite stores: the nightly
flush within the quiet hours, the pre-expiry flush that the cleaner waits for, and a
crash of maintenance that no conversation notices."""

from __future__ import annotations

import datetime as dt
import math
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from trio.testing import MockClock

import beamclaw_core as core
import supervision as sv
from beamclaw_base import StoreConfig
from beamclaw_core._maintenance import MAINTENANCE
from tests.apps.beamclaw_scheduler.conftest import virtual_clock
from tests.support.model_server import Reply, Status
from tests.support.stores import sql

from .conftest import RunCore, session_store, wait_for

#: The memory flush's notes go to the user's daily log, a file a test can read.
DAILY_LOG = {"memory_flush": "daily_log"}


def _calm(clock: MockClock) -> dict[str, Any]:
    """Settings that leave no deadline a jump of *clock* could reach early (the reaper's,
    a model call's); virtual time stands still until `_jump` lets it run."""
    clock.autojump_threshold = math.inf
    return {"sandbox": {"reaper_interval_seconds": 10**7}, "provider": {"timeout_seconds": 10**7, "max_retries": 0}}


def _jump(clock: MockClock, on: bool = True) -> None:
    """With *on*, virtual time jumps to the next deadline once every task has waited 50 real
    ms (the model server and the store's threads answer well within it). Turns run with
    time standing still, so no timeout of theirs can fire however slow the machine."""
    clock.autojump_threshold = 0.05 if on else math.inf


def _utc(*fields: int) -> float:
    return dt.datetime(*fields, tzinfo=dt.UTC).timestamp()  # type: ignore[misc]


def _daily_logs(home: Path) -> str:
    return "".join(p.read_text() for p in sorted(home.rglob("memory/*.md")))


async def test_the_nightly_flush_runs_once_a_night_in_the_quiet_hours(
    run_core: RunCore, mock_clock: MockClock, store_config: StoreConfig
) -> None:
    calm = _calm(mock_clock)
    clock = virtual_clock(_utc(2026, 5, 4, 1, 0))
    upkeep = {"enabled": True, "scan_interval_seconds": 1200, "quiet_hours": [2, 4], "nightly_min_messages": 4}
    steps = [Reply("a1"), Reply("a2"), Reply("b1"), Reply("- Ada drinks green tea")]
    async with run_core(
        *steps, clock=clock, maintenance={"idle_seconds": 0, **upkeep}, agentic_loop=DAILY_LOG, store=store_config,
        **calm
    ) as r:  # fmt: skip
        ada, bob = await r.open("local:ada"), await r.open("local:bob")
        for text in ("I like green tea", "remember that"):
            await core.send_message(ada, text, core.CollectingChannel())
        await core.send_message(bob, "hi", core.CollectingChannel())  # two messages: too few for the night
        _jump(mock_clock)
        await trio.sleep(4 * 3600)  # from 01:00 to 05:00 UTC: six scans, three within the quiet hours
        starts, completes = r.named("maintenance_nightly_start"), r.named("maintenance_nightly_complete")
        assert [e.data for e in starts] == [{"session_count": 1}]
        assert [e.data for e in completes] == [{"flushed_count": 1}]
        assert len(r.model.requests) == 4  # three turns and one flush, on the first scan at 02:00
        assert "I like green tea" in str(r.model.requests[-1]["messages"])
        assert "Ada drinks green tea" in _daily_logs(r.home)
    # Restarted within the same night, it has nothing left to flush: how far each
    # conversation went is in the store, not in the process.
    _jump(mock_clock, on=False)
    clock = virtual_clock(_utc(2026, 5, 4, 2, 30))
    async with run_core(
        clock=clock, home=r.home, maintenance={"idle_seconds": 0, **upkeep}, agentic_loop=DAILY_LOG,
        store=store_config, **calm
    ) as again:  # fmt: skip
        _jump(mock_clock)
        await trio.sleep(3600)
        assert [e.data for e in again.named("maintenance_nightly_start")] == [{"session_count": 0}]
        assert again.model.requests == []


async def test_expiry_waits_for_the_pre_expiry_flush_and_a_failed_one_loses_nothing(
    run_core: RunCore, mock_clock: MockClock, tmp_path: Path, store_config: StoreConfig
) -> None:
    calm = _calm(mock_clock)
    clock = virtual_clock(time.time())
    upkeep = {"idle_seconds": 0, "enabled": True, "scan_interval_seconds": 1200, "pre_expiry_minutes": 10}
    steps = [Reply("noted"), Status(500), Reply("- Ada's flight is on Friday")]
    async with run_core(
        *steps, clock=clock, session_ttl_seconds=4000, maintenance=upkeep, agentic_loop=DAILY_LOG,
        store=store_config, **calm
    ) as r:  # fmt: skip
        ada = await r.open("local:ada")
        await core.send_message(ada, "my flight is on Friday", core.CollectingChannel())
        _jump(mock_clock)
        # Scans at 1200 and 2400 s: not due. At 3600 s (within 10 minutes of the TTL): the model fails.
        await trio.sleep(4100)
        assert len(r.model.requests) == 2 and r.named("maintenance_pre_expiry_flush") == []
        # Past its TTL, the conversation is not deleted: its flush has not been done.
        assert await core.sweep_expired(clock()) == []
        assert [m.content for m in await core.history(ada)] == ["my flight is on Friday", "noted"]
        await trio.sleep(800)  # the scan at 4800 s: the flush is done
        assert [e.data for e in r.named("maintenance_pre_expiry_flush")] == [{"session_id": ada.id}]
        assert "flight is on Friday" in _daily_logs(r.home)
        assert await core.sweep_expired(clock()) == [ada.id]
    with session_store(tmp_path / "home", store_config) as db:
        assert sql(db, "SELECT count(*) FROM sessions") == [(0,)]


async def test_without_maintenance_the_cleaner_deletes_as_before(run_core: RunCore, store_config: StoreConfig) -> None:
    async with run_core(Reply("hi"), session_ttl_seconds=60, store=store_config) as r:
        ada = await r.open("local:ada")
        await core.send_message(ada, "hello", core.CollectingChannel())
        assert await core.sweep_expired(time.time() + 61) == [ada.id]
        assert r.named("maintenance_pre_expiry_flush") == []


async def test_a_crash_in_maintenance_restarts_it_alone(
    run_core: RunCore, mock_clock: MockClock, store_config: StoreConfig
) -> None:
    calm = _calm(mock_clock)
    clock = virtual_clock(_utc(2026, 5, 4, 1, 0))
    upkeep = {"idle_seconds": 0, "enabled": True, "scan_interval_seconds": 1200, "nightly_min_messages": 1}
    steps = [Reply("hi"), Reply("- kept"), Reply("yes")]
    async with run_core(
        *steps, clock=clock, maintenance=upkeep, agentic_loop=DAILY_LOG, store=store_config, **calm
    ) as r:
        ada = await r.open("local:ada")
        await core.send_message(ada, "hello", core.CollectingChannel())
        _jump(mock_clock)
        session, before = ada.dest.whereis(), sv.whereis(MAINTENANCE)
        sv.kill(MAINTENANCE, RuntimeError("maintenance crash"))
        await wait_for(lambda: sv.whereis(MAINTENANCE) not in (None, before))
        assert ada.dest.whereis() == session
        await trio.sleep(2 * 3600)  # the restarted process does the night's flush
        assert [e.data for e in r.named("maintenance_nightly_complete")] == [{"flushed_count": 1}]
        _jump(mock_clock, on=False)
        assert (await core.send_message(ada, "still here?", core.CollectingChannel())).ok


@pytest.mark.parametrize(
    ("maintenance", "error"),
    [
        ({"quiet_hours": [3, 3]}, "quiet_hours is [3, 3]: need two different UTC hours"),
        ({"quiet_hours": [2, 24]}, "quiet_hours is [2, 24]"),
        ({"scan_interval_seconds": 0}, "scan_interval_seconds must be at least 1"),
        ({"nightly_min_messages": 0}, "nightly_min_messages must be at least 1"),
        ({"enabled": True, "pre_expiry_minutes": 10}, "shorter than session_ttl_seconds"),
    ],
)
def test_bad_maintenance_settings_are_refused_at_start(maintenance: dict[str, object], error: str) -> None:
    table = {"session_ttl_seconds": 600, "maintenance": maintenance}
    with pytest.raises(ValueError, match=error.replace("[", r"\[").replace("]", r"\]")):
        core.parse_core_config(table)
