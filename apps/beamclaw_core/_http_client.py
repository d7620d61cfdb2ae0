"""A process that owns an `httpx.AsyncClient`, for users that may be killed at any moment.

A loop (or a Telegram reply in flight) may be killed at any moment; if it owned its
client, the pooled sockets would leak, and a restart would cut off what was still
being sent. The owner outlives its users (it starts before them, under
rest_for_one), hands out its client on request, and closes the pool when it stops.

The client is built on the first request for it, not when the owner starts: building
one imports httpcore (and h2), a quarter of a second of CPU that a daemon's start-up
need not pay before it answers /health. The CA bundle is loaded when the owner starts
(about 30 ms, once a process): a bad CA setup (SSL_CERT_FILE naming no file) then fails
the start, where at the first request it would crash the owner and, under rest_for_one,
everything started after it, at every model call.
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


@attrs.define
class _Pool:
    """The owner's state: its client once a user has asked for it."""

    trust_env: bool
    verify: ssl.SSLContext
    client: httpx.AsyncClient | None = None

    def built(self) -> httpx.AsyncClient:
        """The client, built now if nobody has asked for it yet."""
        if self.client is None:
            self.client = httpx.AsyncClient(verify=self.verify, trust_env=self.trust_env)
        return self.client


class HttpClientOwner(sv.GenServer):
    """Start it with the name to register; ``trust_env`` as httpx has it."""

    def init(self, name: str, trust_env: bool = True) -> _Pool:
        sv.register(name)
        return _Pool(trust_env, _ssl_context())

    def handle_call(self, request: OwnedClient, caller: sv.Caller, pool: _Pool) -> sv.Reply:
        match request:
            case OwnedClient():
                return sv.Reply(pool.built(), pool)
        raise ValueError(f"unknown request {request!r}")

    async def terminate(self, reason: Any, pool: _Pool) -> None:
        if pool.client is not None:
            await pool.client.aclose()


async def owned_http_client(name: str) -> httpx.AsyncClient:
    """The client of the owner registered as *name*."""
    return await sv.call(name, OwnedClient(), restart_wait=RESTART_WAIT)
