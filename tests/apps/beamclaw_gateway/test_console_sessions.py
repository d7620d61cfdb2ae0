"""The console's sessions on their own: a clock the test moves, token files it rewrites."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from beamclaw_gateway import ConsoleSessions, LoginRefused, parse_gateway_config, principals_of
from beamclaw_gateway._browser_guard import Refusal, own_origin
from beamclaw_gateway._config import ConsoleConfig


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
