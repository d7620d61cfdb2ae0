"""The web console at /ui: its login page, its pages, and their static files.

The pages are server-rendered shells (Jinja templates in ``templates/``): the server
puts in each the principal's role (``<body data-role>``, and which buttons there are:
a viewer gets none it may not press) and the session's CSRF token (``<meta
name="csrf-token">``); their scripts (``static/``, shipped in the package, no CDN, no
inline script) then fetch the JSON routes of the management API with the session
cookie, at fixed paths of their own origin: nothing a page connects to comes from its
URL. The gateway decides who a request is and checks the CSRF token
(`beamclaw_gateway.ConsoleSessions`); a page asked for without a session is sent to
the login page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from jinja2 import TemplateNotFound
from quart import Blueprint, Response, redirect, render_template, request, send_from_directory

from beamclaw_gateway import (
    CONSOLE_COOKIE,
    LoginRefused,
    Role,
    console_session,
    console_sessions,
    error,
    needs,
    principal,
)

from ._common import answer, handle_errors

#: The pages, in the navigation's order: (path under /ui, title).
PAGES: Final = (
    ("chat", "Chat"), ("sessions", "Sessions"), ("tree", "Tree"), ("scheduler", "Scheduler"), ("memory", "Memory"),
    ("mcp", "MCP"), ("sandbox", "Sandbox"), ("logs", "Logs"), ("usage", "Usage"),
)  # fmt: skip
_TITLES: Final = dict(PAGES)
_STATIC: Final = Path(__file__).parent / "static"

console_routes = handle_errors(Blueprint("console_routes", __name__, template_folder="templates"))


@console_routes.before_request
async def console_enabled() -> Response | None:
    if console_sessions().config.enabled:
        return None
    return error("the web console is disabled (gateway.console.enabled = false)", 404, "not_found")


@console_routes.get("/ui")
@needs(Role.VIEWER)
async def home() -> Any:
    return redirect("/ui/chat")


@console_routes.get("/ui/login")
async def login_page() -> Any:
    return await _login_page(None, 200)


@console_routes.post("/ui/login")
async def login() -> Any:
    """The login form's token: a session cookie and the chat page, or the form again saying why not."""
    form = await request.form
    console_sessions().logout(request.cookies.get(CONSOLE_COOKIE))  # a login never keeps an old session's id
    try:
        cookie, _ = console_sessions().login(form.get("token", ""))
    except LoginRefused as exc:
        return await _login_page(str(exc), 403 if console_sessions().open else 401)
    response = redirect("/ui/chat", 303)
    secure = request.scheme == "https" or console_sessions().config.secure_cookie
    response.set_cookie(CONSOLE_COOKIE, cookie, httponly=True, samesite="Strict", path="/", secure=secure)
    return response


@console_routes.post("/ui/logout")
@needs(Role.VIEWER)
async def logout() -> Response:
    """End the session the request came with (a console script posts here, with its CSRF token)."""
    console_sessions().logout(request.cookies.get(CONSOLE_COOKIE))
    response = answer({"logged_out": True})
    response.delete_cookie(CONSOLE_COOKIE, path="/", httponly=True, samesite="Strict")
    return response


@console_routes.get("/ui/<page>")
@needs(Role.VIEWER)
async def page(page: str) -> Any:
    """One of `PAGES`, for the session's principal (a token's request without one logs in first)."""
    session = console_session()
    if session is None:
        return redirect("/ui/login")
    if page not in _TITLES:
        return error(f"the console has no page {page!r}", 404, "not_found")
    role = principal().role
    try:
        body = await render_template(
            f"{page}.html", page=page, title=_TITLES[page], pages=PAGES, csrf=session.csrf, who=session.name,
            role=role.name.lower(), operator=role >= Role.OPERATOR, admin=role >= Role.ADMIN,
        )  # fmt: skip
    except TemplateNotFound:
        return error(f"the console's {page} page is not built yet", 404, "not_found")
    # The page holds the session's CSRF token: no cache keeps it past the session.
    return Response(body, content_type="text/html; charset=utf-8", headers={"Cache-Control": "no-store"})


@console_routes.get("/ui/static/<path:name>")
async def static_file(name: str) -> Response:
    """A file of ``static/`` (a path outside it is a 404)."""
    response = await send_from_directory(_STATIC, name)
    response.headers["Cache-Control"] = "no-cache"
    return response


async def _login_page(problem: str | None, status: int) -> Any:
    sessions = console_sessions()
    body = await render_template("login.html", title="Log in", problem=problem, open_mode=sessions.open)
    return Response(body, status=status, content_type="text/html; charset=utf-8")
