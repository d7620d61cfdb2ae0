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
from ._rate_limit import RateLimiter


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

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_prune, app.config["RATE_LIMITER"], config.rate_limit.window_seconds)
        await serve(app, hyper, task_status=_Started(), mode="asgi")  # type: ignore[arg-type]
        nursery.cancel_scope.cancel()


async def _prune(limiter: RateLimiter, every: float) -> None:
    """Forget clients that have been quiet for a whole window, so the table does not grow for ever."""
    while True:
        await trio.sleep(every)
        limiter.prune(trio.current_time())
