"""``[gateway]`` of config.toml."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

import attrs

from beamclaw_core import Secret, structure_config


@attrs.frozen
class HttpConfig:
    host: str = "127.0.0.1"
    port: int = 18800
    token: Secret | None = Secret("BEAMCLAW_GATEWAY_TOKEN")
    allowed_origins: list[str] = attrs.field(factory=list)
    max_body_bytes: int = 1_000_000
    max_ws_message_bytes: int = 512_000
    max_user_chars: int = 32_000


@attrs.frozen
class RateLimitConfig:
    requests: int = 60
    window_seconds: float = 60.0


@attrs.frozen
class TelegramConfig:
    enabled: bool = False
    token: Secret = Secret("TELEGRAM_BOT_TOKEN")
    mode: Literal["polling", "webhook"] = "polling"
    dm_policy: Literal["pairing", "allowlist", "open"] = "pairing"
    allow_from: list[str] = attrs.field(factory=list)
    agent: str = "default"
    api_base: str = "https://api.telegram.org"
    webhook_url: str = ""
    webhook_secret: Secret | None = None
    poll_timeout_seconds: int = 30
    edit_interval_seconds: float = 1.0


@attrs.frozen
class ChannelsConfig:
    telegram: TelegramConfig = TelegramConfig()


@attrs.frozen
class TranscriptionConfig:
    base_url: str = ""
    model: str = "whisper-1"
    api_key: Secret | None = None


@attrs.frozen
class GatewayConfig:
    enabled: bool = True
    http: HttpConfig = HttpConfig()
    rate_limit: RateLimitConfig = RateLimitConfig()
    channels: ChannelsConfig = ChannelsConfig()
    transcription: TranscriptionConfig = TranscriptionConfig()
    default_agent: str = "default"
    root: str = "beamclaw"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_gateway_config(table: dict[str, Any]) -> GatewayConfig:
    """Check ``[gateway]``: a port out of range, or a non-loopback bind without a token, is a
    ValueError naming the key (the daemon exits 2 on it, before anything starts)."""
    config = structure_config(table, GatewayConfig, "gateway")
    http = config.http
    if not 1 <= http.port <= 65535:
        raise ValueError(f"gateway.http.port must be a TCP port from 1 to 65535, got {http.port}")
    if not is_loopback(http.host) and (http.token is None or http.token.get_optional() is None):
        variable = http.token.env if http.token else "BEAMCLAW_GATEWAY_TOKEN"
        raise ValueError(
            f"gateway.http.host is {http.host!r}, which is reachable from other machines; set a gateway token "
            f"({variable}) first, or bind 127.0.0.1"
        )
    telegram = config.channels.telegram
    if (
        telegram.enabled
        and telegram.mode == "webhook"
        and (not telegram.webhook_url or telegram.webhook_secret is None)
    ):
        raise ValueError(
            "gateway.channels.telegram: webhook mode needs webhook_url (the public https URL of /webhook/telegram) "
            'and webhook_secret = { env = "VAR" }'
        )
    return config
