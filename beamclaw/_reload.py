"""Reloading the configuration of the running daemon: `beamclaw reload` and SIGHUP.

The file the daemon was started with is read again and checked whole (every enabled
app's tree is built, nothing started) before anything changes, so a reload with a
mistake in it is refused and the daemon goes on as it was. Then:

- the values of the environment variables the configuration names are taken from the
  request (the shell that ran `beamclaw reload`; only those names, and only over the
  owner's control socket) and registered with the scrubber, so ``export KEY=...`` and
  a reload is all a missing key needs;
- core takes its new table in place: every conversation goes on, and its next turn
  uses the new provider, model, autonomy or limits;
- any other app whose table changed is restarted, its tree built from the new table
  (conversations live in core, so none is dropped).

Enabling or disabling an app changes the shape of the tree and needs a restart.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from typing import Any

import attrs
import trio
from loguru import logger

import beamclaw_core as core
import supervision as sv

from ._apps import ROOT, Daemon, app_table, check_config, enabled_apps
from ._config import env_references, load_config, register_secrets
from ._errors import ConfigError


class ReloadRefused(Exception):
    """The new configuration cannot be applied; nothing changed. The message says why."""


@attrs.frozen
class Reloaded:
    """What a reload did."""

    config_path: str
    applied: list[str]  # apps that took their new table in place
    restarted: list[str]  # apps restarted with their new table
    from_client: list[str]  # variables whose values came with the request


def names_needed(daemon: Daemon) -> list[str]:
    """The environment variables the configuration file names now (for the client to send)."""
    try:
        return sorted(set(env_references(load_config(daemon.config_path))))
    except ConfigError:
        return sorted(set(env_references(daemon.config)))


async def reload(daemon: Daemon, environ: Mapping[str, str] | None = None) -> Reloaded:
    """Read the daemon's configuration file again and apply it (see the module's docstring)."""
    async with daemon.reloading:
        return await _reload(daemon, environ)


async def _reload(daemon: Daemon, environ: Mapping[str, str] | None) -> Reloaded:
    try:
        new = load_config(daemon.config_path)
    except ConfigError as exc:
        raise ReloadRefused(str(exc)) from None
    given = {name: environ[name] for name in env_references(new) if environ and environ.get(name)}
    os.environ.update(given)
    register_secrets(new)
    try:
        enabled = check_config(new, daemon.home)
    except (ConfigError, ValueError) as exc:
        raise ReloadRefused(f"{daemon.config_path}: {exc}; nothing was changed") from None
    if enabled != enabled_apps(daemon.config):
        raise ReloadRefused("enabling or disabling an app needs a restart of the daemon; nothing was changed")
    changed = [name for name in enabled if app_table(name, new) != app_table(name, daemon.config)]
    daemon.config = new
    applied, restarted = [], []
    for name in changed:
        if name == "core" and await core.reconfigure(app_table(name, new)):
            applied.append(name)
            continue
        await sv.terminate_child(ROOT, name)
        await sv.restart_child(ROOT, name)
        restarted.append(name)
    result = Reloaded(str(daemon.config_path), applied, restarted, sorted(given))
    logger.info(
        "configuration {} reloaded: {} in place, {} restarted{}",
        result.config_path,
        ", ".join(applied) or "nothing",
        ", ".join(restarted) or "nothing",
        f"; {', '.join(result.from_client)} set by the client" if result.from_client else "",
    )
    return result


async def reload_on_sighup(daemon: Daemon, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Reload on each SIGHUP (what ``systemctl reload`` sends), with the daemon's own environment."""
    with trio.open_signal_receiver(signal.SIGHUP) as signals:
        task_status.started()
        async for _ in signals:
            try:
                await reload(daemon)
            except ReloadRefused as exc:
                logger.error("reload refused: {}", exc)
