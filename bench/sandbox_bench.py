"""What the sandbox costs per command, each backend against its baseline, in one run.

    python -m bench.sandbox_bench [--quick] [--only bubblewrap|docker]

bubblewrap
    The real `bash` tool (arguments checked, deny list, the jail, the result text) running
    ``echo hi`` in the bubblewrap jail, against the same tool with ``isolation = "none"``
    (a bare subprocess: the baseline). The two are interleaved, call by call, so a busy
    machine slows both alike. Target: under 20 ms more than the bare subprocess at p50.
    The jail alone (``BubblewrapJail.run`` against ``Unjailed.run``, no tool around it)
    is measured the same way.

docker
    Added by the Docker backend: ``exec`` warm and cold (see `SECTIONS`).

Figures are printed, and written to bench/results/sandbox.json, one entry per section.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from beamclaw_sandbox import BubblewrapJail, parse_sandbox_config
from beamclaw_tools import BashTool, Jail, ToolContext, ToolSession, Unjailed, run_tool

from ._cli import save

Timed = Callable[[], Awaitable[None]]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _figures(samples: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(samples) * 1000, 2),
        "p99_ms": round(_percentile(samples, 0.99) * 1000, 2),
        "mean_ms": round(statistics.fmean(samples) * 1000, 2),
    }


async def side_by_side(cases: dict[str, Timed], iterations: int, warmup: int = 5) -> dict[str, dict[str, float]]:
    """Each case *iterations* times, interleaved (a, b, a, b...), after *warmup* rounds."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(warmup + iterations):
        for name, case in cases.items():
            started = time.perf_counter()
            await case()
            if round_ >= warmup:
                samples[name].append(time.perf_counter() - started)
    return {name: _figures(values) for name, values in samples.items()}


def _overhead(figures: dict[str, dict[str, float]], case: str, baseline: str) -> dict[str, float]:
    return {
        "p50_ms": round(figures[case]["p50_ms"] - figures[baseline]["p50_ms"], 2),
        "p99_ms": round(figures[case]["p99_ms"] - figures[baseline]["p99_ms"], 2),
    }


async def bench_bubblewrap(iterations: int) -> dict[str, Any]:
    jail = BubblewrapJail(parse_sandbox_config({}))
    problem = await jail.check()
    if problem is not None:
        return {"skipped": problem}
    with tempfile.TemporaryDirectory(prefix="beamclaw-bench-") as tmp:
        home = Path(tmp)
        workspace = home / "agents" / "default"
        workspace.mkdir(parents=True)
        context = ToolContext(workspace, home, jails={"bubblewrap": jail})
        session = ToolSession("bench", "default", "local:bench")
        args = {"command": "echo hi"}
        jailed_tool, bare_tool = BashTool(), BashTool(isolation="none")

        async def tool(which: BashTool) -> None:
            result = await run_tool(which, args, session, context)
            assert result.text == "exit code: 0\nhi", result.text

        async def alone(which: Jail) -> None:
            result = await which.run(["bash", "-c", "echo hi"], workspace=workspace, timeout=30, output_limit=16_000)
            assert result.stdout == b"hi\n", result

        tools = await side_by_side(
            {"bash_bubblewrap": lambda: tool(jailed_tool), "bash_bare": lambda: tool(bare_tool)}, iterations
        )
        jails = await side_by_side(
            {"jail_bubblewrap": lambda: alone(jail), "jail_bare": lambda: alone(Unjailed())}, iterations
        )
    return {
        "iterations": iterations,
        "command": "echo hi",
        **tools,
        **jails,
        "bash_overhead": _overhead(tools, "bash_bubblewrap", "bash_bare"),
        "jail_overhead": _overhead(jails, "jail_bubblewrap", "jail_bare"),
        "target": "bash_overhead p50 under 20 ms",
    }


#: section name -> async (iterations) -> figures. The Docker backend adds "docker".
SECTIONS: dict[str, Callable[[int], Awaitable[dict[str, Any]]]] = {
    "bubblewrap": bench_bubblewrap,
}


def _print(name: str, figures: dict[str, Any]) -> None:
    print(f"\n== {name}")
    if "skipped" in figures:
        print(f"  skipped: {figures['skipped']}")
        return
    for key, value in figures.items():
        if isinstance(value, dict):
            print(f"  {key:<18} " + "  ".join(f"{k} {v:>8}" for k, v in value.items()))
        else:
            print(f"  {key:<18} {value}")


async def main(quick: bool, only: str | None) -> None:
    results: dict[str, Any] = {}
    for name, section in SECTIONS.items():
        if only is not None and name != only:
            continue
        results[name] = await section(20 if quick else 300)
        _print(name, results[name])
    save("sandbox", results)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    parser.add_argument("--only", choices=sorted(SECTIONS), help="one section only")
    options = parser.parse_args()
    trio.run(main, options.quick, options.only)
