"""One sandbox: a transient GenServer that owns one warm container for its lifetime.

``init`` registers the sandbox under its scope key, opens the bridge socket and starts
the container; each ``exec`` call writes the script, serves the bridge while the script
runs, and answers with its output. The container goes with the process, whichever way
it ends: the start function removes it in a shielded ``finally``, so a normal stop, a
crash and a kill (cancellation) all leave nothing behind, and a restart makes a new
container under a new name. Only a ``kill -9`` of the whole daemon escapes this; the
reaper removes what it left at the next start.

Execs of one sandbox run one at a time, in arrival order (the mailbox is the queue).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal, final

import attrs
import trio
from loguru import logger

import supervision as sv
from beamclaw_obs import emit
from beamclaw_tools import ToolDefinition

from ._bridge import Bridge, ToolCaller
from ._discovery import write_discovery
from ._docker import (
    BRIDGE_DIR,
    CONTAINER_ENV,
    LABEL_BOOT,
    LABEL_INSTANCE,
    LABEL_KEY,
    LABEL_SANDBOX,
    TOOLS_DIR,
    WORKSPACE_DIR,
    ContainerSpec,
    EngineUnavailable,
    Mount,
    container_user,
)
from ._env import container_environment
from ._host_dir import HostDir
from ._pii import PiiTokenizer
from ._runtime import SandboxInfo, SandboxRuntime

#: Seconds the container is given to go when its sandbox stops (a forced removal).
_REMOVE_TIMEOUT: Final = 30.0
#: Seconds past the script's own timeout before the host gives up on the engine itself.
_ENGINE_GRACE: Final = 20.0
#: The in-container ``timeout`` sends TERM at the limit, then KILL this many seconds later.
_KILL_AFTER: Final = 2
#: How a Python script runs: the image's bridge module (compiled in the image) runs it
#: with search_tools, get_tool and call_tool defined; `python3 -m` would cost runpy.
_PYTHON_RUNNER: Final = (
    "python3", "-c", "import sys, beamclaw_bridge; sys.exit(beamclaw_bridge.main(sys.argv[1:]))", "run",
)  # fmt: skip
#: Exit statuses of GNU timeout: the command timed out (124) or had to be killed (137).
_TIMED_OUT: Final = frozenset({124, 137})


class SandboxHung(RuntimeError):
    """The engine did not finish an exec long after its timeout: the sandbox restarts."""


@final
@attrs.frozen
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    duration_ms: float
    timed_out: bool = False
    truncated: bool = False
    bridge_calls: int = 0
    bridge_denied: int = 0


@final
@attrs.frozen
class ExecRequest(sv.Request[ExecResult]):
    """One piece of code to run: what the exec tool asks a sandbox (its only request)."""

    language: Literal["python", "shell"]
    code: str
    timeout: float
    call_tool: ToolCaller | None = None
    tools: Sequence[ToolDefinition] = ()


@attrs.define
class _State:
    runtime: SandboxRuntime
    info: SandboxInfo
    tokenizer: PiiTokenizer | None
    host: HostDir
    listener: trio.SocketListener
    scripts: int = 0


class Sandbox(sv.GenServer):
    @classmethod
    async def start(  # type: ignore[override]
        cls,
        runtime: SandboxRuntime,
        key: str,
        workspace: Path | None,
        tokenizer: PiiTokenizer | None,
        *,
        task_status: Any = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run one sandbox: its container and its bridge socket exist exactly while this runs."""
        name = runtime.container_name()
        host = runtime.host_dir(name)
        listener = None
        try:
            await trio.to_thread.run_sync(host.create)
            listener = await host.listen()
            await super().start(runtime, key, workspace, tokenizer, name, listener, task_status=task_status)
        finally:
            with trio.CancelScope(shield=True):
                if listener is not None:
                    listener.socket.close()
                await _remove(runtime, name)

    async def init(  # noqa: PLR0917 - GenServer passes the start arguments positionally
        self, runtime: SandboxRuntime, key: str, workspace: Path | None, tokenizer: PiiTokenizer | None, name: str,
        listener: trio.SocketListener,
    ) -> _State:  # fmt: skip
        config = runtime.config
        mounted = workspace is not None and config.workspace_mount != "none"
        info = SandboxInfo(name, key, str(workspace) if mounted else "")
        runtime.registry.register(key, info)  # before the container exists, so the reaper never takes it
        host = runtime.host_dir(name)
        mounts = [Mount(host.bridge, BRIDGE_DIR), Mount(host.tools, TOOLS_DIR)]
        if mounted and workspace is not None:
            workspace.mkdir(parents=True, exist_ok=True)
            mounts.append(Mount(workspace, WORKSPACE_DIR, read_only=config.workspace_mount == "ro"))
        spec = ContainerSpec(
            name=name,
            image=config.docker_image,
            labels={LABEL_SANDBOX: "1", LABEL_INSTANCE: runtime.instance, LABEL_BOOT: runtime.boot, LABEL_KEY: key},
            environment=container_environment(config, os.environ, CONTAINER_ENV),
            mounts=tuple(mounts),
            memory_bytes=config.memory_bytes,
            cpus=config.cpus,
            pids_limit=config.pids_limit,
            network=config.network,
            working_dir=WORKSPACE_DIR if mounted else "/tmp",
            user=container_user(),
        )
        started = time.perf_counter()
        await runtime.engine.run(spec)
        emit("sandbox_created", name=name, key=key, image=config.docker_image,
             duration_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
        return _State(runtime, info, tokenizer, host, listener)

    async def handle_call(self, request: ExecRequest, caller: sv.Caller, state: _State) -> sv.Reply:
        match request:
            case ExecRequest():
                return sv.Reply(await self._exec(request, state), state)
        raise ValueError(f"unknown sandbox request {request!r}")

    async def _exec(self, request: ExecRequest, state: _State) -> ExecResult:
        runtime, info = state.runtime, state.info
        config = runtime.config
        info.busy = True
        info.last_used = time.monotonic()
        try:
            pii = state.tokenizer if config.pii.enabled else None
            code = pii.tokenize(request.code) if pii is not None and config.pii.tokenize_scripts else request.code
            bridge = Bridge(config.policy, list(request.tools), request.call_tool, pii, config.pii.tokenize_results)
            if await trio.to_thread.run_sync(write_discovery, state.host.tools, bridge.visible()):
                await trio.to_thread.run_sync(state.host.hand_over, state.host.tools)
            state.scripts += 1
            suffix = "py" if request.language == "python" else "sh"
            script = state.host.scripts / f"{state.scripts}.{suffix}"
            script.write_text(code)
            state.host.hand_over(script)
            inside = f"{BRIDGE_DIR}/scripts/{script.name}"
            runner = [*_PYTHON_RUNNER, inside] if suffix == "py" else ["bash", inside]
            timeout = max(1, round(request.timeout))
            command = ["timeout", "-k", str(_KILL_AFTER), str(timeout), *runner]
            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                await nursery.start(bridge.serve, state.listener)
                with trio.move_on_after(timeout + _KILL_AFTER + _ENGINE_GRACE) as guard:
                    output = await runtime.engine.exec(
                        info.name, command, max_output_bytes=config.max_output_bytes, abandon_on_cancel=True
                    )
                nursery.cancel_scope.cancel()
            if guard.cancelled_caught:
                raise SandboxHung(f"the engine did not finish an exec in {info.name} within {timeout}s and more")
            with contextlib.suppress(OSError):
                script.unlink()
            duration_ms = round((time.perf_counter() - started) * 1000, 1)
            stdout = output.stdout.decode("utf-8", "replace")
            stderr = output.stderr.decode("utf-8", "replace")
            if pii is not None and config.pii.tokenize_results:
                stdout, stderr = pii.tokenize(stdout), pii.tokenize(stderr)
            result = ExecResult(
                output.exit_code, stdout, stderr, duration_ms, output.exit_code in _TIMED_OUT and
                duration_ms >= timeout * 1000, output.truncated, bridge.calls, bridge.denied,
            )  # fmt: skip
        finally:
            info.busy = False
            info.last_used = time.monotonic()
        info.execs += 1
        emit("sandbox_exec", name=info.name, key=info.key, language=request.language, exit_code=result.exit_code,
             duration_ms=duration_ms, timed_out=result.timed_out, truncated=result.truncated,
             bridge_calls=result.bridge_calls, bridge_denied=result.bridge_denied)  # fmt: skip
        return result


async def _remove(runtime: SandboxRuntime, name: str) -> None:
    """Remove the container *name* and its host folder; never raises."""
    removed = False
    with trio.move_on_after(_REMOVE_TIMEOUT):
        try:
            removed = await runtime.engine.remove(name)
        except EngineUnavailable as exc:
            logger.warning("sandbox {}: the container could not be removed now ({}); the reaper will", name, exc)
        except Exception as exc:  # noqa: BLE001 - clean-up must go on; the reaper retries
            logger.opt(exception=exc).warning("sandbox {}: removing the container failed", name)
    with contextlib.suppress(OSError):
        await trio.to_thread.run_sync(shutil.rmtree, runtime.host_dir(name).path)
    if removed:
        emit("sandbox_removed", name=name)
