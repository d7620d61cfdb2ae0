"""The gateway's Quart-Trio application: routes, and the checks every request passes first.

Every request, WebSocket handshakes included, first passes `BrowserGuard` (its Host,
Origin and Content-Type: no DNS rebinding, no cross-site request). Every route but
/health then has a principal (`beamclaw_gateway._principals`): the token of its Bearer
header (compared in constant time; never in a URL) decides who it is, its role must
cover the route (`needed_role`, else 403), and the routes refuse a user or agent outside
its reach. Then two sliding-window rate limits, one per client address and one per
address and user (the user a request speaks for: a chat completion's ``user`` field,
else ``X-User-Id``; each WebSocket message's ``user`` too), answered with 429 and
Retry-After; open WebSockets are capped (`ConnectionCap`). Bodies are capped at
``max_body_bytes`` (413, answered by `_BodyLimit` before Quart sees the request),
WebSocket messages at ``max_ws_message_bytes``.

The web console's pages (/ui) log in once with a token and then send a session cookie
instead (`beamclaw_gateway._console_sessions`): an HTTP request without ``Authorization``
is its session's principal, a change needs the session's CSRF token, and a page asked
for without a session is sent to the login page. Every response, early refusals
included, carries the console's Content-Security-Policy and headers (`_SecurityHeaders`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from quart import Response, g, redirect, request, websocket
from quart.typing import ResponseReturnValue
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

import beamclaw_cluster as cluster

from ._a2a_routes import a2a_api
from ._browser_guard import BrowserGuard, Refusal
from ._config import GatewayConfig, principals_of
from ._connections import RETRY_AFTER as CAP_RETRY_AFTER
from ._connections import ConnectionCap
from ._console_sessions import (
    COOKIE,
    SECURITY_HEADERS,
    STATIC_PREFIX,
    ConsoleSessions,
    SessionBound,
    is_page,
    login_refusal,
)
from ._console_sessions import is_open as console_open
from ._http_api import Context, api, error, request_user
from ._mcp_endpoint import McpEndpoint
from ._openapi import BLUEPRINTS_KEY, openapi
from ._principals import LOCAL, ROLE_ATTRIBUTE, Principal, Principals, Role
from ._rate_limit import ClientLimiter, retry_after
from ._telegram_webhook import telegram_webhook
from ._turns import header_user
from ._ws_api import ws_api

# /health is public; Telegram's webhook proves itself with its own secret header instead.
_OPEN_PATHS = frozenset({"/health", "/webhook/telegram"})
#: The principal of an open path's request: nobody in particular, allowed nothing else.
_NOBODY: Final = Principal("anonymous", Role.VIEWER, ())
_RETRY: Final = {"Retry-After": str(CAP_RETRY_AFTER)}

_Message = dict[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_ASGI = Callable[..., Awaitable[None]]  # Quart's asgi_app, typed with hypercorn's TypedDicts

#: How much of an oversized body is read (and thrown away) before the 413, and for how
#: long; past either the 413 closes the connection instead.
_DRAIN_BYTES: Final = 64 * 1024 * 1024
_DRAIN_SECONDS: Final = 60.0
#: The most the last send of a response may take, shielded (see `_shield_the_end`).
_END_SECONDS: Final = 10.0


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # h11 has refused such a request already
    return None


class _Gone(Exception):
    """The client went away before its body ended: nothing to serve, nobody to answer."""


@attrs.define
class _BodyLimit:
    """ASGI middleware before Quart: a body over *limit* is read to its end and answered 413 here.

    Why not leave it to Quart's ``MAX_CONTENT_LENGTH``: Quart answers 413 while the body
    is still arriving, and hypercorn must then close the connection. It does that inside
    the app's last ``send``, after handing the app ``http.disconnect``; quart-trio's
    receiver returns on that message and cancels the task that is still in hypercorn's
    code, which skips the close. The client finishes sending, gets a complete 413, keeps
    the connection alive, and its next request on it is never answered. Reading the
    body to its end first leaves hypercorn a finished request it recycles as any other.
    A body without Content-Length (chunked) is buffered up to the limit to find out.
    """

    app: _ASGI
    limit: int
    drain_bytes: int = _DRAIN_BYTES
    drain_seconds: float = _DRAIN_SECONDS

    async def __call__(self, scope: _Message, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _shield_the_end(send)
        declared = _content_length(scope["headers"])
        if declared is not None and declared <= self.limit:
            await self.app(scope, receive, send)  # h11 holds the body to its declared length
            return
        try:
            ended = False
            if declared is None:
                body, ended = await self._read_up_to_limit(receive)
                if body is not None:
                    await self.app(scope, _replay(body, receive), send)
                    return
            ended = ended or await self._drain(receive)
        except _Gone:
            return
        await self._refuse(receive, send, ended)

    async def _read_up_to_limit(self, receive: _Receive) -> tuple[bytes | None, bool]:
        """``(body, True)`` if it fits, else ``(None, whether it has ended)``."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise _Gone
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if len(body) > self.limit:
                return None, not more
            if not more:
                return bytes(body), True

    async def _drain(self, receive: _Receive) -> bool:
        """Read the rest of the body; whether it ended within the drain limits."""
        seen = 0
        with trio.move_on_after(self.drain_seconds):
            while seen <= self.drain_bytes:
                message = await receive()
                if message["type"] != "http.request":
                    raise _Gone
                if not message.get("more_body", False):
                    return True
                seen += len(message.get("body", b""))
        return False

    async def _refuse(self, receive: _Receive, send: _Send, ended: bool) -> None:
        """413; with ``Connection: close`` when the body has not ended (hypercorn then closes)."""
        text = f"the body is larger than {self.limit} bytes"
        await _answer_early(receive, send, Refusal(413, "too_large", text), ended)


async def _answer_early(receive: _Receive, send: _Send, refusal: Refusal, ended: bool) -> None:
    """Answer *refusal* (JSON, in OpenAI's error shape) before the app; with ``Connection:
    close`` when the body has not ended, whose rest is read and dropped meanwhile."""
    kind = "invalid_request_error" if refusal.status < 500 else "server_error"
    body = json.dumps({"error": {"message": refusal.message, "type": kind, "code": refusal.code}})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(name.lower().encode(), value.encode()) for name, value in refusal.headers.items()]
    if not ended:
        headers.append((b"connection", b"close"))
    async with trio.open_nursery() as nursery:
        if not ended:
            # Hypercorn hands the app more of the body and then http.disconnect while
            # it closes the connection; someone must take them or both sides wait.
            nursery.start_soon(_discard, receive)
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode(), "more_body": False})
        nursery.cancel_scope.cancel()


@attrs.define
class _InFlight:
    """ASGI middleware before Quart: HTTP requests in progress are capped per client (its
    token; with no token or a wrong one, its address) and in all; the excess is answered
    503 at once, before its body is read, and its connection closed. So a client that
    opens thousands of requests and drips their bodies holds a few slots, not the
    daemon's memory and file descriptors. ``/health`` is never counted."""

    app: _ASGI
    cap: ConnectionCap
    principals: Principals

    async def __call__(self, scope: _Message, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http" or scope.get("path") in _OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        authorization = next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"authorization"), None)
        who = self.principals.identify(authorization) or LOCAL
        address = scope["client"][0] if scope.get("client") else None
        client = _client_key(who, address)
        full = self.cap.take(client)
        if full is not None:
            send = _shield_the_end(send)
            await _answer_early(receive, send, Refusal(503, "too_many_requests", full, _RETRY), ended=False)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.cap.give_back(client)


@attrs.define
class _SecurityHeaders:
    """ASGI middleware, outermost: every HTTP response (a route's, an error's, an early
    refusal's, /mcp's, a refused WebSocket upgrade's) carries `SECURITY_HEADERS`."""

    app: _ASGI

    async def __call__(self, scope: _Message, receive: _Receive, send: _Send) -> None:
        async def with_headers(message: _Message) -> None:
            if message["type"] in {"http.response.start", "websocket.http.response.start"}:
                names = {name.lower() for name in SECURITY_HEADERS}
                own = [(k, v) for k, v in message.get("headers", []) if k.decode("latin-1").lower() not in names]
                added = [(name.lower().encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]
                message = {**message, "headers": [*own, *added]}
            await send(message)

        await self.app(scope, receive, with_headers)


def _shield_the_end(send: _Send) -> _Send:
    """A send whose last message of a response is shielded from cancellation (for a while).

    Hypercorn recycles the connection (or closes it) and restarts its keep-alive
    timer inside that call, after handing the app ``http.disconnect``, upon which
    quart-trio cancels the task making the call: without the shield the timer never
    restarts, so an idle keep-alive connection is never closed, and a close after an
    early answer is skipped. Hypercorn already shields its socket writes.
    """

    async def shielded(message: _Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            with trio.move_on_after(_END_SECONDS, shield=True):
                await send(message)
            return
        await send(message)

    return shielded


def _replay(body: bytes, receive: _Receive) -> _Receive:
    """A receive that gives the buffered body first, then what the server sends (disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> _Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _discard(receive: _Receive) -> None:
    while (await receive())["type"] == "http.request":
        pass


#: Routes a viewer may use (method, path): metadata, no conversation. Every other route
#: but the open ones needs an operator.
_VIEWER_ROUTES: Final = frozenset({
    ("GET", "/v1/models"), ("GET", "/v1/supervision/tree"), ("GET", "/metrics"), ("GET", "/openapi.json"),
    ("GET", "/.well-known/agent-card.json"), ("GET", "/.well-known/agent.json"),
})  # fmt: skip


def _client_key(who: Principal, address: str | None) -> str:
    """Whose share of the open WebSockets or requests in progress a new one counts against:
    its token's, from any address (a token cannot take every slot by connecting from many);
    with no token, its address's."""
    return f"address {address}" if who is LOCAL else f"token {who.name}"


def needed_role(method: str, path: str, view: Any = None) -> Role:
    """The least role a route needs: the one its *view* function is marked with (`needs`),
    else a viewer's for the read-only routes and an operator's for the rest (the open
    paths need none: see `_OPEN_PATHS`)."""
    marked = getattr(view, ROLE_ATTRIBUTE, None)
    if isinstance(marked, Role):
        return marked
    return Role.VIEWER if (method, path) in _VIEWER_ROUTES else Role.OPERATOR


def create_app(
    config: GatewayConfig,
    data_dir: Path,
    extra: tuple[Any, ...] = (),
    mcp_app: _ASGI | None = None,
    member: cluster.Membership | None = None,
    *,
    local: bool = False,
) -> QuartTrio:
    """The app; *extra* blueprints are added as given, and *mcp_app* (the MCP server of the
    agents) answers at ``/mcp``, behind the same checks. *member*: this node's membership
    of a cluster (requests for conversations other nodes own are forwarded to them, and
    theirs, signed with the cluster's secret, are taken).

    *local*: the app of the owner-only Unix socket (mode 0600 in the private data dir:
    whoever connects is the machine's owner). Every request there is the `LOCAL` admin,
    with no token, no rate limit and no Host or Origin check (no browser reaches a Unix
    socket); the body limits stay."""
    app = QuartTrio("beamclaw_gateway")
    app.config["BEAMCLAW"] = Context(config, data_dir, member)
    app.config["MAX_CONTENT_LENGTH"] = config.http.max_body_bytes
    app.config["BODY_TIMEOUT"] = 60
    principals = principals_of(config)
    limits = config.rate_limit
    limiter = ClientLimiter.create(limits.address_requests, limits.requests, limits.window_seconds)
    app.config["RATE_LIMITER"] = limiter
    app.config[BLUEPRINTS_KEY] = extra  # the document is built by its first request
    guard = BrowserGuard.from_config(config)
    sockets = ConnectionCap(config.http.max_ws_connections, config.http.max_ws_connections_per_client, "WebSockets")
    console = ConsoleSessions.of(data_dir, principals, config.console)
    app.config["CONSOLE_SESSIONS"] = console

    def check(
        method: str, headers: Any, remote: str | None, path: str, view: Any = None, *, cookie: str | None = None
    ) -> Principal | Refusal:
        """Who the request is (or why it is turned away): Host and Origin, the token (or,
        without one, the console session of *cookie*), the role (*view*: the route's
        function, which may be marked with the role it needs)."""
        if local:
            return LOCAL
        refusal = guard.refusal(headers)
        if refusal is not None:
            return refusal
        if path in _OPEN_PATHS:
            return guard.body_refusal(method, headers) or _NOBODY
        if console_open(path):  # the login form posts a form, not JSON
            return login_refusal(method, headers) or _NOBODY
        who = principals.identify(headers.get("Authorization"))
        if who is None and cookie is not None and "Authorization" not in headers:
            visited = console.visit(cookie, method, headers)
            if isinstance(visited, Refusal):
                return visited
            if visited is not None:
                g.beamclaw_console = visited
                who = visited.principal
        if who is None:
            return Refusal(
                401, "unauthorized", "missing or wrong gateway token (send it as 'Authorization: Bearer ...')",
                {"WWW-Authenticate": "Bearer"},
            )  # fmt: skip
        needed = needed_role(method, path, view)
        if who.role < needed:
            return Refusal(403, "forbidden", f"this route needs the {needed.name.lower()} role; this token is "
                           f"{who.role.name.lower()}")  # fmt: skip
        return guard.body_refusal(method, headers) or who

    def forwarded(method: str, headers: Any, path: str, body: bytes, view: Any = None) -> Principal | Refusal:
        """A request another node forwarded: the principal it signed for, by this node's
        configuration (its role is bound here, never taken from the request)."""
        refusal = guard.refusal(headers)
        if refusal is not None:
            return refusal
        name = None
        if member is not None:
            request_ = cluster.Forwarded(method, path, body)
            name = cluster.verified_principal(member.secret, request_, headers, time.time())
        who = principals.named(name) if name is not None else None
        if who is None:
            return Refusal(401, "unauthorized", "a forwarded request without a valid cluster signature")
        if who.role < needed_role(method, path, view):
            return Refusal(403, "forbidden", "this route needs a higher role than the forwarded token's")
        return who

    def limited(remote: str | None, user: str) -> Refusal | None:
        if local:
            return None
        wait = limiter.check(remote, user, trio.current_time())
        if wait is None:
            return None
        after = retry_after(wait)
        return Refusal(429, "rate_limited", f"rate limit reached; retry in {after} s", {"Retry-After": after})

    def screen(
        method: str, headers: Any, remote: str | None, path: str, user: Callable[[Principal], str]
    ) -> Principal | Refusal:
        """`check`, then the rate limit of the principal's *user*."""
        found = check(method, headers, remote, path)
        if isinstance(found, Refusal) or path in _OPEN_PATHS:
            return found
        return limited(remote, user(found)) or found

    def refused(refusal: Refusal) -> Response:
        return error(refusal.message, refusal.status, refusal.code, **refusal.headers)

    @app.before_request
    async def guard_request() -> ResponseReturnValue | None:
        # Read the body first (it is cached for the handler): a refusal sent while the
        # client is still writing a large body would leave both sides waiting.
        body = await request.get_data(True, False, False)
        g.beamclaw_forwarded = not local and cluster.is_forwarded(request.headers)
        view = app.view_functions.get(request.endpoint or "")
        if g.beamclaw_forwarded:
            found = forwarded(request.method, request.headers, request.full_path.rstrip("?"), body, view)
        else:
            cookie = request.cookies.get(COOKIE)
            found = check(request.method, request.headers, request.remote_addr, request.path, view, cookie=cookie)
        unlimited = request.path in _OPEN_PATHS or request.path.startswith(STATIC_PREFIX)
        if isinstance(found, Principal) and not unlimited:
            found = limited(request.remote_addr, await request_user(found)) or found
        if isinstance(found, Refusal) and found.status == 401 and request.method == "GET" and is_page(request.path):
            return redirect("/ui/login")
        if isinstance(found, Refusal):
            return refused(found)
        g.beamclaw_principal = found
        return None

    @app.before_websocket
    async def guard_websocket() -> Response | None:
        found = screen("GET", websocket.headers, websocket.remote_addr, websocket.path,
                       lambda who: header_user(websocket.headers.get("X-User-Id"), who))  # fmt: skip
        if isinstance(found, Principal):
            client = _client_key(found, websocket.remote_addr)
            full = sockets.take(client)
            if full is None:
                g.beamclaw_principal = found
                g.beamclaw_socket_counted = client
                return None
            found = Refusal(503, "too_many_connections", full, _RETRY)
        response = refused(found)
        # Hypercorn cannot reuse a connection whose upgrade it refused: say it closes,
        # or the client's next request on it goes unanswered.
        response.headers["Connection"] = "close"
        return response

    @app.teardown_websocket
    async def count_the_close(_: BaseException | None) -> None:
        client = getattr(g, "beamclaw_socket_counted", None)
        if client is not None:
            g.beamclaw_socket_counted = None
            sockets.give_back(client)

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
    app.asgi_app = SessionBound(app.asgi_app, console)  # type: ignore[method-assign,assignment]
    app.asgi_app = _BodyLimit(app.asgi_app, config.http.max_body_bytes)  # type: ignore[method-assign,assignment]  # plain dicts for its TypedDicts
    if mcp_app is not None:
        app.asgi_app = McpEndpoint(app.asgi_app, mcp_app, screen, principals)  # type: ignore[method-assign,assignment]
    # Outermost, so /mcp's requests count too.
    requests = ConnectionCap(config.http.max_http_requests, config.http.max_http_requests_per_client, "requests")
    app.asgi_app = _InFlight(app.asgi_app, requests, principals)  # type: ignore[method-assign,assignment]
    app.asgi_app = _SecurityHeaders(app.asgi_app)  # type: ignore[method-assign,assignment]
    return app
