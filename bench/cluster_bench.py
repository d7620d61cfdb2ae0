"""The cluster measured through real daemons: a turn on PostgreSQL against SQLite, the
failover time after a kill -9 of a conversation's owner, and throughput on 1, 2, 3 nodes.

    python -m bench.cluster_bench [--quick]

Every daemon is the real one (``python -m beamclaw run``), answering plain turns from
the scripted OpenAI-compatible model server in this process, on the throwaway PostgreSQL
server of the tests (a Unix socket, fsync off, synchronous_commit on), all on one
machine:

  turn       sequential non-streaming HTTP turns, interleaved round by round, on three
             daemons: SQLite, PostgreSQL, and PostgreSQL as a one-node cluster (its
             conversation lease and the epoch check on every history write)
  failover   three nodes (lease 3 s); a conversation answered by its owner, the owner
             killed with SIGKILL, then the time until the next message is answered
             through another node (asked every 0.1 s, whatever its Retry-After says)
  nodes      concurrent clients, each its own conversation, each request sent to a
             node picked at random (a load balancer without sticky sessions: a request
             whose conversation another node owns is forwarded there), with 1, 2, 3 nodes

The nodes share the machine's cores (this project's machine has 2): more nodes here do
not add CPU, they show what forwarding and sharing the database cost. Printed and
written to bench/results/cluster.json. Measured only, never asserted.
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import trio

from tests.beamclaw.daemon import free_port, start_daemon
from tests.support.model_server import Reply, ScriptedModel, scripted_model
from tests.support.postgres import DSN_VARIABLE, PostgresServer

from ._cli import quick_flag, save

_SECRET_VARIABLE: Final = "BEAMCLAW_CLUSTER_SECRET"
_LEASE_SECONDS: Final = 3.0
_START_SECONDS: Final = 180.0
_ANSWER: Final = "The answer, with a sentence or two of text, as a short model reply would have. " * 2


@attrs.define
class _Daemon:
    name: str
    config: Path
    home: Path
    port: int
    process: trio.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        log = self.home.parent / f"{self.name}.log"
        self.process = await start_daemon(self.config, self.home, log, timeout=_START_SECONDS)

    async def kill(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        await self.process.wait()
        self.process = None

    async def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            await self.process.wait()
            self.process = None


def _config_text(model: ScriptedModel, port: int, store: str, node: str | None) -> str:
    text = (
        f'[core]\ndefault_provider = "scripted"\nautonomy_level = "full"\n'
        f'[core.providers.scripted]\nbase_url = "{model.base_url}"\nmodel = "scripted-model"\n'
        f"[gateway.http]\nport = {port}\n[gateway.rate_limit]\nrequests = 1000000\n"
        "[memory]\nenabled = false\n"
    )
    if store == "postgres":
        text += f'[store]\nbackend = "postgres"\ndsn = {{ env = "{DSN_VARIABLE}" }}\n'
    if node is not None:
        text += (
            f'[cluster]\nenabled = true\nnode_id = "{node}"\nadvertise_url = "http://127.0.0.1:{port}"\n'
            f'lease_seconds = {_LEASE_SECONDS}\nsecret = {{ env = "{_SECRET_VARIABLE}" }}\n'
        )
    return text


@asynccontextmanager
async def _daemons(
    base: Path, model: ScriptedModel, specs: list[tuple[str, str, bool]]
) -> AsyncIterator[list[_Daemon]]:
    """Daemons named and stored as *specs* say ((name, "sqlite" | "postgres", a cluster
    node?)), started one after the other, stopped after the block."""
    async with AsyncExitStack() as stack:
        daemons = []
        for name, store, node in specs:
            port = free_port()
            config = base / f"{name}.toml"
            config.write_text(_config_text(model, port, store, name if node else None), encoding="utf-8")
            daemon = _Daemon(name, config, base / name, port)
            await daemon.start()
            stack.push_async_callback(daemon.stop)
            daemons.append(daemon)
        yield daemons


async def _chat(http: httpx.AsyncClient, url: str, user: str, text: str) -> httpx.Response:
    body = {"model": "default", "user": user, "messages": [{"role": "user", "content": text}]}
    return await http.post(f"{url}/v1/chat/completions", json=body)


async def _answered(http: httpx.AsyncClient, url: str, user: str, text: str) -> tuple[float, int]:
    """The seconds of the attempt that was answered, and how many 503s came before it
    (a busy machine delays a heartbeat past the lease now and then: the node joins again)."""
    unavailable = 0
    while True:
        started = time.perf_counter()
        response = await _chat(http, url, user, text)
        elapsed = time.perf_counter() - started
        if response.status_code != 503:
            response.raise_for_status()
            return elapsed, unavailable
        unavailable += 1
        await trio.sleep(float(response.headers.get("Retry-After", "1")))


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1e3, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3, 2),
    }


async def _turns(base: Path, model: ScriptedModel, rounds: int) -> dict[str, dict[str, float]]:
    specs = [("sqlite", "sqlite", False), ("postgres", "postgres", False), ("postgres-node", "postgres", True)]
    samples: dict[str, list[float]] = {name: [] for name, _, _ in specs}
    unavailable = dict.fromkeys(samples, 0)
    async with _daemons(base, model, specs) as daemons, httpx.AsyncClient(timeout=60) as http:
        for daemon in daemons:  # warm: the conversation opened, the model connection made
            await _answered(http, daemon.url, daemon.name, "warm up")
        for i in range(rounds):
            for daemon in daemons:  # a conversation of each daemon's own (two share the database)
                elapsed, retried = await _answered(http, daemon.url, daemon.name, f"message {i}")
                samples[daemon.name].append(elapsed)
                unavailable[daemon.name] += retried
    return {name: _ms(values) | {"503s": unavailable[name]} for name, values in samples.items()}


async def _failovers(base: Path, model: ScriptedModel, kills: int) -> dict[str, Any]:
    rng = random.Random(23)
    specs = [(f"node-{c}", "postgres", True) for c in "abc"]
    times: list[float] = []
    async with (
        _daemons(base, model, specs) as nodes,
        httpx.AsyncClient(timeout=60) as http,
        trio.open_nursery() as restarts,
    ):
        for i in range(kills):
            while sum(node.process is not None for node in nodes) < 2:  # a restart still under way
                await trio.sleep(0.2)
            owner, other = rng.sample([node for node in nodes if node.process is not None], 2)
            user = f"failover{i}"
            await _answered(http, owner.url, user, "hello")  # the owner: the node that opened it
            killed_at = time.perf_counter()
            await owner.kill()
            while (await _chat(http, other.url, user, "are you there?")).status_code != 200:
                await trio.sleep(0.1)
            times.append(time.perf_counter() - killed_at)
            restarts.start_soon(owner.start)
    ordered = sorted(times)
    return {
        "kills": kills,
        "lease_seconds": _LEASE_SECONDS,
        "p50_s": round(statistics.median(ordered), 2),
        "p99_s": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
        "max_s": round(ordered[-1], 2),
    }


async def _load(nodes: list[_Daemon], clients: int, seconds: float) -> dict[str, float]:
    """*clients* sending turns for *seconds*, each request to one of *nodes* at random."""
    latencies: list[float] = []
    failed = 0
    until = time.perf_counter() + seconds

    async def client(n: int) -> None:
        nonlocal failed
        rng = random.Random(n)
        async with httpx.AsyncClient(timeout=60) as http:
            k = 0
            while time.perf_counter() < until:
                k += 1
                started = time.perf_counter()
                response = await _chat(http, rng.choice(nodes).url, f"load{len(nodes)}-{n}", f"message {k}")
                if response.status_code == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    failed += 1

    async with trio.open_nursery() as nursery:
        for n in range(clients):
            nursery.start_soon(client, n)
    return {"turns_per_s": round(len(latencies) / seconds, 1), "failed": failed} | _ms(latencies)


async def _throughput(base: Path, model: ScriptedModel, clients: int, seconds: float) -> dict[str, Any]:
    specs = [(f"node-{c}", "postgres", True) for c in "abc"]
    result: dict[str, Any] = {"clients": clients, "seconds": seconds}
    async with _daemons(base, model, specs) as nodes:
        for count in (1, 2, 3):
            result[f"{count}_nodes"] = await _load(nodes[:count], clients, seconds)
    return result


async def _main(quick: bool) -> dict[str, Any]:
    server = PostgresServer.create()
    os.environ.setdefault(_SECRET_VARIABLE, "cluster-secret-of-the-bench-0123456789")
    try:
        result: dict[str, Any] = {"cpus": os.cpu_count()}
        async with scripted_model(repeat=Reply(_ANSWER)) as model:
            model.keep_requests = False
            for section in ("turn", "failover", "nodes"):
                server.admin(f"CREATE DATABASE bench_{section}")
                os.environ[DSN_VARIABLE] = server.dsn(f"bench_{section}")
                with tempfile.TemporaryDirectory(prefix=f"bc-{section}-") as tmp:
                    if section == "turn":
                        result[section] = await _turns(Path(tmp), model, 40 if quick else 200)
                    elif section == "failover":
                        result[section] = await _failovers(Path(tmp), model, 3 if quick else 10)
                    else:
                        result[section] = await _throughput(Path(tmp), model, 12, 5.0 if quick else 15.0)
    finally:
        server.remove()
    return result


def main() -> None:
    result = trio.run(_main, quick_flag(__doc__))
    turn, failover, nodes = result["turn"], result["failover"], result["nodes"]
    print(f"a {result['cpus']}-core machine: every daemon, the model server and PostgreSQL share its cores")
    print("turn (sequential HTTP turns, one daemon each)      p50 ms   p99 ms   p50 over SQLite")
    for name, figures in turn.items():
        extra = figures["p50_ms"] - turn["sqlite"]["p50_ms"]
        print(
            f"  {name:48} {figures['p50_ms']:7.2f}  {figures['p99_ms']:7.2f}   {extra:+.2f} ms"
            f"  ({figures['503s']} 503s retried)"
        )
    print(
        f"failover (kill -9 of the owner to the next answer elsewhere, lease {failover['lease_seconds']:g} s, "
        f"{failover['kills']} kills): p50 {failover['p50_s']:.2f} s  p99 {failover['p99_s']:.2f} s"
    )
    print(f"throughput ({nodes['clients']} clients, each request to a random node, {nodes['seconds']:g} s each)")
    for count in (1, 2, 3):
        figures = nodes[f"{count}_nodes"]
        print(
            f"  {count} node{'s' if count > 1 else ' '}  {figures['turns_per_s']:7.1f} turns/s  "
            f"p50 {figures['p50_ms']:7.1f} ms  p99 {figures['p99_ms']:7.1f} ms  failed {figures['failed']}"
        )
    save("cluster", result)


if __name__ == "__main__":
    main()
