"""The gateway's /v1/chat/completions under load, against the scripted model.

    python -m bench.gateway_bench [--quick]

For 1, 10 and 100 concurrent clients (each its own user, so each its own
conversation), requests per second and p50/p99 latency of non-streaming chat
completions through the whole daemon (gateway, session, loop, provider, SQLite,
obs); beside it, in the same run, the same load sent straight to the scripted
model, and the gateway's overhead as the ratio of the two p50s. Then the same with
the memory app running (as in the daemon), indexing every exchange.

Figures are printed and written to bench/results/gateway.json.
"""

from __future__ import annotations

import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio
from loguru import logger

import beamclaw_a2a as a2a
import beamclaw_core as core
import beamclaw_gateway as gateway
import beamclaw_memory as memory
import beamclaw_obs as obs
import beamclaw_tools as tools
import supervision as sv
from tests.support.model_server import Reply, scripted_model

from ._cli import quick_flag, save


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tree(home: Path, base_url: str, port: int, with_memory: bool) -> sv.Supervisor:
    core_table = {
        "default_provider": "scripted",
        "providers": {"scripted": {"base_url": base_url, "model": "scripted"}},
    }
    gateway_table = {"http": {"port": port}, "rate_limit": {"requests": 10_000_000}}
    return sv.Supervisor(
        [
            obs.supervision_tree({}, home).child_spec("obs"),
            tools.supervision_tree({}, home).child_spec("tools"),
            *([memory.supervision_tree({}, home).child_spec("memory")] if with_memory else []),
            core.supervision_tree(core_table, home).child_spec("core"),
            a2a.supervision_tree({}, home).child_spec("a2a"),
            gateway.supervision_tree(gateway_table, home).child_spec("gateway"),
        ],
        name="beamclaw",
    )


async def _load(url: str, clients: int, per_client: int, body_for: Any) -> tuple[float, list[float]]:
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:

        async def client(n: int) -> None:
            for i in range(per_client):
                started = time.perf_counter()
                response = await http.post("/v1/chat/completions", json=body_for(n, i))
                latencies.append(time.perf_counter() - started)
                assert response.status_code == 200, response.text

        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for n in range(clients):
                nursery.start_soon(client, n)
        elapsed = time.perf_counter() - started
    return elapsed, latencies


def _summary(elapsed: float, latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "rps": len(ordered) / elapsed,
        "p50_ms": statistics.median(ordered) * 1e3,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3,
    }


async def _main(quick: bool, with_memory: bool) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as home:
        async with scripted_model(repeat=Reply("An answer of a sentence or two, as a short reply would be.")) as model:
            model.keep_requests = False
            port = _free_port()
            async with sv.open_supervisor(_tree(Path(home), model.base_url, port, with_memory)):
                gateway_url = f"http://127.0.0.1:{port}"
                model_url = model.base_url.removesuffix("/v1")
                for clients in (1, 10, 100):
                    total = (100 if quick else 400) if clients < 100 else (200 if quick else 1000)
                    per_client = max(1, total // clients)

                    def through_gateway(n: int, i: int, clients: int = clients) -> dict[str, Any]:
                        return {"model": "default", "user": f"bench-{clients}-{n}",
                                "messages": [{"role": "user", "content": f"question {i}"}]}  # fmt: skip

                    def direct(n: int, i: int) -> dict[str, Any]:
                        return {"model": "scripted", "messages": [{"role": "user", "content": f"question {i}"}]}

                    # Warm up both paths (connections, sessions), then measure, interleaved.
                    await _load(gateway_url, clients, 1, through_gateway)
                    await _load(model_url, clients, 1, direct)
                    base = _summary(*await _load(model_url, clients, per_client, direct))
                    full = _summary(*await _load(gateway_url, clients, per_client, through_gateway))
                    results[str(clients)] = {
                        "requests": clients * per_client, "gateway": full, "model_direct": base,
                        "p50_ratio": full["p50_ms"] / base["p50_ms"],
                        "overhead_p50_ms": full["p50_ms"] - base["p50_ms"],
                    }  # fmt: skip
    return results


def main() -> None:
    quick = quick_flag(__doc__)
    logger.remove()
    result = {"without memory": trio.run(_main, quick, False), "with memory": trio.run(_main, quick, True)}
    for variant, rows in result.items():
        print(variant)
        for clients, r in rows.items():
            g, m = r["gateway"], r["model_direct"]
            print(
                f"{clients:>3} clients  gateway {g['rps']:7.1f} req/s p50 {g['p50_ms']:7.2f} ms "
                f"p99 {g['p99_ms']:7.2f} ms   model direct {m['rps']:7.1f} req/s p50 {m['p50_ms']:6.2f} ms"
                f"   p50 ratio {r['p50_ratio']:.2f}x (+{r['overhead_p50_ms']:.2f} ms)"
            )
    save("gateway", result)


if __name__ == "__main__":
    main()
