"""Host names and origins, as the ``Host`` and ``Origin`` headers and config.toml write them."""

from __future__ import annotations

import ipaddress
import urllib.parse
from typing import Final

#: The names of this machine that no DNS answer can point elsewhere.
LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "[::1]"})
_LABEL_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def split_host(text: str) -> tuple[str, int | None]:
    """``(name, port)`` of ``name``, ``name:port``, ``[v6]`` or ``[v6]:port``, normalised.

    Names are lower-cased without a trailing dot; IPv6 addresses are compressed and in
    brackets (``[::1]``), as a browser writes them. Raises ValueError saying what is wrong.
    """
    text = text.strip().lower()
    if "/" in text or "@" in text:
        raise ValueError("a host has no scheme, no user and no path")
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket:
            raise ValueError("an IPv6 address needs its closing ']'")
        try:
            name = f"[{ipaddress.IPv6Address(inside).compressed}]"
        except ValueError:
            raise ValueError(f"{inside!r} is not an IPv6 address") from None
        if rest and not rest.startswith(":"):
            raise ValueError("after ']' only ':port' may follow")
        port_text = rest[1:] if rest else None
    else:
        if text.count(":") > 1:
            raise ValueError("an IPv6 address goes in brackets, e.g. '[::1]'")
        name, colon, port_text_or_empty = text.partition(":")
        port_text = port_text_or_empty if colon else None
        name = name.removesuffix(".")
        labels = name.split(".")
        if not name or len(name) > 253 or not all(_label(label) for label in labels):
            raise ValueError(f"{name!r} is not a host name or an IPv4 address")
    port = None
    if port_text is not None:
        if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5 and 1 <= int(port_text) <= 65535):
            raise ValueError(f"port {port_text!r} is not a TCP port from 1 to 65535")
        port = int(port_text)
    return name, port


def _label(label: str) -> bool:
    return 0 < len(label) <= 63 and set(label) <= _LABEL_CHARS and not label.startswith("-") and not label.endswith("-")


def is_ip_literal(name: str) -> bool:
    """Whether a `split_host` name is an address rather than a name to look up."""
    try:
        ipaddress.ip_address(name.removeprefix("[").removesuffix("]"))
    except ValueError:
        return False
    return True


def bind_name(host: str) -> str | None:
    """How a client names the bind address ``gateway.http.host`` (None for 0.0.0.0 and ::)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host.lower().removesuffix(".")
    if address.is_unspecified:
        return None
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def normalise_origin(text: str) -> str:
    """An origin as a browser sends it (``scheme://host[:port]``, or ``null``), lower-cased.

    Raises ValueError when *text* has a path, a query, or is no origin at all.
    """
    text = text.strip().lower()
    if text == "null":
        return text
    parts = urllib.parse.urlsplit(text)
    if not parts.scheme or not parts.netloc or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError("an origin is scheme://host[:port], with no path and no trailing '/' (browsers send it so)")
    split_host(parts.netloc)
    return f"{parts.scheme}://{parts.netloc}"
