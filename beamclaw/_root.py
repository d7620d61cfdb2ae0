"""The root supervision tree: every enabled app in dependency order, then the control app."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import supervision as sv
from beamclaw_control import serve_socket

from ._apps import APPS, ROOT, Daemon, app_table, app_tree, enabled_apps, start_app
from ._config import default_config_path
from ._host import Host
from ._reload import reload_on_sighup

#: Every app restarts after a short, growing delay, so an app that cannot start (a
#: disk gone, a port taken) is retried every 2 s at most instead of spinning.
_APP_BACKOFF: Final = sv.Backoff(initial=0.1, maximum=2.0)


def build_tree(config: dict[str, Any], home: Path, config_path: Path | None = None) -> sv.Supervisor:
    """The root supervisor: every enabled app, each after its dependencies, then the
    control subtree: the daemon's host process (`Host`), the management API on the
    owner-only socket the CLI talks to (served even when the gateway's TCP server is
    disabled), and the SIGHUP reloader (*config_path* is the file *config* came from,
    for `beamclaw status` and `beamclaw reload`).

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
    daemon = Daemon(config, home, config_path or default_config_path())
    enabled = enabled_apps(config)
    apps = [sv.Application(name, app_tree(name, config, home), depends_on=APPS[name]) for name in enabled]
    children = [
        sv.ChildSpec(
            app.name, start_app, args=(app.name, daemon), type=sv.SUPERVISOR, shutdown=None, backoff=_APP_BACKOFF
        )
        for app in sv.start_order(apps)
    ]
    if "core" in enabled:
        host = sv.ChildSpec("host", Host.start, args=(daemon,), backoff=_APP_BACKOFF)
        table = app_table("gateway", config)
        server = sv.ChildSpec("server", serve_socket, args=(table, home), shutdown=5.0, backoff=_APP_BACKOFF)
        reloader = sv.ChildSpec("sighup", reload_on_sighup, args=(daemon,), backoff=_APP_BACKOFF)
        control = sv.Supervisor([host, server, reloader], name="control", intensity=10, period=10.0)
        children.append(control.child_spec("control", backoff=_APP_BACKOFF))
    return sv.Supervisor(children, strategy=sv.ONE_FOR_ONE, intensity=30, period=30.0, name=ROOT)
