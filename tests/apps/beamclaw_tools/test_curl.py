"""`curl` reaches public addresses only, on every redirect hop; credentials come from the environment."""

from __future__ import annotations

import pytest

from beamclaw_tools import Credential, CurlTool, Secret, ToolContext, ToolSession, is_public, run_tool
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


async def test_a_credential_comes_from_the_environment_for_its_hosts_only(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_CURL_TOKEN", "tok-1234567890")
    app, seen = _server()
    async with serve_asgi(app) as base:
        credential = Credential(Secret("TEST_CURL_TOKEN"), frozenset({"127.0.0.1"}))
        tool = CurlTool(allowed_hosts=frozenset({"127.0.0.1"}), credentials={"svc": credential})
        ok = await run_tool(tool, {"url": f"{base}/api", "auth": "svc"}, session, context)
        other = CurlTool(allowed_hosts=frozenset({"localhost"}), credentials={"svc": credential})
        port = base.rsplit(":", 1)[1]
        refused = await run_tool(other, {"url": f"http://localhost:{port}/", "auth": "svc"}, session, context)
        unknown = await run_tool(tool, {"url": f"{base}/api", "auth": "nope"}, session, context)
    assert not ok.is_error and seen[0]["authorization"] == "Bearer tok-1234567890"
    assert refused.is_error and "may only be sent to 127.0.0.1" in refused.text and len(seen) == 1
    assert unknown.is_error and "unknown credential 'nope' (known: svc)" in unknown.text
