"""What a configuration runs, in the words the start-up log and `beamclaw status` use."""

from __future__ import annotations

import urllib.parse
from typing import Any

import beamclaw_core as core
import beamclaw_gateway as gateway

from ._apps import app_table


def describe(config: dict[str, Any]) -> dict[str, str | None]:
    """The model (``provider model at base_url``) and the gateway's URL (None when it is off).

    *config* has been checked (`check_config`), so its tables parse.
    """
    provider = core.parse_core_config(app_table("core", config)).provider
    name = config.get("core", {}).get("default_provider", core.CoreConfig().default_provider)
    url = None
    if config.get("gateway", {}).get("enabled", True):
        http = gateway.parse_gateway_config(app_table("gateway", config)).http
        host = f"[{http.host}]" if ":" in http.host else http.host
        url = f"http://{host}:{http.port}"
    where = _without_credentials(provider.base_url)
    return {"model": f"{provider.model} from provider {name!r} at {where}", "gateway": url}


def _without_credentials(url: str) -> str:
    """*url* without a ``user:password@`` part (status is read by viewers, and logged)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
