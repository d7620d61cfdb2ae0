"""The one retry helper and the one Retry-After reader, from a caller's side."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Iterator

import pytest
import stamina
import trio
import trio.testing

from beamclaw_base import MAX_RETRY_AFTER, RetryPolicy, parse_retry_after, retry


class Flaky(Exception):
    """A failure worth another try."""


class Broken(Exception):
    """A failure no retry mends."""


@pytest.fixture
def no_waits() -> Iterator[None]:
    """stamina's testing mode: every wait is 0 s, the policy's number of attempts kept."""
    with stamina.set_testing(True, attempts=1000, cap=True):
        yield


def failing(
    times: int, then: str = "done", error: Exception | None = None
) -> tuple[list[int], Callable[[], Awaitable[str]]]:
    calls: list[int] = []

    async def call() -> str:
        calls.append(len(calls) + 1)
        if len(calls) <= times:
            raise error or Flaky(f"failure {len(calls)}")
        return then

    return calls, call


async def test_a_call_that_fails_twice_is_tried_a_third_time_and_each_retry_is_announced(no_waits: None) -> None:
    calls, call = failing(2)
    told: list[tuple[int, float, str]] = []

    async def on_retry(attempt: int, wait: float, exc: Exception) -> None:
        told.append((attempt, wait, str(exc)))

    policy = RetryPolicy(attempts=3, wait_initial=0.5, wait_max=60.0)
    assert await retry(call, policy, lambda exc: isinstance(exc, Flaky), on_retry) == "done"
    assert calls == [1, 2, 3]
    assert told == [(1, 0.5, "failure 1"), (2, 1.0, "failure 2")]


async def test_the_last_failure_propagates_once_the_attempts_are_spent(no_waits: None) -> None:
    calls, call = failing(10)
    told: list[int] = []

    async def on_retry(attempt: int, wait: float, exc: Exception) -> None:
        told.append(attempt)

    with pytest.raises(Flaky, match="failure 4"):
        await retry(call, RetryPolicy(4, 0.1, 1.0), lambda exc: True, on_retry)
    assert calls == [1, 2, 3, 4] and told == [1, 2, 3]


async def test_a_failure_the_caller_calls_final_is_not_retried(no_waits: None) -> None:
    calls, call = failing(5, error=Broken("bad request"))
    with pytest.raises(Broken, match="bad request"):
        await retry(call, RetryPolicy(5, 0.1, 1.0), lambda exc: isinstance(exc, Flaky))
    assert calls == [1]


async def test_a_failing_announcement_ends_the_retries_with_its_own_error(no_waits: None) -> None:
    calls, call = failing(5)

    async def on_retry(attempt: int, wait: float, exc: Exception) -> None:
        raise Broken("the user is gone")

    with pytest.raises(Broken, match="the user is gone"):
        await retry(call, RetryPolicy(5, 0.1, 1.0), lambda exc: True, on_retry)
    assert calls == [1]


async def test_without_a_bound_it_tries_until_the_call_succeeds(no_waits: None) -> None:
    calls, call = failing(40)
    assert await retry(call, RetryPolicy(None, 1.0, 30.0), lambda exc: True) == "done"
    assert len(calls) == 41


async def test_the_wait_a_server_asks_for_is_waited_but_never_past_the_policy_maximum(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Without testing mode, on Trio's virtual clock: what stamina really sleeps."""
    asked = iter([2.5, 1e9])
    waits: list[float] = []

    async def on_retry(attempt: int, wait: float, exc: Exception) -> None:
        waits.append(wait)

    _, call = failing(2)
    started = trio.current_time()
    await retry(call, RetryPolicy(3, 0.1, 30.0), lambda exc: next(asked), on_retry)
    assert waits == [2.5, 30.0]
    assert trio.current_time() - started == pytest.approx(32.5)  # the virtual clock: no real time passes


async def test_a_cancelled_call_is_not_retried(no_waits: None) -> None:
    calls: list[int] = []
    with trio.CancelScope() as scope:

        async def call() -> None:
            calls.append(1)
            scope.cancel()
            await trio.lowlevel.checkpoint()

        await retry(call, RetryPolicy(5, 0.1, 1.0), lambda exc: True)
    assert scope.cancelled_caught and calls == [1]


def test_the_backoff_doubles_up_to_its_maximum_with_jitter_either_way() -> None:
    policy = RetryPolicy(attempts=None, wait_initial=2.0, wait_max=30.0)
    assert [policy.delay(n) for n in range(1, 7)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert policy.delay(100_000) == 30.0  # no overflow after a week of failures
    jittered = RetryPolicy(attempts=3, wait_initial=2.0, wait_max=30.0, jitter=0.25)
    rng = random.Random(7)
    draws = [jittered.delay(2, rng) for _ in range(500)]
    assert 3.0 <= min(draws) < 3.2 and 4.8 < max(draws) <= 5.0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"attempts": 0, "wait_initial": 1.0, "wait_max": 2.0}, "attempts must be 1 or more"),
        ({"attempts": 3, "wait_initial": -1.0, "wait_max": 2.0}, "wait_initial must be 0 or more"),
        ({"attempts": 3, "wait_initial": 1.0, "wait_max": float("nan")}, "wait_max must be 0 or more"),
        ({"attempts": 3, "wait_initial": 1.0, "wait_max": 2.0, "jitter": 1.5}, "jitter is a fraction"),
    ],
)
def test_a_policy_that_makes_no_sense_is_refused(fields: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryPolicy(**fields)  # type: ignore[arg-type]


def _http_date(offset: float) -> str:
    return email.utils.formatdate(time.time() + offset, usegmt=True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 3 ", 3.0),
        ("0.5", 0.5),
        (7, 7.0),  # Telegram's retry_after, a JSON number
        ("-5", 0.0),
        (_http_date(-3600), 0.0),  # a date gone by: at once
        ("1e400", MAX_RETRY_AFTER),
        ("inf", MAX_RETRY_AFTER),
        (10**400, MAX_RETRY_AFTER),
        ("Fri, 31 Dec 9999 23:59:59 GMT", MAX_RETRY_AFTER),
        ("nan", None),
        ("soon", None),
        ("Mon, 99 Foo 2024 99:99:99 GMT", None),
        ("", None),
        (None, None),
        (True, None),
        ([5], None),
        ({"seconds": 5}, None),
    ],
)
def test_retry_after_is_read_as_seconds_or_a_date_and_kept_within_bounds(value: object, expected: float | None) -> None:
    assert parse_retry_after(value) == expected


def test_retry_after_as_a_date_is_the_seconds_until_it() -> None:
    seconds = parse_retry_after(_http_date(90))
    assert seconds is not None and 80 < seconds <= 90
    assert parse_retry_after(_http_date(90), cap=60) == 60.0
