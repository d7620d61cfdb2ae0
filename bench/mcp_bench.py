"""What BeamClaw's MCP host adds to a tool call, and how fast a killed server is back.

    python -m bench.mcp_bench [--quick]

call
    ``add(a, b)`` of the test MCP server (tests/support/mcp_server.py, over stdio)
    through BeamClaw (`run_tool` on the registered ``mcp__bench__add``: the arguments
    checked against the server's schema, the link, the SDK session, the result rendered),
    against the same call made straight through an SDK `ClientSession` to a second copy
    of the same server (the baseline), interleaved call by call.

recovery
    A ``kill -9`` of the server, then the time until a call through BeamClaw answers
    again (the death noticed, the restart with its backoff, the handshake, the tools
    registered again), and how long a call in flight took to fail.

Figures are printed, and written to bench/results/mcp.json.
"""

from __future__ import annotations

import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import beamclaw_mcp as mcp
import beamclaw_obs as obs
import beamclaw_tools as tools
import supervision as sv

from ._cli import quick_flag, save

ROOT = Path(__file__).parents[1]
SERVER = [sys.executable, "-m", "tests.support.mcp_server"]


def _ms(values: list[float], q: float) -> float:
    return round(statistics.quantiles(values, n=100)[int(q) - 1] * 1000, 3) if len(values) > 2 else 0.0


async def _ready(name: str) -> None:
    while not [s for s in await mcp.server_statuses() if s.name == name and s.state == "ready"]:
        await trio.sleep(0.01)


async def main(quick: bool) -> dict[str, Any]:
    calls = 200 if quick else 2000
    home = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    table = {"servers": {"bench": {"command": SERVER, "cwd": str(ROOT)}}}
    tree = sv.Supervisor(
        [
            obs.supervision_tree({"log_level": "WARNING", "log_file": False}, home).child_spec("obs"),
            tools.supervision_tree({}, home).child_spec("tools"),
            mcp.supervision_tree(table, home).child_spec("mcp"),
        ],
        name="bench",
    )
    session = tools.ToolSession("bench", "default", "bench")
    context = tools.ToolContext(home, home)
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=str(ROOT))
    async with (
        sv.open_supervisor(tree),
        stdio_client(params) as (read, write),
        ClientSession(read, write) as direct,
    ):
        await direct.initialize()
        with trio.fail_after(60):
            await _ready("bench")
        tool = await tools.lookup_tool("mcp__bench__add")
        assert tool is not None
        through, baseline = [], []
        for i in range(calls):
            started = time.perf_counter()
            result = await tools.run_tool(tool, {"a": i, "b": 1}, session, context)
            through.append(time.perf_counter() - started)
            assert result.text == str(i + 1), result
            started = time.perf_counter()
            await direct.call_tool("add", {"a": i, "b": 1})
            baseline.append(time.perf_counter() - started)
        call = {
            "calls": calls,
            "beamclaw_p50_ms": _ms(through, 50), "beamclaw_p99_ms": _ms(through, 99),
            "sdk_direct_p50_ms": _ms(baseline, 50), "sdk_direct_p99_ms": _ms(baseline, 99),
            "overhead_p50_ms": round(_ms(through, 50) - _ms(baseline, 50), 3),
            "ratio_p50": round(statistics.median(through) / statistics.median(baseline), 2),
        }  # fmt: skip
        print("== call", call)

        recoveries, fails = [], []
        for _ in range(3 if quick else 10):
            pid = int((await tools.run_tool(await tools.lookup_tool("mcp__bench__pid"), {}, session, context)).text)  # type: ignore[arg-type]
            slow = await tools.lookup_tool("mcp__bench__slow")
            assert slow is not None
            failed_at: list[float] = []

            async def in_flight(slow: tools.Tool = slow, failed_at: list[float] = failed_at) -> None:
                await tools.run_tool(slow, {"seconds": 60}, session, context)
                failed_at.append(time.perf_counter())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(in_flight)
                await trio.sleep(0.3)
                killed = time.perf_counter()
                os.kill(pid, signal.SIGKILL)
            fails.append(failed_at[0] - killed)
            add = await tools.lookup_tool("mcp__bench__add")
            assert add is not None
            while (await tools.run_tool(add, {"a": 1, "b": 1}, session, context)).text != "2":
                await trio.sleep(0.005)
            recoveries.append(time.perf_counter() - killed)
        recovery = {
            "kills": len(recoveries),
            "call_in_flight_failed_after_ms_p50": round(statistics.median(fails) * 1000, 1),
            "back_after_ms_p50": round(statistics.median(recoveries) * 1000, 1),
            "back_after_ms_max": round(max(recoveries) * 1000, 1),
        }
        print("== recovery", recovery)
    return {"call": call, "recovery": recovery}


if __name__ == "__main__":
    save("mcp", trio.run(main, quick_flag(__doc__)))
