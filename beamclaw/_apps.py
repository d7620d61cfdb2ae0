"""The daemon's apps, their start order, and the root supervision tree.

The dependencies here are the ones DESIGN.md gives and the import contracts in
pyproject.toml enforce: an app starts after the apps it may call.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Any, Final

import attrs
import trio

import beamclaw_control
import supervision as sv
from beamclaw_base import StoreConfig, structure_config

#: The root supervisor's name, and the first part of a `beamclaw kill` path.
ROOT: Final = "beamclaw"

#: The skills shipped with the project (lowest precedence; see beamclaw_core).
BUNDLED_SKILLS: Final = Path(__file__).resolve().parent.parent / "skills"

#: app -> the apps it depends on (the CLI is not part of the daemon tree).
APPS: Final[dict[str, tuple[str, ...]]] = {
    "obs": (),
    "cluster": ("obs",),
    "tools": ("obs",),
    "memory": ("tools", "obs"),
    "sandbox": ("tools", "obs"),
    "mcp": ("tools", "obs"),
    "core": ("cluster", "sandbox", "mcp", "memory", "tools", "obs"),
    "scheduler": ("core", "cluster", "tools", "obs"),
    "a2a": ("core", "cluster", "obs"),
    "gateway": ("core", "a2a", "cluster", "obs"),
}


#: The apps that keep durable data, each given the ``[store]`` configuration.
STORING: Final = frozenset({"cluster", "memory", "core", "scheduler", "a2a", "gateway"})


#: Apps whose ``enabled`` key is about a part of the app, not the app: the sandbox app's
#: opts in to Docker code execution, and the app always runs, because it holds the jails
#: that bash and terminal run in (core depends on it); the memory app's turns its search
#: off (its tree is then empty, and core is told memory is unavailable); the cluster
#: app's makes this daemon a node of a cluster (off: its tree is empty, one node).
ALWAYS_RUNNING: Final = frozenset({"cluster", "sandbox", "memory"})


@attrs.define(eq=False)
class Daemon:
    """What the daemon runs with. A reload replaces `config`; an app that (re)starts
    builds its tree from the `config` of that moment (see `start_app`)."""

    config: dict[str, Any]
    home: Path
    config_path: Path
    started: float = attrs.field(factory=time.time)
    #: Held through a reload: SIGHUP and `beamclaw reload` at once apply one after the other.
    reloading: trio.Lock = attrs.field(factory=trio.Lock, init=False)


def app_table(name: str, config: dict[str, Any]) -> dict[str, Any]:
    """The app's table as the app gets it (core also learns where the bundled skills are)."""
    table = dict(config.get(name, {}))
    if name == "core":
        table.setdefault("bundled_skills_dir", str(BUNDLED_SKILLS))
    return table


def store_config(config: dict[str, Any]) -> StoreConfig:
    """Where the apps keep their durable data (``[store]``; SQLite in the data dir when absent).

    Raises `beamclaw_base.ConfigError` naming each bad key.
    """
    return structure_config(config.get("store", {}), StoreConfig, "store")


def app_tree(name: str, config: dict[str, Any], home: Path) -> sv.Supervisor | sv.DynamicSupervisor:
    """The app's own tree: its package's ``supervision_tree(table, data_dir)`` (and ``store=``
    for an app that keeps durable data; the gateway's also mounts the management API and
    web console, ``extra=``), else an empty supervisor."""
    module = importlib.import_module(f"beamclaw_{name}")
    builder = getattr(module, "supervision_tree", None)
    if builder is None:
        return sv.Supervisor([], name=f"beamclaw_{name}", intensity=10, period=10.0)
    extra: dict[str, Any] = {"store": store_config(config)} if name in STORING else {}
    if name == "gateway":
        extra["extra"] = beamclaw_control.blueprints()
    tree: sv.Supervisor | sv.DynamicSupervisor = builder(app_table(name, config), home, **extra)
    return tree


async def start_app(name: str, daemon: Daemon, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run app *name*, its tree built from the configuration the daemon has now."""
    await sv.start_supervisor(app_tree(name, daemon.config, daemon.home), task_status=task_status)


def enabled_apps(config: dict[str, Any]) -> list[str]:
    """The apps the configuration runs, in declaration order; `ValueError` if one lacks a dependency."""
    enabled = [name for name in APPS if name in ALWAYS_RUNNING or config.get(name, {}).get("enabled", True)]
    for name in enabled:
        missing = [dep for dep in APPS[name] if dep not in enabled]
        if missing:
            raise ValueError(f"app {name!r} needs {', '.join(missing)}, which the configuration disables")
    return enabled


def check_config(config: dict[str, Any], home: Path) -> list[str]:
    """Build every enabled app's tree (starting nothing), so a bad table fails now; the apps."""
    enabled = enabled_apps(config)
    for name in enabled:
        app_tree(name, config, home)
    return enabled
