"""What every session of the core app shares: its configuration, data dir and registry."""

from __future__ import annotations

import ssl
from functools import cache
from pathlib import Path
from typing import Any, Final, final

import attrs
import httpx

import supervision as sv

from ._config import CoreConfig
from ._provider import OpenAICompatProvider

HTTP_CLIENT: Final = "beamclaw_core.http"


@cache
def _ssl_context() -> ssl.SSLContext:
    # Building a context loads the CA bundle (milliseconds); every client shares one.
    return httpx.create_ssl_context()


@final
@attrs.frozen
class Runtime:
    config: CoreConfig
    data_dir: Path
    registry: sv.Registry

    def session_dest(self, session_id: str) -> sv.ViaName:
        return self.registry.via(session_id)

    def loop_dest(self, session_id: str) -> sv.ViaName:
        return self.registry.via(("loop", session_id))

    def workspace(self, agent_id: str) -> Path:
        return self.data_dir / "agents" / agent_id

    def provider(self, client: httpx.AsyncClient) -> OpenAICompatProvider:
        name = self.config.default_provider
        return OpenAICompatProvider(name, self.config.providers[name], client)


class HttpClientOwner(sv.GenServer):
    """Owns the one `httpx.AsyncClient` (and its connection pool) that every loop shares.

    A loop may be killed at any moment; if it owned a client, its pooled sockets would
    leak. This process outlives the loops (it starts before the sessions' supervisor,
    under rest_for_one) and closes the pool when it stops.
    """

    def init(self) -> httpx.AsyncClient:
        sv.register(HTTP_CLIENT)
        return httpx.AsyncClient(verify=_ssl_context())

    def handle_call(self, request: Any, caller: sv.Caller, client: httpx.AsyncClient) -> sv.Reply:
        if request != "client":
            raise ValueError(f"unknown request {request!r}")
        return sv.Reply(client, client)

    async def terminate(self, reason: Any, client: httpx.AsyncClient) -> None:
        await client.aclose()


async def shared_http_client() -> httpx.AsyncClient:
    client: httpx.AsyncClient = await sv.call(HTTP_CLIENT, "client")
    return client
