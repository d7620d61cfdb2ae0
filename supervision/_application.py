"""Applications: supervision trees with declared dependencies, started in order.

OTP's application controller starts an application only after the ones it depends
on and stops them in reverse. Here the applications become the children of one root
supervisor, sorted so that every application comes after its dependencies. The root
uses rest_for_one, so when an application is restarted, everything started after it
(which may depend on it) is restarted too, and stopping the root stops them in
reverse dependency order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, final

import attrs

from ._child_spec import PERMANENT, Restart
from ._supervisor import REST_FOR_ONE, DynamicSupervisor, Supervisor


def _to_names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(names)


@final
@attrs.frozen
class Application:
    """A named supervision tree and the applications it needs started first."""

    name: str
    supervisor: Supervisor | DynamicSupervisor
    depends_on: tuple[str, ...] = attrs.field(default=(), converter=_to_names)
    restart: Restart = PERMANENT
    shutdown: float | None = None


def start_order(apps: Iterable[Application]) -> list[Application]:
    """*apps* sorted so that each comes after its dependencies, otherwise in the given order.

    Raises ValueError naming an unknown dependency, a duplicate name or a cycle.
    """
    apps = list(apps)
    by_name: dict[str, Application] = {}
    for app in apps:
        if app.name in by_name:
            raise ValueError(f"duplicate application {app.name!r}")
        by_name[app.name] = app
    for app in apps:
        for dep in app.depends_on:
            if dep not in by_name:
                raise ValueError(f"application {app.name!r} depends on unknown application {dep!r}")
    ordered: list[Application] = []
    state: dict[str, str] = {}

    def visit(app: Application, path: tuple[str, ...]) -> None:
        if state.get(app.name) == "done":
            return
        if state.get(app.name) == "visiting":
            cycle = " -> ".join((*path[path.index(app.name) :], app.name))
            raise ValueError(f"application dependency cycle: {cycle}")
        state[app.name] = "visiting"
        for dep in app.depends_on:
            visit(by_name[dep], (*path, app.name))
        state[app.name] = "done"
        ordered.append(app)

    for app in apps:
        visit(app, ())
    return ordered


def application_tree(apps: Iterable[Application], *, name: str | None = "root", **kwargs: Any) -> Supervisor:
    """One root supervisor running *apps* in dependency order (rest_for_one)."""
    children = [a.supervisor.child_spec(a.name, restart=a.restart, shutdown=a.shutdown) for a in start_order(apps)]
    return Supervisor(children, strategy=REST_FOR_ONE, name=name, **kwargs)
