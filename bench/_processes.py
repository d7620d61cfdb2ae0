"""What the benchmarks that measure processes from outside share: the echo model in a
process of its own, and a process's CPU time and resident memory read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import trio

from tests.beamclaw.daemon import free_port

_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")


@asynccontextmanager
async def echo_model() -> AsyncIterator[str]:
    """The echoing scripted model in a process of its own (its memory and CPU are not
    those measured); its base URL, ending in ``/v1``."""
    port = free_port()
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.support.model_server", "--port", str(port)], stdout=subprocess.DEVNULL
    )
    try:
        with trio.fail_after(30):
            while True:
                try:
                    await (await trio.open_tcp_stream("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await trio.sleep(0.02)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        await process.wait()


def cpu_seconds(pid: int | str = "self") -> float:
    """User + system time of process *pid* so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def memory_kib(pid: int | str = "self", *names: str) -> dict[str, int]:
    """The /proc/PID/status fields *names* (by default VmRSS) of process *pid*, in KiB."""
    wanted = names or ("VmRSS",)
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in wanted:
            found[name] = int(value.split()[0])
    return found
