"""Serving the app with hypercorn's Trio worker, as a supervised child."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from loguru import logger

from ._app import create_app
from ._config import GatewayConfig


async def serve_http(
    config: GatewayConfig, data_dir: Path, extra: tuple[Any, ...] = (), task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Bind, report started with the bound addresses, and serve until cancelled."""
    app = create_app(config, data_dir, extra)
    hyper = Config()
    hyper.bind = [f"{config.http.host}:{config.http.port}"]
    hyper.accesslog = None
    hyper.errorlog = None
    hyper.websocket_max_message_size = config.http.max_ws_message_bytes
    hyper.graceful_timeout = 2.0

    class _Started:
        """Hypercorn reports the bound addresses; the supervisor only needs to know it is up."""

        def started(self, binds: list[str]) -> None:
            logger.info("gateway listening on {}", ", ".join(binds))
            task_status.started()

    await serve(app, hyper, task_status=_Started(), mode="asgi")  # type: ignore[arg-type]
