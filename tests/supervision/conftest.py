"""Helpers for the supervision tests: OTP's `supervisor_1` child, a harness, watchers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import attrs
import pytest
import trio
import trio.testing

import supervision as sv


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", 'otp("<suite>:<case>", ...): the OTP test cases this test ports (see otp_suites.py)'
    )


class Boom(Exception):
    """The crash the tests inject."""


@attrs.define
class Control:
    """Shared with a `Worker`: how its start behaves, and what it saw."""

    start: str = "ok"  # "ok", "ignore" or "error"
    starts: int = 0
    log: list[Any] = attrs.field(factory=list)
    hang_on_terminate: bool = False


class Worker(sv.GenServer):
    """OTP's supervisor_1: a child that can be told to fail at start, crash, hang or stop."""

    def init(self, control: Control | None = None, tag: Any = None) -> Any:
        control = control if control is not None else Control()
        self.tag = tag
        control.starts += 1
        if control.start == "ignore":
            return sv.IGNORE
        if control.start == "error":
            raise Boom("start refused")
        control.log.append(("started", tag, sv.self()))
        return control

    async def handle_call(self, request: Any, caller: sv.Caller, control: Control) -> Any:
        if request == "ping":
            return sv.Reply("pong", control)
        if request == "crash":
            raise Boom("asked to crash")
        if request == "stop":
            return sv.Stop(sv.NORMAL, control, reply="bye")
        if isinstance(request, tuple) and request[0] == "sleep":
            await trio.sleep(request[1])
            return sv.Reply("slept", control)
        return sv.NoReply(control)

    def handle_cast(self, message: Any, control: Control) -> Any:
        if message == "crash":
            raise Boom("asked to crash")
        if message == "stop":
            return sv.Stop(sv.NORMAL, control)
        return sv.NoReply(control)

    async def terminate(self, reason: Any, control: Control) -> None:
        control.log.append(("terminate", self.tag, reason))
        if control.hang_on_terminate:
            await trio.sleep_forever()


def worker(id: Any, control: Control | None = None, **kwargs: Any) -> sv.ChildSpec:  # noqa: A002
    return sv.ChildSpec(id, Worker.start, args=(control or Control(), id), **kwargs)


async def settle() -> None:
    """Let every task run until all are blocked: the supervisor has handled what happened."""
    await trio.testing.wait_all_tasks_blocked()


async def crash(pid: sv.Pid, reason: Any = None) -> None:
    """Make *pid* exit abnormally (OTP's exit(Pid, abnormal)) and let its supervisor react."""
    sv.kill(pid, reason if reason is not None else Boom("injected crash"))
    await settle()


def child_pid(sup: sv.Pid, child_id: Any) -> sv.Pid | None:
    return {info.id: info.pid for info in sv.which_children(sup)}[child_id]


def counts(sup: sv.Pid) -> list[int]:
    c = sv.count_children(sup)
    return [c.specs, c.active, c.supervisors, c.workers]


class Downs:
    """The `Down` messages of the processes a test watches."""

    def __init__(self, refs: dict[sv.Ref, sv.Pid]) -> None:
        self._refs = {pid: ref for ref, pid in refs.items()}

    async def reason(self, pid: sv.Pid) -> Any:
        ref = self._refs[pid]
        down = await sv.receive(match=lambda m: isinstance(m, sv.Down) and m.ref == ref)
        return down.reason


@contextmanager
def watching(*pids: sv.Pid) -> Iterator[Downs]:
    """Monitor *pids* from the test task (made a process for the block)."""
    with sv.as_process():
        yield Downs({sv.monitor(pid): pid for pid in pids})


@attrs.define
class Harness:
    """Starts supervisors the way a parent would, and keeps how they exited."""

    nursery: trio.Nursery
    exits: dict[sv.Pid, Any] = attrs.field(factory=dict)

    async def start(self, spec: sv.Supervisor | sv.DynamicSupervisor) -> sv.Pid:
        pid: sv.Pid = await self.nursery.start(self._run, spec)
        return pid

    async def _run(self, spec: Any, *, task_status: Any) -> None:
        pid = None

        def started(value: Any) -> None:
            nonlocal pid
            pid = value
            task_status.started(value)

        status = SimpleNamespace(started=started)
        try:
            await sv.start_supervisor(spec, task_status=status)
        except Exception as exc:
            if pid is None:
                raise
            self.exits[pid] = exc
        else:
            self.exits[pid] = sv.SHUTDOWN


@pytest.fixture
async def harness(nursery: trio.Nursery) -> Harness:
    return Harness(nursery)
