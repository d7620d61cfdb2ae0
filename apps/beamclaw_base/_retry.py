"""One way to call again what failed: a backoff policy, a retry helper on stamina, and
one reader of the wait a server asks for (Retry-After).

Every retry in BeamClaw (the model provider, a call to a restarting session, the
Telegram Bot API and its poller, the tool registry) goes through `retry`, and the
scheduler's durable retry times use the same `RetryPolicy.delay`.

stamina counts the attempts, stops at the policy's bound, sleeps under Trio or asyncio
(through sniffio), reports each retry to its instrumentation hooks, and waits no time at
all under `stamina.set_testing`. The wait itself is chosen here and handed to stamina
through its backoff hook (a hook may return the seconds to wait): the caller's
*on_retry* must be told the exact wait before it starts (the provider tells the user
"trying again in 2.1 s"), and stamina's own backoff is known only inside its sleep.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import math
import random
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar, final

import attrs
import stamina

T = TypeVar("T")

#: The longest wait a server may ask for that is taken as meant: a day or a date years
#: away is a broken or hostile peer, and is read as this.
MAX_RETRY_AFTER: Final = 3600.0

#: Whether a failure is worth another attempt: False (it propagates at once), True (after
#: the policy's backoff), or the seconds the peer asked for (its Retry-After).
RetryOn = Callable[[Exception], bool | float]
#: Told of each retry before its wait: the attempt that failed (1 for the first), the
#: seconds about to be waited, and the failure.
OnRetry = Callable[[int, float, Exception], Awaitable[None]]


def _positive(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value >= 0:  # NaN too
        raise ValueError(f"{attribute.name} must be 0 or more, not {value!r}")


@final
@attrs.frozen
class RetryPolicy:
    """How often to try and how long to wait between tries.

    The wait before retry *n* is ``wait_initial * 2 ** (n - 1)``, at most ``wait_max``,
    moved at random by up to ``jitter`` of itself either way (0.25: ±25%), so clients
    that failed together do not all come back together. A wait a server asked for is
    taken as given, but never longer than ``wait_max``.
    """

    #: Tries in all, the first included; None: until one succeeds (a poller).
    attempts: int | None
    wait_initial: float = attrs.field(validator=_positive)
    wait_max: float = attrs.field(validator=_positive)
    jitter: float = attrs.field(default=0.0, validator=_positive)

    def __attrs_post_init__(self) -> None:
        if self.attempts is not None and self.attempts < 1:
            raise ValueError(f"attempts must be 1 or more (or None), not {self.attempts!r}")
        if self.jitter > 1:
            raise ValueError(f"jitter is a fraction of the wait, at most 1, not {self.jitter!r}")

    def delay(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds before retry number *retry* (1 for the first)."""
        base = self.wait_max if retry > 64 else min(self.wait_max, self.wait_initial * 2.0 ** (retry - 1))
        return base * (1 + (rng or random).uniform(-self.jitter, self.jitter)) if self.jitter else base


async def retry(
    call: Callable[[], Awaitable[T]], policy: RetryPolicy, on: RetryOn, on_retry: OnRetry | None = None
) -> T:
    """Await ``call()`` until it returns, *on* says a failure is final, or *policy* is spent.

    The last failure propagates as it was raised; so does a cancellation, at once.

    Raises:
        Whatever *call* (or *on_retry*) raised last.
    """
    try:
        return await call()  # most calls succeed at once: no retry machinery for them (stamina's costs ~0.2 ms)
    except Exception as exc:  # noqa: BLE001 - handed to the loop below as its first attempt's failure
        first: Exception | None = exc
    chosen: list[tuple[BaseException, float]] = []

    def backoff(exc: Exception) -> bool | float:
        # Only a failure `retry` itself let through, with the wait it chose and announced.
        if chosen and chosen[0][0] is exc:
            return chosen.pop()[1]
        return False

    async for attempt in stamina.retry_context(
        on=backoff, attempts=policy.attempts, timeout=None, wait_initial=policy.wait_initial,
        wait_max=policy.wait_max, wait_jitter=0.0,
    ):  # fmt: skip
        with attempt:
            try:
                if first is not None:  # the first attempt was made above
                    failure, first = first, None
                    raise failure
                return await call()
            except Exception as exc:
                verdict = on(exc)
                if verdict is False or (policy.attempts is not None and attempt.num >= policy.attempts):
                    raise
                wait = policy.delay(attempt.num) if verdict is True else min(float(verdict), policy.wait_max)
                if on_retry is not None:
                    await on_retry(attempt.num, wait, exc)
                chosen[:] = [(exc, wait)]
                raise
    raise AssertionError("unreachable")  # pragma: no cover - stamina either returns or raises


def parse_retry_after(value: object, *, cap: float = MAX_RETRY_AFTER) -> float | None:
    """The seconds a peer asked us to wait: HTTP's Retry-After (delta-seconds or an
    HTTP-date) or a JSON number (Telegram's ``retry_after``).

    None when there is none or it cannot be read (a JSON list, an object...); never negative, never more than *cap*
    (a peer saying "in 10^300 seconds" or "in the year 9999" is answered with the cap).
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            until = _seconds_until(text)
            if until is None:
                return None
            seconds = until
    else:
        try:
            seconds = float(value)
        except OverflowError:  # an integer past any float: JSON allows it
            return cap
    if math.isnan(seconds):
        return None
    return min(cap, max(0.0, seconds))


def _seconds_until(http_date: str) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": an HTTP-date is always GMT
        when = when.replace(tzinfo=dt.UTC)
    return (when - dt.datetime.now(dt.UTC)).total_seconds()
