"""When a job is due: ``at`` (once), ``every`` (an interval), ``cron`` (an expression in a
time zone, read by croniter) and ``random`` (once a day at a random time within a window
of the day in a time zone, the spec's ``bc_sched_random``). Times are POSIX seconds; a
schedule only answers "the first due time after this one", so a backlog of missed times
is never replayed one by one.

A ``random`` job's slot is drawn when its due time is computed, for the first window
that opens after the time asked: that due time is stored with the job, so a restart
keeps the slot, and the draw after a run is for the next day. A job added while its
window is open first runs the next day. A window whose start or end does not exist, or
comes twice, on a day the clocks change in its zone is refused: it has no single time
on such a day.

A schedule is bounded to what a clock can hold: no due time (nor interval) beyond
`HORIZON_SECONDS` from now is accepted, since ``every 100000000000000000000s`` or an
``--at`` in the year 9999 gives a due time no date type can show (time_t overflow),
and a job that will never run is better refused than kept. A job stored before this
bound is still shown: `describe_time` says "never" rather than raising.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
import zoneinfo
from typing import Final, Literal

import attrs
from croniter import CroniterBadCronError, CroniterBadDateError, croniter

Kind = Literal["at", "every", "cron", "random"]
_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)(s|m|min|h|d)?")
_UNIT_SECONDS: Final = {"s": 1, None: 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
#: The furthest ahead a due time may be, and the longest interval: 100 years.
HORIZON_SECONDS: Final = 100 * 365.25 * 86400
_WINDOW: Final = re.compile(r"(\d{1,2}):(\d{2})-(\d{1,2}):(\d{2})")
#: Days ahead a random job's window is checked against the changes of clocks.
_WINDOW_CHECK_DAYS: Final = 400
#: What draws random jobs' slots.
_DRAW: Final = random.Random()


class BadSchedule(ValueError):
    """A schedule that cannot be; the message says what is wrong and what would do."""


@attrs.frozen
class Schedule:
    """*spec* is an ISO time (``at``), seconds (``every``), a 5-field expression (``cron``)
    or a window of the day, ``HH:MM-HH:MM`` (``random``)."""

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
            case "random":
                return self._next_random(after)
        raise AssertionError(self.kind)  # pragma: no cover - Kind has four values

    def _next_random(self, after: float) -> float:
        """A slot drawn within the first window that opens after *after* (a whole second)."""
        zone = zoneinfo.ZoneInfo(self.timezone)
        start, end = parse_window(self.spec)
        day = dt.datetime.fromtimestamp(after, zone).date()
        while (opens := dt.datetime.combine(day, start, zone).timestamp()) <= after:
            day += dt.timedelta(days=1)
        closes = dt.datetime.combine(day, end, zone).timestamp()
        return opens + _DRAW.randrange(int(closes - opens))

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
            case "random":
                return f"daily at random {self.spec} ({self.timezone})"
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


def parse_window(text: str) -> tuple[dt.time, dt.time]:
    """``HH:MM-HH:MM``, a window within one day, as its start and end."""
    match = _WINDOW.fullmatch(text.strip())
    try:
        if match is None:
            raise ValueError
        hour, minute, end_hour, end_minute = map(int, match.groups())
        start, end = dt.time(hour, minute), dt.time(end_hour, end_minute)
    except ValueError:
        raise BadSchedule(f"{_shown(text)} is not a window of the day: write it like 09:00-17:00") from None
    if start >= end:
        raise BadSchedule(
            f"random {_shown(text)}: the window must start before it ends, within one day (like 09:00-17:00)"
        )
    return start, end


def _check_clock_changes(start: dt.time, end: dt.time, timezone: str, now: float) -> None:
    """`BadSchedule` if, on a day of the coming year, *start* or *end* is skipped or comes
    twice in *timezone* (a change of clocks)."""
    zone = zoneinfo.ZoneInfo(timezone)
    today = dt.datetime.fromtimestamp(now, zone).date()
    for offset in range(_WINDOW_CHECK_DAYS):
        day = today + dt.timedelta(days=offset)
        for edge in (start, end):
            local = dt.datetime.combine(day, edge, zone)
            skipped = local.astimezone(dt.UTC).astimezone(zone).replace(tzinfo=None) != local.replace(tzinfo=None)
            repeated = local.utcoffset() != local.replace(fold=1).utcoffset()
            if skipped or repeated:
                happens = "does not exist" if skipped else "comes twice"
                raise BadSchedule(
                    f"random {start:%H:%M}-{end:%H:%M} ({timezone}): {edge:%H:%M} {happens} on {day} "
                    "(the clocks change); choose a window whose start and end are outside the change"
                )


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
        case "random":
            start, end = parse_window(spec)
            _check_clock_changes(start, end, timezone, now)
            return Schedule("random", f"{start:%H:%M}-{end:%H:%M}", timezone)
    raise BadSchedule(f"{kind!r} is not a kind of schedule: use at, every, cron or random")
