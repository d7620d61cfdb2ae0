"""Requests one node forwards to another, signed with the cluster's secret.

A forwarded request carries no client token: it carries the name of the principal the
first node identified (the owner looks it up in its own configuration, so roles stay
bound on the server that acts) and an HMAC-SHA256 over that name, the method, the path,
the body and the time, with the secret every node holds. The owner checks the MAC in
constant time and refuses one signed more than `WINDOW` seconds away from its clock.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final, Protocol

import attrs


class _Headers(Protocol):
    """What both httpx's and the web framework's header collections offer."""

    def get(self, key: str, /) -> str | None: ...

    def __contains__(self, key: str, /) -> bool: ...


#: The forwarding node's name (for the logs), the principal, the time, the MAC.
NODE_HEADER: Final = "X-BeamClaw-Node"
PRINCIPAL_HEADER: Final = "X-BeamClaw-Principal"
TIME_HEADER: Final = "X-BeamClaw-Signed-At"
SIGNATURE_HEADER: Final = "X-BeamClaw-Signature"

#: How far a forwarded request's time may be from the owner's clock, in seconds.
WINDOW: Final = 60.0


@attrs.frozen
class Forwarded:
    """What a forwarded request's MAC covers, besides the principal and the time."""

    method: str
    path: str
    body: bytes


def _mac(secret: str, signed_at: str, principal: str, request: Forwarded) -> str:
    digest = hashlib.sha256(request.body).hexdigest()
    text = "\n".join((signed_at, request.method.upper(), request.path, principal, digest))
    return hmac.new(secret.encode(), text.encode(), hashlib.sha256).hexdigest()


def signed_headers(secret: str, node_id: str, principal: str, request: Forwarded, now: float) -> dict[str, str]:
    """The headers that let the owner node act for *principal* on *request*."""
    signed_at = f"{now:.3f}"
    return {
        NODE_HEADER: node_id,
        PRINCIPAL_HEADER: principal,
        TIME_HEADER: signed_at,
        SIGNATURE_HEADER: _mac(secret, signed_at, principal, request),
    }


def is_forwarded(headers: _Headers) -> bool:
    """Whether the request says it was forwarded by a node (checked by `verified_principal`)."""
    return SIGNATURE_HEADER in headers


def verified_principal(secret: str, request: Forwarded, headers: _Headers, now: float) -> str | None:
    """The principal name a correctly signed, fresh forwarded *request* acts for; else None."""
    signature = headers.get(SIGNATURE_HEADER) or ""
    signed_at = headers.get(TIME_HEADER) or ""
    principal = headers.get(PRINCIPAL_HEADER) or ""
    try:
        age = abs(now - float(signed_at))
    except ValueError:
        return None
    expected = _mac(secret, signed_at, principal, request)
    if not hmac.compare_digest(signature.encode(), expected.encode()) or not age <= WINDOW or not principal:
        return None
    return principal
