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


#: Apps whose ``enabled`` key is about a part of the app, not the app: the sandbox app's
#: opts in to Docker code execution, and the app always runs, because it holds the jails
#: that bash and terminal run in (core depends on it).
ALWAYS_RUNNING: Final = frozenset({"sandbox"})


def _app_tree(name: str, config: dict[str, Any], home: Path) -> sv.Supervisor | sv.DynamicSupervisor:
    """The app's own tree: its package's ``supervision_tree(table, data_dir)``, else an empty supervisor."""
    module = importlib.import_module(f"beamclaw_{name}")
    builder = getattr(module, "supervision_tree", None)
    if builder is None:
        return sv.Supervisor([], name=f"beamclaw_{name}", intensity=10, period=10.0)
    table = dict(config.get(name, {}))
    if name == "core":
        table.setdefault("bundled_skills_dir", str(BUNDLED_SKILLS))
    tree: sv.Supervisor | sv.DynamicSupervisor = builder(table, home)
    return tree


#: Every app restarts after a short, growing delay, so an app that cannot start (a
#: disk gone, a port taken) is retried every 2 s at most instead of spinning.
_APP_BACKOFF: Final = sv.Backoff(initial=0.1, maximum=2.0)


def build_tree(config: dict[str, Any], home: Path) -> sv.Supervisor:
    """The root supervisor: every enabled app, each after its dependencies, then the
    control socket the CLI talks to.

    The apps start in dependency order and stop in reverse, but the root is
    one_for_one, not rest_for_one: apps reach each other only by registered names
    (and callers wait, bounded, for a name that is being restarted), so an app that
    restarts takes no other app down with it. An app restarted under rest_for_one
    would restart every app after it: a crash of the obs app would restart the HTTP
    server and drop every session. With restarts at most 2 s apart, one app that keeps
    failing is retried for ever (and shows as restarting in /health and the tree) while
    the rest serve; the root gives up, and the daemon exits for its service manager to
    restart it, only past 30 app restarts within 30 s: several apps failing together.

    Disabling an app that an enabled one depends on is a configuration error.
    """
    enabled = [name for name in APPS if name in ALWAYS_RUNNING or config.get(name, {}).get("enabled", True)]
    for name in enabled:
        missing = [dep for dep in APPS[name] if dep not in enabled]
        if missing:
            raise ValueError(f"app {name!r} needs {', '.join(missing)}, which the configuration disables")
    apps = [sv.Application(name, _app_tree(name, config, home), depends_on=APPS[name]) for name in enabled]
    if "core" in enabled:
        server = sv.ChildSpec("server", control_server, args=(home / SOCKET_NAME,), backoff=_APP_BACKOFF)
        apps.append(
            sv.Application(
                "control", sv.Supervisor([server], name="control", intensity=10, period=10.0), depends_on=("core",)
            )
        )
    children = [app.supervisor.child_spec(app.name, backoff=_APP_BACKOFF) for app in sv.start_order(apps)]
    return sv.Supervisor(children, strategy=sv.ONE_FOR_ONE, intensity=30, period=30.0, name=ROOT)
