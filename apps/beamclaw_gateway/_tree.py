"""The gateway app's tree: the HTTP server (and, when enabled, the Telegram channel)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import beamclaw_core as core
import supervision as sv

from ._config import parse_gateway_config
from ._server import serve_http
from ._telegram_bot import SENDER, telegram_bot


def supervision_tree(table: dict[str, Any], data_dir: Path) -> sv.Supervisor:
    config = parse_gateway_config(table)
    children = [sv.ChildSpec("http", functools.partial(serve_http, config, data_dir), shutdown=5.0)]
    telegram = config.channels.telegram
    if telegram.enabled:
        children.append(sv.ChildSpec("telegram_sender", core.HttpClientOwner.start, args=(SENDER, False)))
        children.append(
            sv.ChildSpec(
                "telegram",
                functools.partial(telegram_bot, config, data_dir, telegram.webhook_url),
                shutdown=5.0,
                backoff=sv.Backoff(initial=0.5, maximum=30.0),
            )
        )
    # rest_for_one: a restarted sender restarts the poller, which holds its client.
    return sv.Supervisor(children, strategy=sv.REST_FOR_ONE, name="beamclaw_gateway", intensity=5, period=10.0)
