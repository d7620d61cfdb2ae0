"""Where the agent loop gets its jails: the sandbox app's ``jails`` process.

The loop asks it, before running a turn's tool calls, for the jails of the session
(`session_jails`) and puts them in the `beamclaw_tools.ToolContext`; ``bash`` and
``terminal`` then run in the one their ``isolation`` names. So the tools app never
imports this one, and a loop whose sandbox app is down gets no jail: its commands are
refused (fail closed), never run unjailed.

The bubblewrap jail is one object for every session (it keeps only its probe). A
backend whose jail is per session (Docker: a container per scope) adds a factory.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

import attrs

import supervision as sv
from beamclaw_base import Jail
from beamclaw_tools import ToolSession

from ._bubblewrap import BubblewrapJail, remove_stale_copies
from ._config import SandboxConfig

#: The registered name of the jails process.
JAILS: Final = "beamclaw_sandbox.jails"
#: Seconds a call waits for the jails process while it is being restarted.
_RESTART_WAIT: Final = 2.0

#: Makes the jail a session's commands run in, for a backend whose jails are per session.
JailFactory = Callable[[ToolSession], Jail]


@attrs.frozen
class SessionJails(sv.Request[dict[str, Jail]]):
    """The jails *session*'s commands may run in, by backend name."""

    session: ToolSession


class JailServer(sv.GenServer):
    """Holds the jails; answers `SessionJails`."""

    def init(self, config: SandboxConfig, factories: Mapping[str, JailFactory]) -> tuple[Jail, dict[str, JailFactory]]:
        sv.register(JAILS)
        # A daemon killed with -9 left its /etc copy behind: removed at this start, not at
        # the first command (a glob of the temp folder: cheap enough to do here).
        remove_stale_copies(Path(tempfile.gettempdir()))
        return BubblewrapJail(config), dict(factories)

    def handle_call(
        self, request: SessionJails, caller: sv.Caller, state: tuple[Jail, dict[str, JailFactory]]
    ) -> sv.Reply:
        bubblewrap, factories = state
        match request:
            case SessionJails(session):
                jails = {"bubblewrap": bubblewrap}
                jails.update({name: make(session) for name, make in factories.items()})
                return sv.Reply(jails, state)
        raise ValueError(f"unknown jails request {request!r}")


def jail_server(config: SandboxConfig, factories: Mapping[str, JailFactory] | None = None) -> sv.ChildSpec:
    """The ``jails`` child of the sandbox app's tree: the bubblewrap jail of *config*, and
    one jail per session of each of *factories* (by backend name, e.g. ``{"docker": ...}``)."""
    return sv.ChildSpec("jails", JailServer.start, args=(config, dict(factories or {})))


async def session_jails(session: ToolSession) -> dict[str, Jail]:
    """The jails *session*'s commands may run in, by backend name; empty when the sandbox
    app is not running (then ``bash`` and ``terminal`` refuse, naming the fix)."""
    try:
        return await sv.call(JAILS, SessionJails(session), restart_wait=_RESTART_WAIT)
    except (sv.NoProc, sv.ProcessExited, sv.CallTimeout):
        return {}
