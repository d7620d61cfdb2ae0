"""The owner-only Unix socket: the gateway's application, with every route of the
management API, served on ``<data dir>/control.sock`` (mode 0600).

The data dir is the owner's, and the socket only they may open: whoever connects is the
machine's owner, so every request there is the `LOCAL` admin (the gateway's app in its
local mode: no token, no rate limit, no Host or Origin check). The CLI and the TUI speak
HTTP to it with httpx. It runs whether or not the gateway serves TCP, with the limits of
the ``[gateway]`` table (its defaults when the table is absent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from loguru import logger

from beamclaw_gateway import create_app, parse_gateway_config

from ._blueprints import blueprints

#: The socket's name in the data dir.
SOCKET_NAME: Final = "control.sock"
#: Only the owner may read or write the socket (it is created under this umask).
_OWNER_ONLY: Final = 0o177


class AnotherDaemon(RuntimeError):
    """A live daemon already answers on the socket (two daemons may not share a data dir)."""


async def _answers(path: Path) -> bool:
    """Whether something accepts connections at *path*."""
    try:
        stream = await trio.open_unix_socket(str(path))
    except OSError:
        return False
    await stream.aclose()
    return True


async def serve_socket(table: dict[str, Any], data_dir: Path, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the management API on the data dir's socket until cancelled; remove it on the
    way out. *table*: the ``[gateway]`` table (for its body limits). A socket left by a
    killed daemon is replaced; one that answers means another daemon runs: `AnotherDaemon`."""
    path = data_dir / SOCKET_NAME
    if path.exists() or path.is_symlink():
        if await _answers(path):
            raise AnotherDaemon(f"another BeamClaw daemon is running (it answers at {path}); stop it first")
        path.unlink()  # a socket left by a daemon that was killed
    app = create_app(parse_gateway_config(table), data_dir, blueprints(), local=True)
    hyper = Config()
    hyper.bind = [f"unix:{path}"]
    hyper.umask = _OWNER_ONLY
    hyper.accesslog = None
    hyper.errorlog = None
    hyper.graceful_timeout = 2.0

    class _Started:
        """Hypercorn reports the bound socket; the supervisor only needs to know it is up."""

        def started(self, binds: list[str]) -> None:
            logger.debug("management API on {}", ", ".join(binds))
            task_status.started()

    try:
        await serve(app, hyper, task_status=_Started(), mode="asgi")  # type: ignore[arg-type]
    finally:
        path.unlink(missing_ok=True)
