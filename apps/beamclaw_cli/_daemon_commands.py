"""Commands that talk to the running daemon: tree, status, kill, reload."""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING

from . import _api_client as api
from ._cluster_commands import cluster_tree
from ._terminal_safe import console
from ._tree_view import render

if TYPE_CHECKING:
    pass


async def tree(args: argparse.Namespace) -> int:
    import trio
    from rich.live import Live

    if args.cluster:
        return await cluster_tree(args)
    if args.json:
        print(json.dumps(await api.call("GET", "/v1/supervision/tree"), indent=2))
        return 0
    out = console()
    if not args.watch:
        out.print(render(await api.call("GET", "/v1/supervision/tree")))
        return 0
    with Live(console=out, refresh_per_second=4, screen=False) as live:
        while True:
            live.update(render(await api.call("GET", "/v1/supervision/tree")))
            await trio.sleep(args.interval)


def status(args: argparse.Namespace) -> int:
    answer = api.call_blocking("GET", "/v1/status")
    print(f"BeamClaw {answer['version']} running, pid {answer['pid']}, up {_duration(answer['uptime'])}")
    print(f"configuration: {answer['config']}")
    print(f"model: {answer['model']}")
    if answer.get("gateway"):
        print(f"gateway: {answer['gateway']}")
    print(f"control socket: {api.socket_path()}")
    print(f"sessions running: {answer['sessions']}")
    for app in answer["apps"]:
        print(f"  {app['id']:<10} {app['state']:<10} restarts {app['restarts']}")
    return 0


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min {seconds % 60:02.0f} s"


async def kill(args: argparse.Namespace) -> int:
    answer = await api.call("POST", "/v1/supervision/kill", json={"path": args.path})
    print(f"killed {answer['path']} ({answer['pid']}); its supervisor restarts it: see `beamclaw tree`")
    return 0


async def reload(args: argparse.Namespace) -> int:
    """Reload, sending the values this shell has for the variables the configuration names."""
    names = (await api.call("GET", "/v1/env-names", raw=True))["names"]
    env = {name: os.environ[name] for name in names if os.environ.get(name)}
    answer = await api.call("POST", "/v1/reload", json={"env": env})
    print(f"reloaded {answer['config_path']}")
    if answer["applied"]:
        print(f"  applied in place (conversations go on): {', '.join(answer['applied'])}")
    if answer["restarted"]:
        print(f"  restarted with their new settings: {', '.join(answer['restarted'])}")
    if not answer["applied"] and not answer["restarted"]:
        print("  no app's settings changed")
    if answer["from_client"]:
        print(f"  taken from this shell: {', '.join(answer['from_client'])}")
    return 0
