"""Errors raised by the supervision runtime.

Each refusal has its own class, as each has its own reason in OTP
(``already_present``, ``running``, ``not_found``, ``restarting``...), so callers can
act on the one they expect and let the others propagate.
"""

from __future__ import annotations

from typing import Any


class NoProc(LookupError):
    """The destination is not a live process: a dead pid or an unknown name."""

    def __init__(self, dest: Any) -> None:
        super().__init__(f"no process: {dest!r}")
        self.dest = dest


class ProcessExited(Exception):
    """The called process exited before it replied; `reason` is its exit reason."""

    def __init__(self, pid: Any, reason: Any) -> None:
        super().__init__(f"process {pid!r} exited with reason {reason!r} before replying")
        self.pid = pid
        self.reason = reason


class CallTimeout(TimeoutError):
    """No reply came within the call's timeout. A reply that comes later is dropped."""

    def __init__(self, dest: Any, request: Any, timeout: float) -> None:
        super().__init__(f"call to {dest!r} got no reply within {timeout} s (request {request!r})")
        self.dest = dest
        self.request = request
        self.timeout = timeout


class ReceiveTimeout(TimeoutError):
    """`receive` found no matching message within its timeout."""


class MailboxFull(Exception):
    """The destination's mailbox is full and its overflow policy refuses the message."""

    def __init__(self, pid: Any, capacity: float) -> None:
        super().__init__(f"mailbox of {pid!r} is full ({capacity} messages)")
        self.pid = pid
        self.capacity = capacity


class AlreadyRegistered(ValueError):
    """The name is held by another live process, or the process already has a name."""


class StartError(Exception):
    """A child's start failed; the exception that made it fail is the `__cause__`."""

    def __init__(self, child_id: Any, reason: Any) -> None:
        super().__init__(f"child {child_id!r} failed to start: {reason!r}")
        self.child_id = child_id
        self.reason = reason


class MaxIntensity(Exception):
    """More than `intensity` restarts happened within `period` seconds.

    The supervisor has stopped all its children and exits with this error, which its
    own supervisor sees as a crash: the failure escalates one level up.
    """

    def __init__(self, supervisor: Any, intensity: int, period: float, last_reason: Any) -> None:
        super().__init__(
            f"supervisor {supervisor!r} exceeded {intensity} restart(s) in {period} s; last child exit: {last_reason!r}"
        )
        self.supervisor = supervisor
        self.intensity = intensity
        self.period = period
        self.last_reason = last_reason


class ChildError(Exception):
    """Base of the refusals of the supervisor control functions."""


class AlreadyPresent(ChildError):
    """`start_child` with the id of a child spec that is kept but not running."""


class AlreadyStarted(ChildError):
    """`start_child` with the id of a running child; `pid` is that child."""

    def __init__(self, child_id: Any, pid: Any) -> None:
        super().__init__(f"child {child_id!r} is already started as {pid!r}")
        self.pid = pid


class ChildRunning(ChildError):
    """`restart_child` or `delete_child` on a running child."""


class ChildRestarting(ChildError):
    """`restart_child` or `delete_child` on a child the supervisor is restarting."""


class ChildNotFound(ChildError, LookupError):
    """No child with that id (or pid, for a dynamic supervisor)."""


class NotSupported(ChildError):
    """The operation does not apply to this kind of supervisor (OTP's ``simple_one_for_one``)."""


class MaxChildren(ChildError):
    """A dynamic supervisor already runs its `max_children`."""
