"""Tool names: ``mcp__<server>__<tool>``, valid wherever a model takes a tool name.

OpenAI's function names are ``^[a-zA-Z0-9_-]{1,64}$``; an MCP server names its tools
as it likes (``files/read``, ``search.web``, a name of 200 characters). A character
outside the set becomes ``_``, and a name that would be too long, or that two of a
server's tools would share once cleaned, ends with a hash of the original instead.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Final

PREFIX: Final = "mcp__"
MAX_LENGTH: Final = 64
_INVALID: Final = re.compile(r"[^a-zA-Z0-9_-]")


def _hashed(name: str, keep: str, room: int) -> str:
    digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()[:8]
    return f"{keep[: room - 9]}_{digest}"


def tool_names(server: str, remote: Iterable[str]) -> dict[str, str]:
    """The name BeamClaw gives each of *server*'s tools (remote name -> local name), all distinct."""
    head = f"{PREFIX}{server}__"
    room = MAX_LENGTH - len(head)
    cleaned = {name: _INVALID.sub("_", name) for name in remote}
    counts: dict[str, int] = {}
    for clean in cleaned.values():
        counts[clean] = counts.get(clean, 0) + 1
    names = {}
    for name, clean in cleaned.items():
        fits = counts[clean] == 1 and 0 < len(clean) <= room
        names[name] = head + (clean if fits else _hashed(name, clean, room))
    return names


def remote_server(local: str) -> str | None:
    """The server a local tool name belongs to (``mcp__files__read`` -> ``files``), or None."""
    if not local.startswith(PREFIX):
        return None
    server, separator, _ = local[len(PREFIX) :].partition("__")
    return server if separator else None
