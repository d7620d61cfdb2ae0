"""Processes: Trio tasks with a pid, a mailbox, a cancel scope and an exit reason.

All process state lives in a node object kept in a Trio `RunVar`, so each
`trio.run` (each test) has its own process table, and every function here works from
any task of that run, inside a process or not.
"""

from __future__ import annotations

import contextvars
import itertools
import math
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, Protocol, final

import attrs
import outcome
import trio
from trio.lowlevel import RunVar

from ._errors import AlreadyRegistered, NoProc, ProcessExited, ReceiveTimeout
from ._mailbox import DEFAULT_CAPACITY, EMPTY, Mailbox, Overflow
from ._reasons import KILLED, NOPROC, NORMAL, SHUTDOWN, Exit

_ids: Final = itertools.count(1)


@final
@attrs.frozen(repr=False, order=True)
class Pid:
    """A process identifier. Pids are never reused within a run."""

    id: int

    def __repr__(self) -> str:
        return f"<0.{self.id}.0>"


@final
@attrs.frozen(repr=False)
class Ref:
    """A unique reference, as returned by `monitor`."""

    id: int = attrs.field(factory=lambda: next(_ids))

    def __repr__(self) -> str:
        return f"#Ref<{self.id}>"


@final
@attrs.frozen
class Down:
    """Sent to a monitoring process when the monitored one exits."""

    ref: Ref
    pid: Any
    reason: Any


class Via(Protocol):
    """A name held in a `Registry`; see `Registry.via`."""

    def whereis(self) -> Pid | None: ...

    def register(self, pid: Pid) -> None: ...


Dest = Pid | str | Via


@attrs.define(eq=False, slots=True)
class Caller:
    """The caller of a pending `call`, to be answered with `reply` (OTP's ``From``).

    The reply may come before the caller has parked (a process that exits while the
    caller still waits for mailbox room), so the result is kept until it parks.
    """

    _task: trio.lowlevel.Task
    _target: Process
    _result: Any = None
    _parked: bool = False
    done: bool = False

    def _resolve(self, result: Any) -> None:
        if self.done:
            return
        self.done = True
        self._target.callers.pop(self, None)
        if self._parked:
            self._parked = False
            trio.lowlevel.reschedule(self._task, result)
        else:
            self._result = result

    async def _wait(self) -> Any:
        if self.done:
            await trio.lowlevel.checkpoint()
            return self._result.unwrap()
        self._parked = True
        return await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _: Any) -> trio.lowlevel.Abort:
        self._parked = False
        self.done = True
        self._target.callers.pop(self, None)
        return trio.lowlevel.Abort.SUCCEEDED


@attrs.define(eq=False, slots=True)
class _Call:
    request: Any
    caller: Caller


@attrs.define(eq=False, slots=True)
class _Cast:
    message: Any


@attrs.define(eq=False, slots=True)
class _StopRequest:
    """Asks a process that handles stops (a behaviour) to clean up and exit."""

    reason: Any


@attrs.define(eq=False)
class Process:
    """The runtime's record of one process. Not part of the public API."""

    pid: Pid
    mailbox: Mailbox
    cancel_scope: trio.CancelScope
    started_at: float
    task: trio.lowlevel.Task | None = None
    name: Any = None
    kind: str = "process"
    #: True once a behaviour (GenServer, supervisor...) runs as this process, so that a
    #: behaviour's start called from this task runs in it instead of spawning another.
    adopted: bool = False
    #: Behaviours clean up on a stop request; plain functions are cancelled instead.
    handles_stop: bool = False
    behaviour: Any = None
    #: Called with the reason when a stop is requested of this process (which handles
    #: stops): a supervisor busy starting a child cannot read its mailbox meanwhile.
    on_stop_request: Callable[[Any], None] | None = None
    alive: bool = True
    stop_reason: Any = None
    exit_reason: Any = None
    done: trio.Event = attrs.field(factory=trio.Event)
    #: The pending calls, as a dict's keys: an empty dict takes 64 bytes, an empty set 216,
    #: and every process has one.
    callers: dict[Caller, None] = attrs.field(factory=dict)
    monitored_by: dict[Ref, Process] = attrs.field(factory=dict)
    monitoring: dict[Ref, Process] = attrs.field(factory=dict)
    exit_hooks: list[Callable[[Process], None]] = attrs.field(factory=list)


@attrs.define
class _Node:
    procs: dict[Pid, Process] = attrs.field(factory=dict)
    names: dict[str, Process] = attrs.field(factory=dict)
    counter: Iterator[int] = attrs.field(factory=lambda: itertools.count(1))
    subscribers: dict[object, Callable[[Any], None]] = attrs.field(factory=dict)
    groups: dict[Any, list[Process]] = attrs.field(factory=dict)
    #: Tasks in `wait_for_name`, by the name they wait for.
    name_waiters: dict[Any, trio.lowlevel.ParkingLot] = attrs.field(factory=dict)


_NODE: RunVar[_Node] = RunVar("supervision.node")


def node() -> _Node:
    """The process table of the current Trio run, created on first use."""
    try:
        return _NODE.get()
    except LookupError:
        created = _Node()
        _NODE.set(created)
        return created


_CURRENT: contextvars.ContextVar[Process | None] = contextvars.ContextVar("supervision.current", default=None)


def current() -> Process | None:
    """The process whose task (or helper task) is running, if any."""
    return _CURRENT.get()


def self() -> Pid:
    """The pid of the calling process."""
    proc = _CURRENT.get()
    if proc is None:
        raise RuntimeError("sv.self() called outside a process")
    return proc.pid


def new_process(capacity: float = DEFAULT_CAPACITY, overflow: Overflow = Overflow.WAIT) -> Process:
    table = node()
    pid = Pid(next(table.counter))
    proc = Process(pid, Mailbox(pid, capacity, overflow), trio.CancelScope(), trio.current_time())
    table.procs[pid] = proc
    return proc


def resolve(dest: Dest) -> Process | None:
    """The live process *dest* names, or None. An unknown name raises `NoProc`."""
    if isinstance(dest, Pid):
        return node().procs.get(dest)
    if isinstance(dest, str):
        proc = node().names.get(dest)
        if proc is None:
            raise NoProc(dest)
        return proc
    if hasattr(dest, "whereis"):
        pid = dest.whereis()
        if pid is None:
            raise NoProc(dest)
        return node().procs.get(pid)
    raise TypeError(f"a destination is a Pid, a registered name or a via name, got {dest!r}")


def is_alive(dest: Dest) -> bool:
    """Whether *dest* names a live process (Erlang's is_process_alive)."""
    try:
        proc = resolve(dest)
    except NoProc:
        return False
    return proc is not None and proc.alive


def resolve_live(dest: Dest) -> Process:
    proc = resolve(dest)
    if proc is None or not proc.alive:
        raise NoProc(dest)
    return proc


# -- names ---------------------------------------------------------------------


def register(name: str, pid: Pid | None = None) -> None:
    """Give the live process *pid* (default: the caller) the name *name*.

    Names are freed when their process exits. A process holds at most one name, and a
    name at most one process, as in Erlang.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a process name is a non-empty str, got {name!r}")
    proc = resolve_live(pid if pid is not None else self())
    table = node()
    holder = table.names.get(name)
    if holder is not None:
        raise AlreadyRegistered(f"name {name!r} is already registered to {holder.pid!r}")
    if proc.name is not None:
        raise AlreadyRegistered(f"process {proc.pid!r} is already registered as {proc.name!r}")
    table.names[name] = proc
    proc.name = name
    name_registered(name)


def unregister(name: str) -> None:
    """Free *name*. Freeing a name nobody holds raises `NoProc`."""
    proc = node().names.pop(name, None)
    if proc is None:
        raise NoProc(name)
    proc.name = None


def whereis(name: str) -> Pid | None:
    """The pid registered as *name*, or None."""
    proc = node().names.get(name)
    return proc.pid if proc is not None else None


def registered() -> list[str]:
    """Every registered name."""
    return sorted(node().names)


def name_registered(name: Any) -> None:
    """Wake the tasks in `wait_for_name` for *name* (a str or a via name)."""
    waiters = node().name_waiters
    if not waiters:
        return
    try:
        lot = waiters.get(name)
    except TypeError:
        return  # an unhashable via name: nobody can wait for it
    if lot is not None:
        lot.unpark_all()


async def wait_for_name(name: str | Via, timeout: float | None = None) -> Pid:
    """Wait until *name* is registered to a live process and return its pid.

    For a name whose process is being restarted: the replacement registers the name
    before its init runs. Returns at once if the name is held already. Waiters are
    woken by `register` and `Registry.register`, never by polling. Raises `NoProc`
    when no process takes the name within *timeout* seconds (None waits for ever).
    """
    if isinstance(name, Pid) or not (isinstance(name, str) or hasattr(name, "whereis")):
        raise TypeError(f"wait_for_name takes a registered name or a via name, got {name!r}")
    try:
        hash(name)
    except TypeError:
        raise TypeError(f"wait_for_name needs a hashable name, got {name!r}") from None
    waiters = node().name_waiters
    deadline = math.inf if timeout is None else trio.current_time() + timeout
    await trio.lowlevel.checkpoint_if_cancelled()
    parked = False
    while True:
        proc = _live(name)
        if proc is not None:
            if not parked:
                await trio.lowlevel.cancel_shielded_checkpoint()
            return proc.pid
        if trio.current_time() >= deadline:
            raise NoProc(name)
        lot = waiters.get(name)
        if lot is None:
            lot = waiters[name] = trio.lowlevel.ParkingLot()
        parked = True
        try:
            with trio.move_on_at(deadline):
                await lot.park()
        finally:
            if not lot and waiters.get(name) is lot:
                del waiters[name]


def _live(dest: Dest) -> Process | None:
    try:
        proc = resolve(dest)
    except NoProc:
        return None
    return proc if proc is not None and proc.alive else None


# -- messages --------------------------------------------------------------------


def send(dest: Dest, message: Any) -> bool:
    """Send *message* without waiting; return whether it was queued.

    A message to a dead pid is dropped, as in Erlang, and so is one to a full mailbox
    whose policy is DROP (counted by the mailbox): both return False. Raises `NoProc`
    for an unknown name, and `MailboxFull` when the receiver's mailbox is full and its
    policy is WAIT or RAISE (use `send_wait` to wait for room).
    """
    proc = resolve(dest)
    return proc is not None and proc.mailbox.put_nowait(message)


async def send_wait(dest: Dest, message: Any) -> None:
    """Send *message*, waiting for room when the receiver's policy is WAIT."""
    proc = resolve(dest)
    if proc is None:
        await trio.lowlevel.checkpoint()
        return
    await proc.mailbox.put(message)


async def receive(timeout: float | None = None, match: Callable[[Any], bool] | None = None) -> Any:
    """Take the oldest message (or the oldest one *match* accepts) from the caller's mailbox.

    Messages *match* rejects stay queued, in order. Raises `ReceiveTimeout` when no
    such message arrives within *timeout* seconds (Trio's clock).
    """
    proc = _CURRENT.get()
    if proc is None:
        raise RuntimeError("sv.receive() called outside a process")
    if timeout is None:
        return await proc.mailbox.get(match)
    # A message already queued is taken even with a zero timeout (Erlang's `after 0`).
    await trio.lowlevel.checkpoint_if_cancelled()
    message = proc.mailbox.get_nowait(match)
    if message is not EMPTY:
        await trio.lowlevel.cancel_shielded_checkpoint()
        return message
    with trio.move_on_after(timeout):
        return await proc.mailbox.get(match)
    raise ReceiveTimeout(f"no message within {timeout} s")


def set_mailbox(capacity: float | None = None, overflow: Overflow | None = None) -> None:
    """Set the calling process's mailbox bound and full-mailbox policy."""
    proc = _CURRENT.get()
    if proc is None:
        raise RuntimeError("sv.set_mailbox() called outside a process")
    proc.mailbox.configure(capacity, overflow)


# -- monitors ----------------------------------------------------------------------


def monitor(dest: Dest) -> Ref:
    """Watch *dest*: the caller gets `Down(ref, pid, reason)` when it exits.

    Monitoring a process that is already gone delivers `Down` with reason `NOPROC` at once.
    """
    watcher = _CURRENT.get()
    if watcher is None:
        raise RuntimeError("sv.monitor() called outside a process")
    ref = Ref()
    try:
        target = resolve(dest)
    except NoProc:
        target = None
    if target is None or not target.alive:
        watcher.mailbox.put_nowait(Down(ref, dest, NOPROC), force=True)
        return ref
    target.monitored_by[ref] = watcher
    watcher.monitoring[ref] = target
    return ref


def demonitor(ref: Ref, *, flush: bool = False) -> None:
    """Stop watching; with *flush*, also drop a `Down` for *ref* already queued."""
    watcher = _CURRENT.get()
    if watcher is None:
        raise RuntimeError("sv.demonitor() called outside a process")
    target = watcher.monitoring.pop(ref, None)
    if target is not None:
        target.monitored_by.pop(ref, None)
    if flush:
        watcher.mailbox.remove(lambda m: isinstance(m, Down) and m.ref == ref)


# -- running and stopping ------------------------------------------------------------


def request_stop(proc: Process, reason: Any) -> None:
    """Ask *proc* to exit with *reason*: a behaviour cleans up, anything else is cancelled."""
    if not proc.alive:
        return
    if reason is KILLED or not proc.handles_stop:
        if proc.stop_reason is None or reason is KILLED:
            proc.stop_reason = reason
        proc.cancel_scope.cancel()
    elif proc.stop_reason is None:
        proc.stop_reason = reason
        proc.mailbox.put_nowait(_StopRequest(reason), force=True)
        if proc.on_stop_request is not None:
            proc.on_stop_request(reason)


async def stop(dest: Dest, reason: Any = SHUTDOWN, timeout: float | None = None) -> None:
    """Stop *dest* with *reason* and return once it has exited.

    A GenServer, state machine or supervisor runs its clean-up (`terminate`, stopping
    its children in reverse order); a plain process is cancelled. After *timeout*
    seconds the process is cancelled outright (`KILLED`). `reason=sv.KILLED` cancels
    at once; an exception as *reason* makes the exit a crash, which a supervisor
    restarts even for a transient child.
    """
    proc = resolve_live(dest)
    if proc is _CURRENT.get() and proc.task is trio.lowlevel.current_task():
        raise RuntimeError("a process cannot stop itself and wait for it; raise sv.Exit(reason)")
    request_stop(proc, reason)
    if timeout is None:
        await proc.done.wait()
        return
    with trio.move_on_after(timeout):
        await proc.done.wait()
        return
    request_stop(proc, KILLED)
    await proc.done.wait()


def kill(dest: Dest, reason: Any = KILLED) -> None:
    """Make *dest* exit now with *reason* (no clean-up), without waiting for it."""
    proc = resolve_live(dest)
    proc.stop_reason = reason
    proc.cancel_scope.cancel()


def _exit(proc: Process, reason: Any) -> None:
    """Record the exit and tell everyone who waits on it. Runs exactly once per process."""
    proc.alive = False
    proc.exit_reason = reason
    table = node()
    table.procs.pop(proc.pid, None)
    if proc.name is not None and table.names.get(proc.name) is proc:
        del table.names[proc.name]
    for hook in proc.exit_hooks:
        hook(proc)
    proc.mailbox.close()
    if proc.callers:
        failure = ProcessExited(proc.pid, reason)
        for caller in list(proc.callers):
            caller._resolve(outcome.Error(failure))
    for ref, watcher in proc.monitored_by.items():
        watcher.monitoring.pop(ref, None)
        watcher.mailbox.put_nowait(Down(ref, proc.pid, reason), force=True)
    for ref, target in proc.monitoring.items():
        target.monitored_by.pop(ref, None)
    table.subscribers.pop(proc.pid, None)
    proc.done.set()


@final
@attrs.define(eq=False)
class TaskStatus:
    """The `task_status` a start function gets; `started()` reports that init finished.

    It stands between the start function and the task that started it, so the
    runtime learns the value (a pid, or `IGNORE`) and whether the report came at all.
    """

    _report: Callable[[Any], None]
    reported: bool = False
    value: Any = None

    def started(self, value: Any = None) -> None:
        if self.reported:
            raise RuntimeError("task_status.started() called twice")
        self.reported = True
        self.value = value
        self._report(value)


def format_reason(reason: Any) -> str | None:
    """The traceback of a crash, or None for an exit that is not an exception."""
    if isinstance(reason, BaseException):
        return "".join(traceback.format_exception(reason))
    return None


async def run_process(
    proc: Process,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    status: TaskStatus,
    name: Any = None,
) -> Any:
    """Run *fn* as *proc* until it exits, and return the exit reason.

    Exceptions from *fn* become the exit reason instead of propagating, so one
    process's crash never cancels its siblings; only a cancellation from outside
    (the parent itself being cancelled) propagates, with reason `KILLED`.
    """
    token = _CURRENT.set(proc)
    proc.task = trio.lowlevel.current_task()
    reason: Any = NORMAL
    try:
        if name is not None:
            if isinstance(name, str):
                register(name, proc.pid)
            else:
                name.register(proc.pid)
                proc.name = name
                name_registered(name)  # a via name of a registry that does not tell
        with proc.cancel_scope:
            try:
                await fn(*args, task_status=status)
            except Exit as exit_:
                reason = exit_.reason
            except Exception as exc:  # noqa: BLE001 - a crash becomes the exit reason
                reason = exc
        if proc.cancel_scope.cancelled_caught:
            reason = proc.stop_reason if proc.stop_reason is not None else KILLED
    except AlreadyRegistered as exc:
        reason = exc
    except BaseException:
        reason = KILLED if proc.stop_reason is None else proc.stop_reason
        raise
    finally:
        _CURRENT.reset(token)
        _exit(proc, reason)
    return reason


def adopt_behaviour(behaviour: Any, capacity: float, overflow: Overflow) -> Process:
    """Make the calling process run *behaviour*: it handles stop requests and is inspectable."""
    proc = _CURRENT.get()
    assert proc is not None
    proc.handles_stop = True
    proc.behaviour = behaviour
    proc.mailbox.configure(capacity, overflow)
    return proc


async def start_behaviour(body: Callable[..., Any], args: tuple[Any, ...], task_status: Any, kind: str) -> None:
    """Run a behaviour's *body* as a process, reporting its pid through *task_status*.

    Under a supervisor the process already exists (the supervisor made it for this
    task), and the behaviour adopts it. Started directly in a user's nursery
    (``await nursery.start(Counter.start)``) there is none, so one is made here, and a
    crash propagates into that nursery as any Trio task's would.
    """
    proc = _CURRENT.get()
    if proc is not None and not proc.adopted and proc.task is trio.lowlevel.current_task():
        proc.adopted = True
        proc.kind = kind
        await body(*args, task_status=task_status)
        return

    async def adopt(*, task_status: Any) -> None:
        await start_behaviour(body, args, task_status, kind)

    status = TaskStatus(task_status.started)
    reason = await run_process(new_process(), adopt, (), status)
    if isinstance(reason, BaseException):
        raise reason
    if not status.reported:
        raise RuntimeError(f"{kind} exited with reason {reason!r} before it started")


@contextmanager
def as_process(name: str | None = None, capacity: float = DEFAULT_CAPACITY) -> Iterator[Pid]:
    """Make the current task a process for the duration of the block.

    Gives plain Trio code (a test, a CLI command) a pid and a mailbox, so it can
    monitor and receive. Stopping it cancels the block.
    """
    proc = new_process(capacity)
    token = _CURRENT.set(proc)
    proc.task = trio.lowlevel.current_task()
    reason: Any = NORMAL
    try:
        if name is not None:
            register(name, proc.pid)
        with proc.cancel_scope:
            yield proc.pid
        if proc.cancel_scope.cancelled_caught:
            reason = proc.stop_reason
    except BaseException as exc:
        reason = exc
        raise
    finally:
        _CURRENT.reset(token)
        _exit(proc, reason)


def report_ignored(exc: BaseException, where: str) -> None:
    """Print an exception that must not propagate (a failing event subscriber),
    in the form Python uses for the exceptions it has to ignore."""
    print(f"Exception ignored in {where}:", file=sys.stderr)
    traceback.print_exception(exc, file=sys.stderr)
