"""Running a turn for an API client: the request's fields turned into a session and a run."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import trio

import beamclaw_core as core

from ._principals import Principal
from ._stream_channel import StreamChannel


class BadRequest(Exception):
    """A request the client must fix; ``str()`` says what, ``status`` is the HTTP status."""

    def __init__(self, message: str, status: int = 400, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(raw: bytes | str, what: str) -> Any:
    """*raw* parsed as strict JSON; `BadRequest` saying what is wrong with it otherwise.

    Strict: UTF-8 only, no ``NaN`` or ``Infinity`` (Python's parser takes them, no other
    does), and a nesting the parser can follow (a body of 100,000 ``[`` exhausts the
    recursion limit: that is the parser's own refusal, turned into the client's error).
    """
    try:
        # Decoded here: given bytes, json.loads would also take UTF-16 and UTF-32.
        return json.loads(raw.decode() if isinstance(raw, bytes) else raw, parse_constant=_no_constant)
    except RecursionError:
        raise BadRequest(f"{what} must be JSON: it is nested too deeply") from None
    except UnicodeDecodeError:
        raise BadRequest(f"{what} must be JSON in UTF-8") from None
    except ValueError as exc:  # includes numbers of more than 4,300 digits
        raise BadRequest(f"{what} must be JSON: {exc}") from None


def checked_text(text: str, where: str) -> str:
    """*text*, if it can be stored and sent on: a lone surrogate (``"\\ud800"`` in JSON) cannot."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(f"{where} holds a lone surrogate at character {exc.start}; send valid Unicode") from None
    return text


def user_id(value: Any, header: str | None, principal: Principal) -> str:
    """The user a request speaks as: the body's ``user`` field, else ``X-User-Id``, made a
    user id within *principal*'s reach (`Principal.user_for`); a 403 `BadRequest` when the
    principal may not act as it.
    """
    user = value if value is not None else header
    if user is not None and not isinstance(user, str):
        raise BadRequest("'user' must be a string")
    try:
        checked = core.check_user_id(principal.user_for(user or None))
    except core.InvalidUserId as exc:
        raise BadRequest(f"'user' is refused: {exc}") from None
    if not principal.may_act_as(checked):
        raise BadRequest(f"this token may not act as user {checked!r}", 403, "forbidden")
    return checked


def header_user(header: str | None, principal: Principal) -> str:
    """The user an ``X-User-Id`` header names, as the rate limiter's key: not checked (see
    `user_id`), and one too long or unprintable kept cut to just past the longest valid id."""
    try:
        return core.check_user_id(principal.user_for(header or None))
    except core.InvalidUserId:
        return str(header)[: core.MAX_USER_ID + 1]


def agent_for(model: Any, data_dir: Path, default_agent: str, principal: Principal, field: str = "model") -> str:
    """The agent a ``model`` field (or *field*) names (``beamclaw/NAME``, ``NAME``, or none
    for the default), if *principal* may use it (a 403 `BadRequest` otherwise)."""
    if model is not None and not isinstance(model, str):
        raise BadRequest(f"'{field}' must be a string naming an agent")
    if model is None or model in {"", "beamclaw"}:
        name = default_agent
    else:
        name = core.check_agent_name(model.removeprefix("beamclaw/"))
        if name not in core.agent_names(data_dir, default_agent):
            raise BadRequest(f"{field} {model!r} not found; GET /v1/models lists the agents", 404, "model_not_found")
    if not principal.may_use(name):
        raise BadRequest(f"this token may not use agent {name!r}", 403, "forbidden")
    return name


async def run_events(handle: core.SessionHandle, text: str, origin: str) -> AsyncGenerator[dict[str, Any], None]:
    """Submit *text* (from *origin*: see `beamclaw_core.submit`) and yield the run's events,
    ending with ``{"type": "done", "result": TurnResult}``.

    A failed turn's text comes as a ``failed`` event (not as a draft), so a client can
    be answered with an error rather than with the error as the assistant's words.
    """
    channel, events = StreamChannel.open()
    turn = await core.submit(handle, text, channel, origin=origin)
    async with events:
        while True:
            event = None
            # Never yield inside a cancel scope: the scope would leak into the consumer.
            with trio.move_on_after(0.25):
                event = await events.receive()
            if event is not None:
                if event["type"] in {"final", "failed"}:
                    await turn.wait()
                    yield event
                    break
                yield event
            elif turn.ended():
                break  # ended without a final draft: a crash, already reported by a message
    yield {"type": "done", "result": turn.result}
