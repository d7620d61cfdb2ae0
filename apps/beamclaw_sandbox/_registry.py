"""The registry process: the only starter of sandboxes, and what answers for them.

Scope keys map to sandboxes through the runtime's `sv.Registry` (an entry per live
sandbox, gone the moment it exits). This process is the only one that starts them, so
two execs arriving at once for the same key never start two containers. It also keeps
one PII tokenizer per key, handed to the sandbox as a start argument: a sandbox that
crashes and restarts keeps its tokens, so a token the model saw still means the same
value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, TypeVar

import attrs

import supervision as sv

from ._docker import EngineUnavailable, ImageMissing
from ._pii import PiiTokenizer
from ._runtime import REGISTRY, SANDBOXES, SandboxInfo, SandboxRuntime
from ._sandbox import Sandbox

#: Seconds a sandbox is given to stop (its exec is cancelled; the container is removed after).
SANDBOX_SHUTDOWN: Final = 5.0
#: Seconds a caller waits for the registry process while it is being restarted.
RESTART_WAIT: Final = 2.0

R = TypeVar("R")


class SandboxUnavailable(RuntimeError):
    """No sandbox could be started; the message says why and what fixes it."""


# --- what the registry is asked (each typed with its reply, `supervision.Request`) ---------


@attrs.frozen
class EnsureSandbox(sv.Request[sv.ViaName]):
    """The name of *key*'s sandbox, started first (with *workspace* mounted) if none runs."""

    key: str
    workspace: Path | None


@attrs.frozen
class ListSandboxes(sv.Request[list[dict[str, Any]]]):
    """Every running sandbox, as `SandboxInfo.as_dict` describes it."""


@attrs.frozen
class KillSandbox(sv.Request[str | None]):
    """Stop the sandbox whose container name or key is *which*; its name, or None."""

    which: str


@attrs.frozen
class SandboxStatus(sv.Request[dict[str, Any]]):
    """The Docker backend at a glance (see `sandbox_status`)."""


@attrs.frozen
class RegistryRuntime(sv.Request[SandboxRuntime]):
    """The runtime the sandboxes are started with (its engine, registry and config)."""


#: Every request the registry answers.
RegistryRequest = EnsureSandbox | ListSandboxes | KillSandbox | SandboxStatus | RegistryRuntime


@attrs.define
class _State:
    runtime: SandboxRuntime
    tokenizers: dict[str, PiiTokenizer] = attrs.field(factory=dict)


def live_sandboxes(runtime: SandboxRuntime) -> list[tuple[sv.Pid, SandboxInfo]]:
    """Every running sandbox: its pid and info."""
    found = []
    for child in sv.which_children(SANDBOXES):
        if child.pid is None:
            continue
        for pid, info in runtime.registry.lookup(child.id):
            if isinstance(info, SandboxInfo):
                found.append((pid, info))
    return found


class SandboxRegistry(sv.GenServer):
    def init(self, runtime: SandboxRuntime) -> _State:
        sv.register(REGISTRY)
        return _State(runtime)

    async def handle_call(self, request: RegistryRequest, caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
        runtime = state.runtime
        match request:
            case EnsureSandbox(key, workspace):
                try:
                    return sv.Reply(await self._ensure(state, key, workspace), state)
                except SandboxUnavailable as exc:
                    sv.reply_error(caller, exc)
                    return sv.NoReply(state)
            case ListSandboxes():
                return sv.Reply([info.as_dict() for _, info in live_sandboxes(runtime)], state)
            case KillSandbox(which):
                for pid, info in live_sandboxes(runtime):
                    if which in (info.name, info.key):
                        await sv.terminate_child(SANDBOXES, pid)
                        return sv.Reply(info.name, state)
                return sv.Reply(None, state)
            case SandboxStatus():
                return sv.Reply(await _status(runtime), state)
            case RegistryRuntime():
                return sv.Reply(runtime, state)
        raise ValueError(f"unknown sandbox registry request {request!r}")

    def terminate(self, reason: Any, state: _State) -> None:
        # The registry is the app's first child, so it stops last: nobody uses the
        # engine's connections after this (a restarted user simply reconnects).
        state.runtime.engine.close()

    async def _ensure(self, state: _State, key: str, workspace: Path | None) -> sv.ViaName:
        runtime = state.runtime
        via = runtime.registry.via(key)
        if via.whereis() is not None:
            return via
        if any(c.id == key for c in sv.which_children(SANDBOXES)):
            return via  # being restarted by its supervisor: the caller waits for the name
        tokenizer = None
        if runtime.config.pii.enabled:
            tokenizer = state.tokenizers.get(key)
            if tokenizer is None:
                tokenizer = state.tokenizers[key] = PiiTokenizer(runtime.config.pii.patterns)
        spec = sv.ChildSpec(
            key, Sandbox.start, args=(runtime, key, workspace, tokenizer), restart=sv.TRANSIENT,
            shutdown=SANDBOX_SHUTDOWN,
        )  # fmt: skip
        try:
            await sv.start_child(SANDBOXES, spec)
        except sv.StartError as exc:
            raise SandboxUnavailable(_why(exc, runtime)) from None
        return via


def _why(error: sv.StartError, runtime: SandboxRuntime) -> str:
    cause = error.__cause__ if error.__cause__ is not None else error.reason
    if isinstance(cause, EngineUnavailable):
        return f"{cause}. Start the Docker engine (dockerd), or see `beamclaw doctor`."
    if isinstance(cause, ImageMissing):
        return f"{cause}: run `beamclaw sandbox build` (sandbox-image/build.sh) to build it."
    return f"the sandbox could not start: {type(cause).__name__}: {cause}"


async def _status(runtime: SandboxRuntime) -> dict[str, Any]:
    engine = runtime.engine
    status: dict[str, Any] = {
        "backend": "docker", "image": runtime.config.docker_image, "scope": runtime.config.scope,
        "instance": runtime.instance, "sandboxes": len(live_sandboxes(runtime)),
    }  # fmt: skip
    try:
        status["engine"] = (await engine.version()).get("Version", "?")
        status["image_built"] = await engine.image_exists(runtime.config.docker_image)
    except EngineUnavailable as exc:
        status["engine"] = None
        status["problem"] = f"{exc}. Start the Docker engine (dockerd)."
    else:
        if not status["image_built"]:
            status["problem"] = "the sandbox image is not built: run `beamclaw sandbox build`"
    return status


async def registry_call(request: sv.Request[R], timeout: float | None = 60.0) -> R:
    """A request to the registry, riding through a restart of it."""
    return await sv.call(REGISTRY, request, timeout, restart_wait=RESTART_WAIT)


async def ensure_sandbox(key: str, workspace: Path | None) -> sv.ViaName:
    """The sandbox of *key*, started (with its container) if none runs; raises
    `SandboxUnavailable` when it cannot be."""
    return await registry_call(EnsureSandbox(key, workspace))


async def sandbox_status() -> dict[str, Any]:
    """The Docker backend at a glance: engine version (None when it does not answer), image
    built or not, scope, the number of running sandboxes, and ``problem`` with its fix."""
    return await registry_call(SandboxStatus())


async def list_sandboxes() -> list[dict[str, Any]]:
    """Every running sandbox: container name, key, workspace, age, idle time, execs."""
    return await registry_call(ListSandboxes())


async def kill_sandbox(which: str) -> str | None:
    """Stop the sandbox whose container name or key is *which* (its container is removed);
    the container's name, or None if there was none."""
    return await registry_call(KillSandbox(which))
