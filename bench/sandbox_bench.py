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
    The real `exec` tool (through `run_tool`: the sandbox's registry, the warm container,
    the bridge served for the script, PII and the output) running ``print('hi')`` in
    Python and ``echo hi`` in bash, warm (the container of the session already runs),
    against the same programs as bare subprocesses on the host, interleaved call by
    call. Target: warm exec under 150 ms at p50. ``engine_exec`` is the Docker engine's
    own floor (``docker exec`` of ``true`` in the same container, through the SDK), so
    what the engine costs and what BeamClaw adds can be told apart. Cold: the sandbox is
    stopped (its container removed, untimed) before each call, so each ``exec`` starts a
    container first; measured beside the same bare subprocess.

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

from beamclaw_base import Jail, Unjailed
from beamclaw_sandbox import BubblewrapJail, parse_sandbox_config
from beamclaw_tools import BashTool, ToolContext, ToolSession, run_tool

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


async def bench_docker(iterations: int) -> dict[str, Any]:
    import supervision as sv
    from beamclaw_sandbox import DockerEngine, ExecTool, kill_sandbox
    from beamclaw_sandbox import supervision_tree as sandbox_tree
    from beamclaw_tools import supervision_tree as tools_tree

    image = "beamclaw-sandbox:latest"
    engine = DockerEngine()
    try:
        if not await engine.ping():
            return {"skipped": "no Docker engine answers (start dockerd)"}
        if not await engine.image_exists(image):
            return {"skipped": f"{image} is not built (sandbox-image/build.sh)"}
    finally:
        engine.close()
    with tempfile.TemporaryDirectory(prefix="beamclaw-bench-") as tmp:
        home = Path(tmp)
        workspace = home / "agents" / "default"
        workspace.mkdir(parents=True)
        table = {"enabled": True, "docker_image": image}
        root = sv.Supervisor(
            [tools_tree({}, home).child_spec("tools"), sandbox_tree(table, home).child_spec("sandbox")], name="bench"
        )
        async with sv.open_supervisor(root):
            runtime = await sv.call("beamclaw_sandbox.registry", "runtime")
            tool = ExecTool(runtime.config)
            context = ToolContext(workspace, home)
            session = ToolSession("bench", "default", "local:bench")

            async def exec_tool(language: str, code: str) -> None:
                result = await run_tool(tool, {"language": language, "code": code}, session, context)
                assert result.text.endswith("\nhi") and not result.is_error, result.text

            async def bare(*argv: str) -> None:
                done = await trio.run_process(list(argv), capture_stdout=True)
                assert done.stdout == b"hi\n"

            await exec_tool("python", "print('hi')")  # the container of the session starts here
            name = runtime.registry.lookup("session:bench")[0][1].name

            async def engine_exec() -> None:
                output = await runtime.engine.exec(name, ["true"])
                assert output.exit_code == 0

            warm = await side_by_side(
                {
                    "exec_python_warm": lambda: exec_tool("python", "print('hi')"),
                    "bare_python": lambda: bare("python3", "-c", "print('hi')"),
                    "exec_shell_warm": lambda: exec_tool("shell", "echo hi"),
                    "bare_shell": lambda: bare("bash", "-c", "echo hi"),
                    "engine_exec": engine_exec,
                },
                iterations,
            )
            cold_samples: dict[str, list[float]] = {"exec_python_cold": [], "bare_python_cold_baseline": []}
            for _ in range(max(5, iterations // 10)):
                await kill_sandbox("session:bench")  # untimed: the next exec starts a new container
                for case, call in (
                    ("exec_python_cold", lambda: exec_tool("python", "print('hi')")),
                    ("bare_python_cold_baseline", lambda: bare("python3", "-c", "print('hi')")),
                ):
                    started = time.perf_counter()
                    await call()
                    cold_samples[case].append(time.perf_counter() - started)
    cold = {case: _figures(samples) for case, samples in cold_samples.items()}
    return {
        "iterations": iterations,
        "cold_iterations": len(cold_samples["exec_python_cold"]),
        **warm,
        **cold,
        "python_overhead_warm": _overhead(warm, "exec_python_warm", "bare_python"),
        "shell_overhead_warm": _overhead(warm, "exec_shell_warm", "bare_shell"),
        "target": "exec warm p50 under 150 ms",
    }


#: section name -> async (iterations) -> figures.
SECTIONS: dict[str, Callable[[int], Awaitable[dict[str, Any]]]] = {
    "bubblewrap": bench_bubblewrap,
    "docker": bench_docker,
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
