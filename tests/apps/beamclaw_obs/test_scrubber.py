"""The scrubber: every credential shape named in the issue becomes [REDACTED]."""

from __future__ import annotations

import pytest

from beamclaw_obs import REDACTED, register_secret, scrub, scrub_data

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\nabcd\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("secret", "text"),
    [
        ("sk-proj-A1b2C3d4E5f6G7h8I9j0", "key: {}"),
        ("sk-ant-api03-A1b2C3d4E5f6G7h8I9j0", "anthropic {} here"),
        ("ghp_" + "a1B2" * 9, "clone with {}"),
        ("gho_" + "Z" * 36, "{}"),
        ("ghu_" + "x" * 36, "{}"),
        ("ghs_" + "y" * 36, "{}"),
        ("ghr_" + "q" * 36, "{}"),
        ("gsk_" + "k" * 40, "groq={}"),
        ("xoxb-1234-5678-abcdefgh", "slack {}"),
        ("xoxp-1234-5678-abcdefgh", "slack {}"),
        ("AKIAIOSFODNN7EXAMPLE", "aws {} key"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N", "jwt {}"),
        (PEM, "before\n{}\nafter"),
    ],
)
def test_known_shapes_are_redacted(secret: str, text: str) -> None:
    out = scrub(text.format(secret))
    assert secret not in out and REDACTED in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-123456", "Authorization: Bearer [REDACTED]"),
        ("curl -H 'authorization: bearer Zm9vYmFyYmF6'", "curl -H 'authorization: bearer [REDACTED]'"),
        ("api_key=abc123 next", "api_key=[REDACTED] next"),
        ("export PASSWORD='hunter2'", "export PASSWORD='[REDACTED]'"),
        ("https://x.test/?token=abc&x=1", "https://x.test/?token=[REDACTED]&x=1"),
        ('{"client_secret": "s3cr3t value"}', '{"client_secret": "[REDACTED]"}'),
        ("secret = opensesame", "secret = [REDACTED]"),
    ],
)
def test_assignments_keep_their_name(text: str, expected: str) -> None:
    assert scrub(text) == expected


@pytest.mark.parametrize("text", ["max_tokens=100", "the token budget is large", "sk-short", "tokens: 12"])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert scrub(text) == text


def test_scrubbing_twice_changes_nothing_more() -> None:
    once = scrub("api_key=abc Bearer abcdefghij sk-abcdefghijklmnopqrstu")
    assert scrub(once) == once


def test_registered_environment_values_are_redacted_literally() -> None:
    register_secret("plain-looking-value-42")
    register_secret("short")  # too short to redact safely: ignored
    assert scrub("got plain-looking-value-42 back, short") == f"got {REDACTED} back, short"


def test_nested_payloads_are_scrubbed() -> None:
    data = {"args": ["ok", {"auth": "Bearer abcdefghijk"}], "n": 3}
    assert scrub_data(data) == {"args": ["ok", {"auth": "Bearer [REDACTED]"}], "n": 3}
