"""The `curl` tool: HTTP requests to public addresses, credentials only from the environment.

Every hop of a redirect chain passes the SSRF guard again. A credential is named by
the model (``auth: "github"``) but its value comes from the environment, and it is bound
to origins, never to bare host names: an origin is a scheme, a host and a port
(``https://api.github.com:443``). The first request must go to one of the credential's
origins, and the credential goes with a redirect hop only when the hop has the very
origin of that first request: a redirect to another port of the same host (a debug
server), to plain http, or to another host, even one the credential lists, goes without
it.
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

import attrs
import httpx

from beamclaw_base import Secret

from ._net_guard import pinned_url
from ._tool import Autonomy, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSession, object_schema

_SECRET_HEADERS: Final = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS: Final = 5


#: (scheme, host, port): what a credential is bound to.
Origin: TypeAlias = tuple[str, str, int]


def url_origin(url: httpx.URL) -> Origin:
    """The origin of *url*: its scheme and host in lower case, and its port (or the scheme's)."""
    scheme = url.scheme.lower()
    return scheme, url.host.lower(), url.port or (443 if scheme == "https" else 80)


def parse_origin(entry: str) -> Origin:
    """The origin a ``hosts`` entry names: ``https://host[:port]``, ``http://host[:port]``, or
    ``host[:port]`` (which means https: a credential goes over plain http only when the
    entry says so). Raises ValueError for anything else (a path, a user, another scheme)."""
    text = entry if "://" in entry else f"https://{entry}"
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise ValueError(f"credential host {entry!r} is not a host or an origin: {exc}") from None
    if url.scheme not in {"http", "https"} or not url.host or url.userinfo or url.path not in {"", "/"}:
        raise ValueError(f"credential host {entry!r} must be written host, host:port or http(s)://host[:port]")
    if url.query or url.fragment:
        raise ValueError(f"credential host {entry!r} must be written host, host:port or http(s)://host[:port]")
    return url_origin(url)


def show_origin(origin: Origin) -> str:
    scheme, host, port = origin
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def _origins(hosts: frozenset[str]) -> frozenset[Origin]:
    return frozenset(parse_origin(entry) for entry in hosts)


@attrs.frozen
class Credential:
    """``[tools.curl.credentials.NAME]``: a header filled from an environment variable,
    sent only to the listed origins (see `parse_origin`: ``"api.github.com"`` is
    ``https://api.github.com:443``), and never across a redirect to another origin."""

    api_key: Secret
    hosts: frozenset[str]
    header: str = "Authorization"
    prefix: str = "Bearer "
    origins: frozenset[Origin] = attrs.field(init=False)

    @origins.default
    def _parse_hosts(self) -> frozenset[Origin]:
        return _origins(self.hosts)


@attrs.define
class CurlTool:
    timeout: float = 20.0
    output_limit: int = 16_000
    max_body_bytes: int = 1_000_000
    allowed_hosts: frozenset[str] = frozenset()
    credentials: dict[str, Credential] = attrs.field(factory=dict)
    requires_approval: bool = True
    min_autonomy: Autonomy = Autonomy.SUPERVISED

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "curl",
            "Make an HTTP request to a public URL and return the status, headers and body.",
            object_schema(
                {
                    "url": {"type": "string", "minLength": 1},
                    "method": {"enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"], "default": "GET"},
                    "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                    "body": {"type": "string"},
                    "auth": {
                        "type": "string",
                        "description": "Name of a configured credential: " + (", ".join(self.credentials) or "none"),
                    },
                },
                ("url",),
            ),
        )

    def _headers(self, args: dict[str, Any]) -> dict[str, str]:
        headers: dict[str, str] = dict(args.get("headers", {}))
        secret_headers = [h for h in headers if h.lower() in _SECRET_HEADERS]
        if secret_headers:
            raise ToolError(
                f"the header {secret_headers[0]!r} may not be set in tool arguments; "
                "use 'auth' with a credential configured in [tools.curl.credentials]"
            )
        return headers

    def _credential(self, args: dict[str, Any]) -> Credential | None:
        name = args.get("auth")
        if name is None:
            return None
        if name not in self.credentials:
            known = ", ".join(self.credentials) or "none configured"
            raise ToolError(f"unknown credential {name!r} (known: {known})")
        return self.credentials[name]

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> ToolResult:
        headers = self._headers(args)
        credential = self._credential(args)
        method: str = args.get("method", "GET")
        body: str | None = args.get("body")
        try:
            url = httpx.URL(args["url"])
        except httpx.InvalidURL as exc:
            raise ToolError(f"invalid URL: {exc}") from None
        bound = url_origin(url)
        if credential is not None and bound not in credential.origins:
            allowed = ", ".join(sorted(show_origin(o) for o in credential.origins))
            raise ToolError(f"the credential may only be sent to {allowed}, not {show_origin(bound)}")
        async with httpx.AsyncClient(timeout=self.timeout, trust_env=False, follow_redirects=False) as client:
            for _ in range(_MAX_REDIRECTS + 1):
                # The credential goes only where the first request went: same scheme, host and port.
                here = credential if url_origin(url) == bound else None
                response = await self._send(client, url, method=method, headers=headers, body=body, credential=here)
                if response.status_code not in _REDIRECTS or "location" not in response.headers:
                    return await self._report(response)
                url = url.join(response.headers["location"])
                if response.status_code == 303 or (response.status_code in {301, 302} and method == "POST"):
                    method, body = "GET", None
        raise ToolError(f"more than {_MAX_REDIRECTS} redirects")

    async def _send(
        self,
        client: httpx.AsyncClient,
        url: httpx.URL,
        *,
        method: str,
        headers: dict[str, str],
        body: str | None,
        credential: Credential | None,
    ) -> httpx.Response:
        target, host = await pinned_url(url, self.allowed_hosts)
        headers = {**headers, "Host": url.netloc.decode()}
        if credential is not None:
            headers[credential.header] = credential.prefix + credential.api_key.get("this credential")
        request = client.build_request(method, target, headers=headers, content=body, extensions={"sni_hostname": host})
        try:
            return await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise ToolError(f"request to {url} failed: {type(exc).__name__}: {exc}") from None

    async def _report(self, response: httpx.Response) -> ToolResult:
        chunks: list[bytes] = []
        size = 0
        try:
            # Read to the end (discarding past the limit) unless the body is huge: an
            # unfinished httpcore body generator makes Trio warn when it is collected.
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size <= self.max_body_bytes + len(chunk):
                    chunks.append(chunk)
                if size > 10 * self.max_body_bytes:
                    break
        finally:
            await response.aclose()
        text = b"".join(chunks)[: self.max_body_bytes].decode(response.encoding or "utf-8", errors="replace")
        if len(text) > self.output_limit:
            text = (
                text[: self.output_limit] + f"\n[... body truncated: {len(text) - self.output_limit} more characters]"
            )
        content_type = response.headers.get("content-type", "")
        reason = response.reason_phrase or httpx.codes.get_reason_phrase(response.status_code)
        head = f"HTTP {response.status_code} {reason}\ncontent-type: {content_type}"
        return ToolResult(f"{head}\n\n{text}", is_error=response.status_code >= 400)
