"""What a conversation costs in memory, measured from outside on the real daemon.

    python -m bench.conversation_bench [--quick] [--users N]

The daemon is the real one (``python -m beamclaw run``, the default configuration but
for the scripted provider, an admin token, a rate limit that lets the bench's turns
through and ``core.maintenance.idle_seconds`` long enough for a whole wave to be awake
at once); the echo model (``python -m tests.support.model_server``) runs in a process of
its own. Every conversation is a real turn: one ``POST /v1/chat/completions`` with a
``user`` of its own, 20 at a time. Resident memory is the daemon's VmRSS from
/proc/PID/status.

  base      a warm-up wave of 100 conversations, asleep: every lazy import and cache
            the first turns load is loaded. Every figure below is a delta above it.
  awake     wave A: N new conversations, each one turn, all awake at once.
  asleep    wave A asleep (every tree stopped by the sleeper): bytes per conversation
            above the base. This includes the high-water mark: the pages the N awake
            trees touched that the allocator keeps (pymalloc arenas with one live object
            left, the glibc heap below its top) unless the daemon gives them back.
  marginal  wave B: N more new conversations, awake, then asleep. They reuse what wave A
            freed, so the delta from wave A asleep to wave B asleep is what a sleeping
            conversation really keeps, past the high-water mark.

  --allocator malloc  runs the daemon with PYTHONMALLOC=malloc: every object from glibc,
            whose free pages the sleeper's `malloc_trim` gives back (pymalloc keeps an
            arena while one object in it lives).

Printed, and written to bench/results/conversation.json (conversation-malloc.json with
``--allocator malloc``). Measured only, never asserted.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import httpx
import trio

from tests.beamclaw.daemon import free_port, start_daemon

from ._cli import save
from ._processes import echo_model, memory_kib

_TOKEN_VARIABLE: Final = "BEAMCLAW_BENCH_CONVERSATION_TOKEN"
_TOKEN: Final = "conversation-bench-admin-token-0123456789"
_CONCURRENCY: Final = 20
_WARM_UP: Final = 100
#: The figures of issue 25 before this bench's changes, and its targets (KiB).
_BEFORE: Final = {"awake_kib": 56.0, "asleep_kib": 24.0}
_TARGETS: Final = {"awake_kib": 10.0, "asleep_kib": 2.0}


def _config_text(model_url: str, port: int, idle: float) -> str:
    return (
        f'[core]\ndefault_provider = "scripted"\nautonomy_level = "full"\n'
        f'[core.providers.scripted]\nbase_url = "{model_url}"\nmodel = "echo"\n'
        f"[core.maintenance]\nidle_seconds = {idle}\n"
        f"[gateway.http]\nport = {port}\n[gateway.rate_limit]\nrequests = 1000000\n"
        f'[gateway.auth.tokens.bench]\nrole = "admin"\ntoken = {{ env = "{_TOKEN_VARIABLE}" }}\n'
    )


#: What /proc/PID/status says of resident memory: all of it, the process's own heap
#: (anonymous pages), and the pages of mapped files (libraries, the search index's segments).
_FIELDS: Final = ("VmRSS", "RssAnon", "RssFile")


def _resident(pid: int) -> dict[str, int]:
    """The `_FIELDS` of the process, in KiB."""
    return memory_kib(pid, *_FIELDS)


async def _one_turn_each(http: httpx.AsyncClient, users: list[str]) -> float:
    """One turn in each user's conversation, `_CONCURRENCY` at a time; seconds taken."""
    limiter = trio.CapacityLimiter(_CONCURRENCY)

    async def turn(user: str) -> None:
        async with limiter:
            body = {"model": "default", "user": user, "messages": [{"role": "user", "content": f"hello {user}"}]}
            (await http.post("/v1/chat/completions", json=body)).raise_for_status()

    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        for user in users:
            nursery.start_soon(turn, user)
    return time.monotonic() - started


async def _running(http: httpx.AsyncClient) -> int:
    listed = (await http.get("/v1/sessions", params={"limit": 1_000_000})).json()["sessions"]
    return sum(1 for s in listed if s["running"])


async def _asleep(http: httpx.AsyncClient, idle: float) -> None:
    """Wait until no conversation's tree runs."""
    await trio.sleep(idle)
    with trio.fail_after(idle + 300):
        while await _running(http):
            await trio.sleep(2)
    await trio.sleep(3)  # the last trees' stops and the list's own garbage settle


async def _settled(pid: int) -> dict[str, int]:
    """`_resident` once VmRSS stops moving (three readings a second apart within 64 KiB)."""
    readings = [_resident(pid)["VmRSS"]]
    while len(readings) < 3 or max(readings[-3:]) - min(readings[-3:]) > 64:
        await trio.sleep(1)
        readings.append(_resident(pid)["VmRSS"])
    return _resident(pid)


def _per(after: dict[str, int], before: dict[str, int], count: int) -> dict[str, float]:
    """KiB per conversation, for each of `_FIELDS`."""
    return {name: round((after[name] - before[name]) / count, 2) for name in _FIELDS}


async def _measure(users: int, allocator: str) -> dict[str, Any]:
    idle = max(60.0, users / 10)  # a wave (20 to 80 turns/s) takes less than this: all of it is awake at once
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        port = free_port()
        async with echo_model() as model_url:
            config = base / "config.toml"
            config.write_text(_config_text(model_url, port, idle), encoding="utf-8")
            os.environ[_TOKEN_VARIABLE] = _TOKEN  # the daemon's environment is this one's (`start_daemon`)
            if allocator:
                os.environ["PYTHONMALLOC"] = allocator
            process = await start_daemon(config, base / "home", base / "daemon.log", timeout=120)
            try:
                headers = {"Authorization": f"Bearer {_TOKEN}"}
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120) as http:
                    pid = process.pid
                    ready = await _settled(pid)
                    await _one_turn_each(http, [f"warm{n}" for n in range(_WARM_UP)])
                    await _asleep(http, idle)
                    base_rss = await _settled(pid)
                    wave_a = await _one_turn_each(http, [f"a{n}" for n in range(users)])
                    awake_a = await _settled(pid)
                    await _asleep(http, idle)
                    asleep_a = await _settled(pid)
                    wave_b = await _one_turn_each(http, [f"b{n}" for n in range(users)])
                    awake_b = await _settled(pid)
                    await _asleep(http, idle)
                    asleep_b = await _settled(pid)
            finally:
                process.terminate()
                await process.wait()
    return {
        "users_per_wave": users,
        "allocator": allocator or "pymalloc (the default)",
        "idle_seconds": idle,
        "wave_seconds": [round(wave_a, 1), round(wave_b, 1)],
        "resident_kib": {
            "ready": ready, "base": base_rss, "awake_a": awake_a, "asleep_a": asleep_a,
            "awake_b": awake_b, "asleep_b": asleep_b,
        },
        "awake_kib": _per(awake_a, base_rss, users),
        "asleep_with_high_water_kib": _per(asleep_a, base_rss, users),
        "asleep_kib": _per(asleep_b, asleep_a, users),
        "awake_over_asleep_kib": _per(awake_b, asleep_a, users),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="500 conversations a wave (a smoke run)")
    parser.add_argument("--users", type=int, default=3000, help="conversations a wave (default 3000)")
    parser.add_argument("--allocator", default="", help="the daemon's PYTHONMALLOC (malloc: every object from glibc)")
    args = parser.parse_args()
    result = trio.run(_measure, 500 if args.quick else args.users, args.allocator)
    result["before"] = _BEFORE
    result["targets"] = _TARGETS
    print(f"{result['users_per_wave']} conversations a wave; resident memory (KiB): {result['resident_kib']}")
    print(f"KiB per conversation (VmRSS = RssAnon + RssFile), before this change: {_BEFORE}, targets: {_TARGETS}")
    for key, what in (
        ("awake_kib", "awake"),
        ("asleep_with_high_water_kib", "asleep, with the high-water mark (wave A)"),
        ("asleep_kib", "asleep, past it (wave B)"),
        ("awake_over_asleep_kib", "awake, past it (wave B)"),
    ):
        print(f"  {what}: {result[key]}")
    save("conversation" + (f"-{args.allocator}" if args.allocator else ""), result)


if __name__ == "__main__":
    main()
