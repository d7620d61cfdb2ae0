"""``[gateway]`` of config.toml."""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from beamclaw_base import Secret, structure_config

from ._hosts import normalise_origin, split_host
from ._principals import Principal, Principals, Role, TokenSource, _TokenFile

#: A token's name: it becomes part of user ids (``api:NAME/alice``), so it is short and plain.
_TOKEN_NAME: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
#: Names a token may not have: the legacy admin token's and the token-less principal's (their
#: conversations are ``mcp:admin``, ``a2a:local/...``), and ``anonymous`` (an admin's ``api:`` user
#: when it names none).
_RESERVED_NAMES: Final = frozenset({"admin", "local", "anonymous"})


@attrs.frozen
class HttpConfig:
    #: The address to bind; anything but loopback needs a token first.
    host: str = "127.0.0.1"
    port: int = 18800
    #: When its variable is set, an admin's token: ``Authorization: Bearer ...`` on every route but /health.
    token: Secret | None = Secret("BEAMCLAW_GATEWAY_TOKEN")
    #: Browser origins (scheme://host[:port]) whose pages may call the gateway.
    allowed_origins: list[str] = attrs.field(factory=list)
    #: Host header values served besides the loopback names and the bind address:
    #: ``name`` (any port) or ``name:port``. A name not listed could be a DNS rebinding.
    allowed_hosts: list[str] = attrs.field(factory=list)
    #: A larger request body is refused (413).
    max_body_bytes: int = 1_000_000
    #: A larger WebSocket message is refused.
    max_ws_message_bytes: int = 512_000
    #: A longer user message is truncated, with a notice to the model.
    max_user_chars: int = 32_000
    #: Open WebSockets in all, and per client address; the excess is refused (503).
    max_ws_connections: int = 512
    max_ws_connections_per_client: int = 64
    #: HTTP requests in progress in all, and per client; the excess is refused (503).
    max_http_requests: int = 1024
    max_http_requests_per_client: int = 256


@attrs.frozen
class RateLimitConfig:
    #: Per client address and user, in a sliding window of window_seconds.
    requests: int = 60
    window_seconds: float = 60.0
    #: Per client address, whatever users it names (None: the same as requests).
    requests_per_address: int | None = None

    @property
    def address_requests(self) -> int:
        return self.requests if self.requests_per_address is None else self.requests_per_address


@attrs.frozen
class TelegramPhotoConfig:
    """``[gateway.channels.telegram.photo]``: photos sent to the bot, passed to the model."""

    #: false: a photo is not looked at (the user is told so).
    enabled: bool = True
    #: The largest photo downloaded; Telegram offers each photo in several sizes, and the
    #: largest within this is taken (none within it: the user is told it is too large).
    max_size_bytes: int = 5 * 1024 * 1024


@attrs.frozen
class TelegramVoiceConfig:
    """``[gateway.channels.telegram.voice]``: voice notes and audio files, transcribed by
    ``[gateway.transcription]`` and passed to the model marked as a transcript."""

    #: false: voice notes and audio files are not transcribed (the user is told so).
    enabled: bool = True
    #: A longer voice note or audio file is not transcribed (the user is told so).
    max_duration_seconds: int = 300


@attrs.frozen
class TelegramConfig:
    enabled: bool = False
    #: The bot's token, from @BotFather.
    token: Secret = Secret("TELEGRAM_BOT_TOKEN")
    #: Long polling, or a webhook (``webhook_url``, ``webhook_secret``) for deployments Telegram can reach.
    mode: Literal["polling", "webhook"] = "polling"
    #: Who may talk to the bot: paired users (a stranger gets a code for ``beamclaw pair``),
    #: only ``allow_from``, or everyone.
    dm_policy: Literal["pairing", "allowlist", "open"] = "pairing"
    #: Telegram user ids or usernames always let in.
    allow_from: list[str] = attrs.field(factory=list)
    #: The agent that answers on Telegram.
    agent: str = "default"
    #: The Bot API's address (another for a local Bot API server or an emulator).
    api_base: str = "https://api.telegram.org"
    webhook_url: str = ""
    webhook_secret: Secret | None = None
    poll_timeout_seconds: int = 30
    #: A streamed reply's message is edited at most this often.
    edit_interval_seconds: float = 1.0
    photo: TelegramPhotoConfig = TelegramPhotoConfig()
    voice: TelegramVoiceConfig = TelegramVoiceConfig()


@attrs.frozen
class ChannelsConfig:
    telegram: TelegramConfig = TelegramConfig()


@attrs.frozen
class TranscriptionConfig:
    #: An OpenAI-compatible server that transcribes Telegram voice notes and audio files
    #: (``POST {base_url}/audio/transcriptions``, e.g. ``https://api.openai.com/v1``); empty: none.
    base_url: str = ""
    #: The transcription model asked for.
    model: str = "whisper-1"
    #: Its key, sent as a Bearer token: ``{ env = "VAR" }``.
    api_key: Secret | None = None


@attrs.frozen
class TokenRef:
    """Where a named token's value is: ``{ env = "VAR" }`` or ``{ file = "PATH" }`` (never the value)."""

    env: str | None = None
    file: str | None = None


@attrs.frozen
class TokenConfig:
    """``[gateway.auth.tokens.NAME]``: a client's token, its role, and whom it may act as."""

    token: TokenRef
    role: Literal["viewer", "operator", "admin"] = "operator"
    #: User ids or prefixes (``api:alice/*``); by default ``api:NAME`` and ``api:NAME/*``
    #: (an admin: anyone).
    users: list[str] | None = None
    #: Agent names or prefixes; by default every agent.
    agents: list[str] | None = None


@attrs.frozen
class AuthConfig:
    tokens: dict[str, TokenConfig] = attrs.field(factory=dict)


@attrs.frozen
class ConsoleConfig:
    """``[gateway.console]``: the web console at /ui (see `beamclaw_gateway._console_sessions`)."""

    #: false: /ui and its login answer 404, and no console session can be opened.
    enabled: bool = True
    #: A console session unused for this long ends (the browser is sent to the login page).
    idle_minutes: float = 30.0
    #: Mark the session cookie Secure even when the request came over plain HTTP: behind a
    #: proxy that ends TLS, so the browser never sends the cookie unencrypted.
    secure_cookie: bool = False


@attrs.frozen
class GatewayConfig:
    enabled: bool = True
    http: HttpConfig = HttpConfig()
    rate_limit: RateLimitConfig = RateLimitConfig()
    channels: ChannelsConfig = ChannelsConfig()
    transcription: TranscriptionConfig = TranscriptionConfig()
    auth: AuthConfig = AuthConfig()
    console: ConsoleConfig = ConsoleConfig()
    #: The agent a request that names none talks to.
    default_agent: str = "default"
    #: The root supervisor whose tree /v1/supervision/tree shows (set by the daemon).
    root: str = "beamclaw"
    #: BeamClaw's agents as an MCP server at /mcp (streamable HTTP, behind the token).
    mcp_endpoint: bool = True


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
    principals = principals_of(config)
    if not is_loopback(http.host) and principals.open:
        variable = http.token.env if http.token else "BEAMCLAW_GATEWAY_TOKEN"
        raise ValueError(
            f"gateway.http.host is {http.host!r}, which is reachable from other machines; set a gateway token "
            f"({variable}) first, or bind 127.0.0.1 (or give clients tokens of their own: [gateway.auth.tokens.NAME])"
        )
    _check_limits(config)
    for index, entry in enumerate(http.allowed_hosts):
        try:
            split_host(entry)
        except ValueError as exc:
            raise ValueError(
                f"gateway.http.allowed_hosts[{index}] = {entry!r}: {exc}; write a host name or address as a browser "
                "sends it in the Host header, optionally with ':port' (no scheme, no path)"
            ) from None
    for index, entry in enumerate(http.allowed_origins):
        try:
            normalise_origin(entry)
        except ValueError as exc:
            raise ValueError(f"gateway.http.allowed_origins[{index}] = {entry!r}: {exc}") from None
    telegram = config.channels.telegram
    if telegram.enabled and telegram.token.get_optional() is None:
        raise ValueError(
            f"gateway.channels.telegram is enabled, but {telegram.token.env} (the bot's token) is not set: "
            "export it, or set enabled = false"
        )
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


def _check_limits(config: GatewayConfig) -> None:
    positive = {
        "gateway.http.max_body_bytes": config.http.max_body_bytes,
        "gateway.http.max_ws_message_bytes": config.http.max_ws_message_bytes,
        "gateway.http.max_user_chars": config.http.max_user_chars,
        "gateway.http.max_ws_connections": config.http.max_ws_connections,
        "gateway.http.max_ws_connections_per_client": config.http.max_ws_connections_per_client,
        "gateway.http.max_http_requests": config.http.max_http_requests,
        "gateway.http.max_http_requests_per_client": config.http.max_http_requests_per_client,
        "gateway.rate_limit.requests": config.rate_limit.requests,
        "gateway.rate_limit.requests_per_address": config.rate_limit.address_requests,
        "gateway.rate_limit.window_seconds": config.rate_limit.window_seconds,
        "gateway.channels.telegram.photo.max_size_bytes": config.channels.telegram.photo.max_size_bytes,
        "gateway.channels.telegram.voice.max_duration_seconds": config.channels.telegram.voice.max_duration_seconds,
        "gateway.console.idle_minutes": config.console.idle_minutes,
    }
    for key, value in positive.items():
        if not value > 0:
            raise ValueError(f"{key} must be more than 0, got {value}")


def _patterns(values: list[str] | None, key: str) -> tuple[str, ...] | None:
    if values is None:
        return None
    for value in values:
        if not value or "*" in value[:-1] or not value.isprintable():
            raise ValueError(f"{key}: {value!r} must be an id, or a prefix ending in '*' (such as 'api:alice/*')")
    return tuple(values)


def _token_source(name: str, ref: TokenRef) -> TokenSource:
    key = f"gateway.auth.tokens.{name}.token"
    if (ref.env is None) == (ref.file is None):
        raise ValueError(f'{key} must be {{ env = "VARIABLE" }} or {{ file = "PATH" }}, never the token itself')
    if ref.env is not None:
        source = TokenSource(env=ref.env)
        if source.value() is None:
            raise ValueError(f"{key} needs the environment variable {ref.env}, which is not set")
        return source
    path = Path(os.path.expanduser(ref.file or ""))
    source = TokenSource(file=_TokenFile(path))
    if source.value() is None:
        raise ValueError(f"{key}: the file {path} cannot be read or is empty")
    return source


def principals_of(config: GatewayConfig) -> Principals:
    """Every configured token and its principal (see `beamclaw_gateway._principals`).

    ``[gateway.http] token``, when its variable is set, is an admin token named ``admin``.
    A named token whose value cannot be read is a ValueError naming the key, so the
    daemon does not start without it (a client would be locked out, or worse, the
    daemon open).
    """
    tokens: list[tuple[TokenSource, Principal]] = []
    legacy = config.http.token
    if legacy is not None and legacy.get_optional() is not None:
        tokens.append((TokenSource(env=legacy.env), Principal("admin", Role.ADMIN, None)))
    for name, entry in config.auth.tokens.items():
        if not _TOKEN_NAME.fullmatch(name) or name in _RESERVED_NAMES:
            raise ValueError(
                f"gateway.auth.tokens.{name}: a token's name is 1 to 32 lowercase letters, digits, '-' or '_', "
                f"and not one of {', '.join(sorted(_RESERVED_NAMES))}"
            )
        role = Role[entry.role.upper()]
        users = _patterns(entry.users, f"gateway.auth.tokens.{name}.users")
        if users is None and role is not Role.ADMIN:
            users = (f"api:{name}", f"api:{name}/*")
        agents = _patterns(entry.agents, f"gateway.auth.tokens.{name}.agents")
        tokens.append((_token_source(name, entry.token), Principal(name, role, users, agents)))
    return Principals(tokens)
