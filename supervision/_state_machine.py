"""The state machine behaviour (OTP's gen_statem, handle_event mode)."""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any, ClassVar, Final, final

import attrs
import trio

from ._gen_server import NO_REPLY, Stop, maybe_await, reply
from ._mailbox import DEFAULT_CAPACITY, Overflow
from ._process import Caller, _Call, _Cast, _StopRequest, adopt_behaviour, start_behaviour
from ._reasons import IGNORE, Exit


@final
class EventType(enum.Enum):
    CALL = "call"
    CAST = "cast"
    INFO = "info"
    ENTER = "enter"
    STATE_TIMEOUT = "state_timeout"
    EVENT_TIMEOUT = "timeout"
    INTERNAL = "internal"


CALL: Final = EventType.CALL
CAST: Final = EventType.CAST
INFO: Final = EventType.INFO
ENTER: Final = EventType.ENTER
STATE_TIMEOUT: Final = EventType.STATE_TIMEOUT
EVENT_TIMEOUT: Final = EventType.EVENT_TIMEOUT
INTERNAL: Final = EventType.INTERNAL


@final
@attrs.frozen
class Event:
    """One event: its type, its content, and for a call the caller to `reply` to.

    For ENTER events the content is the state that was left.
    """

    type: EventType
    content: Any = None
    caller: Caller | None = None


@final
@attrs.frozen
class Postpone:
    """Action: keep this event and retry it after the next state change."""


@final
@attrs.frozen
class StateTimeout:
    """Action: deliver a STATE_TIMEOUT event after *seconds* unless the state changes first.

    A new state timeout replaces the old one; ``seconds=None`` cancels it.
    """

    seconds: float | None
    content: Any = None


@final
@attrs.frozen
class EventTimeout:
    """Action: deliver an EVENT_TIMEOUT event after *seconds* unless any event comes first."""

    seconds: float | None
    content: Any = None


@final
@attrs.frozen
class NextEvent:
    """Action: handle *content* as an INTERNAL event before any queued one."""

    content: Any
    type: EventType = EventType.INTERNAL


Action = Postpone | StateTimeout | EventTimeout | NextEvent


def _actions(value: Sequence[Action] | Action) -> tuple[Action, ...]:
    if isinstance(value, (Postpone, StateTimeout, EventTimeout, NextEvent)):
        return (value,)
    return tuple(value)


_KEEP: Final = object()


@final
@attrs.frozen
class NextState:
    """Go to *state* with *data*, then run *actions*."""

    state: Any
    data: Any
    actions: tuple[Action, ...] = attrs.field(default=(), converter=_actions)


@final
@attrs.frozen
class KeepState:
    """Stay in the state; *data* replaces the data unless omitted."""

    data: Any = _KEEP
    actions: tuple[Action, ...] = attrs.field(default=(), converter=_actions)


class StateMachine:
    """OTP's gen_statem: subclass it and override `init` and `handle_event`.

    ``init(*args)`` returns ``(state, data)`` or ``(state, data, actions)`` (or
    `IGNORE`). ``handle_event(event, state, data)`` returns `NextState`, `KeepState`
    or `Stop`. With ``state_enter = True`` every state change first calls
    ``handle_event(Event(ENTER, old_state), new_state, data)``, which may not change
    the state. Postponed events are retried, in order, after the next state change.
    ``terminate(reason, state, data)`` runs when the machine stops or crashes.
    Callbacks may be plain or ``async``.
    """

    state_enter: ClassVar[bool] = False
    mailbox_capacity: ClassVar[float] = DEFAULT_CAPACITY
    mailbox_overflow: ClassVar[Overflow] = Overflow.WAIT

    @classmethod
    async def start(cls, *args: Any, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        await start_behaviour(cls()._serve, args, task_status, "state_machine")

    def init(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define init")

    def handle_event(self, event: Event, state: Any, data: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define handle_event")

    def terminate(self, reason: Any, state: Any, data: Any) -> Any:
        return None

    async def _handle(self, event: Event, state: Any, data: Any) -> Any:
        result = await maybe_await(self.handle_event(event, state, data))
        if not isinstance(result, (NextState, KeepState, Stop)):
            raise TypeError(
                f"{type(self).__name__}.handle_event returned {result!r}; "
                "expected sv.NextState, sv.KeepState or sv.Stop"
            )
        return result

    async def _serve(self, *args: Any, task_status: Any) -> None:
        proc = adopt_behaviour(self, self.mailbox_capacity, self.mailbox_overflow)
        first = await maybe_await(self.init(*args))
        if first is IGNORE:
            task_status.started(IGNORE)
            return
        if not isinstance(first, tuple) or len(first) not in (2, 3):
            raise TypeError(f"{type(self).__name__}.init returned {first!r}; expected (state, data[, actions])")
        state, data = first[0], first[1]
        self._state, self._data = state, data
        task_status.started(proc.pid)

        # Inserted and replayed events, before the mailbox: a list, since it is short and
        # every conversation's loop holds one (an empty deque takes 624 bytes, a list 56).
        queue: list[Event] = []
        postponed: list[Event] = []
        state_timer: tuple[float, Any] | None = None
        event_timer: tuple[float, Any] | None = None

        def apply(actions: tuple[Action, ...], event: Event | None, changed: bool = False) -> None:
            """Run *actions* in gen_statem's order: after a state change the postponed
            events come first, and events inserted by NextEvent before them."""
            nonlocal state_timer, event_timer
            if changed:
                state_timer = None
            inserted = []
            for action in actions:
                if isinstance(action, Postpone):
                    if event is None or event.type is ENTER:
                        raise TypeError("sv.Postpone is not allowed in init or an enter call")
                    postponed.append(event)
                elif isinstance(action, StateTimeout):
                    state_timer = (
                        None if action.seconds is None else (trio.current_time() + action.seconds, action.content)
                    )
                elif isinstance(action, EventTimeout):
                    event_timer = (
                        None if action.seconds is None else (trio.current_time() + action.seconds, action.content)
                    )
                else:
                    inserted.append(Event(action.type, action.content))
            if changed:
                queue[:0] = postponed
                postponed.clear()
            queue[:0] = inserted

        if len(first) == 3:
            apply(_actions(first[2]), None)
        if self.state_enter:
            state, data = await self._enter(state, state, data, apply)

        try:
            while True:
                if queue:
                    event = queue.pop(0)
                else:
                    deadline = min(
                        state_timer[0] if state_timer else math.inf,
                        event_timer[0] if event_timer else math.inf,
                    )
                    message: Any = _TIMEOUT
                    if deadline == math.inf:
                        # No timer: no cancel scope either (a waiting machine would hold
                        # one, and its cancel status's two sets, for as long as it waits).
                        message = await proc.mailbox.get()
                    else:
                        with trio.move_on_at(deadline):
                            message = await proc.mailbox.get()
                    if message is _TIMEOUT:
                        if state_timer is not None and state_timer[0] <= deadline:
                            event, state_timer = Event(STATE_TIMEOUT, state_timer[1]), None
                        else:
                            assert event_timer is not None
                            event = Event(EVENT_TIMEOUT, event_timer[1])
                    elif type(message) is _Call:
                        event = Event(CALL, message.request, message.caller)
                    elif type(message) is _Cast:
                        event = Event(CAST, message.message)
                    elif type(message) is _StopRequest:
                        result = Stop(message.reason, data)
                        break
                    else:
                        event = Event(INFO, message)
                event_timer = None
                result = await self._handle(event, state, data)
                if isinstance(result, Stop):
                    if result.reply is not NO_REPLY and event.caller is not None:
                        reply(event.caller, result.reply)
                    data = result.state
                    break
                if isinstance(result, NextState):
                    new_state, data = result.state, result.data
                else:
                    new_state = state
                    if result.data is not _KEEP:
                        data = result.data
                changed = new_state != state
                apply(result.actions, event, changed)
                if changed:
                    old, state = state, new_state
                    if self.state_enter:
                        state, data = await self._enter(old, state, data, apply)
                self._state, self._data = state, data
        except Exception as exc:
            await maybe_await(self.terminate(exc, state, data))
            raise
        await maybe_await(self.terminate(result.reason, state, data))
        raise Exit(result.reason)

    async def _enter(self, old: Any, state: Any, data: Any, apply: Any) -> tuple[Any, Any]:
        result = await self._handle(Event(ENTER, old), state, data)
        if isinstance(result, Stop):
            raise Exit(result.reason)
        if isinstance(result, NextState):
            if result.state != state:
                raise TypeError(
                    f"{type(self).__name__}: an enter call may not change the state ({state!r} -> {result.state!r})"
                )
            data = result.data
        elif result.data is not _KEEP:
            data = result.data
        apply(result.actions, Event(ENTER, old))
        return state, data


_TIMEOUT: Final = object()
