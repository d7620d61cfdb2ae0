"""The daemon a TUI starts inside its own process when none is running.

It runs for as long as the TUI does, under the data dir's daemon lock, with its logs
going only to the log file (the terminal is the conversation's). If its tree cannot
start or gives up, the TUI says why in one line and exits with status 1, as
`beamclaw run` would.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from loguru import logger

import beamclaw

if TYPE_CHECKING:
    import supervision as sv


async def run_in_process_daemon(
    tree: sv.Supervisor, cancel: trio.CancelScope, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """The daemon inside the TUI; if its tree cannot start or gives up, the TUI says why in
    one line and leaves (`cancel`) with status 1, as `beamclaw run` would."""
    import supervision as sv

    logger.remove()  # the log file (obs) keeps everything; the terminal is the conversation's
    try:
        async with sv.open_supervisor(tree):
            task_status.started()
            await trio.sleep_forever()
    except sv.StartError as exc:
        where, reason = [str(exc.child_id)], exc.reason
        while isinstance(reason, sv.StartError):  # the innermost child says what went wrong
            where.append(str(reason.child_id))
            reason = reason.reason
        why = f"could not start {'/'.join(where)}: {reason}"
    except sv.MaxIntensity as exc:
        why = f"the daemon in this TUI gave up: {exc}"
    print(f"beamclaw: {why}", file=sys.stderr)  # one line: rich would wrap it at the terminal's width
    cancel.cancel()
    raise DaemonGaveUp


class DaemonGaveUp(Exception):
    """The in-process daemon stopped for good; the TUI exits with status 1."""


def in_process_tree(args: argparse.Namespace) -> sv.Supervisor:
    """The tree of a daemon for this TUI (outside the nursery: a bad configuration is one plain error)."""
    config = beamclaw.load_config(args.config)
    path = Path(args.config).absolute() if args.config else None
    try:
        return beamclaw.build_tree(config, beamclaw.data_dir(create=True), path)
    except ValueError as exc:  # an app's table, as `beamclaw run` reports it
        raise beamclaw.ConfigError(str(exc)) from None
