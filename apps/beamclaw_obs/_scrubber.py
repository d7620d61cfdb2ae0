"""The scrubber: credentials out of every text before it is stored, logged or sent on.

Patterns cover the key formats users paste or tools print most (OpenAI, Anthropic,
GitHub, Groq, Slack, AWS, Bearer headers, JWTs, PEM private keys and ``key=value``
assignments). Values of secrets read from the environment are registered at use and
redacted literally too, so a key with no known shape still never leaks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

REDACTED: Final = "[REDACTED]"

_KEY_NAMES: Final = (
    r"(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|token|password|passwd|secret|client[_-]?secret)"
)

_PATTERNS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S),
        REDACTED,
    ),
    (re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"), REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), REDACTED),
    (re.compile(r"\bgsk_[A-Za-z0-9]{16,}"), REDACTED),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{8,}"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}"), REDACTED),
    (re.compile(r"(?i)\b(bearer\s+)(?!\[REDACTED\])[A-Za-z0-9\-._~+/]{8,}=*"), r"\1" + REDACTED),
    # JSON or YAML style: "api_key": "value"
    (
        re.compile(rf"""(?i)(["']{_KEY_NAMES}["']\s*:\s*["'])(?!\[REDACTED\])[^"'\n]+"""),
        r"\1" + REDACTED,
    ),
    # Shell, URL and .env style: api_key=value, password = "value"
    (
        re.compile(rf"""(?i)(\b{_KEY_NAMES}\s*=\s*["']?)(?!\[REDACTED\])[^\s"'&,;)]+"""),
        r"\1" + REDACTED,
    ),
)

_known_values: set[str] = set()
_known_pattern: re.Pattern[str] | None = None


def register_secret(value: str) -> None:
    """Redact *value* literally from now on (a secret read from the environment).

    Values shorter than 8 characters are ignored: redacting them would mangle
    ordinary words without protecting anything worth a key.
    """
    global _known_pattern
    if len(value) < 8 or value in _known_values:
        return
    _known_values.add(value)
    alternatives = sorted(_known_values, key=len, reverse=True)
    _known_pattern = re.compile("|".join(re.escape(v) for v in alternatives))


def scrub(text: str) -> str:
    """Return *text* with every credential replaced by ``[REDACTED]``."""
    if _known_pattern is not None:
        text = _known_pattern.sub(REDACTED, text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def scrub_data(value: Any) -> Any:
    """`scrub` every string inside *value* (dicts, lists and tuples, keys included)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {scrub_data(k): scrub_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_data(v) for v in value)
    return value
