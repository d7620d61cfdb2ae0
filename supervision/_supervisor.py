"""Supervisors: start children in order, restart them by strategy, stop them in reverse.

One engine serves both kinds. `Supervisor` has a fixed, ordered list of child specs
and three strategies; `DynamicSupervisor` (OTP's simple_one_for_one, Elixir's
DynamicSupervisor) starts children on demand, from a template or a full spec, and
stops them all at once.

A supervisor is itself a process. It runs every child in its own nursery inside a
wrapper that turns the child's exit into a message, so a crash never cancels a
sibling, and handles those messages and the control calls one at a time, so what
it does is ordered exactly as in OTP.
"""

from __future__ import annotations

import enum
import functools
import itertools
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Final, cast, final

import attrs
import outcome
import trio

from ._child_spec import PERMANENT, SUPERVISOR, TEMPORARY, TRANSIENT, Backoff, ChildSpec, ChildType, Restart
from ._errors import (
    AlreadyPresent,
    AlreadyStarted,
    ChildNotFound,
    ChildRestarting,
    ChildRunning,
    MaxChildren,
    MaxIntensity,
    NotSupported,
    StartError,
)
from ._events import EventKind, emit
from ._process import (
    Pid,
    Process,
    TaskStatus,
    _Call,
    _StopRequest,
    current,
    is_alive,
    new_process,
    register,
    request_stop,
    run_process,
    start_behaviour,
)
from ._reasons import IGNORE, KILLED, NORMAL, SHUTDOWN, Exit, is_normal


@final
class Strategy(enum.Enum):
    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


@final
class AutoShutdown(enum.Enum):
    NEVER = "never"
    ANY_SIGNIFICANT = "any_significant"
    ALL_SIGNIFICANT = "all_significant"


#: When a killed child still runs, the first `SHUTDOWN_OVERRUN` report comes this many
#: seconds after the kill, the next ones at doubling intervals up to the maximum.
_OVERRUN_FIRST_REPORT: Final = 1.0
_OVERRUN_MAX_INTERVAL: Final = 60.0

ONE_FOR_ONE: Final = Strategy.ONE_FOR_ONE
ONE_FOR_ALL: Final = Strategy.ONE_FOR_ALL
REST_FOR_ONE: Final = Strategy.REST_FOR_ONE
NEVER: Final = AutoShutdown.NEVER
ANY_SIGNIFICANT: Final = AutoShutdown.ANY_SIGNIFICANT
ALL_SIGNIFICANT: Final = AutoShutdown.ALL_SIGNIFICANT


@final
class ChildState(enum.Enum):
    RUNNING = "running"
    #: From the crash until the replacement has started: while siblings stopped with it
    #: (one_for_all, rest_for_one) go down, during a backoff delay, while the
    #: replacement initialises, and while a failed restart waits to be retried.
    RESTARTING = "restarting"
    #: Not running: terminated, exited without restart, or its start was ignored.
    STOPPED = "stopped"


def _check_intensity(_: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"intensity must be an int >= 0, got {value!r}")


def _check_period(_: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"period must be a number of seconds > 0, got {value!r}")


def _to_specs(specs: Iterable[ChildSpec]) -> tuple[ChildSpec, ...]:
    return tuple(specs)


def _check_children(instance: Any, attribute: Any, value: tuple[Any, ...]) -> None:
    seen: set[Hashable] = set()
    for spec in value:
        if not isinstance(spec, ChildSpec):
            raise TypeError(f"a supervisor's children are sv.ChildSpec, got {spec!r}")
        if spec.id in seen:
            raise ValueError(f"duplicate child id {spec.id!r}")
        seen.add(spec.id)


class _Spec:
    """What Supervisor and DynamicSupervisor share as specifications."""

    name: Any

    def child_spec(self, id: Hashable, **kwargs: Any) -> ChildSpec:  # noqa: A002 - OTP's word
        """This supervisor as a child of another (type SUPERVISOR, shutdown None by default)."""
        kwargs.setdefault("type", SUPERVISOR)
        return ChildSpec(id, functools.partial(start_supervisor, cast("SupervisorSpec", self)), **kwargs)


@final
@attrs.frozen
class Supervisor(_Spec):
    """A supervisor of a fixed list of children, started in order.

    Args:
      children: the child specs, in start order; ids must be unique.
      strategy: `ONE_FOR_ONE`, `ONE_FOR_ALL` or `REST_FOR_ONE`.
      intensity, period: more than *intensity* restarts within *period* seconds make
        the supervisor stop all children and exit with `MaxIntensity`.
      auto_shutdown: `NEVER`, `ANY_SIGNIFICANT` or `ALL_SIGNIFICANT` (OTP 24).
      name: registered for the supervisor's pid.
    """

    children: tuple[ChildSpec, ...] = attrs.field(default=(), converter=_to_specs, validator=_check_children)
    strategy: Strategy = attrs.field(default=ONE_FOR_ONE, validator=attrs.validators.instance_of(Strategy))
    intensity: int = attrs.field(default=1, validator=_check_intensity)
    period: float = attrs.field(default=5.0, validator=_check_period)
    auto_shutdown: AutoShutdown = attrs.field(default=NEVER, validator=attrs.validators.instance_of(AutoShutdown))
    name: str | None = None

    def __attrs_post_init__(self) -> None:
        for spec in self.children:
            _check_significant(spec, self.auto_shutdown)


def _check_significant(spec: ChildSpec, auto_shutdown: AutoShutdown) -> None:
    if spec.significant and auto_shutdown is NEVER:
        raise ValueError(f"child {spec.id!r} is significant but the supervisor's auto_shutdown is NEVER")


@final
@attrs.frozen
class DynamicSupervisor(_Spec):
    """A supervisor whose children are started on demand, all alike or each its own spec.

    With a *template*, ``start_child(sup, extra_args)`` starts the template with its
    args followed by *extra_args*; without one, ``start_child`` takes a full
    `ChildSpec`. Children are stopped all at once, in no order. Significant children
    and auto_shutdown do not apply here, as in OTP.
    """

    template: ChildSpec | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(ChildSpec))
    )
    max_children: int | None = None
    intensity: int = attrs.field(default=1, validator=_check_intensity)
    period: float = attrs.field(default=5.0, validator=_check_period)
    name: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.max_children is not None and (not isinstance(self.max_children, int) or self.max_children < 0):
            raise ValueError(f"max_children must be None or an int >= 0, got {self.max_children!r}")
        if self.template is not None and self.template.significant:
            raise ValueError("a dynamic supervisor has no auto_shutdown, so its children cannot be significant")


SupervisorSpec = Supervisor | DynamicSupervisor


@attrs.define(eq=False)
class _Child:
    key: Hashable
    spec: ChildSpec
    proc: Process | None = None
    #: The pid the child is found by (`by_pid`): its process's, or while it is being
    #: restarted, the pid of the process that exited, as OTP keys a restarting child.
    pid: Pid | None = None
    state: ChildState = ChildState.STOPPED
    restarts: int = 0
    backoff_step: int = 0
    started_at: float = 0.0


@final
@attrs.frozen
class ChildInfo:
    """One row of `which_children`."""

    id: Hashable
    pid: Pid | None
    type: ChildType
    restart: Restart
    state: ChildState


@final
@attrs.frozen
class ChildCounts:
    """The result of `count_children`."""

    specs: int
    active: int
    supervisors: int
    workers: int


@attrs.frozen
class _Started:
    proc: Process
    value: Any


@attrs.frozen
class _StartFailed:
    reason: Any


@attrs.frozen(eq=False)
class _ChildExit:
    proc: Process
    reason: Any


@attrs.frozen
class _Retry:
    key: Hashable
    #: A retry after a failed restart counts toward intensity; one after a backoff
    #: delay was already counted when the child exited.
    counts: bool


@attrs.frozen
class Control:
    """A control request, sent as a call by `start_child` and its siblings."""

    op: str
    arg: Any = None


async def _child_task(
    spec: ChildSpec, proc: Process, on_exit: Callable[[Process, Any], None], *, task_status: Any
) -> None:
    """Run one child as *proc*; report `_Started` or `_StartFailed`, then its exit."""
    status = TaskStatus(lambda value: task_status.started(_Started(proc, value)))
    reason = await run_process(proc, spec.start, spec.args, status, spec.name)
    if not status.reported:
        if reason is NORMAL:
            reason = RuntimeError(f"start function {spec.start!r} returned without calling task_status.started()")
        task_status.started(_StartFailed(reason))
    elif status.value is not IGNORE:
        on_exit(proc, reason)


class _Engine:
    """The running state of one supervisor; kept on its process for inspection."""

    def __init__(self, proc: Process, spec: SupervisorSpec, nursery: trio.Nursery) -> None:
        self.proc = proc
        self.spec = spec
        self.dynamic = isinstance(spec, DynamicSupervisor)
        self.strategy = ONE_FOR_ONE if isinstance(spec, DynamicSupervisor) else spec.strategy
        self.nursery = nursery
        self.children: dict[Hashable, _Child] = {}
        self.by_pid: dict[Pid, _Child] = {}
        #: At most intensity + 1 times: a list (an empty deque takes 624 bytes, and every
        #: conversation has a supervisor).
        self.restart_times: list[float] = []
        self.total_restarts = 0
        self._keys = itertools.count()

    # -- starting ---------------------------------------------------------------

    async def init(self) -> None:
        if isinstance(self.spec, DynamicSupervisor):
            return
        for spec in self.spec.children:
            child = _Child(spec.id, spec)
            self.children[spec.id] = child
            failure = await self._start(child)
            if failure is not None:
                await self.terminate_all()
                if self.proc.stop_reason is not None:
                    raise Exit(self.proc.stop_reason)  # stopped while starting: not a failed start
                raise StartError(spec.id, failure.reason) from _as_cause(failure.reason)
            if child.proc is None and spec.restart is TEMPORARY:
                del self.children[spec.id]

    async def _start(self, child: _Child) -> _StartFailed | None:
        """Start *child*; on success record its process (None if it reported IGNORE).

        While a start runs, the supervisor does not read its mailbox, so a stop asked of
        it meanwhile comes through `on_stop_request` and stops the starting child by its
        shutdown spec: a start that never reports cannot hang the supervisor's stop.
        """
        if self.proc.stop_reason is not None:
            return _StartFailed(self.proc.stop_reason)  # never start what would be stopped at once
        proc = new_process()
        self.proc.on_stop_request = lambda _: self.nursery.start_soon(self._stop_starting, child, proc)
        try:
            result = await self.nursery.start(_child_task, child.spec, proc, self._on_exit)
        finally:
            self.proc.on_stop_request = None
        if isinstance(result, _StartFailed):
            self._emit(EventKind.START_FAILED, child, None, result.reason)
            return result
        self._forget_pid(child)  # the pid of the process this one replaces
        if result.value is IGNORE:
            child.proc, child.state = None, ChildState.STOPPED
            return None
        child.proc, child.pid, child.state, child.started_at = proc, proc.pid, ChildState.RUNNING, trio.current_time()
        self.by_pid[proc.pid] = child
        self._emit(EventKind.CHILD_STARTED, child, proc.pid)
        return None

    async def _stop_starting(self, child: _Child, proc: Process) -> None:
        """Stop *proc*, still in its start, as `_terminate` would; `_start` then returns."""
        request_stop(proc, KILLED if child.spec.shutdown == 0 else SHUTDOWN)
        await self._await_exit(child, proc)

    def _on_exit(self, proc: Process, reason: Any) -> None:
        self.proc.mailbox.put_nowait(_ChildExit(proc, reason), force=True)

    # -- the loop ---------------------------------------------------------------

    async def serve(self) -> None:
        get = self.proc.mailbox.get
        while True:
            message = await get()
            kind = type(message)
            if kind is _ChildExit:
                await self._child_exited(message.proc, message.reason)
            elif kind is _Call:
                await self._control(message)
            elif kind is _Retry:
                await self._retry(message)
            elif kind is _StopRequest:
                await self.terminate_all()
                raise Exit(message.reason)

    async def _child_exited(self, proc: Process, reason: Any) -> None:
        child = self.by_pid.get(proc.pid)
        if child is None or child.proc is not proc:
            return  # a child this supervisor terminated itself
        child.proc = None
        restart = child.spec.restart
        if restart is PERMANENT or (restart is TRANSIENT and not is_normal(reason)):
            # Restarting from now until the replacement runs, and found by the old pid
            # meanwhile (OTP's {restarting, Pid}), so that it can be terminated.
            child.state = ChildState.RESTARTING
            self._emit(EventKind.CHILD_EXITED, child, proc.pid, reason)
            await self._restart(child, reason)
            return
        self._forget_pid(child)
        child.state = ChildState.STOPPED
        self._emit(EventKind.CHILD_EXITED, child, proc.pid, reason)
        if restart is TEMPORARY:
            self._remove(child)
        if child.spec.significant and self._auto_shutdown_due():
            self._emit(EventKind.AUTO_SHUTDOWN, child, proc.pid, reason)
            await self.terminate_all()
            raise Exit(SHUTDOWN)

    def _auto_shutdown_due(self) -> bool:
        mode = getattr(self.spec, "auto_shutdown", NEVER)
        if mode is ANY_SIGNIFICANT:
            return True
        if mode is ALL_SIGNIFICANT:
            return not any(c.spec.significant and c.state is not ChildState.STOPPED for c in self.children.values())
        return False

    # -- restarting -------------------------------------------------------------

    def _add_restart(self) -> bool:
        """Count one restart; False once more than `intensity` fall within `period`."""
        now = trio.current_time()
        times = self.restart_times
        times.append(now)
        threshold = now - self.spec.period
        while times and times[0] < threshold:
            del times[0]
        return len(times) <= self.spec.intensity

    async def _give_up(self, child: _Child, reason: Any) -> None:
        self._emit(EventKind.INTENSITY_EXCEEDED, child, None, reason)
        await self.terminate_all()
        raise MaxIntensity(self.spec.name or self.proc.pid, self.spec.intensity, self.spec.period, reason)

    async def _restart(self, child: _Child, reason: Any) -> None:
        if not self._add_restart():
            await self._give_up(child, reason)
        child.restarts += 1
        self.total_restarts += 1
        backoff = child.spec.backoff
        if backoff is not None:
            if trio.current_time() - child.started_at >= backoff.reset_time:
                child.backoff_step = 0
            self._retry_later(child, backoff, counts=False)
            return
        await self._restart_group(child)

    def _retry_later(self, child: _Child, backoff: Backoff, *, counts: bool) -> None:
        """Restart *child* after its next backoff delay, each one longer than the last."""
        delay = backoff.delay(child.backoff_step)
        child.backoff_step += 1
        self.nursery.start_soon(self._post_later, delay, _Retry(child.key, counts=counts))

    async def _post_later(self, delay: float, message: Any) -> None:
        await trio.sleep(delay)
        self.proc.mailbox.put_nowait(message, force=True)

    async def _retry(self, retry: _Retry) -> None:
        child = self.children.get(retry.key)
        if child is None or child.state is not ChildState.RESTARTING:
            return  # terminated or deleted meanwhile
        if retry.counts and not self._add_restart():
            await self._give_up(child, None)
        await self._restart_group(child)

    async def _restart_group(self, child: _Child) -> None:
        """Restart *child* and, by strategy, its siblings (OTP's restart/3)."""
        order = list(self.children.values())
        if self.strategy is ONE_FOR_ONE:
            group = [child]
        else:
            index = order.index(child)
            others = [c for c in order if c is not child] if self.strategy is ONE_FOR_ALL else order[index + 1 :]
            for sibling in reversed(others):
                if sibling.spec.restart is TEMPORARY:
                    await self._terminate(sibling)
                    self._remove(sibling)  # a temporary bystander is not restarted
                else:
                    await self._terminate(sibling, ChildState.RESTARTING)
            group = [c for c in order if c.key in self.children and (c is child or c in others)]
        for position, member in enumerate(group):
            if member.state is ChildState.RUNNING:
                continue
            failure = await self._start(member)
            if failure is not None:
                for waiting in group[position:]:
                    waiting.state = ChildState.RESTARTING
                if self.proc.stop_reason is not None:
                    return  # the stop request, queued, ends the supervisor next
                backoff = member.spec.backoff
                if backoff is None:
                    # OTP retries at once; every attempt counts toward intensity.
                    self.proc.mailbox.put_nowait(_Retry(member.key, counts=True), force=True)
                else:
                    # Counted too, but a start that keeps failing is not retried hot.
                    self._retry_later(member, backoff, counts=True)
                return
            if member.proc is not None:
                self._emit(EventKind.CHILD_RESTARTED, member, member.proc.pid)
            elif self.dynamic:
                self._remove(member)  # its restart reported IGNORE (simple_one_for_one_restart_ignore)

    # -- stopping ---------------------------------------------------------------

    async def _terminate(self, child: _Child, state: ChildState = ChildState.STOPPED) -> None:
        """Stop *child* by its shutdown spec and wait until it has exited.

        *state* is the child's meanwhile and after: `RESTARTING` when a sibling's
        restart takes it down, to be started again.
        """
        proc = child.proc
        child.state = state
        self._forget_pid(child)
        if proc is None:
            return
        child.proc = None
        request_stop(proc, KILLED if child.spec.shutdown == 0 else SHUTDOWN)
        await self._await_exit(child, proc)
        self._emit(EventKind.CHILD_EXITED, child, proc.pid, proc.exit_reason)

    async def _await_exit(self, child: _Child, proc: Process) -> None:
        """Wait for *proc*, asked to stop, to exit; kill it when its shutdown time runs out.

        A killed task exits at its next checkpoint, unless it shields its clean-up from
        cancellation: nothing in Trio can end it then, so the wait goes on and
        `SHUTDOWN_OVERRUN` events report it, at growing intervals, while it lasts.
        """
        shutdown = child.spec.shutdown
        if shutdown is None:
            await proc.done.wait()
            return
        if shutdown > 0:
            with trio.move_on_after(shutdown):
                await proc.done.wait()
                return
            request_stop(proc, KILLED)
        killed_at = trio.current_time()
        interval = _OVERRUN_FIRST_REPORT
        while True:
            with trio.move_on_after(interval):
                await proc.done.wait()
                return
            overrun = trio.current_time() - killed_at
            emit(EventKind.SHUTDOWN_OVERRUN, self.proc.pid, self.spec.name, child.spec.id, proc.pid, overrun=overrun)
            interval = min(2 * interval, _OVERRUN_MAX_INTERVAL)

    async def terminate_all(self) -> None:
        """Stop every child: in reverse start order, or all at once when dynamic."""
        children = list(self.children.values())
        if self.dynamic:
            async with trio.open_nursery() as nursery:
                for child in children:
                    nursery.start_soon(self._terminate, child)
        else:
            for child in reversed(children):
                await self._terminate(child)

    def _remove(self, child: _Child) -> None:
        self.children.pop(child.key, None)
        self._forget_pid(child)

    def _forget_pid(self, child: _Child) -> None:
        if child.pid is not None:
            self.by_pid.pop(child.pid, None)
            child.pid = None

    # -- control calls ----------------------------------------------------------

    async def _control(self, message: _Call) -> None:
        request = message.request
        caller = message.caller
        if not isinstance(request, Control):
            caller._resolve(outcome.Error(TypeError(f"a supervisor does not answer {request!r}")))
            return
        handler = getattr(self, f"_op_{request.op}")
        try:
            result = await handler(request.arg)
        except (MaxIntensity, Exit):
            raise
        except Exception as exc:  # noqa: BLE001 - the refusal goes back to the caller
            caller._resolve(outcome.Error(exc))
        else:
            caller._resolve(outcome.Value(result))

    def _find(self, id_or_pid: Any) -> _Child:
        child = self.by_pid.get(id_or_pid) if isinstance(id_or_pid, Pid) else self.children.get(id_or_pid)
        if child is None:
            raise ChildNotFound(f"no child {id_or_pid!r}")
        return child

    def _find_stopped(self, child_id: Any) -> _Child:
        """The child *child_id*, refused while it runs or is being restarted."""
        child = self._find(child_id)
        if child.state is ChildState.RUNNING:
            raise ChildRunning(f"child {child_id!r} is running")
        if child.state is ChildState.RESTARTING:
            raise ChildRestarting(f"child {child_id!r} is being restarted")
        return child

    async def _op_start_child(self, arg: Any) -> Pid | None:
        if isinstance(self.spec, DynamicSupervisor):
            spec = self._dynamic_spec(arg)
            if self.spec.max_children is not None and len(self.children) >= self.spec.max_children:
                raise MaxChildren(f"already {self.spec.max_children} children")
            child = _Child(next(self._keys), spec)
        else:
            if not isinstance(arg, ChildSpec):
                raise TypeError(f"start_child takes a ChildSpec here, got {arg!r}")
            existing = self.children.get(arg.id)
            if existing is not None:
                if existing.proc is not None:
                    raise AlreadyStarted(arg.id, existing.proc.pid)
                raise AlreadyPresent(f"child {arg.id!r} is already present")
            _check_significant(arg, self.spec.auto_shutdown)
            child = _Child(arg.id, arg)
        self.children[child.key] = child
        failure = await self._start(child)
        if failure is not None:
            self._remove(child)
            raise StartError(child.spec.id, failure.reason) from _as_cause(failure.reason)
        if child.proc is None:
            if child.spec.restart is TEMPORARY or self.dynamic:
                self._remove(child)
            return None
        return child.proc.pid

    def _dynamic_spec(self, arg: Any) -> ChildSpec:
        template = self.spec.template  # type: ignore[union-attr]
        if isinstance(arg, ChildSpec):
            if arg.significant:
                raise ValueError("a dynamic supervisor's children cannot be significant")
            return arg
        if template is None:
            raise TypeError(f"this dynamic supervisor has no template, so start_child needs a ChildSpec, got {arg!r}")
        extra = tuple(arg) if isinstance(arg, (tuple, list)) else (arg,)
        return attrs.evolve(template, args=template.args + extra)

    async def _op_terminate_child(self, arg: Any) -> None:
        if self.dynamic:
            if not isinstance(arg, Pid):
                raise TypeError(f"a dynamic supervisor terminates children by pid, got {arg!r}")
            if arg not in self.by_pid and not is_alive(arg):
                return  # gone already: nothing to terminate (OTP's child_adm_simple)
        child = self._find(arg)
        await self._terminate(child)
        if child.spec.restart is TEMPORARY or self.dynamic:
            self._remove(child)

    async def _op_restart_child(self, arg: Any) -> Pid | None:
        if self.dynamic:
            raise NotSupported("restart_child does not apply to a dynamic supervisor")
        child = self._find_stopped(arg)
        failure = await self._start(child)
        if failure is not None:
            raise StartError(child.spec.id, failure.reason) from _as_cause(failure.reason)
        return child.proc.pid if child.proc is not None else None

    async def _op_delete_child(self, arg: Any) -> None:
        if self.dynamic:
            raise NotSupported("delete_child does not apply to a dynamic supervisor")
        self._remove(self._find_stopped(arg))

    async def _op_get_childspec(self, arg: Any) -> ChildSpec:
        return self._find(arg).spec

    # -- reading ----------------------------------------------------------------

    def which_children(self) -> list[ChildInfo]:
        return [
            ChildInfo(c.spec.id, c.proc.pid if c.proc else None, c.spec.type, c.spec.restart, c.state)
            for c in self.children.values()
        ]

    def count_children(self) -> ChildCounts:
        children = self.children.values()
        supervisors = sum(1 for c in children if c.spec.type is SUPERVISOR)
        return ChildCounts(
            specs=len(self.children),
            active=sum(1 for c in children if c.proc is not None),
            supervisors=supervisors,
            workers=len(self.children) - supervisors,
        )

    def _emit(self, kind: EventKind, child: _Child, pid: Pid | None, reason: Any = None) -> None:
        emit(kind, self.proc.pid, self.spec.name, child.spec.id, pid, reason=reason)


def _as_cause(reason: Any) -> BaseException | None:
    return reason if isinstance(reason, BaseException) else None


async def _supervise(spec: SupervisorSpec, *, task_status: Any) -> None:
    proc = current()
    assert proc is not None
    proc.handles_stop = True
    proc.mailbox.configure(capacity=float("inf"))  # child exits and control calls are never refused
    if spec.name is not None and proc.name is None:
        register(spec.name, proc.pid)
    # The exit is raised after the nursery closes: raised inside it, Trio would wrap
    # it in an ExceptionGroup and the parent would see a different reason.
    failure: BaseException | None = None
    async with trio.open_nursery() as nursery:
        engine = _Engine(proc, spec, nursery)
        proc.behaviour = engine
        try:
            await engine.init()
            task_status.started(proc.pid)
            await engine.serve()
        except (Exit, Exception) as exc:  # noqa: BLE001 - every exit of the engine is the supervisor's reason
            failure = exc
        nursery.cancel_scope.cancel()  # pending backoff timers
    if failure is not None:
        raise failure


async def start_supervisor(spec: SupervisorSpec, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run the supervisor *spec*: ``pid = await nursery.start(sv.start_supervisor, spec)``.

    Returns (through *task_status*) once every child has started. If a child fails to
    start, the ones already started are stopped in reverse and `StartError` is raised.
    A supervisor that later gives up (`MaxIntensity`) raises into the nursery.
    """
    if not isinstance(spec, (Supervisor, DynamicSupervisor)):
        raise TypeError(f"start_supervisor takes an sv.Supervisor or sv.DynamicSupervisor, got {spec!r}")
    await start_behaviour(_supervise, (spec,), task_status, "supervisor")
