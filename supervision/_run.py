"""Running a supervision tree: as a context, inside a nursery, or as the whole program."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, nullcontext
from typing import Any

import trio

from ._errors import StartError
from ._process import Pid, TaskStatus, is_alive, new_process, node, request_stop, run_process, stop
from ._reasons import KILLED, SHUTDOWN
from ._supervisor import SupervisorSpec, start_supervisor


@asynccontextmanager
async def open_supervisor(spec: SupervisorSpec) -> AsyncIterator[Pid]:
    """Start *spec*, yield its pid, and stop the tree (in reverse order) when the block ends.

    A child that fails to start raises `StartError` before the block is entered. A
    supervisor that gives up during the block cancels the block and its
    `MaxIntensity` propagates, as a failing Trio task's would.
    """
    start_failure: StartError | None = None
    async with trio.open_nursery() as nursery:
        try:
            pid: Pid = await nursery.start(start_supervisor, spec)
        except StartError as exc:
            start_failure = exc  # raised below: inside the nursery it would come wrapped in a group
        else:
            try:
                yield pid
            finally:
                if is_alive(pid):
                    await stop(pid)
    if start_failure is not None:
        raise start_failure


def run(
    spec: SupervisorSpec,
    *,
    signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM),
    setup: Callable[[], Any] | None = None,
) -> Any:
    """Run *spec* in a new Trio run until the tree stops; return its exit reason.

    The first of *signals* stops the tree gracefully (children in reverse order,
    within their shutdown times); a second one kills it. A tree that crashes
    raises its error (`MaxIntensity` or `StartError`). *setup* runs inside the new
    run before the tree starts: the place to `subscribe` to its events.
    """
    return trio.run(_run_tree, spec, tuple(signals), setup)


async def _run_tree(spec: SupervisorSpec, signals: tuple[int, ...], setup: Callable[[], Any] | None) -> Any:
    if setup is not None:
        setup()
    reason: Any = None

    async def root(*, task_status: Any) -> None:
        nonlocal reason
        status = TaskStatus(task_status.started)
        reason = await run_process(new_process(), start_supervisor, (spec,), status)
        if not status.reported:
            task_status.started(None)

    # The receiver is open before the first child starts, so a signal that comes
    # during start-up is held and stops the tree once it is up, instead of killing
    # the program with Python's default handling.
    with trio.open_signal_receiver(*signals) if signals else nullcontext() as received:
        async with trio.open_nursery() as nursery:
            pid = await nursery.start(root)
            if pid is not None:
                if received is not None:
                    nursery.start_soon(_stop_on_signals, pid, received)
                await _wait_exit(pid)
            nursery.cancel_scope.cancel()
    if isinstance(reason, BaseException):
        raise reason
    return reason


async def _wait_exit(pid: Pid) -> None:
    proc = node().procs.get(pid)
    if proc is not None:
        await proc.done.wait()


async def _stop_on_signals(pid: Pid, received: AsyncIterator[int]) -> None:
    count = 0
    async for _ in received:
        proc = node().procs.get(pid)
        if proc is None:
            return
        count += 1
        request_stop(proc, SHUTDOWN if count == 1 else KILLED)
