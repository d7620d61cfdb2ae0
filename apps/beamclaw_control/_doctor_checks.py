"""The checks of `beamclaw doctor` that the daemon runs itself (``GET /v1/doctor``).

They look at what the configuration will use, from where the daemon runs, with its
environment: the model server answering (with its latency, and whether it serves the
model), each enabled channel's token and API, the jail the agent's commands run in,
Docker when something uses it, and who embeds the memory. Every fix names the file
to edit. `beamclaw doctor` adds what only a client can see (the configuration file
being valid, the data dir, the gateway's port from outside, PostgreSQL and the
cluster), and runs these itself when no daemon runs.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import trio

import beamclaw_core as core
import beamclaw_memory as memory
import beamclaw_obs as obs
import beamclaw_sandbox as sandbox

#: How long a network check may take before it counts as not answering.
_PROBE_SECONDS: Final = 5.0


@attrs.frozen
class Check:
    """One line of `beamclaw doctor`'s report: what was found, and how to fix it."""

    status: str  # ok | warn | fail
    what: str
    fix: str = ""
    #: What was checked (model, telegram, jail, docker, memory...).
    name: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The API's shape: name, ok (not failed), detail, and the status and fix."""
        return {"name": self.name, "ok": self.status != "fail", "detail": self.what, "status": self.status,
                "fix": self.fix}  # fmt: skip


async def daemon_checks(config: dict[str, Any], path: Path) -> list[Check]:
    """Every check of this module for *config*, read from *path* (named in the fixes)."""
    found = [
        ("model", await _model(config, path)),
        ("telegram", await _channels(config, path)),
        ("jail", await _jail(config, path)),
        ("docker", _docker(config)),
        ("memory", await _memory(config, path)),
    ]
    return [attrs.evolve(check, name=name) for name, checks in found for check in checks]


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
            local = memory.LocalEmbedder()
            await trio.to_thread.run_sync(local.load)
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
