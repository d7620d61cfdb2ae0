"""What a web page must not make the gateway do, checked before every route.

With no token (the default on loopback) any page the user visits could otherwise talk
to the gateway: a form or ``fetch`` with ``Content-Type: text/plain`` is a "simple
request" a browser sends cross-site without asking first, so it would run an agent
turn; and a page on a name the attacker rebinds to 127.0.0.1 (DNS rebinding) is
same-origin with the gateway, so it could read the replies too. Three checks close
both, as the MCP SDK's transport security does:

- ``Host`` must be a name of this gateway (421 otherwise): the loopback names, the
  bind address, ``gateway.http.allowed_hosts``, and the Telegram webhook's host; on a
  wildcard bind (0.0.0.0, ::) any IP address too, since an address is never looked up.
  A rebinding page's requests carry the attacker's name, whatever it resolves to.
- ``Origin``, when sent, must be the gateway's own (the web console's pages: scheme and
  the ``Host`` just checked) or in ``gateway.http.allowed_origins`` (403); without one,
  ``Sec-Fetch-Site: cross-site`` is refused as well (a browser's no-cors request).
- A body must be ``application/json`` (415): no simple request can say so, so a
  cross-site POST cannot reach a route unless CORS would have let it.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Final

import attrs

from ._config import GatewayConfig
from ._hosts import LOOPBACK_NAMES, bind_name, is_ip_literal, normalise_origin, split_host

#: Methods whose requests carry a body here (the others are refused by routing).
_WITH_BODY: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@attrs.frozen
class Refusal:
    """A request turned away before any route: its status, error code, message and headers."""

    status: int
    code: str
    message: str
    headers: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class BrowserGuard:
    names: frozenset[str]  # served on any port
    names_with_port: frozenset[tuple[str, int]]
    origins: frozenset[str]
    any_address: bool  # bound to 0.0.0.0 or ::

    @classmethod
    def from_config(cls, config: GatewayConfig) -> BrowserGuard:
        http = config.http
        names, with_port = set(LOOPBACK_NAMES), set()
        bound = bind_name(http.host)
        if bound is not None:
            names.add(bound)
        telegram = config.channels.telegram
        webhook_host = urllib.parse.urlsplit(telegram.webhook_url).hostname
        if telegram.enabled and telegram.mode == "webhook" and webhook_host:
            names.add(split_host(webhook_host)[0])
        for entry in http.allowed_hosts:
            name, port = split_host(entry)
            if port is None:
                names.add(name)
            else:
                with_port.add((name, port))
        origins = frozenset(normalise_origin(origin) for origin in http.allowed_origins)
        return cls(frozenset(names), frozenset(with_port), origins, bound is None)

    def refusal(self, headers: Mapping[str, str]) -> Refusal | None:
        """Why a request (or WebSocket handshake) with *headers* may not go on, or None."""
        host = headers.get("Host")
        if not self.host_allowed(host):
            return Refusal(
                421,
                "host_not_allowed",
                f"this gateway does not answer to the host {host!r} (a DNS rebinding?); if that is its name, "
                "add it to gateway.http.allowed_hosts",
            )
        origin = headers.get("Origin")
        if origin is not None and not own_origin(headers) and not self.origin_allowed(origin):
            return Refusal(403, "origin_not_allowed", f"origin {origin!r} is not in gateway.http.allowed_origins")
        if origin is None and headers.get("Sec-Fetch-Site", "").lower() == "cross-site":
            return Refusal(
                403, "origin_not_allowed", "a cross-site request without an origin in gateway.http.allowed_origins"
            )
        return None

    @staticmethod
    def body_refusal(method: str, headers: Mapping[str, str]) -> Refusal | None:
        """Why the body of this request may not be read (it is not JSON), or None."""
        if method in _WITH_BODY and (why := json_media_type_problem(headers.get("Content-Type"))) is not None:
            return Refusal(415, "unsupported_media_type", why)
        return None

    def host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        try:
            name, port = split_host(host)
        except ValueError:
            return False
        return (
            name in self.names
            or (port is not None and (name, port) in self.names_with_port)
            or (self.any_address and is_ip_literal(name))
        )

    def origin_allowed(self, origin: str) -> bool:
        try:
            return normalise_origin(origin) in self.origins
        except ValueError:
            return False


def own_origin(headers: Mapping[str, str]) -> bool:
    """Whether the request's ``Origin`` (if it has one) is the gateway's own: an http(s)
    origin whose host and port are the request's ``Host`` (a page the gateway served).

    A form posted from a page served with ``Referrer-Policy: no-referrer`` (the console's
    login page) says ``Origin: null``; the browser's ``Sec-Fetch-Site: same-origin``,
    which no page can set, then tells it came from the gateway's own page.
    """
    origin = headers.get("Origin")
    if origin is None:
        return True
    if origin == "null":
        return headers.get("Sec-Fetch-Site", "").lower() == "same-origin"
    parts = urllib.parse.urlsplit(origin)
    host = headers.get("Host", "")
    return parts.scheme in {"http", "https"} and bool(host) and parts.netloc.lower() == host.lower()


def json_media_type_problem(content_type: str | None) -> str | None:
    """Why *content_type* is not ``application/json`` (with an optional UTF-8 charset), or None."""
    expected = "send the body as JSON with 'Content-Type: application/json'"
    if not content_type:
        return f"no Content-Type; {expected}"
    media_type, *parameters = (part.strip() for part in content_type.split(";"))
    if media_type.lower() != "application/json":
        return f"Content-Type {media_type!r} is not accepted; {expected}"
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in {"utf-8", "utf8"}:
            return f"charset {value.strip()!r} is not accepted; JSON is UTF-8"
    return None
