"""`curl` reaches public addresses only, on every redirect hop; credentials come from the environment."""

from __future__ import annotations

import httpx
import pytest

from beamclaw_base import Secret
from beamclaw_tools import Credential, CurlTool, ToolContext, ToolSession, is_public, run_tool
from beamclaw_tools._curl import parse_origin, url_origin
from tests.support.asgi_server import Receive, Scope, Send, respond, serve_asgi


def _server(redirect_to: str | None = None):  # type: ignore[no-untyped-def]
    seen: list[dict[str, str]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        if redirect_to is not None and scope["path"] == "/go":
            await respond(send, 302, "", {"location": redirect_to})
        else:
            await respond(send, 200, f"hello from {scope['path']}", {"content-type": "text/plain"})

    return app, seen


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
     "::1", "fd00:ec2::254", "fe80::1", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "224.0.0.1"],
)  # fmt: skip
def test_non_public_addresses(address: str) -> None:
    assert not is_public(address)


@pytest.mark.parametrize("address", ["1.1.1.1", "93.184.216.34", "2606:4700:4700::1111"])
def test_public_addresses(address: str) -> None:
    assert is_public(address)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/",
        "http://localhost:{port}/",
        "http://2130706433:{port}/",
        "http://0x7f.1:{port}/",
        "http://[::ffff:127.0.0.1]:{port}/",
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
    ],
)
async def test_loopback_private_and_metadata_urls_are_blocked(
    context: ToolContext, session: ToolSession, url: str
) -> None:
    app, seen = _server()
    async with serve_asgi(app) as base:
        port = base.rsplit(":", 1)[1]
        result = await run_tool(CurlTool(), {"url": url.format(port=port)}, session, context)
    assert result.is_error and ("blocked" in result.text or "only http and https" in result.text), result.text
    assert seen == []


async def test_an_allowed_host_is_reached(context: ToolContext, session: ToolSession) -> None:
    app, _ = _server()
    async with serve_asgi(app) as base:
        tool = CurlTool(allowed_hosts=frozenset({base.removeprefix("http://")}))
        result = await run_tool(tool, {"url": f"{base}/page"}, session, context)
    assert result.text == "HTTP 200 OK\ncontent-type: text/plain\n\nhello from /page"


async def test_a_redirect_to_a_blocked_address_is_refused(context: ToolContext, session: ToolSession) -> None:
    inner, inner_seen = _server()
    async with serve_asgi(inner) as hidden:
        outer, _ = _server(redirect_to=f"{hidden}/secret")
        async with serve_asgi(outer) as base:
            tool = CurlTool(allowed_hosts=frozenset({base.removeprefix("http://")}))
            result = await run_tool(tool, {"url": f"{base}/go"}, session, context)
            metadata_app, _ = _server(redirect_to="http://169.254.169.254/latest/meta-data/")
            async with serve_asgi(metadata_app) as base2:
                tool2 = CurlTool(allowed_hosts=frozenset({base2.removeprefix("http://")}))
                result2 = await run_tool(tool2, {"url": f"{base2}/go"}, session, context)
    assert result.is_error and "blocked" in result.text and inner_seen == []
    assert result2.is_error and "169.254.169.254" in result2.text


async def test_secret_headers_cannot_come_from_arguments(context: ToolContext, session: ToolSession) -> None:
    args = {"url": "https://example.com/", "headers": {"Authorization": "Bearer sk-stolen"}}
    result = await run_tool(CurlTool(), args, session, context)
    assert result.is_error and "may not be set in tool arguments" in result.text


async def test_a_credential_comes_from_the_environment_for_its_origins_only(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_CURL_TOKEN", "tok-1234567890")
    app, seen = _server()
    async with serve_asgi(app) as base:
        port = base.rsplit(":", 1)[1]
        credential = Credential(Secret("TEST_CURL_TOKEN"), frozenset({f"http://127.0.0.1:{port}"}))
        tool = CurlTool(allowed_hosts=frozenset({"127.0.0.1", "localhost"}), credentials={"svc": credential})
        ok = await run_tool(tool, {"url": f"{base}/api", "auth": "svc"}, session, context)
        other_host = await run_tool(tool, {"url": f"http://localhost:{port}/", "auth": "svc"}, session, context)
        unknown = await run_tool(tool, {"url": f"{base}/api", "auth": "nope"}, session, context)
        # A bare host is https on 443: the credential never goes over plain http unless configured so.
        bare = Credential(Secret("TEST_CURL_TOKEN"), frozenset({"127.0.0.1"}))
        https_only = CurlTool(allowed_hosts=frozenset({"127.0.0.1"}), credentials={"svc": bare})
        plain = await run_tool(https_only, {"url": f"{base}/api", "auth": "svc"}, session, context)
    assert not ok.is_error and seen[0]["authorization"] == "Bearer tok-1234567890"
    allowed = f"may only be sent to http://127.0.0.1:{port}, not http://localhost:{port}"
    assert other_host.is_error and allowed in other_host.text
    assert unknown.is_error and "unknown credential 'nope' (known: svc)" in unknown.text
    assert plain.is_error and f"may only be sent to https://127.0.0.1:443, not http://127.0.0.1:{port}" in plain.text
    assert len(seen) == 1


async def test_a_credential_does_not_follow_a_redirect_to_another_origin(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_CURL_TOKEN", "tok-1234567890")
    other_app, other_seen = _server()
    async with serve_asgi(other_app) as other:  # the same host, another port
        app, seen = _server(redirect_to=f"{other}/landing")
        async with serve_asgi(app) as base:
            credential = Credential(Secret("TEST_CURL_TOKEN"), frozenset({base, other}))  # both listed, even
            tool = CurlTool(allowed_hosts=frozenset({"127.0.0.1"}), credentials={"svc": credential})
            result = await run_tool(tool, {"url": f"{base}/go", "auth": "svc"}, session, context)
    assert result.text.endswith("hello from /landing")
    assert seen[0]["authorization"] == "Bearer tok-1234567890"
    assert len(other_seen) == 1 and "authorization" not in other_seen[0]
    assert "tok-1234567890" not in str(other_seen)


async def test_a_credential_follows_a_redirect_within_its_origin(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_CURL_TOKEN", "tok-1234567890")
    app, seen = _server(redirect_to="/landing")
    async with serve_asgi(app) as base:
        credential = Credential(Secret("TEST_CURL_TOKEN"), frozenset({base}))
        tool = CurlTool(allowed_hosts=frozenset({"127.0.0.1"}), credentials={"svc": credential})
        result = await run_tool(tool, {"url": f"{base}/go", "auth": "svc"}, session, context)
    assert result.text.endswith("hello from /landing")
    assert [h.get("authorization") for h in seen] == ["Bearer tok-1234567890"] * 2


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://API.example.com/x", ("https", "api.example.com", 443)),
        ("https://api.example.com:443/", ("https", "api.example.com", 443)),
        ("http://api.example.com/", ("http", "api.example.com", 80)),
        ("https://api.example.com:8443/", ("https", "api.example.com", 8443)),
        ("http://[::1]:8080/", ("http", "::1", 8080)),
    ],
)
def test_origins(url: str, origin: tuple[str, str, int]) -> None:
    assert url_origin(httpx.URL(url)) == origin


@pytest.mark.parametrize("entry", ["api.example.com/path", "ftp://api.example.com", "user@api.example.com", "", "a?b"])
def test_a_credential_host_that_is_not_an_origin_is_a_config_error(entry: str) -> None:
    with pytest.raises(ValueError, match="credential host"):
        parse_origin(entry)
