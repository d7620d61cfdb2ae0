"""`beamclaw doctor`: check what will actually run, and say how to fix what is wrong.

What is checked is the configuration the daemon runs with: the running daemon's own
(asked over the control socket) when one runs, else ``--config`` or the project's
config.toml. Every fix names the file to edit. Beyond the file being valid: the
model server answering (with its latency, and whether it serves the model), each
enabled channel's token and API, the gateway's port (free, or the running gateway
answering), the jail the agent's commands run in, Docker when something uses it, and
PostgreSQL and the cluster when the configuration uses them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import stat
import time
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import trio

import beamclaw
import beamclaw_core as core
import beamclaw_gateway as gateway
import beamclaw_memory as memory
import beamclaw_obs as obs
import beamclaw_sandbox as sandbox

from ._control_client import ControlError, NoDaemon, ask
from ._doctor_check import Check
from ._doctor_store import cluster_checks, store_checks
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
    running = True
    try:
        answer = await ask({"cmd": "config"})
    except (NoDaemon, ControlError, OSError, ValueError, KeyError):
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
    assert target.config is not None
    try:
        apps = beamclaw.check_config(target.config, home)
    except (beamclaw.ConfigError, ValueError) as exc:
        return [Check("fail", f"configuration {target.path}: {exc}", f"edit {target.path}")]
    return [Check("ok", f"configuration {target.path} is valid (apps: {', '.join(apps)})")]


def _data_dir(home: Path) -> list[Check]:
    if not home.exists():
        return [Check("ok", f"data dir {home} will be created (mode 0700) on first run")]
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o077:
        return [Check("fail", f"data dir {home} is readable by others (mode {mode:o})", f"chmod 700 {home}")]
    return [Check("ok", f"data dir {home} is private (mode {mode:o})")]


async def _model(config: dict[str, Any], path: Path) -> list[Check]:
    """The provider's key, and its server answering ``GET /models`` with the model in the list."""
    try:
        core_config = core.parse_core_config(config.get("core", {}))
    except ValueError:
        return []  # said by _valid
    name, provider = core_config.default_provider, core_config.provider
    where = f"core.providers.{name}"
    headers = {}
    if provider.api_key is not None:
        key = os.environ.get(provider.api_key.env)
        if not key:
            return [
                Check(
                    "fail",
                    f"provider {name!r}: {provider.api_key.env} is not set",
                    f"export {provider.api_key.env}=... then `beamclaw reload` (or start the daemon)",
                )
            ]
        headers["Authorization"] = f"Bearer {key}"
    url = provider.base_url.rstrip("/") + "/models"
    started = time.perf_counter()
    try:
        async with httpx.AsyncClient(timeout=_PROBE_SECONDS) as client:
            response = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return [
            Check(
                "fail",
                f"the model server at {provider.base_url} does not answer ({type(exc).__name__})",
                f"start it, or fix {where}.base_url in {path}",
            )
        ]
    took = (time.perf_counter() - started) * 1000
    if response.status_code in {401, 403}:
        variable = provider.api_key.env if provider.api_key else "an API key"
        return [
            Check(
                "fail",
                f"the model server at {provider.base_url} refuses the key (HTTP {response.status_code})",
                f"check {variable}, or {where}.api_key in {path}",
            )
        ]
    if response.status_code != 200:
        return [
            Check(
                "warn",
                f"the model server at {provider.base_url} answered GET /models with HTTP "
                f"{response.status_code} in {took:.0f} ms; whether it serves {provider.model!r} is unknown",
            )
        ]
    try:
        served = [str(m.get("id")) for m in response.json().get("data", [])]
    except (ValueError, AttributeError):
        served = []
    if served and provider.model not in served:
        shown = ", ".join(served[:8]) + (", ..." if len(served) > 8 else "")
        return [
            Check(
                "fail",
                f"the model server at {provider.base_url} answers ({took:.0f} ms) but does not serve "
                f"{provider.model!r} (it serves: {shown})",
                f"set {where}.model in {path}",
            )
        ]
    return [Check("ok", f"model {provider.model!r} at {provider.base_url} answers in {took:.0f} ms")]


async def _channels(config: dict[str, Any], path: Path) -> list[Check]:
    """Each enabled channel: its token set, and its API answering with it."""
    if not config.get("gateway", {}).get("enabled", True):
        return []
    telegram = config.get("gateway", {}).get("channels", {}).get("telegram", {})
    if not telegram.get("enabled", False):
        return []
    token_ref = telegram.get("token", {"env": "TELEGRAM_BOT_TOKEN"})
    variable = token_ref.get("env", "TELEGRAM_BOT_TOKEN") if isinstance(token_ref, dict) else "TELEGRAM_BOT_TOKEN"
    token = os.environ.get(variable)
    if not token:
        return [
            Check(
                "fail",
                f"Telegram is enabled but {variable} is not set",
                f"export {variable}=... (from @BotFather), or set gateway.channels.telegram.enabled = false in {path}",
            )
        ]
    base = str(telegram.get("api_base", "https://api.telegram.org")).rstrip("/")
    try:
        async with httpx.AsyncClient(timeout=_PROBE_SECONDS) as client:
            answer = (await client.get(f"{base}/bot{token}/getMe")).json()
    except (httpx.HTTPError, ValueError) as exc:
        return [
            Check(
                "fail",
                f"the Telegram Bot API at {base} does not answer ({type(exc).__name__})",
                "check the network, or gateway.channels.telegram.api_base in " + str(path),
            )
        ]
    if not answer.get("ok"):
        why = obs.scrub(str(answer.get("description", "refused")))
        return [
            Check(
                "fail",
                f"Telegram refuses the bot token in {variable}: {why}",
                f"set {variable} to the token @BotFather gave",
            )
        ]
    return [Check("ok", f"Telegram bot @{answer['result'].get('username', '?')} answers")]


async def _port(config: dict[str, Any], path: Path, running: bool) -> list[Check]:
    """The gateway's port: answering /health when a daemon runs, else free to bind."""
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


def _isolations(config: dict[str, Any]) -> set[str]:
    """The jails bash and terminal will use (``[tools.bash|terminal] isolation``)."""
    tools = config.get("tools", {})
    return {str(tools.get(name, {}).get("isolation", "bubblewrap")) for name in ("bash", "terminal")}


async def _jail(config: dict[str, Any], path: Path) -> list[Check]:
    """Whether the jail the agent's commands will run in works here, with its limits."""
    isolations = _isolations(config)
    checks: list[Check] = []
    if "none" in isolations:
        checks.append(
            Check(
                "warn",
                'bash or terminal runs commands unjailed ([tools.bash|terminal] isolation = "none"): '
                "a prompt-injected model can read the daemon's secrets and other users' conversations",
                f'install bubblewrap and remove isolation = "none" from {path}',
            )
        )
    if "bubblewrap" in isolations:
        try:
            jail = sandbox.BubblewrapJail(sandbox.parse_sandbox_config(config.get("sandbox", {})))
        except ValueError:
            return checks  # said by _valid
        problem = await jail.check()
        if problem is not None:
            checks.append(Check("fail", f"the bubblewrap jail does not work: {problem}", "apt-get install bubblewrap"))
        else:
            checks.append(Check("ok", "bash and terminal run in a bubblewrap jail"))
            warning = jail.limits_warning()
            if warning:
                checks.append(Check("warn", warning, "useradd --system beamclaw, and run the daemon as that user"))
    return checks


def _docker(config: dict[str, Any]) -> list[Check]:
    """The Docker engine, only when something will use it (the exec tool, or a docker jail)."""
    if not config.get("sandbox", {}).get("enabled", False) and "docker" not in _isolations(config):
        return []
    sock = Path(os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://"))
    if not shutil.which("docker") and not sock.exists():
        return [Check("fail", "no Docker engine found (the sandbox needs one)", "install Docker and start dockerd")]
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.settimeout(2)
        probe.connect(str(sock))
    except OSError:
        return [Check("fail", f"the Docker engine does not answer at {sock}", "start it: dockerd & (or systemctl)")]
    finally:
        probe.close()
    return [Check("ok", f"Docker engine answers at {sock}")]


async def _memory(config: dict[str, Any], path: Path) -> list[Check]:
    """Who will embed the memory: the local model loads, or the remote server answers."""
    settings = memory.parse_memory_config(config.get("memory", {}))
    if not settings.enabled:
        return []
    embedding = settings.embedding
    if embedding.provider == "none":
        return [Check("ok", 'memory: keyword search only (memory.embedding.provider = "none")')]
    if embedding.provider == "local":
        try:
            local = await trio.to_thread.run_sync(memory.LocalEmbedder)
        except memory.LocalModelMissing as exc:
            return [
                Check(
                    "warn", f"memory: {exc}", f'pip install wordllama, or memory.embedding.provider = "none" in {path}'
                )
            ]
        return [Check("ok", f"memory: the local embedder {local.model} loads (offline)")]
    async with httpx.AsyncClient() as client:
        remote = memory.OpenAIEmbedder(attrs.evolve(embedding, timeout_seconds=_PROBE_SECONDS), client)
        try:
            vectors = await remote.embed(["BeamClaw doctor"])
        except memory.EmbeddingError as exc:
            fix = f"start it, or fix memory.embedding (base_url, model, api_key) in {path}"
            return [Check("fail", f"memory: {exc}", fix)]
    return [Check("ok", f"memory: {embedding.model} at {embedding.base_url} gives vectors of {vectors.shape[1]}")]


async def _checks(args: argparse.Namespace) -> list[Check]:
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
    checks += await _model(target.config, target.path)
    checks += await _channels(target.config, target.path)
    checks += await _port(target.config, target.path, target.running)
    checks += await _jail(target.config, target.path)
    checks += _docker(target.config)
    checks += await _memory(target.config, target.path)
    checks += await store_checks(target.config, target.path)
    checks += await cluster_checks(target.config, target.path, target.running)
    return checks


def doctor(args: argparse.Namespace) -> int:
    checks = trio.run(_checks, args)
    for check in checks:
        # What a model server or a Telegram API answered may be quoted in a check.
        print(visible(f"{_MARKS[check.status]} {check.what}" + (f"\n    fix: {check.fix}" if check.fix else "")))
    failed = sum(1 for check in checks if check.status == "fail")
    warned = sum(1 for check in checks if check.status == "warn")
    notes = f" ({warned} warning{'s' if warned != 1 else ''})" if warned else ""
    print(f"{failed} problem(s) to fix{notes}" if failed else f"all good{notes}")
    return 1 if failed else 0
