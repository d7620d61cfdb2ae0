"""What a server's process tells the registry of itself: plain messages, in a module of
their own, so that the registry (which runs whether or not a server is configured) does
not import the MCP SDK to read them."""

from __future__ import annotations

import attrs


@attrs.frozen
class Connecting:
    """The server's process started and is connecting."""

    name: str


@attrs.frozen
class Ready:
    """The server's *tools* are registered; *skipped* says which were not, and why."""

    name: str
    tools: list[str]
    skipped: list[str]


@attrs.frozen
class Lost:
    """The connection ended with *error* (and the server's last *stderr* lines): it restarts."""

    name: str
    error: str
    stderr: str


#: What a server's process tells the registry of itself.
ServerReport = Connecting | Ready | Lost
