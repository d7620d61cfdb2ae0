"""The daemon's apps, their start order, and the root supervision tree.

The dependencies here are the ones DESIGN.md gives and the import contracts in
pyproject.toml enforce: an app starts after the apps it may call.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Final

import supervision as sv

from ._control import ROOT, SOCKET_NAME, control_server

#: The skills shipped with the project (lowest precedence; see beamclaw_core).
BUNDLED_SKILLS: Final = Path(__file__).resolve().parent.parent / "skills"

#: app -> the apps it depends on (the CLI is not part of the daemon tree).
APPS: Final[dict[str, tuple[str, ...]]] = {
    "obs": (),
    "memory": ("obs",),
    "tools": ("obs",),
    "sandbox": ("tools", "obs"),
    "mcp": ("tools", "obs"),
    "core": ("sandbox", "mcp", "memory", "tools", "obs"),
    "scheduler": ("core", "tools", "obs"),
    "a2a": ("core", "obs"),
    "gateway": ("core", "a2a", "obs"),
}


def _app_tree(name: str, config: dict[str, Any], home: Path) -> sv.Supervisor | sv.DynamicSupervisor:
    """The app's own tree: its package's ``supervision_tree(table, data_dir)``, else an empty supervisor."""
    module = importlib.import_module(f"beamclaw_{name}")
    builder = getattr(module, "supervision_tree", None)
    if builder is None:
        return sv.Supervisor([], name=f"beamclaw_{name}")
    table = dict(config.get(name, {}))
    if name == "core":
        table.setdefault("bundled_skills_dir", str(BUNDLED_SKILLS))
    tree: sv.Supervisor | sv.DynamicSupervisor = builder(table, home)
    return tree


def build_tree(config: dict[str, Any], home: Path) -> sv.Supervisor:
    """The root supervisor: every enabled app, each after its dependencies, then the
    control socket the CLI talks to.

    Disabling an app that an enabled one depends on is a configuration error.
    """
    enabled = [name for name in APPS if config.get(name, {}).get("enabled", True)]
    for name in enabled:
        missing = [dep for dep in APPS[name] if dep not in enabled]
        if missing:
            raise ValueError(f"app {name!r} needs {', '.join(missing)}, which the configuration disables")
    apps = [sv.Application(name, _app_tree(name, config, home), depends_on=APPS[name]) for name in enabled]
    if "core" in enabled:
        control = sv.Supervisor([sv.ChildSpec("server", control_server, args=(home / SOCKET_NAME,))], name="control")
        apps.append(sv.Application("control", control, depends_on=("core",)))
    return sv.application_tree(apps, name=ROOT, intensity=3, period=5.0)
