"""A process that owns an `httpx.AsyncClient`, for users that may be killed at any moment.

A loop (or a Telegram reply in flight) may be killed at any moment; if it owned its
client, the pooled sockets would leak, and a restart would cut off what was still
being sent. The owner outlives its users (it starts before them, under
rest_for_one), hands out its client on request, and closes the pool when it stops.
"""

from __future__ import annotations

import ssl
from functools import cache
from typing import Any

import attrs
import httpx

import supervision as sv

from ._runtime import RESTART_WAIT


@cache
def _ssl_context() -> ssl.SSLContext:
    # Building a context loads the CA bundle (milliseconds); every client shares one.
    return httpx.create_ssl_context()


@attrs.frozen
class OwnedClient(sv.Request[httpx.AsyncClient]):
    """The owner's client (the owner alone closes it)."""


class HttpClientOwner(sv.GenServer):
    """Start it with the name to register; ``trust_env`` as httpx has it."""

    def init(self, name: str, trust_env: bool = True) -> httpx.AsyncClient:
        sv.register(name)
        return httpx.AsyncClient(verify=_ssl_context(), trust_env=trust_env)

    def handle_call(self, request: OwnedClient, caller: sv.Caller, client: httpx.AsyncClient) -> sv.Reply:
        match request:
            case OwnedClient():
                return sv.Reply(client, client)
        raise ValueError(f"unknown request {request!r}")

    async def terminate(self, reason: Any, client: httpx.AsyncClient) -> None:
        await client.aclose()


async def owned_http_client(name: str) -> httpx.AsyncClient:
    """The client of the owner registered as *name*."""
    return await sv.call(name, OwnedClient(), restart_wait=RESTART_WAIT)
