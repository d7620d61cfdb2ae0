"""The web console's security over HTTP: the gateway's app with every management and
console blueprint, served on loopback with three tokens (admin, operator, viewer) in
files, as a browser (or an attacker's page) would reach it.

What a browser does by itself (SameSite, not sending the cookie cross-site) is not
assumed here: each test sends the cookie a forged request would need, and shows the
server alone refuses it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

import beamclaw_gateway as gateway
from beamclaw_control import blueprints
from tests.beamclaw.daemon import running_daemon, write_config
from tests.support.asgi_server import serve_asgi
from tests.support.model_server import Reply, scripted_model

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
PACKAGE = Path(gateway.__file__).parent.parent / "beamclaw_control"
ROLES = {"boss": "admin", "ops": "operator", "watcher": "viewer"}


@attrs.define
class Console:
    url: str
    tokens: dict[str, Path]

    @property
    def origin(self) -> str:
        return self.url

    def client(self, **headers: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30, follow_redirects=False)

    def token(self, name: str) -> str:
        return self.tokens[name].read_text()

    async def login(self, client: httpx.AsyncClient, name: str) -> str:
        """Log *client* in with *name*'s token; the page's CSRF token."""
        answer = await client.post("/ui/login", data={"token": self.token(name)}, headers={"Origin": self.origin})
        assert answer.status_code == 303, answer.text
        page = await client.get("/ui/chat")
        assert page.status_code == 200
        found = re.search(r'<meta name="csrf-token" content="([^"]+)">', page.text)
        assert found is not None
        return found.group(1)


ServeConsole = Callable[..., AbstractAsyncContextManager[Console]]


@pytest.fixture
def serve_console(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ServeConsole:
    """``async with serve_console(tokens=True, roles=ROLES, **gateway_table) as console``: the
    app on loopback (an app served again in the test is the same gateway, restarted)."""
    monkeypatch.delenv("BEAMCLAW_GATEWAY_TOKEN", raising=False)

    @asynccontextmanager
    async def serving(tokens: bool = True, roles: dict[str, str] = ROLES, **table: Any) -> AsyncIterator[Console]:
        files = {}
        for name in ROLES:
            files[name] = tmp_path / f"{name}.token"
            files[name].write_text(f"{name}-token-{name[::-1]}")
            files[name].chmod(0o600)
        auth = {name: {"token": {"file": str(path)}, "role": roles[name]} for name, path in files.items()}
        config = gateway.parse_gateway_config({"auth": {"tokens": auth if tokens else {}}, **table})
        app = gateway.create_app(config, tmp_path, blueprints())
        async with serve_asgi(app, lifespan=True) as url:
            yield Console(url, files)

    return serving


async def test_no_cookie_and_no_token_is_a_401_and_a_page_sends_to_the_login(serve_console: ServeConsole) -> None:
    async with serve_console() as console, console.client() as client:
        assert (await client.get("/openapi.json")).status_code == 401
        forged = await client.get("/openapi.json", headers={"Cookie": f"{gateway.CONSOLE_COOKIE}=made-up"})
        assert forged.status_code == 401
        page = await client.get("/ui/tree")
        assert page.status_code == 302 and page.headers["location"] == "/ui/login"
        # A token's request has no console session: its pages log in first.
        with_token = await client.get("/ui/tree", headers={"Authorization": f"Bearer {console.token('boss')}"})
        assert with_token.status_code == 302 and with_token.headers["location"] == "/ui/login"


async def test_login_sets_an_http_only_strict_cookie_and_the_page_carries_role_and_csrf(
    serve_console: ServeConsole,
) -> None:
    async with serve_console() as console, console.client() as client:
        wrong = await client.post("/ui/login", data={"token": "guess"})
        assert wrong.status_code == 401 and "wrong token" in wrong.text and "set-cookie" not in wrong.headers
        answer = await client.post("/ui/login", data={"token": console.token("watcher")})
        assert answer.status_code == 303 and answer.headers["location"] == "/ui/chat"
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith(f"{gateway.CONSOLE_COOKIE}=")
        flags = {part.strip().lower() for part in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/"} <= flags and "secure" not in flags  # plain http here
        page = await client.get("/ui/chat")
        assert page.status_code == 200
        assert '<body data-role="viewer"' in page.text and '<meta name="csrf-token" content="' in page.text
        assert page.headers["cache-control"] == "no-store"  # it holds the CSRF token
        # A viewer gets no button to send, stop or approve.
        assert 'data-action="send"' not in page.text and 'data-action="stop"' not in page.text
        assert (await client.get("/openapi.json")).status_code == 200  # the cookie is the viewer


async def test_behind_a_tls_proxy_the_cookie_is_marked_secure(serve_console: ServeConsole) -> None:
    async with serve_console(console={"secure_cookie": True}) as console, console.client() as client:
        answer = await client.post("/ui/login", data={"token": console.token("watcher")})
        assert answer.status_code == 303
        assert "secure" in {part.strip().lower() for part in answer.headers["set-cookie"].split(";")[1:]}


async def test_a_cookie_request_that_changes_something_needs_the_csrf_token_and_its_own_origin(
    serve_console: ServeConsole,
) -> None:
    async with serve_console() as console, console.client() as client:
        csrf = await console.login(client, "boss")
        json = {"Content-Type": "application/json"}
        forged = [
            {},  # no CSRF token
            {"X-CSRF-Token": "guessed"},
            {"X-CSRF-Token": csrf, "Origin": "https://attacker.example"},
        ]
        for headers in forged:
            refused = await client.post("/ui/logout", content="{}", headers={**json, **headers})
            assert refused.status_code == 403, headers
            assert (await client.get("/ui/tree")).status_code == 200  # still logged in: nothing changed
        # A cross-site form's POST (a simple request: no CSRF header, a form body, a foreign origin).
        form = await client.post("/v1/chat", data={"text": "hi"}, headers={"Origin": "https://attacker.example"})
        assert form.status_code == 403
        form = await client.post("/ui/logout", data={"x": "1"}, headers={"Sec-Fetch-Site": "cross-site"})
        assert form.status_code == 403
        assert (await client.get("/ui/tree")).status_code == 200
        done = await client.post(
            "/ui/logout", content="{}", headers={**json, "X-CSRF-Token": csrf, "Origin": console.origin}
        )
        assert done.status_code == 200 and done.json() == {"logged_out": True}
        assert (await client.get("/ui/tree")).status_code == 302
        assert (await client.get("/openapi.json")).status_code == 401


async def test_an_allowed_origin_may_call_with_a_token_but_not_with_the_console_cookie(
    serve_console: ServeConsole,
) -> None:
    """``allowed_origins`` lets another web app call the API with its own token; the
    console's session stays the console's (a same-site origin's request would carry it)."""
    friend = {"Origin": "http://localhost:3000"}
    async with serve_console(http={"allowed_origins": [friend["Origin"]]}) as console, console.client() as client:
        csrf = await console.login(client, "boss")
        assert (await client.get("/openapi.json", headers=friend)).status_code == 403
        logout = await client.post("/ui/logout", json={}, headers={**friend, "X-CSRF-Token": csrf})
        assert logout.status_code == 403
        assert (await client.get("/ui/tree")).status_code == 200  # still logged in
        async with console.client(Authorization=f"Bearer {console.token('boss')}", **friend) as app:
            assert (await app.get("/openapi.json")).status_code == 200


async def test_the_login_form_posts_from_the_gateways_own_origin_only(serve_console: ServeConsole) -> None:
    async with serve_console() as console, console.client() as client:
        token = {"token": console.token("boss")}
        for headers in (
            {"Origin": "https://attacker.example"},
            {"Origin": "null", "Sec-Fetch-Site": "cross-site"},  # a sandboxed frame elsewhere
            {"Sec-Fetch-Site": "cross-site"},
        ):
            refused = await client.post("/ui/login", data=token, headers=headers)
            assert refused.status_code == 403 and "set-cookie" not in refused.headers, headers
        # The login page is served with no-referrer, so a browser's form post says Origin: null.
        ours = await client.post("/ui/login", data=token, headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"})
        assert ours.status_code == 303


async def test_a_rotated_token_file_ends_the_old_tokens_session_and_admits_the_new_one(
    serve_console: ServeConsole,
) -> None:
    async with serve_console() as console, console.client() as client:
        await console.login(client, "ops")
        old = console.token("ops")
        console.tokens["ops"].write_text("ops-rotated-token")
        assert (await client.get("/ui/chat")).status_code == 302  # the session ended
        assert (await client.get("/openapi.json")).status_code == 401
        async with console.client() as other:
            stale = await other.get("/openapi.json", headers={"Authorization": f"Bearer {old}"})
            assert stale.status_code == 401
            assert (await other.post("/ui/login", data={"token": old})).status_code == 401
            await console.login(other, "ops")  # the new token, without a restart
            assert '<body data-role="operator"' in (await other.get("/ui/sessions")).text


async def test_a_login_ends_the_session_the_browser_had(serve_console: ServeConsole) -> None:
    async with serve_console() as console, console.client() as client:
        await console.login(client, "watcher")
        old = client.cookies[gateway.CONSOLE_COOKIE]
        await console.login(client, "boss")
        assert client.cookies[gateway.CONSOLE_COOKIE] != old
        async with console.client() as other:
            other.cookies.set(gateway.CONSOLE_COOKIE, old)
            assert (await other.get("/openapi.json")).status_code == 401


async def test_a_session_outlives_a_restart_of_the_gateways_app(serve_console: ServeConsole) -> None:
    """Killing the HTTP server from the tree page (or a reload restarting it) logs nobody out."""
    async with serve_console() as console, console.client() as client:
        csrf = await console.login(client, "boss")
        cookie = client.cookies[gateway.CONSOLE_COOKIE]
    async with serve_console() as again, again.client() as client:
        client.cookies.set(gateway.CONSOLE_COOKIE, cookie)
        page = await client.get("/ui/tree")
        assert page.status_code == 200 and f'content="{csrf}"' in page.text


async def test_a_sessions_role_is_the_current_configurations(serve_console: ServeConsole) -> None:
    """The cookie names no role: a reload that makes the token a viewer makes its session one."""
    async with serve_console() as console, console.client() as client:
        csrf = await console.login(client, "ops")
        cookie = client.cookies[gateway.CONSOLE_COOKIE]
    async with serve_console(roles={**ROLES, "ops": "viewer"}) as again, again.client() as client:
        client.cookies.set(gateway.CONSOLE_COOKIE, cookie)
        page = await client.get("/ui/chat")
        assert '<body data-role="viewer"' in page.text and 'data-action="send"' not in page.text
        chat = await client.post(
            "/v1/chat", json={"text": "hi"}, headers={"X-CSRF-Token": csrf, "Origin": again.origin}
        )
        assert (chat.status_code, chat.json()["error"]["code"]) == (403, "forbidden")


async def test_an_idle_session_ends(serve_console: ServeConsole) -> None:
    async with serve_console(console={"idle_minutes": 0.01}) as console, console.client() as client:
        await console.login(client, "boss")
        await trio.sleep(1.0)  # past the 0.6 s of idle minutes
        assert (await client.get("/ui/chat")).status_code == 302
        assert (await client.get("/openapi.json")).status_code == 401


async def test_with_no_token_configured_the_console_says_it_needs_one_and_logs_nobody_in(
    serve_console: ServeConsole,
) -> None:
    async with serve_console(tokens=False) as console, console.client() as client:
        page = await client.get("/ui/login")
        assert page.status_code == 200 and "needs one" in page.text and 'name="token"' not in page.text
        refused = await client.post("/ui/login", data={"token": "anything"})
        assert refused.status_code == 403 and "set-cookie" not in refused.headers
        assert (await client.get("/ui/chat")).status_code == 302


async def test_a_disabled_console_answers_404(serve_console: ServeConsole) -> None:
    async with serve_console(console={"enabled": False}) as console, console.client() as client:
        assert (await client.get("/ui/login")).status_code == 404
        refused = await client.post("/ui/login", data={"token": console.token("boss")})
        assert refused.status_code == 404 and "set-cookie" not in refused.headers


async def test_login_failures_are_rate_limited(serve_console: ServeConsole) -> None:
    async with serve_console(rate_limit={"requests": 3}) as console, console.client() as client:
        answers = [(await client.post("/ui/login", data={"token": "guess"})).status_code for _ in range(4)]
        assert answers == [401, 401, 401, 429]
        # Even the right token waits its turn.
        assert (await client.post("/ui/login", data={"token": console.token("boss")})).status_code == 429


async def test_every_response_carries_the_csp_and_headers(serve_console: ServeConsole) -> None:
    async with serve_console(http={"max_body_bytes": 1000}) as console, console.client() as client:
        await console.login(client, "boss")
        answers = [
            await client.get("/ui/login"),  # HTML
            await client.get("/ui/chat"),
            await client.get("/ui"),  # a redirect
            await client.get("/ui/static/console.js"),  # static files
            await client.get("/ui/static/console.css"),
            await client.get("/ui/static/nothing.js"),  # 404
            await client.get("/openapi.json"),  # JSON
            await client.post("/ui/logout", content="{}", headers={"Content-Type": "application/json"}),  # 403
            await client.post(
                "/v1/chat", content="x" * 5000, headers={"Content-Type": "application/json"}
            ),  # 413, early
        ]
        async with console.client() as stranger:
            answers.append(await stranger.get("/openapi.json"))  # 401
            answers.append(await stranger.get("/health"))
        assert [a.status_code for a in answers] == [200, 200, 302, 200, 200, 404, 200, 403, 413, 401, 200]
        for answer in answers:
            assert answer.headers["content-security-policy"] == CSP, answer.url
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["referrer-policy"] == "no-referrer"


def _node(tree: dict[str, Any], path: str) -> dict[str, Any]:
    for part in path.split("/"):
        tree = next(child for child in tree["children"] if child["id"] == part)
    return tree


async def test_a_viewers_session_cannot_chat_approve_or_kill_and_an_operators_cannot_kill(tmp_path: Path) -> None:
    """On a real daemon: each refusal is a 403, and nothing happened (no model call, no
    crash); the operator's session does chat, with the same cookie and CSRF token; a
    stream of the viewer's session ends when the session does."""
    files = {}
    for name in ROLES:
        files[name] = tmp_path / f"{name}.token"
        files[name].write_text(f"{name}-daemon-token-0f9e8d")
        files[name].chmod(0o600)
    extra = "".join(
        f'[gateway.auth.tokens.{name}]\ntoken = {{ file = "{path}" }}\nrole = "{ROLES[name]}"\n'
        for name, path in files.items()
    )
    async with scripted_model(repeat=Reply("hello, operator")) as model:
        config = write_config(tmp_path, model, autonomy="supervised", extra=extra)
        port = re.search(r"port = (\d+)", config.read_text())
        assert port is not None
        console = Console(f"http://127.0.0.1:{port.group(1)}", files)
        admin = {"Authorization": f"Bearer {console.token('boss')}"}
        victim = "core/cleaner"
        async with running_daemon(config, tmp_path / "home"), console.client() as viewer, console.client() as ops:
            async with console.client(**admin) as boss:
                before = _node((await boss.get("/v1/supervision/tree")).json(), victim)
            pages = {}
            for client, name in ((viewer, "watcher"), (ops, "ops")):
                pages[name] = {"X-CSRF-Token": await console.login(client, name), "Origin": console.origin}
                kill = await client.post("/v1/supervision/kill", json={"path": victim}, headers=pages[name])
                assert (kill.status_code, kill.json()["error"]["code"]) == (403, "forbidden"), name
            refused = [
                await viewer.post("/v1/chat", json={"text": "hi", "channel": "console"}, headers=pages["watcher"]),
                await viewer.post("/v1/sessions/0123/approval", json={"answer": "yes"}, headers=pages["watcher"]),
            ]
            assert [(r.status_code, r.json()["error"]["code"]) for r in refused] == [(403, "forbidden")] * 2
            assert model.requests == []
            async with console.client(**admin) as boss:
                after = _node((await boss.get("/v1/supervision/tree")).json(), victim)
            assert (after["pid"], after["restarts"]) == (before["pid"], before["restarts"])
            chat = {"text": "hi", "channel": "console"}
            async with ops.stream("POST", "/v1/chat", json=chat, headers=pages["ops"]) as turn:
                assert turn.status_code == 200
                assert "hello, operator" in (await turn.aread()).decode()
            # A live stream of the session ends with it (here at its logout).
            async with viewer.stream("GET", "/v1/supervision/events") as events:
                lines = events.aiter_lines()
                async for line in lines:
                    if line == "event: ready":
                        break
                assert (await viewer.post("/ui/logout", json={}, headers=pages["watcher"])).status_code == 200
                with trio.fail_after(30), contextlib.suppress(httpx.RemoteProtocolError):  # cut off mid-stream
                    async for _ in lines:
                        pass


def test_no_script_or_page_takes_a_connection_target_from_the_url() -> None:
    """Every fetch and stream goes to a fixed path of the page's own origin (CVE-2026-25253
    was a URL parameter naming where the UI sent its token): no script reads its URL, only
    console.js connects (its helpers take a path of this origin alone), and no page has
    inline script, inline handlers or inline style (the CSP forbids them)."""
    scripts = sorted((PACKAGE / "static").glob("*.js"))
    assert {p.name for p in scripts} >= {"console.js", "chat.js", "sessions.js", "tree.js"}
    # The page's address is read nowhere: `location` only ever goes to a fixed page, and
    # URLSearchParams only builds a query from fields (never parses one).
    location_uses = re.compile(r"\blocation\b(?!\.assign\(\"/ui/[a-z]*\"\))")
    url_reads = re.compile(
        r"URLSearchParams\s*\((?!\s*\{)|document\s*\.\s*(URL|baseURI|referrer|documentURI|location)"
        r"|\bhashchange\b|\bpopstate\b"
    )
    connects = re.compile(r"\b(fetch|EventSource|WebSocket|XMLHttpRequest|sendBeacon|importScripts)\b\s*\(")
    for script in scripts:
        text = script.read_text()
        code = re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE)  # not the comments
        assert not location_uses.search(code) and not url_reads.search(code), f"{script.name} reads the page's URL"
        assert "innerHTML" not in text and "eval(" not in text and "new Function" not in text, script.name
        if script.name != "console.js":
            assert not connects.search(text), f"{script.name} connects by itself, not through console.js"
    shared = (PACKAGE / "static" / "console.js").read_text()
    assert "fetch(ownPath(path)" in shared and "new EventSource(ownPath(path))" in shared
    for template in sorted((PACKAGE / "templates").glob("*.html")):
        text = template.read_text()
        assert not re.search(r'<script(?![^>]*\bsrc="/ui/static/)', text), f"{template.name}: inline script"
        assert not re.search(r"\son[a-z]+\s*=", text), f"{template.name}: an inline event handler"
        assert not re.search(r"\sstyle\s*=|<style", text), f"{template.name}: inline style"
        assert not re.search(r'(src|href|action)="(https?:)?//', text), f"{template.name}: another origin"
