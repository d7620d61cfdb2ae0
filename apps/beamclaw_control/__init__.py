"""The management API and the web console: every operation on the running daemon, as
routes of the gateway's application, under the server-bound roles.

The same application serves the owner-only Unix socket in the data dir, which the CLI
and the TUI speak to with httpx (a request there is the machine's owner: an admin), and
the gateway's TCP address, where a token or the web console's session cookie decides
who a request is. One API, one set of checks, one set of tests.

Operations only the daemon root can do (its status, configuration, reload, stop) are
asked of its host process, registered as `HOST`, with the messages of `_host`.
"""

from ._blueprints import blueprints
from ._doctor_checks import Check, daemon_checks
from ._host import (
    HOST,
    RELOAD_SECONDS,
    EnvNames,
    HostRequest,
    KilledOnPurpose,
    LogFile,
    Reload,
    Resolve,
    ShowConfig,
    Status,
    Stop,
)
from ._socket import SOCKET_NAME, AnotherDaemon, serve_socket

__all__ = [
    "HOST",
    "RELOAD_SECONDS",
    "SOCKET_NAME",
    "AnotherDaemon",
    "Check",
    "EnvNames",
    "HostRequest",
    "LogFile",
    "KilledOnPurpose",
    "Reload",
    "Resolve",
    "ShowConfig",
    "Status",
    "Stop",
    "blueprints",
    "daemon_checks",
    "serve_socket",
]
