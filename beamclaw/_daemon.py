"""The daemon: the root tree under `sv.run`, with crashes logged as they happen."""

from __future__ import annotations

from typing import Any

from loguru import logger

import supervision as sv

from ._apps import build_tree
from ._config import data_dir


def _log_event(event: sv.SupervisorEvent) -> None:
    if event.kind is sv.EventKind.CHILD_EXITED and not sv.is_normal(event.reason):
        logger.error("{} {} exited: {!r}\n{}", event.child_id, event.pid, event.reason, event.traceback or "")
    elif event.kind is sv.EventKind.INTENSITY_EXCEEDED:
        logger.error("supervisor {} gave up: too many restarts", event.supervisor_name or event.supervisor)
    else:
        logger.debug("{} {} {}", event.kind.value, event.child_id, event.pid)


def run_daemon(config: dict[str, Any]) -> Any:
    """Start the enabled apps and serve until SIGINT or SIGTERM; return the exit reason."""
    tree = build_tree(config)
    home = data_dir()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)

    logger.info(
        "BeamClaw starting: apps {} (data dir {}); stop with Ctrl-C",
        ", ".join(str(spec.id) for spec in tree.children),
        home,
    )
    reason = sv.run(tree, setup=lambda: sv.subscribe(_log_event))
    logger.info("BeamClaw stopped ({!r})", reason)
    return reason
