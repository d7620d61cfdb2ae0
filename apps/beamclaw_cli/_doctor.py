"""`beamclaw doctor`: check what BeamClaw needs, and say how to fix what is wrong."""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

import beamclaw
import beamclaw_sandbox as sandbox

from ._control_client import socket_path

Check = tuple[str, str, str]  # (status: ok | warn | fail, what, how to fix)


def _config(args: argparse.Namespace, home: Path) -> tuple[list[Check], dict[str, Any] | None]:
    try:
        config = beamclaw.load_config(args.config)
        beamclaw.build_tree(config, home)  # checks every app's table; starts nothing
    except (beamclaw.ConfigError, ValueError) as exc:
        return [("fail", f"configuration: {exc}", "fix the key named above in config.toml")], None
    path = args.config or beamclaw.default_config_path()
    return [("ok", f"configuration {path} is valid", "")], config


def _data_dir(home: Path) -> list[Check]:
    if not home.exists():
        return [("ok", f"data dir {home} will be created (mode 0700) on first run", "")]
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o077:
        return [("fail", f"data dir {home} is readable by others (mode {mode:o})", f"chmod 700 {home}")]
    return [("ok", f"data dir {home} is private (mode {mode:o})", "")]


def _provider(config: dict[str, Any]) -> list[Check]:
    core_table = config.get("core", {})
    name = core_table.get("default_provider", "openrouter")
    provider = core_table.get("providers", {}).get(name, {})
    key = provider.get("api_key")
    if not isinstance(key, dict):
        return [("ok", f"provider {name!r} ({provider.get('base_url', '?')}) needs no key", "")]
    if os.environ.get(key["env"]):
        return [("ok", f"provider {name!r}: {key['env']} is set", "")]
    return [("fail", f"provider {name!r}: {key['env']} is not set", f"export {key['env']}=... (then restart)")]


def _isolations(config: dict[str, Any]) -> set[str]:
    """The jails bash and terminal will use (``[tools.bash|terminal] isolation``)."""
    tools = config.get("tools", {})
    return {str(tools.get(name, {}).get("isolation", "bubblewrap")) for name in ("bash", "terminal")}


def _jail(config: dict[str, Any]) -> list[Check]:
    """Whether the jail the agent's commands will run in works here, with its limits."""
    isolations = _isolations(config)
    checks: list[Check] = []
    if "none" in isolations:
        checks.append((
            "warn",
            'bash or terminal runs commands unjailed ([tools.bash|terminal] isolation = "none"): '
            "a prompt-injected model can read the daemon's secrets and other users' conversations",
            'install bubblewrap and remove isolation = "none"',
        ))  # fmt: skip
    if "bubblewrap" in isolations:
        jail = sandbox.BubblewrapJail(sandbox.parse_sandbox_config(config.get("sandbox", {})))
        problem = trio.run(jail.check)
        if problem is not None:
            checks.append(("fail", f"the bubblewrap jail does not work: {problem}", "apt-get install bubblewrap"))
        else:
            checks.append(("ok", "bash and terminal run in a bubblewrap jail", ""))
            warning = jail.limits_warning()
            if warning:
                checks.append(("warn", warning, "run BeamClaw as an unprivileged user"))
    return checks


def _uses_docker(config: dict[str, Any]) -> bool:
    return bool(config.get("sandbox", {}).get("enabled", False)) or "docker" in _isolations(config)


def _docker() -> list[Check]:
    sock = Path(os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://"))
    if not shutil.which("docker") and not sock.exists():
        return [("warn", "no Docker engine found (the sandbox needs one)", "install Docker and start dockerd")]
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.settimeout(2)
        probe.connect(str(sock))
    except OSError:
        return [("warn", f"the Docker engine does not answer at {sock}", "start it: sudo dockerd & (or systemctl)")]
    finally:
        probe.close()
    return [("ok", f"Docker engine answers at {sock}", "")]


def _daemon() -> list[Check]:
    path = socket_path()
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.settimeout(2)
        probe.connect(str(path))
    except OSError:
        return [("warn", "no daemon is running", "python -m beamclaw run")]
    finally:
        probe.close()
    return [("ok", f"a daemon is running ({path})", "")]


def doctor(args: argparse.Namespace) -> int:
    try:
        home: Path | None = beamclaw.data_dir()
    except beamclaw.ConfigError as exc:
        home, unusable = None, str(exc)
    checks, config = _config(args, home or Path.cwd())
    if config is not None:
        checks += _provider(config)
        checks += _jail(config)
    if home is None:
        what, _, fix = unusable.rpartition("; ")  # "the data dir ... is not a directory; point ..."
        checks.append(("fail", what, fix))
    else:
        checks += _data_dir(home)
    steps: list[Callable[[], list[Check]]] = [_docker] if config is not None and _uses_docker(config) else []
    if home is not None:
        steps.append(_daemon)
    for step in steps:
        checks += step()
    marks = {"ok": "✓", "warn": "!", "fail": "✗"}
    for status, what, fix in checks:
        print(f"{marks[status]} {what}" + (f"\n    fix: {fix}" if fix else ""))
    failed = sum(1 for status, _, _ in checks if status == "fail")
    print(f"{failed} problem(s) to fix" if failed else "all good")
    return 1 if failed else 0
