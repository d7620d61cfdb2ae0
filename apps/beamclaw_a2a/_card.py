"""The agent card, built from ``[a2a]``: v1.0 fields, with the 0.3 ones alongside for older clients."""

from __future__ import annotations

from typing import Any

from ._config import A2AConfig

PROTOCOL_VERSION = "1.0"
#: Where the JSON-RPC endpoint is served, under the base URL.
A2A_PATH = "/a2a"


def agent_card(config: A2AConfig, base_url: str, version: str) -> dict[str, Any]:
    """The card for an agent served at ``{base_url}/a2a``."""
    endpoint = base_url.rstrip("/") + A2A_PATH
    return {
        "name": config.name,
        "description": config.description,
        "version": version,
        "supportedInterfaces": [{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}],
        "capabilities": {"streaming": True, "pushNotifications": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {"id": s.id, "name": s.name, "description": s.description, "tags": s.tags, "examples": s.examples}
            for s in config.skills
        ],
        # A2A 0.3 clients read these.
        "url": endpoint,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
    }
