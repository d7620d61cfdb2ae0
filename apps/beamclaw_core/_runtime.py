"""What every session of the core app shares: its configuration, data dir and registry."""

from __future__ import annotations

from pathlib import Path
from typing import Final, final

import attrs
import httpx

import supervision as sv

from ._config import CoreConfig, ProviderConfig
from ._provider import OpenAICompatProvider, Provider

HTTP_CLIENT: Final = "beamclaw_core.http"
#: Seconds a call to a process of core's (by its name) waits for it while it is being
#: restarted, so callers ride through a restart instead of failing (sv.call's
#: restart_wait); a restart takes milliseconds, a session tree's up to half a second.
RESTART_WAIT: Final = 2.0


@final
@attrs.define(eq=False)
class Runtime:
    """Shared by every session and loop of the app; `reconfigure` replaces ``config`` in
    place, so the next turn of every conversation uses the new one."""

    config: CoreConfig
    data_dir: Path
    registry: sv.Registry

    def session_dest(self, session_id: str) -> sv.ViaName:
        return self.registry.via(session_id)

    def loop_dest(self, session_id: str) -> sv.ViaName:
        return self.registry.via(("loop", session_id))

    def workspace(self, agent_id: str) -> Path:
        return self.data_dir / "agents" / agent_id

    def provider(self, client: httpx.AsyncClient, agent_id: str) -> Provider:
        """The provider *agent_id*'s turns use now (``[core.agents.NAME]``, else the default)."""
        return _connect(*self.config.provider_for(agent_id), client)

    def summariser(self, client: httpx.AsyncClient, agent_id: str) -> Provider:
        """The provider that writes compaction's summaries and the memory flush for *agent_id*."""
        return _connect(*self.config.summariser_for(agent_id), client)


def _connect(name: str, config: ProviderConfig, client: httpx.AsyncClient) -> Provider:
    """The provider for a ``[core.providers.NAME]`` table: where another API's class is chosen."""
    return OpenAICompatProvider(name, config, client)
