"""The HTTP client owner builds its client on the first request for it: starting the owner
(as every daemon start does) neither imports httpcore nor loads the CA bundle."""

from __future__ import annotations

import subprocess
import sys

_PROGRAM = """
import sys
import trio
import supervision as sv
from beamclaw_core import HttpClientOwner, owned_http_client

async def main():
    spec = sv.Supervisor([sv.ChildSpec("http", HttpClientOwner.start, args=("test-http",))])
    async with sv.open_supervisor(spec):
        started = "httpcore" in sys.modules
        first = await owned_http_client("test-http")
        again = await owned_http_client("test-http")
        print(started, "httpcore" in sys.modules, first is again, first.is_closed)
    print(first.is_closed)

trio.run(main)
"""


def test_the_client_is_built_on_the_first_request_then_shared_and_closed_with_the_owner() -> None:
    done = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["False", "True", "True", "False", "True"]
