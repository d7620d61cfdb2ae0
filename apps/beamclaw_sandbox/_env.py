"""The environment a container starts with: no API key ever reaches it.

Two filters, both must pass: a variable's *name* must be allowlisted and not
blocklisted (``[sandbox] env_allowlist`` / ``env_blocklist``, `SandboxConfig.env_allowed`),
and its *value* must not look like a credential to the scrubber (a key pasted into
``LANG`` by mistake still stays out). What the host's values would get wrong inside the
container (``PATH``, ``HOME``) is then set to the container's own.
"""

from __future__ import annotations

from collections.abc import Mapping

from beamclaw_obs import scrub

from ._config import SandboxConfig


def container_environment(
    config: SandboxConfig, environ: Mapping[str, str], fixed: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables of *environ* that may enter a container, then *fixed* over them."""
    passed = {
        name: value
        for name, value in environ.items()
        if config.env_allowed(name) and scrub(value) == value and "\0" not in value
    }
    return {**passed, **(fixed or {})}
