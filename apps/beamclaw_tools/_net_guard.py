"""The SSRF guard: a URL may only reach public addresses, judged after DNS resolution.

Checking the host name is not enough (``localhost``, ``2130706433``, a DNS name that
points at 10.0.0.1, or a redirect to 169.254.169.254 all dodge it), so the name is
resolved and every address it resolves to must be public. The request then goes to
the address that was checked, not to a second lookup an attacker could answer
differently (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Collection
from typing import Final

import httpx
import trio

from ._tool import ToolError

_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")


def is_public(address: str) -> bool:
    """Whether *address* is a globally routable unicast address (not loopback, private,
    link-local, cloud metadata, shared, reserved or multicast)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in _NAT64:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.is_global and not ip.is_multicast


async def pinned_url(url: httpx.URL, allowed: Collection[str] = ()) -> tuple[httpx.URL, str]:
    """Resolve *url*'s host and check it; return the URL aimed at the checked address
    and the original host (for the Host header and TLS SNI).

    *allowed* lists ``host`` or ``host:port`` entries the operator opened on purpose
    (a service on the LAN, a test server); they skip the public-address rule.
    """
    if url.scheme not in {"http", "https"}:
        raise ToolError(f"only http and https URLs are allowed, not {url.scheme!r}")
    host = url.host
    if not host:
        raise ToolError(f"the URL {url} has no host")
    port = url.port or (443 if url.scheme == "https" else 80)
    opened = host in allowed or f"{host}:{port}" in allowed
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ToolError(f"cannot resolve {host!r}: {exc}") from None
    addresses = [str(info[4][0]) for info in infos]
    if not opened:
        blocked = [a for a in addresses if not is_public(a)]
        if blocked:
            raise ToolError(
                f"blocked: {host} resolves to {blocked[0]}, a loopback, private, link-local or metadata address"
            )
    return url.copy_with(host=addresses[0]), host
