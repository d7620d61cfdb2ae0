"""When a job is due: ``at`` (once), ``every`` (an interval) and ``cron`` (an expression in a
time zone, read by croniter). Times are POSIX seconds; a schedule only answers "the first
due time after this one", so a backlog of missed times is never replayed one by one.

A schedule is bounded to what a clock can hold: no due time (nor interval) beyond
`HORIZON_SECONDS` from now is accepted, since ``every 100000000000000000000s`` or an
``--at`` in the year 9999 gives a due time no date type can show (time_t overflow),
and a job that will never run is better refused than kept. A job stored before this
bound is still shown: `describe_time` says "never" rather than raising.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import zoneinfo
from typing import Final, Literal

import attrs
from croniter import CroniterBadCronError, CroniterBadDateError, croniter

Kind = Literal["at", "every", "cron"]
_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)(s|m|min|h|d)?")
_UNIT_SECONDS: Final = {"s": 1, None: 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
#: The furthest ahead a due time may be, and the longest interval: 100 years.
HORIZON_SECONDS: Final = 100 * 365.25 * 86400


class BadSchedule(ValueError):
    """A schedule that cannot be; the message says what is wrong and what would do."""


@attrs.frozen
class Schedule:
    """*spec* is an ISO time (``at``), seconds (``every``) or a 5-field expression (``cron``)."""

    kind: Kind
    spec: str
    timezone: str = "UTC"
    #: For ``every``: the time the intervals count from (the job's creation).
    anchor: float = 0.0

    def first_due(self, now: float) -> float:
        """The first due time at or after *now* (for ``at``, its time, even if past)."""
        if self.kind == "at":
            return parse_time(self.spec, self.timezone)
        due = self.next_due(now - 1e-6)
        if due is None:
            raise BadSchedule(f"{self.describe()} never comes again")
        return due

    def next_due(self, after: float) -> float | None:
        """The first due time strictly after *after*; None when there is none (``at`` fired)."""
        match self.kind:
            case "at":
                return None
            case "every":
                interval = float(self.spec)
                steps = math.floor((after - self.anchor) / interval) + 1
                return self.anchor + max(steps, 1) * interval
            case "cron":
                return self._next_cron(after)
        raise AssertionError(self.kind)  # pragma: no cover - Kind has three values

    def _next_cron(self, after: float) -> float | None:
        """As cron does across a change of clocks: a time skipped in spring runs at once
        after the gap, and a job at a fixed hour runs once when autumn repeats that hour
        (the second pass is skipped; a job of every hour runs in both)."""
        zone = zoneinfo.ZoneInfo(self.timezone)
        fixed_hour = self.spec.split()[1] != "*"
        times = croniter(self.spec, dt.datetime.fromtimestamp(after, zone))
        while True:
            try:
                due = float(times.get_next(float))
            except CroniterBadDateError:
                return None  # an expression that never matches again (30 February)
            if not (fixed_hour and dt.datetime.fromtimestamp(due, zone).fold):
                return due

    def describe(self) -> str:
        match self.kind:
            case "at":
                return f"at {self.spec}"
            case "every":
                return f"every {format_duration(float(self.spec))}"
        return f"cron {self.spec} ({self.timezone})"


def parse_duration(text: str) -> float:
    """``30s``, ``5m``, ``2h``, ``1d`` or plain seconds, as seconds (at most `HORIZON_SECONDS`)."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None or float(match.group(1)) <= 0:
        raise BadSchedule(f"{_shown(text)} is not a duration: write it like 30s, 15m, 2h or 1d")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if not seconds <= HORIZON_SECONDS:  # inf too: 400 digits read as a float
        raise BadSchedule(f"{_shown(text)} is too long: the longest interval is {_horizon()}")
    return seconds


def _shown(text: str) -> str:
    """*text* quoted for an error message, cut when long (a 400-digit duration)."""
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "..."


def _horizon() -> str:
    return f"{HORIZON_SECONDS / (365.25 * 86400):.0f} years"


def _within_horizon(due: float, now: float, what: str) -> float:
    """*due* if it is at most `HORIZON_SECONDS` after *now*; else `BadSchedule` naming *what*."""
    if not due <= now + HORIZON_SECONDS:
        raise BadSchedule(f"{what} is too far ahead: a job must be due within {_horizon()}")
    return due


def describe_time(seconds: float | None, zone: dt.tzinfo | None = None) -> str:
    """*seconds* as a date and time in *zone* (None: the local one), or "-" for None.

    A time no date can hold (a job stored before schedules were bounded: 1e20, inf)
    is said to be never, so that listing the jobs works for everyone.
    """
    if seconds is None:
        return "-"
    try:
        when = dt.datetime.fromtimestamp(seconds, zone) if zone else dt.datetime.fromtimestamp(seconds).astimezone()
        return when.strftime("%Y-%m-%d %H:%M %Z")
    except (OverflowError, OSError, ValueError):
        return "never (beyond any date)"


def format_duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:g}s"


def _zone(name: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise BadSchedule(f"{name!r} is not a time zone: use a name such as UTC or Europe/Paris") from None


def parse_time(text: str, timezone: str = "UTC") -> float:
    """An ISO 8601 time; one without an offset is read in *timezone*."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadSchedule(
            f"{text!r} is not an ISO time: write it like 2026-12-01T09:00 or 2026-12-01T09:00+01:00"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_zone(timezone))
    return when.timestamp()


def make_schedule(kind: str, spec: str, timezone: str, now: float, min_interval: float) -> Schedule:
    """A checked schedule (the ``every`` spec becomes seconds); raises `BadSchedule` saying why."""
    _zone(timezone)
    match kind:
        case "at":
            when = parse_time(spec, timezone)
            if when < now - 60:
                raise BadSchedule(f"at {spec} ({timezone}) is in the past")
            _within_horizon(when, now, f"at {spec} ({timezone})")
            return Schedule("at", spec.strip(), timezone)
        case "every":
            seconds = parse_duration(spec)
            if seconds < min_interval:
                raise BadSchedule(f"every {spec}: the shortest interval is {format_duration(min_interval)}")
            return Schedule("every", repr(seconds), timezone, anchor=now)
        case "cron":
            fields = spec.split()
            if len(fields) != 5:
                raise BadSchedule(
                    f"cron {spec!r}: write five fields (minute hour day month weekday), like '0 9 * * 1-5'"
                )
            try:
                croniter(" ".join(fields))
            except (CroniterBadCronError, ValueError) as exc:
                raise BadSchedule(f"cron {spec!r} is not a valid expression: {exc}") from None
            schedule = Schedule("cron", " ".join(fields), timezone)
            due = schedule.next_due(now)
            if due is None:
                raise BadSchedule(f"cron {spec!r} never matches")
            _within_horizon(due, now, f"cron {spec!r}, first due {describe_time(due, dt.UTC)},")
            return schedule
    raise BadSchedule(f"{kind!r} is not a kind of schedule: use at, every or cron")
