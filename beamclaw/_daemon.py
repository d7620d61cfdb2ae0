"""The daemon: the root tree under `sv.run`.

Crashes, restarts and every other event are logged by the obs app, which every
other app depends on, so the daemon itself only says when it starts and stops.
"""

from __future__ import annotations

from typing import Any

from loguru import logger

import supervision as sv

from ._apps import build_tree
from ._config import data_dir


def run_daemon(config: dict[str, Any]) -> Any:
    """Start the enabled apps and serve until SIGINT or SIGTERM; return the exit reason."""
    home = data_dir()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    tree = build_tree(config, home)
    logger.info(
        "BeamClaw starting: apps {} (data dir {}); stop with Ctrl-C",
        ", ".join(str(spec.id) for spec in tree.children),
        home,
    )
    reason = sv.run(tree)
    logger.info("BeamClaw stopped ({!r})", reason)
    return reason
