"""The gateway app's tree: the HTTP server and, when enabled, the Telegram channel's subtree.

    beamclaw_gateway (one_for_one, 10 restarts / 30 s)
    ├── keys       the store of the chat route's idempotency keys (`_store`, gateway.db)
    ├── http
    └── telegram (rest_for_one, 10 restarts / 30 s; restarted after 1-5 s)
        ├── store      the gateway's store (`_store`): the Telegram ledger, gateway.db
        ├── sender     the HTTP client replies go out on (outlives the channel)
        ├── listener   on PostgreSQL only: wakes the channel when another node stored a
        │              webhook update (`beamclaw_base.listener`)
        └── channel    polls (or takes webhook updates); restarted after 0.5-5 s; in a
                       cluster, only while this node holds the bot's lease

Telegram has its own supervisor so that its trouble stays its own: the HTTP server
never restarts because the channel did, and a channel that keeps crashing uses up
the *telegram* supervisor's intensity, not the gateway's.
"""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Any, Final

import beamclaw_core as core
import supervision as sv
from beamclaw_base import StoreConfig, listener

from ._config import GatewayConfig, parse_gateway_config
from ._server import serve_http
from ._store import KEYS, GatewayStore
from ._telegram_bot import SENDER, telegram_bot
from ._telegram_ledger import WEBHOOK_CHANNEL

# The channel's restart delay doubles from 0.5 s and stops at 5 s (±20 % jitter): a
# crash-looping channel is back within seconds (a 30 s cap left the bot deaf for half a
# minute). Such a loop restarts it about every 5 s, 6-7 times in 30 s, within the
# telegram supervisor's 10; only its quick first restarts, or the sender failing too,
# can push a window past 10, and then the gateway restarts the whole subtree (with a
# fresh sender) 1-5 s later.
_CHANNEL_BACKOFF = sv.Backoff(initial=0.5, maximum=5.0)
_SUBTREE_BACKOFF = sv.Backoff(initial=1.0, maximum=5.0)
# The gateway allows 10 restarts in 30 s, on purpose: the telegram subtree gives up
# only after 11 channel restarts, which take about 30 s with their delays, so even a
# Telegram outage that keeps crashing the channel costs the gateway one restart in 30 s
# and never uses up its intensity, which would stop the HTTP server (and the daemon's
# API with it). A few HTTP server restarts in a row are absorbed the same way.
_INTENSITY, _PERIOD = 10, 30.0
#: The default store: SQLite files in the data dir.
_IN_DATA_DIR: Final = StoreConfig()


def _telegram(config: GatewayConfig, data_dir: Path, store: StoreConfig) -> sv.Supervisor:
    telegram = config.channels.telegram
    boot = uuid.uuid4().hex  # this run of the daemon (see telegram_bot)
    channel = functools.partial(telegram_bot, config, telegram.webhook_url, boot)
    listening = [sv.ChildSpec("listener", listener, args=(store, [WEBHOOK_CHANNEL]))]
    return sv.Supervisor(
        [
            sv.ChildSpec("store", GatewayStore.start, args=(data_dir / "gateway.db", store)),
            sv.ChildSpec("sender", core.HttpClientOwner.start, args=(SENDER, False)),
            *(listening if store.backend == "postgres" else []),
            sv.ChildSpec("channel", channel, shutdown=5.0, backoff=_CHANNEL_BACKOFF),
        ],
        # rest_for_one: a restarted sender restarts the channel, which holds its client; a
        # restarted store restarts both, so no channel holds a closed Database.
        strategy=sv.REST_FOR_ONE,
        intensity=_INTENSITY,
        period=_PERIOD,
        name="beamclaw_gateway.telegram",
    )


def supervision_tree(
    table: dict[str, Any], data_dir: Path, store: StoreConfig = _IN_DATA_DIR, extra: tuple[Any, ...] = ()
) -> sv.Supervisor:
    """The HTTP server and, when enabled, the Telegram subtree; the Telegram ledger is kept
    in *store* (``[store]``; SQLite: ``gateway.db`` in *data_dir*). *extra*: blueprints the
    HTTP server mounts besides its own (the daemon's management API and web console)."""
    config = parse_gateway_config(table)
    children = [
        sv.ChildSpec("keys", GatewayStore.start, args=(data_dir / "gateway.db", store, KEYS)),
        sv.ChildSpec("http", functools.partial(serve_http, config, data_dir, extra), shutdown=5.0),
    ]
    if config.channels.telegram.enabled:
        children.append(_telegram(config, data_dir, store).child_spec("telegram", backoff=_SUBTREE_BACKOFF))
    return sv.Supervisor(
        children, strategy=sv.ONE_FOR_ONE, name="beamclaw_gateway", intensity=_INTENSITY, period=_PERIOD
    )
