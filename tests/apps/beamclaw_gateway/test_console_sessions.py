"""The console's sessions on their own: a clock the test moves, token files it rewrites."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from beamclaw_gateway import CONSOLE_COOKIE, ConsoleSessions, LoginRefused, parse_gateway_config, principals_of
from beamclaw_gateway import _console_sessions as console_sessions
from beamclaw_gateway._browser_guard import Refusal, own_origin
from beamclaw_gateway._config import ConsoleConfig
from beamclaw_gateway._console_sessions import SessionBound


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def _sessions(tmp_path: Path, clock: Clock, **console: Any) -> tuple[ConsoleSessions, Path]:
    token = tmp_path / "ops.token"
    token.write_text("ops-token-4d2c")
    token.chmod(0o600)
    table = {"auth": {"tokens": {"ops": {"token": {"file": str(token)}, "role": "operator"}}}}
    principals = principals_of(parse_gateway_config(table))
    return ConsoleSessions(principals, ConsoleConfig(**console), clock=clock), token


def test_a_session_ends_after_its_idle_minutes_and_each_request_restarts_them(tmp_path: Path) -> None:
    clock = Clock()
    sessions, _ = _sessions(tmp_path, clock, idle_minutes=10)
    cookie, _ = sessions.login("ops-token-4d2c")
    clock.now += 9 * 60
    assert sessions.find(cookie) is not None  # used: ten more minutes from now
    clock.now += 9 * 60
    assert sessions.find(cookie) is not None
    clock.now += 10 * 60 + 1
    assert sessions.find(cookie) is None
    clock.now = 0
    assert sessions.find(cookie) is None  # gone for good


def test_a_changed_token_ends_the_session_and_the_old_token_logs_in_no_more(tmp_path: Path) -> None:
    sessions, token = _sessions(tmp_path, Clock())
    cookie, session = sessions.login("  ops-token-4d2c\n")  # pasted with blanks
    assert session.principal.name == "ops" and session.csrf
    token.write_text("ops-token-rotated")
    assert sessions.find(cookie) is None
    with pytest.raises(LoginRefused, match="wrong token"):
        sessions.login("ops-token-4d2c")
    assert sessions.find(sessions.login("ops-token-rotated")[0]) is not None


def test_a_change_needs_the_csrf_token_and_the_own_origin(tmp_path: Path) -> None:
    sessions, _ = _sessions(tmp_path, Clock())
    cookie, session = sessions.login("ops-token-4d2c")
    own = {"Host": "127.0.0.1:18800", "Origin": "http://127.0.0.1:18800"}
    assert sessions.visit(cookie, "GET", {"Host": "127.0.0.1:18800"}) is session
    assert sessions.visit(cookie, "POST", {**own, "X-CSRF-Token": session.csrf}) is session
    for method, headers in (
        ("POST", own),
        ("DELETE", {**own, "X-CSRF-Token": session.csrf[:-1]}),
        ("POST", {**own, "X-CSRF-Token": session.csrf, "Origin": "http://localhost:18800"}),
        ("GET", {**own, "Origin": "https://attacker.example"}),
    ):
        refused = sessions.visit(cookie, method, headers)
        assert isinstance(refused, Refusal) and refused.status == 403, (method, headers)
    assert sessions.visit("not-a-session", "POST", own) is None


def test_logging_in_needs_a_token_configured_and_the_console_enabled(tmp_path: Path) -> None:
    open_mode = ConsoleSessions(principals_of(parse_gateway_config({})), ConsoleConfig())
    with pytest.raises(LoginRefused, match="needs one"):
        open_mode.login("anything")
    sessions, _ = _sessions(tmp_path, Clock(), enabled=False)
    with pytest.raises(LoginRefused, match="disabled"):
        sessions.login("ops-token-4d2c")


@pytest.mark.parametrize(
    ("headers", "own"),
    [
        ({"Host": "127.0.0.1:18800"}, True),
        ({"Host": "127.0.0.1:18800", "Origin": "http://127.0.0.1:18800"}, True),
        ({"Host": "Gateway.Example", "Origin": "https://gateway.example"}, True),
        ({"Host": "127.0.0.1:18800", "Origin": "http://127.0.0.1:18801"}, False),
        ({"Host": "127.0.0.1:18800", "Origin": "http://127.0.0.1"}, False),
        ({"Host": "127.0.0.1:18800", "Origin": "file://127.0.0.1:18800"}, False),
        ({"Host": "127.0.0.1:18800", "Origin": "null"}, False),
        ({"Host": "127.0.0.1:18800", "Origin": "null", "Sec-Fetch-Site": "same-origin"}, True),
        ({"Host": "127.0.0.1:18800", "Origin": "null", "Sec-Fetch-Site": "cross-site"}, False),
        ({"Origin": "http://127.0.0.1:18800"}, False),
    ],
)
def test_own_origin(headers: dict[str, str], own: bool) -> None:
    assert own_origin(headers) is own


def test_a_cookie_request_another_site_made_the_browser_send_is_refused(tmp_path: Path) -> None:
    """Browsers keep no cookies apart by port: a page of another server on 127.0.0.1 is
    "same-site", and its requests here carry the cookie, reads included."""
    sessions, _ = _sessions(tmp_path, Clock())
    cookie, session = sessions.login("ops-token-4d2c")
    host = {"Host": "127.0.0.1:18800"}
    for site in ("same-site", "cross-site"):
        refused = sessions.visit(cookie, "GET", {**host, "Sec-Fetch-Site": site})
        assert isinstance(refused, Refusal) and refused.status == 403, site
    for site in ("same-origin", "none"):  # the console's own request; a URL the user typed
        assert sessions.visit(cookie, "GET", {**host, "Sec-Fetch-Site": site}) is session


async def _stream(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An endless response, as the live log is."""
    await send({"type": "http.response.start", "status": 200, "headers": []})
    while True:
        await send({"type": "http.response.body", "body": b".", "more_body": True})
        await trio.sleep(0.05)


async def _until_cut(bound: SessionBound, headers: list[tuple[bytes, bytes]], end: Callable[[], None]) -> int:
    """Serve the endless response through *bound*, call *end* once it streams; the chunks
    sent before the middleware cut it (a hang fails the test)."""
    sent = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if len(sent) == 3:
            end()

    scope = {"type": "http", "method": "GET", "path": "/v1/logs", "headers": headers}
    with trio.fail_after(60):
        await bound(scope, None, send)
    return len(sent)


async def test_a_stream_opened_with_a_token_ends_when_the_token_is_rotated(tmp_path: Path) -> None:
    sessions, token = _sessions(tmp_path, Clock())
    bound = SessionBound(_stream, sessions)
    sent = await _until_cut(bound, [(b"authorization", b"Bearer ops-token-4d2c")], lambda: token.write_text("new"))
    assert sent >= 3


async def test_a_cookie_stream_ends_at_logout_whatever_other_cookie_headers_it_sends(tmp_path: Path) -> None:
    sessions, _ = _sessions(tmp_path, Clock())
    cookie, _ = sessions.login("ops-token-4d2c")
    headers = [(b"cookie", f"{CONSOLE_COOKIE}={cookie}".encode()), (b"cookie", b"theme=dark")]
    sent = await _until_cut(SessionBound(_stream, sessions), headers, lambda: sessions.logout(cookie))
    assert sent >= 3


async def _answered(sessions: ConsoleSessions, rotate: Path | None) -> list[dict[str, Any]]:
    """What a Bearer request through `SessionBound` sends: an answer of known length made
    in 0.2 s (more than the watch's period here), its token rewritten meanwhile if *rotate*."""

    async def answer(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if rotate is not None:
            rotate.write_text("new")  # rotated while the answer is being made (a turn)
        await trio.sleep(0.2)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok", "more_body": False})

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [(b"authorization", b"Bearer ops-token-4d2c")],
    }
    await SessionBound(answer, sessions)(scope, None, send)
    return sent


async def test_a_response_of_known_length_comes_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console_sessions, "_WATCH_SECONDS", 0.01)
    sessions, _ = _sessions(tmp_path, Clock())
    sent = await _answered(sessions, None)
    assert [(message["type"], message.get("status"), message.get("body")) for message in sent] == [
        ("http.response.start", 200, None),
        ("http.response.body", None, b"ok"),
    ]


async def test_an_answer_made_while_its_token_was_rotated_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(console_sessions, "_WATCH_SECONDS", 0.01)
    sessions, token = _sessions(tmp_path, Clock())
    sent = await _answered(sessions, token)
    assert [message["type"] for message in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 401
    assert json.loads(sent[1]["body"])["error"]["code"] == "unauthorized"


def test_one_principal_logging_in_again_and_again_ends_only_its_own_sessions(tmp_path: Path) -> None:
    token = tmp_path / "boss.token"
    token.write_text("boss-token-77aa")
    token.chmod(0o600)
    clock = Clock()
    sessions, _ = _sessions(tmp_path, clock)
    table = {"tokens": {"boss": {"token": {"file": str(token)}, "role": "admin"}}}
    sessions.principals.tokens.extend(principals_of(parse_gateway_config({"auth": table})).tokens)
    boss, _ = sessions.login("boss-token-77aa")
    first, _ = sessions.login("ops-token-4d2c")
    for _ in range(2000):  # a viewer or operator token trying to log the admin out
        clock.now += 0.001
        last, _ = sessions.login("ops-token-4d2c")
    assert sessions.find(boss) is not None
    assert sessions.find(last) is not None and sessions.find(first) is None  # its own oldest went
