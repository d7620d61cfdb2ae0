"""A web page cannot drive the gateway: no cross-site request (CSRF), no DNS rebinding.

The attacks, as a browser would send them to a gateway with no token on loopback:
a cross-site "simple request" (a form or fetch with ``Content-Type: text/plain``, sent
without a preflight) that runs an agent turn, and a page on a name rebound to
127.0.0.1 that reads the replies (its requests carry the attacker's ``Host``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from trio_websocket import open_websocket_url

import beamclaw_gateway as gateway
from beamclaw_gateway._browser_guard import BrowserGuard, json_media_type_problem
from tests.support.model_server import Reply

from .conftest import Gateway, RunGateway

CHAT = {"model": "default", "messages": [{"role": "user", "content": "run a turn"}]}
A2A = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {"message": {"messageId": "1", "role": "ROLE_USER", "parts": [{"text": "run a turn"}]}},
}
WS_UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


def _port(g: Gateway) -> int:
    return int(g.url.rsplit(":", 1)[1])


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/a2a"])
@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None, "application/jsonx"],
)
async def test_a_cross_site_simple_request_runs_no_turn(
    run_gateway: RunGateway, path: str, content_type: str | None
) -> None:
    body = json.dumps(CHAT if path.startswith("/v1") else A2A).encode()
    async with run_gateway(repeat=Reply("a turn ran")) as g, g.client() as http:
        headers = {"Content-Type": content_type} if content_type else {}
        # What a form on another site sends (no Origin from some browsers, so not relied on).
        refused = await http.post(path, content=body, headers={**headers, "Sec-Fetch-Site": "same-site"})
        assert refused.status_code == 415
        error = refused.json()["error"]
        assert error["code"] == "unsupported_media_type" and "application/json" in error["message"]
        assert g.model.count == 0


async def test_a_post_without_a_body_needs_no_content_type_and_one_with_a_body_does(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Reply("a turn ran")) as g, g.client() as http:
        empty = await http.post("/v1/chat/completions")
        assert empty.status_code == 400, empty.text  # read, and refused as no chat request
        assert empty.json()["error"]["code"] != "unsupported_media_type"
        untyped = await http.post("/v1/chat/completions", content=json.dumps(CHAT).encode())
        assert untyped.status_code == 415
        assert g.model.count == 0


async def test_json_with_a_utf8_charset_is_accepted_and_another_is_not(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Reply("ok")) as g, g.client() as http:
        body = json.dumps(CHAT).encode()
        for accepted in ["application/json", "application/json; charset=utf-8", 'Application/JSON;charset="UTF-8"']:
            answer = await http.post("/v1/chat/completions", content=body, headers={"Content-Type": accepted})
            assert answer.status_code == 200, accepted
        refused = await http.post(
            "/v1/chat/completions", content=body, headers={"Content-Type": "application/json; charset=latin-1"}
        )
        assert refused.status_code == 415 and "JSON is UTF-8" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/health"),
        ("GET", "/v1/models"),
        ("GET", "/v1/supervision/tree"),
        ("GET", "/.well-known/agent-card.json"),
        ("GET", "/openapi.json"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/a2a"),
        ("POST", "/webhook/telegram"),
    ],
)
async def test_a_rebound_name_is_refused_on_every_route(run_gateway: RunGateway, method: str, path: str) -> None:
    """A page on rebind.attacker.example, now resolving to 127.0.0.1, is same-origin: its Host gives it away."""
    async with run_gateway(repeat=Reply("secret reply")) as g, g.client() as http:
        host = f"rebind.attacker.example:{_port(g)}"
        body = CHAT if path.startswith("/v1") else A2A
        answer = await http.request(method, path, json=body if method == "POST" else None, headers={"Host": host})
        assert answer.status_code == 421
        error = answer.json()["error"]
        assert error["code"] == "host_not_allowed" and "gateway.http.allowed_hosts" in error["message"]
        assert "secret reply" not in answer.text and g.model.count == 0


async def test_the_websocket_handshake_checks_the_host_too(run_gateway: RunGateway) -> None:
    async with run_gateway() as g, g.client() as http:
        rebound = await http.get("/ws", headers={**WS_UPGRADE, "Host": f"rebind.attacker.example:{_port(g)}"})
        assert rebound.status_code == 421 and rebound.json()["error"]["code"] == "host_not_allowed"
        cross = await http.get("/ws", headers={**WS_UPGRADE, "Origin": "https://evil.example"})
        assert cross.status_code == 403
        # A client that is no browser (no Origin) still connects.
        async with open_websocket_url(g.url.replace("http", "ws") + "/ws") as ws:
            await ws.send_message(json.dumps({"type": "nonsense"}))
            assert json.loads(await ws.get_message())["type"] == "error"


async def test_the_loopback_names_and_the_configured_hosts_are_served(run_gateway: RunGateway) -> None:
    table = {"http": {"allowed_hosts": ["box.lan", "api.example.org:8443"]}}
    async with run_gateway(gateway_table=table) as g, g.client() as http:
        port = _port(g)
        served = [
            "127.0.0.1", f"127.0.0.1:{port}", "localhost", f"LocalHost.:{port}", "[::1]", f"[::1]:{port}",
            f"[0:0:0:0:0:0:0:1]:{port}", "box.lan", "box.lan:80", "api.example.org:8443",
        ]  # fmt: skip
        for host in served:
            assert (await http.get("/v1/models", headers={"Host": host})).status_code == 200, host
        refused = [
            "api.example.org", "api.example.org:443", "127.0.0.2", "localhost.attacker.example", "box.lan.evil.example",
            "", "[::1", "::1", "127.0.0.1:0", "127.0.0.1:99999", "local host", "xn--lcalhost-9za",
        ]  # fmt: skip
        for host in refused:
            assert (await http.get("/v1/models", headers={"Host": host})).status_code == 421, host


async def test_an_origin_must_be_allowed_and_cross_site_needs_one(run_gateway: RunGateway) -> None:
    table = {"http": {"allowed_origins": ["https://app.example.org"]}}
    async with run_gateway(repeat=Reply("ok"), gateway_table=table) as g, g.client() as http:
        evil = await http.post("/v1/chat/completions", json=CHAT, headers={"Origin": "https://evil.example"})
        assert evil.status_code == 403 and evil.json()["error"]["code"] == "origin_not_allowed"
        assert (await http.post("/a2a", json=A2A, headers={"Origin": "null"})).status_code == 403
        # A no-cors request (an <img>, a <script>) carries no Origin, but says it is cross-site.
        no_cors = await http.get("/v1/models", headers={"Sec-Fetch-Site": "cross-site"})
        assert no_cors.status_code == 403
        assert g.model.count == 0
        allowed = {"Origin": "HTTPS://app.example.org", "Sec-Fetch-Site": "cross-site"}
        assert (await http.post("/v1/chat/completions", json=CHAT, headers=allowed)).status_code == 200
        for site in ("same-origin", "none"):  # typed into the address bar, or the gateway's own page
            assert (await http.get("/v1/models", headers={"Sec-Fetch-Site": site})).status_code == 200


async def test_the_official_clients_pass_unchanged(run_gateway: RunGateway) -> None:
    """httpx and openai send a loopback Host and JSON, with no Origin (a2a-sdk: see test_a2a_routes)."""
    import openai

    async with run_gateway(Reply("hello")) as g:
        async with openai.AsyncOpenAI(base_url=f"{g.url}/v1", api_key="x", max_retries=0) as client:
            reply = await client.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}])
            assert reply.choices[0].message.content == "hello"
        async with httpx.AsyncClient(base_url=g.url.replace("127.0.0.1", "localhost")) as http:
            assert (await http.get("/health")).status_code == 200


# --- the rules, without a server ---------------------------------------------------------


def _guard(**http: Any) -> BrowserGuard:
    return BrowserGuard.from_config(gateway.parse_gateway_config({"http": http}))


def test_a_wildcard_bind_serves_addresses_but_only_listed_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEAMCLAW_GATEWAY_TOKEN", "t" * 32)
    wildcard = _guard(host="0.0.0.0", allowed_hosts=["gw.example.org"])
    assert wildcard.host_allowed("192.168.1.5:18800") and wildcard.host_allowed("[fe80::1]:18800")
    assert wildcard.host_allowed("gw.example.org") and not wildcard.host_allowed("rebind.example:18800")
    bound = _guard(host="10.0.0.7")
    assert bound.host_allowed("10.0.0.7:18800") and not bound.host_allowed("10.0.0.8:18800")
    assert _guard(host="::1").host_allowed("[::1]:1")


def test_the_telegram_webhook_host_is_served_in_webhook_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "4242:" + "A" * 35)
    table = {
        "channels": {
            "telegram": {
                "enabled": True,
                "mode": "webhook",
                "webhook_url": "https://bot.example.org/webhook/telegram",
                "webhook_secret": {"env": "X"},
            }
        }
    }
    guard = BrowserGuard.from_config(gateway.parse_gateway_config(table))
    assert guard.host_allowed("bot.example.org") and not _guard().host_allowed("bot.example.org")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("allowed_hosts", ["http://box.lan"], "no scheme"),
        ("allowed_hosts", ["::1"], "IPv6 address goes in brackets"),
        ("allowed_hosts", ["box.lan:http"], "not a TCP port"),
        ("allowed_hosts", ["bad host"], "not a host name"),
        ("allowed_origins", ["https://app.example.org/"], "no trailing '/'"),
        ("allowed_origins", ["app.example.org"], "scheme://host"),
    ],
)
def test_a_bad_host_or_origin_in_the_config_is_a_clear_error(
    tmp_path: Path, key: str, value: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=rf"gateway\.http\.{key}\[0\] = .*{message}"):
        gateway.supervision_tree({"http": {key: value}}, tmp_path)


def test_the_media_type_rule() -> None:
    assert json_media_type_problem("application/json; charset=utf-8") is None
    assert json_media_type_problem("application/json; boundary=x") is None
    problem = json_media_type_problem("text/plain;charset=UTF-8")
    assert problem is not None and "'text/plain' is not accepted" in problem
