"""The messages the daemon's host process answers: what the daemon alone knows.

The routes run in the gateway's app, which may not import the daemon root (`beamclaw`),
yet some operations are the daemon's own: its status, its configuration file, a reload,
stopping it. The daemon runs a GenServer registered as `HOST` for them, and the routes
`sv.call` it with these messages, as any app reaches another process by its name.
"""

from __future__ import annotations

from typing import Final, final

import attrs

#: The registered name of the daemon's host process.
HOST: Final = "beamclaw.host"
#: How long a reload may take (it checks the whole configuration and restarts apps).
RELOAD_SECONDS: Final = 60.0


class KilledOnPurpose(Exception):
    """The reason given to a process crashed with ``beamclaw kill`` (or the API's kill)."""


@final
@attrs.frozen
class Status:
    """The daemon's status: version, pid, uptime, apps, sessions, configuration."""


@final
@attrs.frozen
class ShowConfig:
    """The configuration the daemon runs with, and the file it came from."""


@final
@attrs.frozen
class EnvNames:
    """The environment variables the configuration file names."""


@final
@attrs.frozen
class Reload:
    """Read the configuration file again and apply it; *env*: values of the variables it names."""

    env: dict[str, str] = attrs.field(factory=dict)


@final
@attrs.frozen
class Stop:
    """Stop the daemon, as SIGTERM would."""


@final
@attrs.frozen
class LogFile:
    """Where the obs app writes the log (a path, or None when it writes no file)."""


@final
@attrs.frozen
class Resolve:
    """The process a kill or an inspection names: a pid (``<0.12.0>``), a registered name
    (unless *path_only*), else a path from the root (or a session id first)."""

    target: str
    path_only: bool = False


#: Every request the host answers.
HostRequest = Status | ShowConfig | EnvNames | Reload | Stop | LogFile | Resolve
