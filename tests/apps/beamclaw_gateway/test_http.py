"""Auth, limits, health, metrics, the tree, and the OpenAPI document."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import trio

import beamclaw_gateway as gateway
from beamclaw_gateway import RateLimiter
from tests.support.model_server import Reply

from .conftest import RunGateway

CHAT = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}
JSON = {"Content-Type": "application/json"}


async def test_the_token_guards_every_route_but_health(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Reply("ok"), token="s3cret-gateway-token") as g:
        async with g.client(headers={"Authorization": ""}) as anonymous:
            assert (await anonymous.get("/health")).status_code == 200
            refused = await anonymous.get("/v1/models")
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            assert refused.json()["error"]["code"] == "unauthorized"
            assert (await anonymous.get("/v1/models", params={"token": "s3cret-gateway-token"})).status_code == 401
            wrong = await anonymous.get("/v1/models", headers={"Authorization": "Bearer s3cret-gateway-tokeX"})
            assert wrong.status_code == 401
            assert (await anonymous.post("/v1/chat/completions", json=CHAT)).status_code == 401
            # A refusal comes after the whole body is read, so a large one cannot wedge the connection.
            for _ in range(3):
                big = await anonymous.post("/v1/chat/completions", content=b"x" * 900_000, headers=JSON)
                assert big.status_code == 401
        async with g.client() as client:
            assert (await client.get("/v1/models")).status_code == 200
            assert (await client.post("/v1/chat/completions", json=CHAT)).json()["choices"][0]["message"][
                "content"
            ] == "ok"


def test_a_public_bind_needs_a_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BEAMCLAW_GATEWAY_TOKEN", raising=False)
    with pytest.raises(ValueError, match=r"set a gateway token \(BEAMCLAW_GATEWAY_TOKEN\) first, or bind 127\.0\.0\.1"):
        gateway.supervision_tree({"http": {"host": "0.0.0.0"}}, tmp_path)
    monkeypatch.setenv("BEAMCLAW_GATEWAY_TOKEN", "x" * 32)
    assert gateway.supervision_tree({"http": {"host": "0.0.0.0"}}, tmp_path).children


async def test_rate_limit_per_client_and_user(run_gateway: RunGateway) -> None:
    limits = {"requests": 3, "requests_per_address": 5, "window_seconds": 60}
    async with run_gateway(gateway_table={"rate_limit": limits}) as g, g.client() as c:
        assert [(await c.get("/v1/models")).status_code for _ in range(3)] == [200, 200, 200]
        limited = await c.get("/v1/models")
        assert limited.status_code == 429 and 1 <= int(limited.headers["retry-after"]) <= 60
        assert limited.json()["error"]["code"] == "rate_limited"
        # Another user has a budget of its own, within what the address has left (5 - 3).
        other = [(await c.get("/v1/models", headers={"X-User-Id": "other"})).status_code for _ in range(3)]
        assert other == [200, 200, 429]
        assert (await c.get("/health")).status_code == 200  # never limited


async def test_rotating_user_ids_does_not_dodge_the_limit(run_gateway: RunGateway) -> None:
    """The attack: a new X-User-Id (or body 'user') for every request, each a fresh per-user budget."""
    async with run_gateway(gateway_table={"rate_limit": {"requests": 20}}) as g, g.client() as c:
        statuses = [(await c.get("/v1/models", headers={"X-User-Id": f"u{i}"})).status_code for i in range(60)]
        assert statuses == [200] * 20 + [429] * 40


async def test_the_per_user_budget_follows_the_user_field_as_the_turn_does(run_gateway: RunGateway) -> None:
    """The user a chat completion speaks for is its body's ``user`` (the header only without one)."""
    limits = {"requests": 2, "requests_per_address": 100, "window_seconds": 60}
    async with run_gateway(repeat=Reply("ok"), gateway_table={"rate_limit": limits}) as g, g.client() as c:

        async def chat(user: str | None, header: str) -> int:
            body = {**CHAT, **({"user": user} if user else {})}
            return (await c.post("/v1/chat/completions", json=body, headers={"X-User-Id": header})).status_code

        # One header, three users in the body: each has a budget of its own.
        assert [await chat(user, "same-header") for user in ("ada", "bob", "cy")] == [200, 200, 200]
        # One body user behind rotating headers: one budget.
        assert [await chat("ada", f"h{i}") for i in range(2)] == [200, 429]
        # Without a body user, the header is the user; a bad body counts under it too.
        assert [await chat(None, "hdr") for _ in range(3)] == [200, 200, 429]
        refused = await c.post("/v1/chat/completions", content=b"{", headers={**JSON, "X-User-Id": "hdr"})
        assert refused.status_code == 429
        bad = await c.post("/v1/chat/completions", content=b"{", headers={**JSON, "X-User-Id": "fresh"})
        assert bad.status_code == 400 and "must be JSON" in bad.json()["error"]["message"]
    assert len(g.model.requests) == 6


def test_the_limiter_slides_and_prunes() -> None:
    limiter = RateLimiter(2, 10.0)
    assert limiter.check("a", 0.0) is None and limiter.check("a", 1.0) is None
    assert limiter.check("a", 2.0) == pytest.approx(8.0)
    assert limiter.check("a", 10.5) is None  # the first hit left the window
    limiter.check("b", 3.0)
    assert limiter.prune(14.0) == 1 and len(limiter) == 1


def test_the_limiter_tables_stay_bounded_evicting_the_least_recently_seen() -> None:
    limiter = RateLimiter(5, 60.0, max_keys=100)
    limiter.check("regular", 0.0)
    for i in range(10_000):
        limiter.check(f"rotated-{i}", 1.0)
        if i % 50 == 0:
            limiter.check("regular", 1.0)  # seen recently: kept
    assert len(limiter) == 100
    assert limiter.check("regular", 2.0) is not None  # kept at its limit, not evicted and reset


def test_every_address_has_its_own_budget_and_ipv6_counts_by_its_64() -> None:
    from beamclaw_gateway._rate_limit import ClientLimiter, address_key

    limiter = ClientLimiter.create(per_address=4, per_user=2, window=60.0, max_keys=50)
    assert [limiter.check("10.0.0.1", "ada", 0.0) is None for _ in range(3)] == [True, True, False]
    assert limiter.check("10.0.0.1", "bob", 0.0) is None
    assert limiter.check("10.0.0.1", "eve", 0.0) is None  # the 4th the address may send
    assert limiter.check("10.0.0.1", "mallory", 0.0) is not None
    assert limiter.check("10.0.0.2", "mallory", 0.0) is None  # another address
    # A refused request is counted nowhere: ada's refusal did not use the address's budget.
    assert len(limiter.by_user) == 4
    for host in range(8):
        limiter.check(f"2001:db8:1:2::{host:x}", f"u{host}", 0.0)
    assert address_key("2001:db8:1:2::7") == "2001:db8:1:2::/64" and address_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert limiter.check("2001:db8:1:2:ffff::1", "new", 0.0) is not None  # the /64 has used its 4
    for i in range(1000):
        limiter.check(f"2001:db8:{i:x}::1", "x", 1.0)
    assert len(limiter.by_address) <= 50 and len(limiter.by_user) <= 50


async def test_size_limits(run_gateway: RunGateway) -> None:
    table = {"http": {"max_body_bytes": 2000, "max_user_chars": 100}}
    async with run_gateway(Reply("ok"), gateway_table=table) as g, g.client() as c:
        big = {**CHAT, "messages": [{"role": "user", "content": "x" * 5000}]}
        response = await c.post("/v1/chat/completions", json=big)
        assert response.status_code == 413 and "larger than 2000 bytes" in response.json()["error"]["message"]
        long = {**CHAT, "messages": [{"role": "user", "content": "y" * 500}]}
        assert (await c.post("/v1/chat/completions", json=long)).status_code == 200
        sent = g.model.requests[0]["messages"][-1]["content"]
        assert sent.startswith("y" * 100 + "\n\n[The user's message was truncated: 400 more characters")


async def test_health_metrics_and_tree(run_gateway: RunGateway) -> None:
    async with run_gateway(Reply("ok")) as g, g.client() as c:
        await c.post("/v1/chat/completions", json=CHAT)
        health = (await c.get("/health")).json()
        assert health["status"] == "ok" and health["apps"]["gateway"] == "running"
        metrics = await c.get("/metrics")
        assert metrics.headers["content-type"].startswith("text/plain") and "beamclaw_turns_total" in metrics.text
        tree = (await c.get("/v1/supervision/tree")).json()
        assert tree["id"] == "beamclaw" and {child["id"] for child in tree["children"]} >= {"core", "gateway"}
        (alone,) = (await c.get("/v1/supervision/tree", params={"cluster": "1"})).json()["nodes"]  # one node
        assert alone["state"] == "alive" and alone["tree"]["id"] == "beamclaw"
        missing = await c.get("/nope")
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "invalid_request_error"


def test_the_openapi_document_lists_exactly_the_http_routes(tmp_path: Path) -> None:
    import beamclaw_control
    from beamclaw_gateway._app import create_app
    from beamclaw_gateway._config import GatewayConfig

    extra = beamclaw_control.blueprints()
    app = create_app(GatewayConfig(), tmp_path, extra)
    routes = {
        (re.sub(r"<(?:\w+:)?(\w+)>", r"<\1>", rule.rule), method.lower())
        for rule in app.url_map.iter_rules()
        if not rule.websocket and rule.endpoint != "static" and not rule.rule.startswith("/ui")
        for method in rule.methods or ()
        if method not in {"HEAD", "OPTIONS"}
    }
    documented = {
        (re.sub(r"\{(\w+)\}", r"<\1>", path), method)
        for path, item in gateway.openapi_document(extra)["paths"].items()
        for method in item
    }
    assert routes <= documented, routes - documented


async def _chunks(size: int) -> AsyncIterator[bytes]:
    """A body sent chunked (no Content-Length), so only the bytes themselves reveal its size."""
    for _ in range(size // 65536):
        yield b"z" * 65536


async def test_a_413_leaves_the_keep_alive_connection_usable(run_gateway: RunGateway) -> None:
    # A 413 sent while the body was still arriving used to leave hypercorn's connection
    # neither closed nor recycled, so the next request on it was never answered.
    table = {"http": {"max_body_bytes": 100_000}}
    async with run_gateway(repeat=Reply("ok"), gateway_table=table) as g:
        async with httpx.AsyncClient(base_url=g.url, timeout=10) as client:
            bodies: list[bytes | AsyncIterator[bytes]] = [b"x" * 3_000_000, _chunks(3_000_000), b"x" * 100_001]
            for body in bodies:
                refused = await client.post("/v1/chat/completions", content=body)
                assert refused.status_code == 413 and refused.json()["error"]["code"] == "too_large"
                assert (await client.get("/v1/models")).status_code == 200  # the same connection
        async with openai.AsyncOpenAI(base_url=f"{g.url}/v1", api_key="none", max_retries=0, timeout=10) as ai:
            huge = [{"role": "user", "content": "x" * 3_000_000}]
            for _ in range(3):
                with pytest.raises(openai.APIStatusError, match="larger than 100000 bytes") as refused_by:
                    await ai.chat.completions.create(model="default", messages=huge)  # type: ignore[arg-type]
                assert refused_by.value.status_code == 413
                reply = await ai.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}])
                assert reply.choices[0].message.content == "ok"


async def test_a_body_too_large_to_drain_is_refused_with_connection_close(tmp_path: Path) -> None:
    # Past the drain limit the 413 goes out at once and asks the server to close the
    # connection, instead of reading an endless body; the app never sees the request.
    from beamclaw_gateway._app import _BodyLimit

    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope)

    async def endless() -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        return {"type": "http.request", "body": b"z" * 65536, "more_body": True}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    limited = _BodyLimit(app, limit=1000, drain_bytes=1_000_000)
    with trio.fail_after(10):
        await limited({"type": "http", "headers": [(b"transfer-encoding", b"chunked")]}, endless, send)
    start, body = sent
    assert start["status"] == 413 and (b"connection", b"close") in start["headers"]
    assert b"larger than 1000 bytes" in body["body"] and not seen


async def test_an_idle_keep_alive_connection_is_closed(tmp_path: Path) -> None:
    # Hypercorn restarts its keep-alive timer inside the app's last send, which
    # quart-trio used to cancel: idle connections then stayed open for ever.
    from hypercorn.config import Config
    from hypercorn.trio import serve

    from beamclaw_gateway._app import create_app
    from beamclaw_gateway._config import GatewayConfig

    hyper = Config()
    hyper.bind, hyper.accesslog, hyper.errorlog, hyper.keep_alive_timeout = ["127.0.0.1:0"], None, None, 0.2
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, create_app(GatewayConfig(), tmp_path), hyper)
        host, port = binds[0].removeprefix("http://").rsplit(":", 1)
        async with await trio.open_tcp_stream(host, int(port)) as stream:
            await stream.send_all(b"GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n")
            answer = b""
            with trio.fail_after(10):  # a guard against hanging, not a timing assertion
                while chunk := await stream.receive_some(65536):
                    answer += chunk
        assert answer.startswith(b"HTTP/1.1 404") and b'"invalid_request_error"' in answer  # then closed
        nursery.cancel_scope.cancel()


async def test_opaque_user_ids_such_as_uuids_are_fine(run_gateway: RunGateway) -> None:
    """A regression the outside attack found: ``api:<32 hex digits>`` read whole looked like a credential."""
    async with run_gateway(repeat=Reply("ok")) as g, g.client() as c:
        for user in ("d7b8dda30f3c413992d774ff1a1f9a1c", "d7b8dda3-0f3c-4139-92d7-74ff1a1f9a1c", "abcdef0123456789"):
            answer = await c.post("/v1/chat/completions", json={**CHAT, "user": user})
            assert answer.status_code == 200, (user, answer.text)
