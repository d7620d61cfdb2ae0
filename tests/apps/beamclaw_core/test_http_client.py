"""The HTTP client owner builds its client on the first request for it: starting the owner
(as every daemon start does) does not import httpcore. It loads the CA bundle when it
starts, so a bad CA setup fails the start, not every conversation later."""

from __future__ import annotations

import os
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


_BAD_CA = """
import trio
import supervision as sv
from beamclaw_core import HttpClientOwner

async def main():
    spec = sv.Supervisor([sv.ChildSpec("http", HttpClientOwner.start, args=("test-http",))])
    try:
        async with sv.open_supervisor(spec):
            print("started")
    except BaseException as exc:
        print("refused", "FileNotFoundError" in repr(exc) or "FileNotFoundError" in str(exc.__cause__))

trio.run(main)
"""


def test_a_bad_ca_setup_fails_the_owners_start() -> None:
    # Found only at the first model call, it would crash the owner there, and with it
    # (rest_for_one) every conversation, at every call.
    environment = {**os.environ, "SSL_CERT_FILE": "/nonexistent/ca.pem"}
    done = subprocess.run(
        [sys.executable, "-c", _BAD_CA], capture_output=True, text=True, check=True, timeout=60, env=environment
    )
    assert done.stdout.split()[0] == "refused", done.stdout + done.stderr
