"""What BeamClaw costs, measured from outside on the real daemon, beside its baselines.

    python -m bench.perf_bench [--quick]

The daemon is the real one (``python -m beamclaw run``, default apps, memory on, no
token: the default on loopback) answering from the scripted OpenAI-compatible model
server (``tests.support.model_server``, echoing) in a process of its own, so that
neither the model nor the load's clients (in this process) share a process with the
server measured. Beside it, in the same run, the baseline of issue 25:
``bench.baseline_gateway``, a few dozen lines of quart-trio on hypercorn forwarding the
same request to the same model with httpx. Each figure is measured on both, from /proc
(user + system CPU time, VmRSS) and from the client's clock:

  launch  from spawning the process to the first 200 of ``GET /health`` (median of 3
          launches), and resident memory (VmRSS) at that moment;
  idle    CPU per second of wall time at rest, after start-up has settled;
  turn    sequential non-streaming ``POST /v1/chat/completions``, conversations of 20
          turns one after another: the server's CPU per turn, and the latency p50
          beside the model's own (the same request sent straight to it), whose
          difference is the added latency;
  load    10 and 100 concurrent clients (each its own user and conversation): turns per
          second and the number of errors;
  cli     ``beamclaw --help`` and ``beamclaw status`` (against the running daemon), wall
          time median of 5, beside ``python -c "import httpx"``.

The project's modules are compiled first, as an install compiles them. nanobot 0.3.5
cannot be installed on this machine (no network beyond the package mirror, which does
not carry it): its figures are the ones issue 25 measured side by side on the same kind
of machine, printed as such. The figures before issue 25's work are read from
``bench/perf_before.json``: this bench run on the code of commit 3b964ce, the last
before that work, just before the figures in docs/benchmarks.md on the same machine.
Figures are printed and written to bench/results/perf.json; measured, never asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import trio

from tests.beamclaw.daemon import free_port

from ._cli import quick_flag, save
from ._processes import cpu_seconds, echo_model, memory_kib

#: nanobot 0.3.5 beside the daemon on commit 3b964ce, as issue 25 measured it.
NANOBOT: Final = {"cpu_ms_per_turn": 87.0, "turns_per_s": 12.6, "launch_s": 1.23, "rss_mib": 99.0, "awake_kib": 10.0}


@attrs.define
class _Server:
    """A server process under measurement, and its URL."""

    url: str
    process: trio.Process

    def cpu_seconds(self) -> float:
        """User + system time of the process so far."""
        return cpu_seconds(self.process.pid)

    def rss_mib(self) -> float:
        return memory_kib(self.process.pid)["VmRSS"] / 1024


def _daemon_config(base: Path, model_url: str, port: int) -> Path:
    config = base / "config.toml"
    config.write_text(
        f'[core]\ndefault_provider = "scripted"\n'
        f'[core.providers.scripted]\nbase_url = "{model_url}"\nmodel = "scripted-model"\n'
        f"[gateway.http]\nport = {port}\n[gateway.rate_limit]\nrequests = 100000000\n",
        encoding="utf-8",
    )
    return config


def _daemon_command(base: Path, model_url: str, port: int) -> tuple[list[str], dict[str, str]]:
    config = _daemon_config(base, model_url, port)
    home = base / "home"
    env = {**os.environ, "BEAMCLAW_HOME": str(home), "BEAMCLAW_USER": "local:bench"}
    return [sys.executable, "-m", "beamclaw", "run", "--config", str(config)], env


def _baseline_command(model_url: str, port: int) -> tuple[list[str], dict[str, str]]:
    command = [sys.executable, "-m", "bench.baseline_gateway", "--port", str(port), "--model", model_url]
    return command, dict(os.environ)


@asynccontextmanager
async def _launched(command: list[str], env: dict[str, str], url: str) -> AsyncIterator[tuple[_Server, float]]:
    """The server started by *command*, and the seconds from its spawn to its first /health."""
    started = time.perf_counter()
    process = await trio.lowlevel.open_process(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            with trio.fail_after(120):
                while True:
                    assert process.poll() is None, f"{command} exited during start-up"
                    try:
                        if (await http.get("/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await trio.sleep(0.005)
        yield _Server(url, process), time.perf_counter() - started
    finally:
        process.terminate()
        with trio.move_on_after(30):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


#: Turns of a conversation in the sequential run before the next one starts: a
#: conversation's history is sent to the model at every turn, so one endless conversation
#: would measure a history no user has (the baseline forwards one message).
_CONVERSATION_TURNS: Final = 20
_QUESTION: Final = {"role": "user", "content": "q"}


def _body(user: str, text: str) -> dict[str, Any]:
    return {"model": "default", "user": user, "messages": [{"role": "user", "content": text}]}


def _p50(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e3, 2)


async def _turns(server: _Server, model_url: str, count: int) -> dict[str, float]:
    """Sequential turns through *server*, each followed by the same request to the model."""
    through: list[float] = []
    direct: list[float] = []
    async with httpx.AsyncClient(timeout=60) as http:
        for i in range(10):  # warm: connections, the conversation, caches
            await http.post(f"{server.url}/v1/chat/completions", json=_body("bench-seq", f"warm {i}"))
        # The memory app indexes kept exchanges at its watcher's next look (every 2 s), and
        # the first indexing loads the local embedding model: a one-off, not a turn's cost.
        await trio.sleep(5)
        cpu = 0.0
        for i in range(count):
            before = server.cpu_seconds()
            started = time.perf_counter()
            user = f"bench-seq-{i // _CONVERSATION_TURNS}"
            response = await http.post(f"{server.url}/v1/chat/completions", json=_body(user, f"question {i}"))
            through.append(time.perf_counter() - started)
            cpu += server.cpu_seconds() - before
            assert response.status_code == 200, response.text
            started = time.perf_counter()
            await http.post(f"{model_url}/chat/completions", json={"model": "m", "messages": [_QUESTION]})
            direct.append(time.perf_counter() - started)
    return {
        "cpu_ms_per_turn": round(cpu / count * 1e3, 2),
        "p50_ms": _p50(through),
        "model_p50_ms": _p50(direct),
        "added_p50_ms": round(_p50(through) - _p50(direct), 2),
    }


async def _load(server: _Server, clients: int, total: int, tag: str) -> dict[str, Any]:
    """*clients* concurrent clients, each its own user, sending *total* turns in all."""
    errors: list[str] = []
    # A pooled connection is given up before hypercorn's 5 s keep-alive would close it
    # under the client (a race httpx reports as an error, not the server's).
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2)
    async with httpx.AsyncClient(base_url=server.url, timeout=300, limits=limits) as http:

        async def client(n: int, turns: int) -> None:
            nonlocal errors
            for i in range(turns):
                try:
                    response = await http.post("/v1/chat/completions", json=_body(f"{tag}-{clients}-{n}", f"q {i}"))
                    if response.status_code != 200:
                        errors.append(f"{response.status_code} {response.text[:200]}")
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))

        async with trio.open_nursery() as nursery:  # warm: one turn each opens every conversation
            for n in range(clients):
                nursery.start_soon(client, n, 1)
        errors.clear()
        per_client = max(1, total // clients)
        before = server.cpu_seconds()
        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for n in range(clients):
                nursery.start_soon(client, n, per_client)
        elapsed = time.perf_counter() - started
    turns = clients * per_client
    return {
        "turns_per_s": round(turns / elapsed, 1),
        "cpu_ms_per_turn": round((server.cpu_seconds() - before) / turns * 1e3, 2),
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
    }


async def _idle(server: _Server, settle: float, window: float) -> float:
    """CPU milliseconds per second of wall time at rest, after *settle* seconds."""
    await trio.sleep(settle)
    before, started = server.cpu_seconds(), time.perf_counter()
    await trio.sleep(window)
    return round((server.cpu_seconds() - before) / (time.perf_counter() - started) * 1e3, 2)


def _wall(command: list[str], env: dict[str, str], runs: int = 5) -> float:
    """Median wall seconds of *command* (after one untimed run that warms the file cache)."""
    samples = []
    for i in range(runs + 1):
        started = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if i:
            samples.append(time.perf_counter() - started)
    return round(statistics.median(samples), 3)


def _cli(env: dict[str, str]) -> dict[str, float]:
    script = shutil.which("beamclaw")
    beamclaw = [script] if script else [sys.executable, "-m", "beamclaw"]
    return {
        "import_httpx_s": _wall([sys.executable, "-c", "import httpx"], env),
        "help_s": _wall([*beamclaw, "--help"], env),
        "status_s": _wall([*beamclaw, "status"], env),
    }


Launcher = Callable[[Path, str, int], tuple[list[str], dict[str, str]]]


async def _measure(launcher: Launcher, model_url: str, quick: bool, with_cli: bool) -> dict[str, Any]:
    launches: list[float] = []
    rss: list[float] = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as base:
            port = free_port()
            command, env = launcher(Path(base), model_url, port)
            async with _launched(command, env, f"http://127.0.0.1:{port}") as (server, seconds):
                launches.append(seconds)
                rss.append(server.rss_mib())
    result: dict[str, Any] = {
        "launch_s": round(statistics.median(launches), 3),
        "rss_mib": round(statistics.median(rss), 1),
    }
    with tempfile.TemporaryDirectory() as base:
        port = free_port()
        command, env = launcher(Path(base), model_url, port)
        async with _launched(command, env, f"http://127.0.0.1:{port}") as (server, _):
            result["idle_cpu_ms_per_s"] = await _idle(server, settle=5 if quick else 10, window=10 if quick else 30)
            result["rss_settled_mib"] = round(server.rss_mib(), 1)
            result["turn"] = await _turns(server, model_url, 100 if quick else 400)
            for clients in (10, 100):
                total = (200 if quick else 1000) * (1 if clients == 10 else 2)
                result[f"load_{clients}"] = await _load(server, clients, total, "bench")
            result["rss_after_load_mib"] = round(server.rss_mib(), 1)
            if with_cli:
                result["cli"] = await trio.to_thread.run_sync(_cli, env)
    return result


def _before() -> dict[str, Any]:
    path = Path(__file__).with_name("perf_before.json")
    before: dict[str, Any] = json.loads(path.read_text())["beamclaw"] if path.exists() else {}
    return before


def _report(beamclaw: dict[str, Any], baseline: dict[str, Any], before: dict[str, Any]) -> None:
    def row(what: str, now: float, base: float | None, was: float | None, unit: str, target: str) -> None:  # noqa: PLR0917
        ratio = f"{now / base:5.2f}x" if base else "     "
        print(f"{what:<34} {now:9.2f} {unit:<6} {'' if base is None else f'{base:9.2f}':>9} {ratio}"
              f"   before {'-' if was is None else f'{was:.2f}':>8}   target {target}")  # fmt: skip

    def was(*keys: str) -> float | None:
        value: Any = before
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return float(value) if isinstance(value, (int, float)) else None

    print(f"{'':<34} {'beamclaw':>16} {'baseline':>9} ratio")
    row("launch to /health", beamclaw["launch_s"], baseline["launch_s"], was("launch_s"), "s",
        f"<= {NANOBOT['launch_s'] / 2:.2f} s (half nanobot's {NANOBOT['launch_s']})")  # fmt: skip
    row("RSS at ready", beamclaw["rss_mib"], baseline["rss_mib"], was("rss_mib"), "MiB",
        f"<= {NANOBOT['rss_mib']:.0f} MiB (nanobot's)")  # fmt: skip
    row("RSS settled", beamclaw["rss_settled_mib"], baseline["rss_settled_mib"], was("rss_settled_mib"), "MiB", "")
    row("idle CPU", beamclaw["idle_cpu_ms_per_s"], baseline["idle_cpu_ms_per_s"], was("idle_cpu_ms_per_s"), "ms/s",
        "<= 1 ms/s")  # fmt: skip
    turn, base_turn = beamclaw["turn"], baseline["turn"]
    row("CPU per turn (sequential)", turn["cpu_ms_per_turn"], base_turn["cpu_ms_per_turn"],
        was("turn", "cpu_ms_per_turn"), "ms", "<= 2x baseline")  # fmt: skip
    row("added latency p50", turn["added_p50_ms"], base_turn["added_p50_ms"], was("turn", "added_p50_ms"), "ms",
        "<= 2x baseline")  # fmt: skip
    for clients in (10, 100):
        load, base_load = beamclaw[f"load_{clients}"], baseline[f"load_{clients}"]
        row(f"turns/s at {clients} clients", load["turns_per_s"], base_load["turns_per_s"],
            was(f"load_{clients}", "turns_per_s"), "/s",
            f">= {15 * NANOBOT['turns_per_s']:.0f}/s (15x nanobot's {NANOBOT['turns_per_s']}); "
            f"errors {load['errors']} {load['first_error']}")  # fmt: skip
        row(f"CPU per turn at {clients} clients", load["cpu_ms_per_turn"], base_load["cpu_ms_per_turn"],
            was(f"load_{clients}", "cpu_ms_per_turn"), "ms", "")  # fmt: skip
    row("RSS after the load", beamclaw["rss_after_load_mib"], baseline["rss_after_load_mib"],
        was("rss_after_load_mib"), "MiB", "")  # fmt: skip
    cli = beamclaw["cli"]
    for key, what in (("help_s", "beamclaw --help"), ("status_s", "beamclaw status")):
        row(what, cli[key], cli["import_httpx_s"], was("cli", key), "s", "<= 2x python -c 'import httpx'")


def _compile() -> None:
    """Compile the project's modules, as an install does, so no start measures a compile.

    (This machine sets PYTHONDONTWRITEBYTECODE, under which an editable checkout would
    compile every module again at every start.)"""
    root = Path(__file__).parent.parent
    folders = [str(root / name) for name in ("apps", "beamclaw", "supervision", "bench", "tests/support")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True, stdout=subprocess.DEVNULL)


async def _main(quick: bool) -> dict[str, Any]:
    _compile()
    async with echo_model() as model_url:
        baseline = await _measure(lambda _, url, port: _baseline_command(url, port), model_url, quick, False)
        beamclaw = await _measure(_daemon_command, model_url, quick, True)
    return {"beamclaw": beamclaw, "baseline": baseline, "nanobot_issue_25": NANOBOT}


def main() -> None:
    quick = quick_flag(__doc__)
    result = trio.run(_main, quick)
    _report(result["beamclaw"], result["baseline"], _before())
    save("perf", result)


if __name__ == "__main__":
    main()
