"""The generic server: a process that owns a state and answers calls and casts."""

from __future__ import annotations

import inspect
import math
from typing import Any, ClassVar, Final, Generic, TypeVar, final, overload

import attrs
import outcome
import trio

from ._errors import CallTimeout, MailboxFull, NoProc
from ._mailbox import DEFAULT_CAPACITY, Overflow
from ._process import (
    Caller,
    Dest,
    Pid,
    Via,
    _Call,
    _Cast,
    _StopRequest,
    adopt_behaviour,
    resolve_live,
    send,
    start_behaviour,
    wait_for_name,
)
from ._reasons import IGNORE, NORMAL, Exit

NO_REPLY: Final = object()

R = TypeVar("R")


class Request(Generic[R]):
    """A call's request that names the type of its reply: ``call`` with a `Request[R]` is
    typed to return ``R``.

    OTP's calls are untyped terms; a server written in Python reads better, and is
    checked, when each request is a small class (attrs, frozen) with the reply type in
    its base: ``class Load(sv.Request[Row | None])``. Nothing at run time depends on it.
    """

    __slots__ = ()


@final
@attrs.frozen
class Reply:
    """Answer the call with *value* and go on with *state*."""

    value: Any
    state: Any


@final
@attrs.frozen
class NoReply:
    """Go on with *state*; a pending call is answered later with `reply`."""

    state: Any


@final
@attrs.frozen
class Stop:
    """Exit with *reason* after `terminate`; answer a pending call with *reply* if given."""

    reason: Any = NORMAL
    state: Any = None
    reply: Any = NO_REPLY


@overload
async def call(dest: Dest, request: Request[R], timeout: float | None = 5.0, *, restart_wait: float = 0.0) -> R: ...
@overload
async def call(dest: Dest, request: Any, timeout: float | None = 5.0, *, restart_wait: float = 0.0) -> Any: ...
async def call(dest: Dest, request: Any, timeout: float | None = 5.0, *, restart_wait: float = 0.0) -> Any:
    """Send *request* to the server *dest* and wait for its reply.

    Raises at once, without waiting for the timeout, when *dest* is not alive
    (`NoProc`) or exits before replying (`ProcessExited`); raises `CallTimeout` when no
    reply comes within *timeout* seconds of Trio's clock (None waits for ever), and
    the exception the server replied with if it replied with one. A call into a full
    mailbox waits for room under the WAIT policy and raises `MailboxFull` otherwise.

    *restart_wait* lets a call ride through a restart: when *dest* is a name (a
    registered str or a via name) that no process holds at the moment of sending, the
    call waits up to *restart_wait* seconds (within *timeout*) for a process to take
    the name, then sends. Only that case waits, because only then was the request
    surely never delivered: `NoProc` still means it was not, and a server that dies
    after the request reached it still raises `ProcessExited` at once, since it may
    have handled it. The default, 0, fails at once as OTP does.
    """
    try:
        proc = resolve_live(dest)
    except NoProc:
        if restart_wait <= 0 or isinstance(dest, Pid):
            raise
        return await _call_after_restart(dest, request, timeout, restart_wait)
    task = trio.lowlevel.current_task()
    if proc.task is task:
        raise RuntimeError(f"process {proc.pid!r} called itself; the call could never be answered")
    caller = Caller(task, proc)
    proc.callers[caller] = None
    mailbox = proc.mailbox
    # One scope and no helper coroutines: this is the hot path of every request.
    with trio.move_on_after(math.inf if timeout is None else timeout):
        try:
            if len(mailbox) < mailbox.capacity:
                mailbox.put_nowait(_Call(request, caller))
            elif mailbox.overflow is Overflow.WAIT:
                await mailbox.put(_Call(request, caller))
            else:
                raise MailboxFull(proc.pid, mailbox.capacity)
        except BaseException:
            caller._resolve(None)
            raise
        return await caller._wait()
    raise CallTimeout(dest, request, timeout)  # type: ignore[arg-type]


async def _call_after_restart(dest: str | Via, request: Any, timeout: float | None, restart_wait: float) -> Any:
    """`call` to a name nobody holds: wait for a process to take it, then call in the time left."""
    started = trio.current_time()
    await wait_for_name(dest, restart_wait if timeout is None else min(restart_wait, timeout))
    # The name's new holder may die before the call goes out: the call waits again,
    # for what is left of *restart_wait*.
    left_to_wait = max(0.0, started + restart_wait - trio.current_time())
    if timeout is None:
        return await call(dest, request, None, restart_wait=left_to_wait)
    try:
        return await call(dest, request, max(0.0, started + timeout - trio.current_time()), restart_wait=left_to_wait)
    except CallTimeout:
        raise CallTimeout(dest, request, timeout) from None


def cast(dest: Dest, message: Any) -> bool:
    """Send *message* to the server's `handle_cast` without waiting; never fails for a dead pid.

    Returns whether the message was queued, as `send` does.
    """
    return send(dest, _Cast(message))


def reply(caller: Caller, value: Any) -> None:
    """Answer a call the server left pending with `NoReply`. A late reply is dropped."""
    caller._resolve(outcome.Value(value))


def reply_error(caller: Caller, error: BaseException) -> None:
    """Make the pending call raise *error* in its caller."""
    caller._resolve(outcome.Error(error))


def _returns_awaitable(method: Any) -> bool:
    return inspect.iscoroutinefunction(method)


class GenServer:
    """OTP's gen_server: subclass it and override the callbacks you need.

    Every callback may be a plain or an ``async`` method. ``init(*args)`` returns
    the first state (or `IGNORE`); a raise fails the start. ``handle_call(request,
    caller, state)`` returns `Reply`, `NoReply` or `Stop`; ``handle_cast(message,
    state)`` and ``handle_info(message, state)`` return `NoReply` or `Stop`.
    ``terminate(reason, state)`` runs when the server stops or crashes (not when it is
    killed). Calls are handled one at a time, in arrival order.

    A class attribute sets the mailbox: ``mailbox_capacity`` and ``mailbox_overflow``.
    """

    mailbox_capacity: ClassVar[float] = DEFAULT_CAPACITY
    mailbox_overflow: ClassVar[Overflow] = Overflow.WAIT

    @classmethod
    async def start(cls, *args: Any, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Start a server: the start function of its `ChildSpec`, or ``nursery.start(Cls.start, ...)``."""
        await start_behaviour(cls()._serve, args, task_status, "gen_server")

    def init(self, *args: Any) -> Any:
        """Return the first state; by default the single argument (or None, or the args tuple)."""
        if not args:
            return None
        return args[0] if len(args) == 1 else args

    def handle_call(self, request: Any, caller: Caller, state: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} got call {request!r} but defines no handle_call")

    def handle_cast(self, message: Any, state: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} got cast {message!r} but defines no handle_cast")

    def handle_info(self, message: Any, state: Any) -> Any:
        """Messages that are neither calls nor casts; by default ignored."""
        return NoReply(state)

    def terminate(self, reason: Any, state: Any) -> Any:
        """Clean up before the server exits; by default nothing."""
        return None

    async def _serve(self, *args: Any, task_status: Any) -> None:
        proc = adopt_behaviour(self, self.mailbox_capacity, self.mailbox_overflow)
        cls = type(self)
        state = await maybe_await(self.init(*args))
        if state is IGNORE:
            task_status.started(IGNORE)
            return
        task_status.started(proc.pid)

        handle_call = self.handle_call
        handle_cast = self.handle_cast
        handle_info = self.handle_info
        call_async = _returns_awaitable(cls.handle_call)
        cast_async = _returns_awaitable(cls.handle_cast)
        info_async = _returns_awaitable(cls.handle_info)
        get = proc.mailbox.get
        try:
            while True:
                message = await get()
                kind = type(message)
                if kind is _Call:
                    result = handle_call(message.request, message.caller, state)
                    if call_async:
                        result = await result
                    if type(result) is Reply:
                        message.caller._resolve(outcome.Value(result.value))
                        state = result.state
                        continue
                    if type(result) is Stop and result.reply is not NO_REPLY:
                        message.caller._resolve(outcome.Value(result.reply))
                    callback = "handle_call"
                elif kind is _Cast:
                    result = handle_cast(message.message, state)
                    if cast_async:
                        result = await result
                    callback = "handle_cast"
                elif kind is _StopRequest:
                    result = Stop(message.reason, state)
                    callback = ""
                else:
                    result = handle_info(message, state)
                    if info_async:
                        result = await result
                    callback = "handle_info"
                if type(result) is NoReply:
                    state = result.state
                elif type(result) is Stop:
                    state = result.state if callback else state
                    break
                else:
                    raise TypeError(
                        f"{cls.__name__}.{callback} returned {result!r}; expected "
                        + ("sv.Reply, " if callback == "handle_call" else "")
                        + "sv.NoReply or sv.Stop"
                    )
        except Exception as exc:
            await maybe_await(self.terminate(exc, state))
            raise
        await maybe_await(self.terminate(result.reason, state))
        raise Exit(result.reason)


async def maybe_await(value: Any) -> Any:
    """The value a callback returned, awaited if the callback was ``async``."""
    if inspect.isawaitable(value):
        return await value
    return value
