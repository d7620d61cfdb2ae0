"""BeamClaw's own overhead per agent turn, against the scripted model server.

    python -m bench.turn_bench [--quick]

Each turn goes the whole way a daemon's does: session and loop processes, the
real provider streaming over HTTP from the scripted OpenAI-compatible server on
127.0.0.1, SQLite persistence (WAL) of the user and assistant messages, events
fanned out to the log and metrics backends. The baseline, measured in the same run
and interleaved with it, is the model's own time: the same provider code streaming
the same reply straight from the server. Overhead = turn minus baseline.

Figures (printed, and written to bench/results/turn.json):
  plain     a turn with no tool call (one model call)
  tool      a turn with one tool call (jq) and a final answer (two model calls)
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio
from loguru import logger

import beamclaw_core as core
import beamclaw_memory as memory
import beamclaw_obs as obs
import beamclaw_sandbox as sandbox
import beamclaw_tools as tools
import supervision as sv
from tests.support.model_server import Call, Reply, scripted_model

from ._cli import quick_flag, save

_ANSWER = "The answer, with a sentence or two of text, as a short model reply would have. " * 2


def _tree(home: Path, base_url: str) -> sv.Supervisor:
    core_table = {
        "default_provider": "scripted",
        "autonomy_level": "full",
        "providers": {"scripted": {"base_url": base_url, "model": "scripted"}},
    }
    return sv.Supervisor(
        [
            obs.supervision_tree({"log_file": True}, home).child_spec("obs"),
            tools.supervision_tree({}, home).child_spec("tools"),
            sandbox.supervision_tree({}, home).child_spec("sandbox"),
            memory.supervision_tree({"enabled": False}, home).child_spec("memory"),
            core.supervision_tree(core_table, home).child_spec("core"),
        ]
    )


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def _direct(client: httpx.AsyncClient, url: str, bodies: list[dict[str, Any]]) -> float:
    """The model's own time: the very requests the turn made, sent again with nothing around them."""
    started = time.perf_counter()
    for body in bodies:
        async with client.stream("POST", url, json=body) as response:
            async for _ in response.aiter_lines():
                pass
    return time.perf_counter() - started


async def _turn(session: core.SessionHandle, text: str) -> float:
    started = time.perf_counter()
    result = await core.send_message(session, text, core.CollectingChannel())
    elapsed = time.perf_counter() - started
    assert result.ok, result.text
    return elapsed


async def _measure(kind: str, turns: int) -> dict[str, Any]:
    step: Any = Reply(_ANSWER) if kind == "plain" else None
    tool_call = Reply(tool_calls=(Call("jq", {"filter": ".a", "input": '{"a": 1}'}),))
    with tempfile.TemporaryDirectory() as home:
        async with scripted_model(repeat=step) as model, httpx.AsyncClient() as client:
            url = f"{model.base_url}/chat/completions"
            async with sv.open_supervisor(_tree(Path(home), model.base_url)):
                session = await core.open_session("bench", "default")
                baseline, measured = [], []
                for i in range(turns):
                    if kind == "tool":
                        model.add(tool_call, Reply(_ANSWER))
                    model.requests.clear()  # keep only this turn's requests (the heap stays small)
                    measured.append(await _turn(session, f"message {i}"))
                    bodies = list(model.requests)
                    model.add(*([tool_call] if kind == "tool" else []), Reply(_ANSWER))  # what the baseline gets
                    baseline.append(await _direct(client, url, bodies))
                    if i % 50 == 49:  # keep the history (and so the prompt) from growing without end
                        await core.reset_session(session)
    overhead = [m - b for m, b in zip(measured, baseline, strict=True)]
    return {
        "turns": turns,
        "turn_p50_ms": statistics.median(measured) * 1e3,
        "turn_p99_ms": _percentile(measured, 0.99) * 1e3,
        "model_p50_ms": statistics.median(baseline) * 1e3,
        "overhead_p50_ms": statistics.median(overhead) * 1e3,
        "overhead_p99_ms": _percentile(overhead, 0.99) * 1e3,
        "turn_vs_model": statistics.median(measured) / statistics.median(baseline),
    }


async def _main(quick: bool) -> dict[str, Any]:
    turns = 60 if quick else 400
    return {"plain": await _measure("plain", turns), "tool": await _measure("tool", turns // 2)}


def main() -> None:
    quick = quick_flag(__doc__)
    logger.remove()  # the log backend still writes its file; keep the terminal for the figures
    result = trio.run(_main, quick)
    for kind, r in result.items():
        print(
            f"{kind:5} turn p50 {r['turn_p50_ms']:6.2f} ms  model alone p50 {r['model_p50_ms']:6.2f} ms  "
            f"overhead p50 {r['overhead_p50_ms']:5.2f} ms  p99 {r['overhead_p99_ms']:5.2f} ms  "
            f"ratio {r['turn_vs_model']:.2f}x  ({r['turns']} turns)"
        )
    save("turn", result)


if __name__ == "__main__":
    main()
