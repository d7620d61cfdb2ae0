"""Secrets in configuration: only ever ``{ env = "VAR" }``, resolved when used."""

from __future__ import annotations

import os
from typing import final

import attrs

from beamclaw_obs import register_secret


class MissingSecret(Exception):
    """A secret's environment variable is not set; the message names it."""


@final
@attrs.frozen
class Secret:
    """A reference to an environment variable that holds a secret."""

    env: str

    def get(self, purpose: str) -> str:
        """The value, registered with the scrubber; raises `MissingSecret` naming the variable."""
        value = os.environ.get(self.env, "")
        if not value:
            raise MissingSecret(f"{purpose} needs the environment variable {self.env}, which is not set")
        register_secret(value)
        return value

    def get_optional(self) -> str | None:
        value = os.environ.get(self.env, "")
        if value:
            register_secret(value)
        return value or None


#: A configuration value that is either plain text (``"debug"``) or a secret reference
#: (``{ env = "VAR" }``): an MCP server's environment or headers. Plain text that looks
#: like a credential is refused when the configuration is read.
TextOrSecret = str | Secret


def resolve(value: TextOrSecret, purpose: str) -> str:
    """The text of *value*: itself, or the secret's value (`MissingSecret` naming the variable)."""
    return value.get(purpose) if isinstance(value, Secret) else value
