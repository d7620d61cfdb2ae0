"""What every management route shares: JSON answers, the request's fields, and one error shape.

Errors are the gateway's (OpenAI's shape, scrubbed): a bad request 400, a role or a
user outside the principal's reach 403, something that does not exist 404, and a
process being restarted 503 with Retry-After, as the chat routes answer them.
"""

from __future__ import annotations

import json
from typing import Any, Final

from quart import Blueprint, Response

import beamclaw_core as core
import supervision as sv
from beamclaw_gateway import BadRequest, Forbidden, error

#: Seconds a client is told to wait when a process it needs is being restarted.
_RETRY_AFTER: Final = "1"


def answer(value: Any, status: int = 200) -> Response:
    """*value* as a JSON response."""
    return Response(json.dumps(value), status=status, content_type="application/json")


def text_field(body: dict[str, Any], key: str) -> str:
    """``body[key]``, which must be a non-empty string (`BadRequest` naming it otherwise)."""
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f'"{key}" must be a non-empty string')
    return value


def handle_errors(blueprint: Blueprint) -> Blueprint:
    """Register the shared error answers on *blueprint*'s routes; *blueprint*."""

    @blueprint.errorhandler(BadRequest)
    async def bad_request(exc: BadRequest) -> Response:
        return error(str(exc), exc.status, exc.code)

    @blueprint.errorhandler(Forbidden)
    async def forbidden(exc: Forbidden) -> Response:
        return error(str(exc), 403, "forbidden")

    @blueprint.errorhandler(core.SessionNotFound)
    async def not_found(exc: core.SessionNotFound) -> Response:
        return error(str(exc), 404, "not_found")

    @blueprint.errorhandler(sv.NoProc)
    @blueprint.errorhandler(sv.ProcessExited)
    @blueprint.errorhandler(sv.CallTimeout)
    async def restarting(exc: Exception) -> Response:
        return error(
            f"BeamClaw is restarting a part this request needs ({type(exc).__name__}); please retry in a second",
            503, "restarting", **{"Retry-After": _RETRY_AFTER},
        )  # fmt: skip

    return blueprint
