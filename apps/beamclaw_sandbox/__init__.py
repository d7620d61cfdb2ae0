"""The sandbox app: every command the agent runs is jailed.

Two backends behind the `beamclaw_tools.Jail` interface: bubblewrap (the light jail of
``bash``, ``terminal`` and skill scripts) and Docker (code execution with MCP: a warm
container per scope, the tool bridge, the PII tokenizer, the tool policy).
"""

from ._config import (
    DEFAULT_ENV_BLOCKLIST,
    PII_PATTERNS,
    BubblewrapConfig,
    PiiConfig,
    PolicyConfig,
    PolicyRule,
    SandboxConfig,
    parse_sandbox_config,
    parse_size,
)

__all__ = [
    "DEFAULT_ENV_BLOCKLIST",
    "PII_PATTERNS",
    "BubblewrapConfig",
    "PiiConfig",
    "PolicyConfig",
    "PolicyRule",
    "SandboxConfig",
    "parse_sandbox_config",
    "parse_size",
]
