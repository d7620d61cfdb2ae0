"""`beamclaw doctor`: check what will actually run, and say how to fix what is wrong.

What is checked is the configuration the daemon runs with: the running daemon's own
(asked over its socket) when one runs, else ``--config`` or the project's config.toml.
Every fix names the file to edit. Beyond the file being valid: the model server
answering (with its latency, and whether it serves the model), each enabled channel's
token and API, the gateway's port (free, or the running gateway answering), the jail
the agent's commands run in, Docker when something uses it, and PostgreSQL and the
cluster when the configuration uses them.

The checks of what the daemon will use (`beamclaw_control.daemon_checks`) are the
daemon's own when it runs (``GET /v1/doctor``: with its environment, from where it
runs); this process runs them only when no daemon does, or for another ``--config``.
"""

from __future__ import annotations

import argparse
import socket
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

import beamclaw

if TYPE_CHECKING:
    from beamclaw_control import Check


from ._api_client import ApiError, NoDaemon, call
from ._terminal_safe import visible

#: How long a network check may take before it counts as not answering.
_PROBE_SECONDS: Final = 5.0
_MARKS: Final = {"ok": "✓", "warn": "!", "fail": "✗"}


@attrs.frozen
class _Target:
    """The configuration to check, where it comes from, and whether a daemon runs it."""

    config: dict[str, Any] | None
    path: Path
    running: bool


async def _target(args: argparse.Namespace) -> tuple[_Target, list[Check]]:
    from beamclaw_control import Check

    running = True
    try:
        answer = await call("GET", "/v1/config", raw=True)
    except (NoDaemon, ApiError, OSError, ValueError, KeyError):
        running, answer = False, {}
    if args.config is None and running:
        path = Path(answer["path"])
        checks = [Check("ok", f"a daemon is running with {path}: checking what it runs")]
        return _Target(answer["config"], path, True), checks
    path = Path(args.config).absolute() if args.config else beamclaw.default_config_path()
    checks = []
    if running and Path(answer["path"]) != path:
        checks.append(
            Check(
                "warn",
                f"the running daemon uses {answer['path']}, not {path}",
                "`beamclaw doctor` without --config checks what the daemon runs",
            )
        )
    elif not running:
        checks.append(Check("warn", "no daemon is running", f"python -m beamclaw run --config {path}"))
    try:
        return _Target(beamclaw.load_config(path), path, running), checks
    except beamclaw.ConfigError as exc:
        return _Target(None, path, running), [*checks, Check("fail", f"configuration: {exc}", f"edit {path}")]


def _valid(target: _Target, home: Path) -> list[Check]:
    from beamclaw_control import Check

    assert target.config is not None
    try:
        apps = beamclaw.check_config(target.config, home)
    except (beamclaw.ConfigError, ValueError) as exc:
        return [Check("fail", f"configuration {target.path}: {exc}", f"edit {target.path}")]
    return [Check("ok", f"configuration {target.path} is valid (apps: {', '.join(apps)})")]


def _data_dir(home: Path) -> list[Check]:
    from beamclaw_control import Check

    if not home.exists():
        return [Check("ok", f"data dir {home} will be created (mode 0700) on first run")]
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o077:
        return [Check("fail", f"data dir {home} is readable by others (mode {mode:o})", f"chmod 700 {home}")]
    return [Check("ok", f"data dir {home} is private (mode {mode:o})")]


async def _port(config: dict[str, Any], path: Path, running: bool) -> list[Check]:
    """The gateway's port: answering /health when a daemon runs, else free to bind."""
    import httpx

    import beamclaw_gateway as gateway
    from beamclaw_control import Check

    if not config.get("gateway", {}).get("enabled", True):
        return []
    try:
        http = gateway.parse_gateway_config(config.get("gateway", {})).http
    except ValueError:
        return []  # said by _valid
    if running:
        url = beamclaw.describe(config)["gateway"]
        try:
            async with httpx.AsyncClient(timeout=_PROBE_SECONDS) as client:
                status = (await client.get(f"{url}/health")).json().get("status")
        except (httpx.HTTPError, ValueError) as exc:
            return [
                Check(
                    "fail",
                    f"the gateway at {url} does not answer ({type(exc).__name__})",
                    "see `beamclaw status` and logs/beamclaw.log in the data dir",
                )
            ]
        return [Check("ok" if status == "ok" else "warn", f"the gateway at {url} answers: {status}")]
    probe = socket.socket(socket.AF_INET6 if ":" in http.host else socket.AF_INET)
    try:
        probe.bind((http.host, http.port))
    except OSError as exc:
        return [
            Check(
                "fail",
                f"the gateway cannot listen on {http.host}:{http.port}: {exc.strerror}",
                f"stop what uses it, or set gateway.http.port in {path}",
            )
        ]
    finally:
        probe.close()
    return [Check("ok", f"the gateway's port {http.host}:{http.port} is free")]


async def _what_it_uses(args: argparse.Namespace, target: _Target) -> list[Check]:
    """`daemon_checks`: the running daemon's answer when it is the daemon's configuration
    that is checked, else run here."""
    from beamclaw_control import Check, daemon_checks

    assert target.config is not None
    if target.running and args.config is None:
        try:
            answer = await call("GET", "/v1/doctor")
            return [Check(c["status"], c["detail"], c["fix"], c["name"]) for c in answer["checks"]]
        except (NoDaemon, ApiError, KeyError, TypeError) as exc:
            return [Check("fail", f"the daemon cannot run its checks: {exc}", "see logs/beamclaw.log in the data dir")]
    return await daemon_checks(target.config, target.path)


async def _checks(args: argparse.Namespace) -> list[Check]:
    from beamclaw_control import Check

    from ._doctor_store import cluster_checks, store_checks

    try:
        home: Path | None = beamclaw.data_dir()
    except beamclaw.ConfigError as exc:
        what, _, fix = str(exc).rpartition("; ")  # "the data dir ... is not a directory; point ..."
        return [Check("fail", what, fix)]
    assert home is not None
    target, checks = await _target(args)
    if target.config is None:
        return checks
    checks += _valid(target, home)
    checks += _data_dir(home)
    checks += await _port(target.config, target.path, target.running)
    checks += await _what_it_uses(args, target)
    checks += await store_checks(target.config, target.path)
    checks += await cluster_checks(target.config, target.path, target.running)
    return checks


def doctor(args: argparse.Namespace) -> int:
    import trio

    checks = trio.run(_checks, args)
    for check in checks:
        # What a model server or a Telegram API answered may be quoted in a check.
        print(visible(f"{_MARKS[check.status]} {check.what}" + (f"\n    fix: {check.fix}" if check.fix else "")))
    failed = sum(1 for check in checks if check.status == "fail")
    warned = sum(1 for check in checks if check.status == "warn")
    notes = f" ({warned} warning{'s' if warned != 1 else ''})" if warned else ""
    print(f"{failed} problem(s) to fix{notes}" if failed else f"all good{notes}")
    return 1 if failed else 0
