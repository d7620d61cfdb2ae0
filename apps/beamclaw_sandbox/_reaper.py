"""The reaper: removes containers no sandbox owns any more, and stops idle sandboxes.

A sandbox removes its own container however its process ends, so orphans come only
from a daemon that died without running its clean-up (``kill -9``, a power cut, an OOM
kill). Such a container carries this daemon's instance label (the same after the
restart) and an older boot label: the reaper's first sweep, right after start, removes
it. A container of the current boot that no live sandbox names (its removal failed
while the engine was away) goes too, once older than a grace period that covers a
container being created. Containers of other daemons (other data dirs) are never
touched. Host folders left beside such containers go with them.

Every ``reaper_interval_seconds`` it also stops the sandboxes unused for
``idle_timeout_seconds``. Each removal is an event ``sandbox_reaped`` with the
container's name and why (``orphan`` or ``idle``).
"""

from __future__ import annotations

import shutil
import time
from typing import Any, Final

import trio
from loguru import logger

import supervision as sv
from beamclaw_obs import emit

from ._docker import LABEL_BOOT, LABEL_INSTANCE, LABEL_KEY, LABEL_SANDBOX, EngineUnavailable
from ._docker_jail import JAIL_KEY
from ._registry import live_sandboxes
from ._runtime import SANDBOXES, SandboxRuntime

#: Seconds a container of this boot may exist unowned before it counts as an orphan:
#: between the engine creating it and its sandbox finishing ``init``.
ORPHAN_GRACE: Final = 120.0


async def reaper(runtime: SandboxRuntime, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Sweep now, then every ``reaper_interval_seconds``."""
    task_status.started()
    warned = False
    while True:
        try:
            await reap(runtime)
            warned = False
        except EngineUnavailable as exc:
            if not warned:  # once per outage, not once a minute
                logger.warning("sandbox reaper: {}", exc)
                warned = True
        await trio.sleep(runtime.config.reaper_interval_seconds)


async def reap(runtime: SandboxRuntime) -> list[str]:
    """One sweep; the names of the containers removed or sandboxes stopped."""
    reaped = []
    now = time.monotonic()
    idle_limit = runtime.config.idle_timeout_seconds
    for pid, info in live_sandboxes(runtime):
        if not info.busy and now - info.last_used > idle_limit:
            await sv.terminate_child(SANDBOXES, pid)
            emit("sandbox_reaped", name=info.name, key=info.key, reason="idle")
            reaped.append(info.name)
    owned = {info.name for _, info in live_sandboxes(runtime)}
    containers = await runtime.engine.containers({LABEL_SANDBOX: "1", LABEL_INSTANCE: runtime.instance})
    for container in containers:
        if container.name in owned:
            continue
        if container.label(LABEL_BOOT) == runtime.boot and (
            container.label(LABEL_KEY) == JAIL_KEY  # a jail's command of this boot; it removes its container
            or time.time() - container.created < ORPHAN_GRACE
        ):
            continue
        if await runtime.engine.remove(container.name):
            emit("sandbox_reaped", name=container.name, key=container.label(LABEL_KEY), reason="orphan")
            reaped.append(container.name)
    await trio.to_thread.run_sync(_remove_stale_folders, runtime, owned)
    return reaped


def _remove_stale_folders(runtime: SandboxRuntime, owned: set[str]) -> None:
    root = runtime.host_root()
    if not root.is_dir():
        return
    prefix = f"beamclaw-sbx-{runtime.instance}-"
    for folder in root.iterdir():
        # A folder of this boot may belong to a sandbox in its init; age tells.
        stale = folder.name not in owned and time.time() - folder.stat().st_mtime >= ORPHAN_GRACE
        if folder.name.startswith(prefix) and folder.is_dir() and stale:
            shutil.rmtree(folder, ignore_errors=True)
