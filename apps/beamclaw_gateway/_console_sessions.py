"""The web console's sessions: a token typed once into the login page, then a cookie.

A browser cannot keep a Bearer token safely (a script that reads it can send it
anywhere: OpenClaw's CVE-2026-25253 was a URL parameter that did just that), so the
console's login page posts the token once and the gateway answers with a session
cookie no script can read (HttpOnly), that no other site's request carries
(SameSite=Strict), sent only over HTTPS when the console came over HTTPS (Secure).

A session holds the name of the token's principal, never its role: each request looks
the principal up in the current configuration, so a role changed by a reload applies at
once. It holds a fingerprint of the token (an HMAC under a key of this process), which
is compared with the token's current value at every request: a rotated token file (or
a variable changed by ``beamclaw reload``) ends every session opened with the old one.
A session unused for ``gateway.console.idle_minutes`` ends too, and a response still
streaming to it (the tree's events, the log) ends with it (`SessionBound`): a live
stream opened before a logout or a rotation does not outlive them. Sessions outlive the
app that opened them (`ConsoleSessions.of`): a crash of the gateway's HTTP server, or a
reload that restarts it, logs no browser out (one its new configuration no longer
admits is ended at its next request, as always).

A cookie is ambient (the browser adds it to every request to the gateway), so a request
that changes something (POST, PUT, PATCH, DELETE) must also carry the session's CSRF
token in ``X-CSRF-Token``, which only the console's own pages know (they carry it in a
``<meta>`` tag). Any request with the cookie and an ``Origin`` must come from the
gateway's own (even one of ``gateway.http.allowed_origins`` may not use the console's
session); the login form's POST too. Otherwise 403 and the
route never runs. A request with an ``Authorization`` header is that token's: the
cookie is not looked at.

With no token configured (loopback, open mode) every request is already the machine's
owner, and the console refuses to log in: its cookie and CSRF checks would guard
nothing the open API does not give away, and a browser is the one client other sites
can steer, so the console asks for a token to be configured first.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from quart import current_app, g
from werkzeug.http import parse_cookie

from ._browser_guard import Refusal, own_origin
from ._config import ConsoleConfig
from ._principals import Principal, Principals

#: The session cookie's name.
COOKIE: Final = "beamclaw_session"
#: The header a console request that changes something carries its CSRF token in.
CSRF_HEADER: Final = "X-CSRF-Token"
#: The console's paths anyone may fetch: the login page (and its form's POST) and the
#: static files. Every other /ui path is a page, which needs a session.
LOGIN_PATH: Final = "/ui/login"
STATIC_PREFIX: Final = "/ui/static/"
#: The requests that end their own session (a login ends the one it came with): their
#: answers are not refused for it (see `SessionBound`).
_ENDING_THEIR_OWN: Final = frozenset({LOGIN_PATH, "/ui/logout"})
#: Methods that change something: a cookie request with one needs the CSRF token.
_CHANGING: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Sessions kept at most; past it the least recently used ends (logins are rate limited,
#: so this only bounds the memory a patient client could take).
_MAX_SESSIONS: Final = 1000
#: The most sessions one principal keeps: its own least recently used ends past it, so no
#: token can log the others out by logging in a thousand times.
_PER_PRINCIPAL: Final = 16
#: How often a response streaming to a console session looks whether the session still is.
_WATCH_SECONDS: Final = 2.0
#: Why an answer is refused whose credential ended while it was made.
_ENDED: Final = "the session or token this request was made with ended before its answer (log in again)"
#: What every response carries (the web console's contract): no inline script or style,
#: nothing loaded or sent anywhere but this origin, never framed.
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class LoginRefused(Exception):
    """The login page's token is not accepted; the message says why (shown on the page)."""


def is_open(path: str) -> bool:
    """Whether *path* is one of the console's paths anyone may fetch (`LOGIN_PATH`, static files)."""
    return path == LOGIN_PATH or path.startswith(STATIC_PREFIX)


def is_page(path: str) -> bool:
    """Whether *path* is one of the console's pages (a request without a session is sent to log in)."""
    return (path == "/ui" or path.startswith("/ui/")) and not is_open(path)


@attrs.define
class ConsoleSession:
    """One browser's login."""

    #: The principal's name (its role is looked up at each request, never kept).
    name: str
    #: What the console's pages send in `CSRF_HEADER`.
    csrf: str
    #: The HMAC of the token it logged in with (see the module's docstring).
    fingerprint: bytes
    #: `time.monotonic` of its last request.
    last_use: float
    #: Its principal as of its last request (by the current configuration).
    principal: Principal


@attrs.define
class _Table:
    """The sessions themselves, and the key of their fingerprints."""

    key: bytes = attrs.field(factory=lambda: secrets.token_bytes(32))
    #: By the SHA-256 of the cookie's value, so a lookup reveals nothing by its timing.
    sessions: dict[bytes, ConsoleSession] = attrs.field(factory=dict)


#: Each data dir's sessions, for the life of this process (never on disk: a daemon's
#: restart logs every browser out).
_TABLES: dict[Path, _Table] = {}


@attrs.define
class ConsoleSessions:
    """The open console sessions, in memory, as an app with *principals* and *config* sees them."""

    principals: Principals
    config: ConsoleConfig
    _table: _Table = attrs.field(factory=_Table)
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def of(cls, data_dir: Path, principals: Principals, config: ConsoleConfig) -> ConsoleSessions:
        """The sessions of the gateway of *data_dir*: those its earlier apps in this process opened too."""
        return cls(principals, config, _TABLES.setdefault(data_dir.resolve(), _Table()))

    @property
    def _sessions(self) -> dict[bytes, ConsoleSession]:
        return self._table.sessions

    @property
    def open(self) -> bool:
        """Whether no token is configured (the console then refuses to log in)."""
        return self.principals.open

    def login(self, token: str) -> tuple[str, ConsoleSession]:
        """A new session for *token* (compared as a Bearer token is) and its cookie's value;
        `LoginRefused` saying why not."""
        if not self.config.enabled:
            raise LoginRefused("the web console is disabled (gateway.console.enabled = false)")
        if self.open:
            raise LoginRefused(
                "this gateway has no token configured, and the console needs one: set BEAMCLAW_GATEWAY_TOKEN "
                "(or give a client a token of its own in [gateway.auth.tokens.NAME]) and restart or reload"
            )
        token = token.strip()
        who = self.principals.identify(f"Bearer {token}") if token else None
        if who is None:
            raise LoginRefused("wrong token")
        self._prune(who.name)
        cookie = secrets.token_urlsafe(32)
        session = ConsoleSession(who.name, secrets.token_urlsafe(32), self._fingerprint(token), self.clock(), who)
        self._sessions[self._id(cookie)] = session
        return cookie, session

    def logout(self, cookie: str | None) -> None:
        if cookie:
            self._sessions.pop(self._id(cookie), None)

    def find(self, cookie: str | None) -> ConsoleSession | None:
        """The live session of *cookie*, its principal and last use brought up to date; None
        (and the session ended) if it is unknown, idle too long, or its token changed or went."""
        if not cookie:
            return None
        key = self._id(cookie)
        session = self._sessions.get(key)
        if session is None:
            return None
        now = self.clock()
        current = self._current(session.name)
        if current is None or not self._valid(session, current[1], now):
            del self._sessions[key]
            return None
        session.principal, session.last_use = current[0], now
        return session

    def alive(self, cookie: str) -> bool:
        """Whether *cookie*'s session still is (as `find` would say, without counting a use)."""
        session = self._sessions.get(self._id(cookie))
        current = None if session is None else self._current(session.name)
        return session is not None and current is not None and self._valid(session, current[1], self.clock())

    def _valid(self, session: ConsoleSession, token: str, now: float) -> bool:
        return (
            self.config.enabled
            and now - session.last_use <= self.config.idle_minutes * 60
            and hmac.compare_digest(self._fingerprint(token), session.fingerprint)
        )

    def visit(self, cookie: str | None, method: str, headers: Mapping[str, str]) -> ConsoleSession | Refusal | None:
        """The session a request without ``Authorization`` comes with (None: none, or ended),
        or a 403 if it comes from another origin, or would change something without the
        CSRF token."""
        session = self.find(cookie)
        if session is None:
            return None
        if not own_origin(headers) or not _from_the_console(headers):
            return Refusal(403, "origin_not_allowed", "a console request from another origin")
        if method not in _CHANGING:
            return session
        given = headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(given.encode(), session.csrf.encode()):
            return Refusal(403, "csrf", f"a console request that changes something needs the page's {CSRF_HEADER}")
        return session

    def _current(self, name: str) -> tuple[Principal, str] | None:
        """The principal called *name* by the current configuration, and its token's value now."""
        for source, principal in self.principals.tokens:
            if principal.name == name:
                value = source.value()
                return None if value is None else (principal, value)
        return None

    def _fingerprint(self, token: str) -> bytes:
        return hmac.new(self._table.key, token.encode(), hashlib.sha256).digest()

    @staticmethod
    def _id(cookie: str) -> bytes:
        return hashlib.sha256(cookie.encode()).digest()

    def _prune(self, name: str) -> None:
        """End the idle sessions; past `_PER_PRINCIPAL`, principal *name*'s least recently
        used; past `_MAX_SESSIONS`, the least recently used of all."""
        limit = self.clock() - self.config.idle_minutes * 60
        for key, session in list(self._sessions.items()):
            if session.last_use < limit:
                del self._sessions[key]
        own = [key for key, session in self._sessions.items() if session.name == name]
        while len(own) >= _PER_PRINCIPAL:
            oldest = min(own, key=lambda key: self._sessions[key].last_use)
            own.remove(oldest)
            del self._sessions[oldest]
        while len(self._sessions) >= _MAX_SESSIONS:
            del self._sessions[min(self._sessions, key=lambda key: self._sessions[key].last_use)]


_Message = dict[str, Any]


@attrs.define
class SessionBound:
    """ASGI middleware: a response is cut off when the credential it was given for ends,
    looked at every `_WATCH_SECONDS`: a console session (its cookie, no ``Authorization``)
    that ended (logout, idle, its token rotated), or a Bearer token that no longer names
    the same principal (its file rotated, or `beamclaw reload` replaced it). A stream
    opened with either (the live log, the tree's events) does not outlive it; the
    browser's stream then reconnects, is refused, and its page goes to the login.

    The credential is looked at again when the response starts: one that ended while the
    answer was being made (a turn of minutes) is refused (401) instead of the answer. The
    watch itself starts with a response of unknown length (no ``Content-Length``: a
    stream); one whose length is known is sent whole at once, and watching it would only
    cost a task for every request."""

    app: Callable[..., Awaitable[None]]
    sessions: ConsoleSessions

    async def __call__(self, scope: _Message, receive: Any, send: Any) -> None:
        still_valid = self._watch(scope)
        if still_valid is None or not still_valid():
            await self.app(scope, receive, send)
            return
        refused = False
        async with trio.open_nursery() as nursery:

            async def watching(message: _Message) -> None:
                nonlocal refused
                if refused:
                    return  # the rest of the answer refused
                if message["type"] == "http.response.start":
                    if not still_valid():
                        refused = True
                        await _refuse(send)
                        nursery.cancel_scope.cancel()  # the answer refused: no need to finish it
                        return
                    if not _has_length(message):
                        nursery.start_soon(self._end_when_invalid, still_valid, nursery.cancel_scope)
                await send(message)

            await self.app(scope, receive, watching)
            nursery.cancel_scope.cancel()

    def _watch(self, scope: _Message) -> Callable[[], bool] | None:
        """What tells whether the request's credential still holds, or None (nothing to watch)."""
        if scope["type"] != "http" or scope["path"] in _ENDING_THEIR_OWN:
            return None
        authorization, cookie = _credentials(scope)
        principals = self.sessions.principals
        if authorization is not None:
            who = principals.identify(authorization)
            if who is None or principals.open:
                return None  # refused by the app, or no token to rotate
            return lambda: getattr(principals.identify(authorization), "name", None) == who.name
        if cookie is not None:
            return lambda: self.sessions.alive(cookie)
        return None

    async def _end_when_invalid(self, still_valid: Callable[[], bool], scope: trio.CancelScope) -> None:
        while still_valid():
            await trio.sleep(_WATCH_SECONDS)
        scope.cancel()


async def _refuse(send: Any) -> None:
    """Answer 401 in the API's error shape, in place of a response not yet started."""
    body = json.dumps({"error": {"message": _ENDED, "type": "invalid_request_error", "code": "unauthorized"}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _has_length(start: _Message) -> bool:
    """Whether a response's start says how long its body is."""
    return any(name.lower() == b"content-length" for name, _ in start.get("headers", ()))


def _credentials(scope: _Message) -> tuple[str | None, str | None]:
    """The request's ``Authorization`` header, and its session cookie as Quart reads it
    (every ``Cookie`` header joined, the first value of the name), or None for each."""
    authorization = None
    cookies = []
    for name, value in scope["headers"]:
        lowered = name.lower()
        if lowered == b"authorization" and authorization is None:
            authorization = value.decode("latin-1")
        elif lowered == b"cookie":
            cookies.append(value.decode("latin-1"))
    cookie = parse_cookie("; ".join(cookies)).get(COOKIE) if cookies else None
    return authorization, cookie


def _from_the_console(headers: Mapping[str, str]) -> bool:
    """Whether a cookie request may be the console's own: not one a page of another site
    made the browser send. Browsers do not keep cookies apart by port, so a page of another
    server on the same host (``127.0.0.1:9999``) is "same-site" and its requests here carry
    the cookie; ``Sec-Fetch-Site``, which no page can set, says so. A request without it
    (not a browser's) or a navigation typed by the user (``none``) is let through."""
    return headers.get("Sec-Fetch-Site", "same-origin").lower() in {"same-origin", "none"}


def login_refusal(method: str, headers: Mapping[str, str]) -> Refusal | None:
    """Why the login form's request may not go on: its POST must come from the gateway's own origin."""
    if method == "POST" and not own_origin(headers):
        return Refusal(403, "origin_not_allowed", "the console's login form posts from the gateway's own origin only")
    return None


def console_sessions() -> ConsoleSessions:
    """The current app's console sessions."""
    sessions: ConsoleSessions = current_app.config["CONSOLE_SESSIONS"]
    return sessions


def console_session() -> ConsoleSession | None:
    """The console session the current request came with (None: a token's request, or none)."""
    session: ConsoleSession | None = getattr(g, "beamclaw_console", None)
    return session
