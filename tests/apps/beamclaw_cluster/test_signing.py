"""A forwarded request is trusted only with the cluster's MAC over exactly what it asks."""

from __future__ import annotations

import pytest

from beamclaw_cluster import Forwarded, is_forwarded, signed_headers, verified_principal

_SECRET = "cluster-secret-for-the-test-0123456789"
_BODY = b'{"messages": [{"role": "user", "content": "hi"}]}'


_CHAT = Forwarded("POST", "/v1/chat/completions", _BODY)


def _signed(now: float = 1000.0) -> dict[str, str]:
    return signed_headers(_SECRET, "node-a", "web", _CHAT, now)


def test_a_signed_request_names_its_principal() -> None:
    headers = _signed()
    assert is_forwarded(headers)
    assert verified_principal(_SECRET, _CHAT, headers, 1010.0) == "web"


@pytest.mark.parametrize(
    "tamper",
    [
        lambda h: {**h, "X-BeamClaw-Principal": "admin"},  # another principal
        lambda h: {**h, "X-BeamClaw-Signed-At": "1001.000"},  # another time
        lambda h: {**h, "X-BeamClaw-Signature": "0" * 64},
        lambda h: {**h, "X-BeamClaw-Signed-At": "nan"},
        lambda h: {k: v for k, v in h.items() if k != "X-BeamClaw-Signature"},
    ],
)
def test_any_change_to_a_signed_request_is_refused(tamper: object) -> None:
    headers = tamper(_signed())  # type: ignore[operator]
    assert verified_principal(_SECRET, _CHAT, headers, 1000.0) is None


def test_another_body_path_method_secret_or_an_old_signature_is_refused() -> None:
    headers = _signed()
    for other in (
        Forwarded("POST", "/v1/chat/completions", _BODY + b" "),
        Forwarded("POST", "/v1/responses", _BODY),
        Forwarded("GET", "/v1/chat/completions", _BODY),
    ):
        assert verified_principal(_SECRET, other, headers, 1000.0) is None
    assert verified_principal("another-secret", _CHAT, headers, 1000.0) is None
    assert verified_principal(_SECRET, _CHAT, headers, 1061.0) is None
