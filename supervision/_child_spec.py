"""Child specifications: how a supervisor starts, restarts and stops one child."""

from __future__ import annotations

import enum
import inspect
import random
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Final, final

import attrs

from ._process import Via


@final
class Restart(enum.Enum):
    """When a child is restarted (OTP's restart types)."""

    #: Always restarted.
    PERMANENT = "permanent"
    #: Restarted only after an abnormal exit: an exception, not a return or a shutdown.
    TRANSIENT = "transient"
    #: Never restarted; its spec is dropped once it exits.
    TEMPORARY = "temporary"


@final
class ChildType(enum.Enum):
    WORKER = "worker"
    SUPERVISOR = "supervisor"


PERMANENT: Final = Restart.PERMANENT
TRANSIENT: Final = Restart.TRANSIENT
TEMPORARY: Final = Restart.TEMPORARY
WORKER: Final = ChildType.WORKER
SUPERVISOR: Final = ChildType.SUPERVISOR


@final
@attrs.frozen
class Backoff:
    """Exponential restart delay with jitter, per child (off unless a spec sets it).

    The n-th consecutive restart waits ``min(maximum, initial * factor**n)`` seconds,
    spread by ``±jitter`` of itself so that many children that crashed together do
    not come back together. A child that ran for ``reset_after`` seconds (default:
    ``maximum``) starts again from ``initial``. Restarts still count toward the
    supervisor's intensity when the child exits, not when the delay ends. A restart
    whose start fails is retried after the next, longer delay (OTP retries at once,
    which spins hot while a start keeps failing); each retry counts when it is made.
    """

    initial: float = 0.1
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2
    reset_after: float | None = None

    def __attrs_post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum:
            raise ValueError(f"Backoff needs 0 < initial <= maximum, got {self.initial!r} and {self.maximum!r}")
        if self.factor < 1:
            raise ValueError(f"Backoff factor must be >= 1, got {self.factor!r}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"Backoff jitter must be in [0, 1), got {self.jitter!r}")

    def delay(self, step: int, rng: random.Random | None = None) -> float:
        """The delay before restart number *step* (counting from 0)."""
        base = min(self.maximum, self.initial * self.factor**step)
        spread = (rng or random).uniform(-self.jitter, self.jitter)
        return max(0.0, base * (1 + spread))

    @property
    def reset_time(self) -> float:
        return self.maximum if self.reset_after is None else self.reset_after


def _is_async_callable(fn: Any) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - an object with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


_DEFAULT_SHUTDOWN: Final[Any] = object()


def _check_shutdown(_: Any, attribute: Any, value: Any) -> None:
    if value is _DEFAULT_SHUTDOWN or value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"ChildSpec shutdown must be None or a number of seconds >= 0, got {value!r}")


def _check_id(_: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, Hashable):
        raise TypeError(f"a child id must be hashable, got {value!r}")


def _to_tuple(args: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(args)


@final
@attrs.frozen
class ChildSpec:
    """How to run one child.

    Args:
      id: unique among the supervisor's children.
      start: an ``async`` callable ``start(*args, task_status=...)`` that calls
        ``task_status.started()`` once its initialisation is done (or reports
        `IGNORE`), then runs the child. The supervisor waits for that report, so
        the next child starts only after this one is ready, as in OTP.
      restart: `PERMANENT`, `TRANSIENT` or `TEMPORARY`.
      shutdown: seconds of grace on stop before the child is cancelled; ``0`` is a
        brutal kill; ``None`` waits for ever (the default for supervisors, 5 s for
        workers). The same bound applies to a child stopped while its start has not
        reported yet. Cancelling is all a kill can do in Trio: a child that shields
        its clean-up from cancellation (``trio.CancelScope(shield=True)``) keeps the
        supervisor waiting (in `terminate_child`, a restart, a stop) for as long as
        that clean-up takes, even with ``0``; the supervisor reports each such
        overrun with `EventKind.SHUTDOWN_OVERRUN` events while it waits. Keep
        shielded clean-up short and bounded (``trio.move_on_after`` inside the shield).
      significant: with the supervisor's `auto_shutdown`, this child's exit may stop
        the supervisor. Only transient and temporary children can be significant.
      name: registered for the child's pid on each start, so it can be reached by
        name across restarts.
      backoff: a `Backoff` to delay restarts and retries of failed restarts, or
        None to restart (and retry) at once, as OTP does.
      label: what the child is, in words, for people reading `inspect_tree` (a
        session's user and agent, say, beside an id that is a hash).
    """

    id: Hashable = attrs.field(validator=_check_id)
    start: Callable[..., Any]
    args: tuple[Any, ...] = attrs.field(default=(), converter=_to_tuple)
    restart: Restart = attrs.field(default=PERMANENT, validator=attrs.validators.instance_of(Restart))
    shutdown: float | None = attrs.field(default=_DEFAULT_SHUTDOWN, validator=_check_shutdown)
    type: ChildType = attrs.field(default=WORKER, validator=attrs.validators.instance_of(ChildType))
    significant: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    name: str | Via | None = None
    backoff: Backoff | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(Backoff))
    )
    label: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )

    def __attrs_post_init__(self) -> None:
        if not _is_async_callable(self.start):
            raise TypeError(
                f"child {self.id!r}: start must be an async function taking task_status, got {self.start!r}"
            )
        if self.significant and self.restart is PERMANENT:
            raise ValueError(f"child {self.id!r}: a significant child must be transient or temporary")
        if self.shutdown is _DEFAULT_SHUTDOWN:
            object.__setattr__(self, "shutdown", None if self.type is SUPERVISOR else 5.0)
