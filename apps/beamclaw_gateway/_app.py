"""The gateway's Quart-Trio application: routes, and the checks every request passes first.

Every route but /health needs the gateway token as a Bearer header when one is
configured (compared in constant time; never in a URL), and every client and user
shares a sliding-window rate limit answered with 429 and Retry-After. Bodies are
capped at ``max_body_bytes`` (413), WebSocket messages at ``max_ws_message_bytes``.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any

import trio
from quart import Response, request, websocket
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

from ._a2a_routes import a2a_api
from ._config import GatewayConfig
from ._http_api import Context, api, error
from ._openapi import openapi
from ._rate_limit import RateLimiter, retry_after
from ._telegram_webhook import telegram_webhook
from ._ws_api import ws_api

# /health is public; Telegram's webhook proves itself with its own secret header instead.
_OPEN_PATHS = frozenset({"/health", "/webhook/telegram"})


def authorized(header: str | None, token: str | None) -> bool:
    """Whether *header* carries the gateway token (always, when none is configured)."""
    if token is None:
        return True
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def create_app(config: GatewayConfig, data_dir: Path, extra: tuple[Any, ...] = ()) -> QuartTrio:
    """The app; *extra* blueprints (A2A, the Telegram webhook, WebSocket) are added as given."""
    app = QuartTrio("beamclaw_gateway")
    app.config["BEAMCLAW"] = Context(config, data_dir)
    app.config["MAX_CONTENT_LENGTH"] = config.http.max_body_bytes
    app.config["BODY_TIMEOUT"] = 60
    token = config.http.token.get_optional() if config.http.token else None
    limiter = RateLimiter(config.rate_limit.requests, config.rate_limit.window_seconds)
    app.config["RATE_LIMITER"] = limiter

    def check(headers: Any, remote: str | None, path: str) -> Response | None:
        if path in _OPEN_PATHS:
            return None
        if not authorized(headers.get("Authorization"), token):
            return error(
                "missing or wrong gateway token (send it as 'Authorization: Bearer ...')",
                401,
                "unauthorized",
                **{"WWW-Authenticate": "Bearer"},
            )
        wait = limiter.check((remote, headers.get("X-User-Id", "")), trio.current_time())
        if wait is not None:
            return error(
                f"rate limit reached; retry in {retry_after(wait)} s",
                429,
                "rate_limited",
                **{"Retry-After": retry_after(wait)},
            )
        return None

    @app.before_request
    async def guard_request() -> Response | None:
        # Read the body first (it is cached for the handler): a refusal sent while the
        # client is still writing a large body would leave both sides waiting.
        await request.get_data(as_text=False)
        return check(request.headers, request.remote_addr, request.path)

    @app.before_websocket
    async def guard_websocket() -> Response | None:
        refused = check(websocket.headers, websocket.remote_addr, websocket.path)
        if refused is not None:
            return refused
        origin = websocket.headers.get("Origin")
        if origin is not None and origin not in config.http.allowed_origins:
            return error(f"WebSocket origin {origin!r} is not in gateway.http.allowed_origins", 403, "forbidden")
        return None

    @app.errorhandler(HTTPException)
    async def http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        if status == 413:
            return error(f"the body is larger than {config.http.max_body_bytes} bytes", 413, "too_large")
        return error(exc.description or exc.name, status, exc.name.lower().replace(" ", "_"))

    @app.errorhandler(Exception)
    async def server_error(exc: Exception) -> Response:
        app.logger.exception("gateway request failed")
        return error(f"internal error ({type(exc).__name__})", 500, "internal_error")

    app.register_blueprint(api)
    app.register_blueprint(openapi)
    app.register_blueprint(ws_api)
    app.register_blueprint(a2a_api)
    app.register_blueprint(telegram_webhook)
    for blueprint in extra:
        app.register_blueprint(blueprint)
    return app
