"""Supervision runtime benchmarks, each beside its baseline measured in the same run.

    python -m bench.supervision_bench [--quick]

Figures (printed, and written to bench/results/supervision.json):
  call      a GenServer `call` round trip vs a bare Trio memory-channel
            request/response round trip (the floor), as a ratio
  cast      casts per second into a GenServer vs memory-channel sends per second
  restart   crash -> replacement started, p50 and p99, in microseconds
  children  start time and memory for 10,000 dynamic children
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from typing import Any

import trio

import supervision as sv

from ._cli import quick_flag, save


class _Echo(sv.GenServer):
    def handle_call(self, request: Any, caller: sv.Caller, state: Any) -> sv.Reply:
        return sv.Reply(request, state)


class _Counter(sv.GenServer):
    def handle_call(self, request: Any, caller: sv.Caller, count: int) -> sv.Reply:
        return sv.Reply(count, count)

    def handle_cast(self, message: Any, count: int) -> sv.NoReply:
        return sv.NoReply(count + 1)


async def _channel_round_trips(n: int) -> float:
    requests_send, requests_receive = trio.open_memory_channel[Any](1024)
    replies_send, replies_receive = trio.open_memory_channel[Any](1024)

    async def server() -> None:
        async for request in requests_receive:
            await replies_send.send(request)

    async def client() -> None:
        for i in range(n):
            await requests_send.send(i)
            await replies_receive.receive()

    return await _timed_against(server, client) / n


async def _timed_against(server: Any, client: Any) -> float:
    """Seconds *client* takes while *server* runs beside it."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server)
        started = time.perf_counter()
        await client()
        elapsed = time.perf_counter() - started
        nursery.cancel_scope.cancel()
    return elapsed


async def _call_round_trips(n: int) -> float:
    async with trio.open_nursery() as nursery:
        pid = await nursery.start(_Echo.start)
        started = time.perf_counter()
        for i in range(n):
            await sv.call(pid, i)
        elapsed = time.perf_counter() - started
        await sv.stop(pid)
    return elapsed / n


async def _channel_sends(n: int) -> float:
    send, receive = trio.open_memory_channel[Any](1024)

    async def drain() -> None:
        async for _ in receive:
            pass

    async def sender() -> None:
        for i in range(n):
            await send.send(i)

    return n / await _timed_against(drain, sender)


async def _casts(n: int) -> float:
    """`sv.cast` never waits, so casts go in batches that fit the mailbox, each
    followed by a call: the call's reply proves every cast before it was handled."""
    batch = sv.DEFAULT_CAPACITY - 1
    async with trio.open_nursery() as nursery:
        pid = await nursery.start(_Counter.start, 0)
        started = time.perf_counter()
        for sent in range(0, n, batch):
            for _ in range(min(batch, n - sent)):
                sv.cast(pid, None)
            await sv.call(pid, "count", timeout=None)
        assert await sv.call(pid, "count", timeout=None) == n
        elapsed = time.perf_counter() - started
        await sv.stop(pid)
    return n / elapsed


async def _restart_latencies(n: int) -> list[float]:
    crashed_at: dict[sv.Pid, float] = {}
    latencies: list[float] = []
    restarted = trio.Event()

    def on_event(event: sv.SupervisorEvent) -> None:
        if event.kind is sv.EventKind.CHILD_STARTED and crashed_at:
            latencies.append(time.perf_counter() - crashed_at.popitem()[1])
            restarted.set()

    async def idle(*, task_status: Any) -> None:
        task_status.started()
        await trio.sleep_forever()

    sv.subscribe(on_event)
    tree = sv.Supervisor([sv.ChildSpec("w", idle)], intensity=n + 1, period=3600)
    async with sv.open_supervisor(tree) as sup:
        for _ in range(n):
            restarted = trio.Event()
            pid = sv.which_children(sup)[0].pid
            assert pid is not None
            crashed_at[pid] = time.perf_counter()
            sv.kill(pid, RuntimeError("bench"))
            await restarted.wait()
    return latencies


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def _many_children(n: int) -> tuple[float, int]:
    gc.collect()
    before = _rss_bytes()
    async with sv.open_supervisor(sv.DynamicSupervisor(sv.ChildSpec("c", _Counter.start, args=(0,)))) as sup:
        started = time.perf_counter()
        for _ in range(n):
            await sv.start_child(sup, ())
        elapsed = time.perf_counter() - started
        gc.collect()
        grown = _rss_bytes() - before
        assert sv.count_children(sup).active == n
    return elapsed, grown


def _best(samples: list[float]) -> float:
    """The median of repeated runs: steadier than one run on a noisy machine."""
    return statistics.median(samples)


async def _main(quick: bool) -> dict[str, Any]:
    calls = 5_000 if quick else 20_000
    repeats = 3 if quick else 7
    channel_rtt, call_rtt = [], []
    for _ in range(repeats):  # interleaved, so both see the same machine load
        channel_rtt.append(await _channel_round_trips(calls))
        call_rtt.append(await _call_round_trips(calls))
    sends, casts = [], []
    for _ in range(repeats):
        sends.append(await _channel_sends(calls * 5))
        casts.append(await _casts(calls * 5))
    latencies = sorted(await _restart_latencies(500 if quick else 2_000))
    children = 2_000 if quick else 10_000
    start_time, grown = await _many_children(children)
    p50 = latencies[len(latencies) // 2]
    p99 = latencies[int(len(latencies) * 0.99)]
    return {
        "call_us": _best(call_rtt) * 1e6,
        "channel_round_trip_us": _best(channel_rtt) * 1e6,
        "call_vs_channel": _best(call_rtt) / _best(channel_rtt),
        "casts_per_s": _best(casts),
        "channel_sends_per_s": _best(sends),
        "cast_vs_channel": _best(casts) / _best(sends),
        "restart_p50_us": p50 * 1e6,
        "restart_p99_us": p99 * 1e6,
        "children": children,
        "children_start_s": start_time,
        "children_rss_mb": grown / 2**20,
        "children_bytes_each": grown / children,
    }


def main() -> None:
    quick = quick_flag(__doc__)
    result = trio.run(_main, quick)
    print(
        f"call round trip     {result['call_us']:8.2f} us   channel floor {result['channel_round_trip_us']:.2f} us"
        f"   ratio {result['call_vs_channel']:.2f}x"
    )
    print(
        f"casts               {result['casts_per_s']:10,.0f}/s   channel sends {result['channel_sends_per_s']:,.0f}/s"
        f"   ratio {result['cast_vs_channel']:.2f}x"
    )
    print(f"restart latency     p50 {result['restart_p50_us']:.1f} us   p99 {result['restart_p99_us']:.1f} us")
    print(
        f"{result['children']:,} children   start {result['children_start_s']:.2f} s"
        f"   memory {result['children_rss_mb']:.1f} MB ({result['children_bytes_each']:,.0f} B each)"
    )
    save("supervision", result)


if __name__ == "__main__":
    main()
