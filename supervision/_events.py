"""Supervisor events, fanned out to subscribers (how the obs app logs every crash)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable
from typing import Any, final

import attrs
import trio

from ._errors import MailboxFull
from ._process import Pid, format_reason, node, report_ignored


@final
class EventKind(enum.Enum):
    CHILD_STARTED = "child_started"
    CHILD_EXITED = "child_exited"
    CHILD_RESTARTED = "child_restarted"
    START_FAILED = "start_failed"
    INTENSITY_EXCEEDED = "intensity_exceeded"
    AUTO_SHUTDOWN = "auto_shutdown"
    #: A child still runs after its shutdown time ran out and it was killed (it
    #: shields its clean-up from cancellation), and the supervisor still waits for it.
    #: Reported again, at growing intervals, for as long as it keeps running; the
    #: event's `overrun` is the time since the kill.
    SHUTDOWN_OVERRUN = "shutdown_overrun"


@final
@attrs.frozen
class SupervisorEvent:
    """Something a supervisor did or saw."""

    kind: EventKind
    supervisor: Pid
    supervisor_name: Any
    child_id: Hashable
    pid: Pid | None
    reason: Any = None
    time: float = attrs.field(factory=trio.current_time)
    #: For `SHUTDOWN_OVERRUN`: seconds the child has run past its shutdown time.
    overrun: float | None = None

    @property
    def traceback(self) -> str | None:
        """The crash's formatted traceback, or None when `reason` is not an exception.

        Formatted when read, not when the event is made: a restart stays cheap for
        subscribers that never look.
        """
        return format_reason(self.reason)


@final
@attrs.frozen
class Subscription:
    """The handle `subscribe` returns; pass it to `unsubscribe`."""

    key: object


def subscribe(handler: Callable[[SupervisorEvent], Any] | Pid) -> Subscription:
    """Deliver every supervisor event of this run to *handler*.

    A callable is called synchronously and must not block; an exception it raises is
    printed to stderr and never reaches the supervisor. A pid gets each event as
    a message, dropped if its mailbox is full (events never create backpressure),
    and is unsubscribed when it exits.
    """
    if isinstance(handler, Pid):
        pid = handler

        def deliver(event: SupervisorEvent) -> None:
            proc = node().procs.get(pid)
            if proc is not None:
                try:
                    proc.mailbox.put_nowait(event)
                except MailboxFull:
                    proc.mailbox.dropped += 1

        node().subscribers[pid] = deliver
        return Subscription(pid)
    if not callable(handler):
        raise TypeError(f"subscribe takes a callable or a Pid, got {handler!r}")
    key = object()
    node().subscribers[key] = handler
    return Subscription(key)


def unsubscribe(subscription: Subscription) -> None:
    """Stop delivering events to the subscriber; unsubscribing twice is harmless."""
    node().subscribers.pop(subscription.key, None)


def emit(
    kind: EventKind,
    supervisor: Pid,
    supervisor_name: Any,
    child_id: Hashable,
    pid: Pid | None,
    *,
    reason: Any = None,
    overrun: float | None = None,
) -> None:
    subscribers = node().subscribers
    if not subscribers:
        return
    event = SupervisorEvent(kind, supervisor, supervisor_name, child_id, pid, reason, overrun=overrun)
    for handler in list(subscribers.values()):
        try:
            handler(event)
        except Exception as exc:  # noqa: BLE001 - a subscriber must never break a supervisor
            report_ignored(exc, f"supervision event subscriber {handler!r}")
