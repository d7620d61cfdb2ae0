"""Sessions that sleep when idle, and ten thousand jobs due in the same second.

    python -m bench.scheduler_bench [--quick]

Each part runs in a fresh process (its memory is its own), with the whole core tree
in-process and the echo model (`python -m tests.support.model_server`) in a process of
its own on 127.0.0.1, every turn a real one:

  memory    N conversations each have one turn, then go idle. Resident memory above the
            idle tree, once they all sleep (core.maintenance.idle_seconds = 2), against
            the same run with sleeping off (idle_seconds = 0): the baseline.
  wake      opening a sleeping conversation (its tree started, its history loaded from
            SQLite, the session answering) against opening one that is awake.
  jobs      N `at` jobs due in the same second, each a turn in its own conversation,
            while one user chats a turn every 100 ms: how late each job started after its
            due time, how long the burst took, and the chat turns' latency during the
            burst against before it (the baseline).

Figures are printed and written to bench/results/scheduler.json.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from loguru import logger

import beamclaw_core as core
import beamclaw_obs as obs
import beamclaw_scheduler as scheduler
import beamclaw_tools as tools
import supervision as sv

from ._cli import save
from ._processes import echo_model, memory_kib


def _settled_rss() -> int:
    """Resident memory after a full collection, with freed heap given back to the system."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return memory_kib()["VmRSS"]


def _tree(home: Path, base_url: str, idle: float, jobs: bool) -> sv.Supervisor:
    core_table = {
        "default_provider": "scripted", "autonomy_level": "full",
        "providers": {"scripted": {"base_url": base_url, "model": "echo"}},
        "maintenance": {"idle_seconds": idle},
    }  # fmt: skip
    children = [
        obs.supervision_tree({"log_file": True}, home).child_spec("obs"),
        tools.supervision_tree({}, home).child_spec("tools"),
        core.supervision_tree(core_table, home).child_spec("core"),
    ]
    if jobs:
        table = {"max_jobs_per_agent": 1_000_000, "heartbeat": {"enabled": False}}
        children.append(scheduler.supervision_tree(table, home).child_spec("scheduler"))
    return sv.Supervisor(children, intensity=100)


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def _one_turn_each(users: list[str], concurrency: int = 20) -> list[core.SessionHandle]:
    handles: list[core.SessionHandle] = []
    limiter = trio.CapacityLimiter(concurrency)

    async def turn(user: str) -> None:
        async with limiter:
            handle = await core.open_session(user, "default")
            result = await core.send_message(handle, "hello", core.CollectingChannel())
            assert result.ok, result.text
            handles.append(handle)

    async with trio.open_nursery() as nursery:
        for user in users:
            nursery.start_soon(turn, user)
    return handles


async def _memory_and_wake(sessions: int, idle: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        async with echo_model() as base_url, sv.open_supervisor(_tree(Path(home), base_url, idle, jobs=False)):
            await _one_turn_each(["warm-up"])
            await trio.sleep(idle + 1 if idle else 0.5)
            idle_rss = _settled_rss()
            started = time.perf_counter()
            handles = await _one_turn_each([f"user-{n}" for n in range(sessions)])
            turns_seconds = time.perf_counter() - started
            if idle:
                with trio.fail_after(120 + idle):
                    while await core.running_sessions():
                        await trio.sleep(0.5)
            else:
                await trio.sleep(1)
            after = _settled_rss()
            result = {
                "sessions": sessions, "idle_seconds": idle, "turns_seconds": turns_seconds,
                "idle_tree_mib": idle_rss / 1024, "above_idle_mib": (after - idle_rss) / 1024,
                "kib_per_session": (after - idle_rss) / sessions,
            }  # fmt: skip
            if idle:
                result |= await _wake(handles[:200])
    return result


async def _wake(handles: list[core.SessionHandle]) -> dict[str, Any]:
    """Open each sleeping conversation (its tree starts, its history loads, it answers);
    then open each again, now awake: the baseline."""

    async def opened(handle: core.SessionHandle) -> float:
        started = time.perf_counter()
        woken = await core.open_session(handle.user_id, handle.agent_id)
        assert len(await core.history(woken)) == 2
        return time.perf_counter() - started

    asleep = [await opened(h) for h in handles]
    awake = [await opened(h) for h in handles]
    return {
        "wake_p50_ms": statistics.median(asleep) * 1e3, "wake_p99_ms": _percentile(asleep, 0.99) * 1e3,
        "awake_open_p50_ms": statistics.median(awake) * 1e3,
    }  # fmt: skip


async def _jobs(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        async with echo_model() as base_url, sv.open_supervisor(_tree(Path(home), base_url, 600, jobs=True)):
            chat = await core.open_session("chatter", "default")

            async def chat_turn() -> float:
                started = time.perf_counter()
                assert (await core.send_message(chat, "hi", core.CollectingChannel())).ok
                return time.perf_counter() - started

            before = [await chat_turn() for _ in range(50)]
            await core.reset_session(chat)
            due = time.time() + 5 + count / 2000
            due_text = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(due))
            due = scheduler.parse_time(due_text)
            for n in range(count):
                await scheduler.add_job(
                    agent_id="default", user_id=f"job-user-{n}", channel="bench", kind="at", spec=due_text,
                    message="the daily report", created_by="bench", now=time.time(), min_interval=60,
                )  # fmt: skip
            await trio.sleep(max(0.0, due - time.time()))
            during: list[float] = []
            db = sqlite3.connect(Path(home) / "scheduler.db")
            while db.execute("SELECT count(*) FROM runs WHERE state = 'ok'").fetchone()[0] < count:
                during.append(await chat_turn())
                if len(during) % 50 == 0:
                    await core.reset_session(chat)
                await trio.sleep(0.1)
            rows = db.execute("SELECT started_at, finished_at FROM runs WHERE state = 'ok'").fetchall()
    delays = [started - due for started, _ in rows]
    return {
        "jobs": count, "burst_seconds": max(finished for _, finished in rows) - due,
        "start_delay_p50_s": statistics.median(delays), "start_delay_p99_s": _percentile(delays, 0.99),
        "start_delay_max_s": max(delays), "chat_before_p50_ms": statistics.median(before) * 1e3,
        "chat_during_p50_ms": statistics.median(during) * 1e3, "chat_during_p99_ms": _percentile(during, 0.99) * 1e3,
        "chat_turns_during": len(during),
    }  # fmt: skip


def _part(name: str, size: int) -> dict[str, Any]:
    """Run one part in a fresh process and return its figures."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.scheduler_bench", "--part", name, "--size", str(size)],
        capture_output=True, check=True, text=True,
    )  # fmt: skip
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 sessions and jobs instead of 10,000")
    parser.add_argument("--part", choices=["sleeping", "awake", "jobs"], help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=10_000, help=argparse.SUPPRESS)
    args = parser.parse_args()
    logger.remove()
    if args.part:
        runs = {"sleeping": lambda: _memory_and_wake(args.size, 2.0), "awake": lambda: _memory_and_wake(args.size, 0.0),
                "jobs": lambda: _jobs(args.size)}  # fmt: skip
        print(json.dumps(trio.run(runs[args.part])))
        return
    size = 1_000 if args.quick else 10_000
    result = {part: _part(part, size) for part in ("sleeping", "awake", "jobs")}
    sleeping, awake, jobs = result["sleeping"], result["awake"], result["jobs"]
    print(f"{size} conversations, one turn each, then idle (idle tree {sleeping['idle_tree_mib']:.0f} MiB):")
    print(f"  sleeping: {sleeping['above_idle_mib']:6.1f} MiB above the idle tree, "
          f"{sleeping['kib_per_session']:.2f} KiB each")  # fmt: skip
    print(f"  awake (baseline): {awake['above_idle_mib']:6.1f} MiB, {awake['kib_per_session']:.2f} KiB each")
    print(f"  waking one: p50 {sleeping['wake_p50_ms']:.2f} ms, p99 {sleeping['wake_p99_ms']:.2f} ms "
          f"(opening an awake one: p50 {sleeping['awake_open_p50_ms']:.2f} ms)")  # fmt: skip
    print(
        f"{size} jobs due in one second: all done in {jobs['burst_seconds']:.1f} s; start delay p50 "
        f"{jobs['start_delay_p50_s']:.1f} s, p99 {jobs['start_delay_p99_s']:.1f} s, "
        f"max {jobs['start_delay_max_s']:.1f} s"
    )
    print(f"  chat turns meanwhile: p50 {jobs['chat_during_p50_ms']:.1f} ms, p99 {jobs['chat_during_p99_ms']:.1f} ms "
          f"(before the burst: p50 {jobs['chat_before_p50_ms']:.1f} ms)")  # fmt: skip
    save("scheduler", result)


if __name__ == "__main__":
    main()
