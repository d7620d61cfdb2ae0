"""The heartbeat's rules: when it may run, what in HEARTBEAT.md counts, what a reply of
"nothing to report" looks like, and whose conversation it runs in.

The agent's own HEARTBEAT.md (the operator's, or every user's in a single-user agent) runs
where ``heartbeat.target`` says. A user's own HEARTBEAT.md (see ``core.user_workspace``)
runs in that user's conversation only: what one user wrote never runs a turn in another's."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import zoneinfo
from typing import Final

import beamclaw_core as core

from ._config import HeartbeatConfig

OK_TOKEN: Final = "HEARTBEAT_OK"
#: A reply with the token and at most this much else still means "nothing to report".
_OK_SLACK: Final = 300
_COMMENT: Final = re.compile(r"<!--.*?-->", re.DOTALL)
_EMPTY_LINE: Final = re.compile(r"\s*(#.*|[-*+]\s*(\[[ xX]?\])?\s*)?")


def within_active_hours(now: float, beat: HeartbeatConfig) -> bool:
    """Whether *now* falls in ``active_hours`` (start inclusive, end exclusive; a start
    after the end spans midnight; equal hours mean all day)."""
    start, end = beat.active_hours
    hour = dt.datetime.fromtimestamp(now, zoneinfo.ZoneInfo(beat.timezone)).hour
    if start == end:
        return True
    return start <= hour < end if start < end else hour >= start or hour < end


def heartbeat_prompt(content: str) -> str | None:
    """The heartbeat turn's message, or None when HEARTBEAT.md has nothing to do (only
    blank lines, headings, empty list items and comments)."""
    text = _COMMENT.sub("", content)
    if all(_EMPTY_LINE.fullmatch(line) for line in text.splitlines()):
        return None
    return (
        "Heartbeat: a scheduled check, not a message from the user. Your HEARTBEAT.md says:\n\n"
        f"{text.strip()}\n\n"
        f"Do what it asks that is due now. If nothing needs the user's attention, reply exactly {OK_TOKEN}."
    )


def is_heartbeat_ok(reply: str) -> bool:
    """Whether *reply* says nothing needs attention: the token (also bold or in backticks)
    with at most a few hundred characters around it."""
    if OK_TOKEN not in reply:
        return False
    rest = reply.replace(OK_TOKEN, "").strip().strip("*`_ .!").strip()
    return len(rest) <= _OK_SLACK


def digest(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


async def heartbeat_target(agent_id: str, target: str) -> tuple[str, str]:
    """(user id, channel) of the conversation a heartbeat runs in: the one last active with
    the agent when *target* is "last" and there is one, else the agent's own."""
    if target == "last":
        sessions, _ = await core.list_sessions(limit=500)
        for session in sessions:
            if session.agent_id == agent_id and not session.user_id.startswith("heartbeat:"):
                return session.user_id, session.channel
    return f"heartbeat:{agent_id}", "heartbeat"


async def conversations_of(agent_id: str) -> list[tuple[str, str]]:
    """(user id, channel) of each user's latest conversation with the agent, newest first."""
    sessions, _ = await core.list_sessions(limit=500)
    found: dict[str, str] = {}
    for session in sessions:
        if session.agent_id == agent_id and not session.user_id.startswith("heartbeat:"):
            found.setdefault(session.user_id, session.channel)
    return list(found.items())
