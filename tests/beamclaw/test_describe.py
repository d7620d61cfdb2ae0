"""What `beamclaw status` and the start-up log say a configuration runs."""

from __future__ import annotations

from typing import Any

from beamclaw._describe import describe


def _at(base_url: str) -> dict[str, Any]:
    return {"core": {"providers": {"openrouter": {"base_url": base_url, "model": "m"}}}}


def test_the_models_address_is_told_without_its_credentials() -> None:
    model = describe(_at("https://user:s3cret-pass@llm.example:8443/v1"))["model"]
    assert model is not None
    assert "at https://llm.example:8443/v1" in model and "s3cret" not in model and "user" not in model
    plain = describe(_at("http://127.0.0.1:11434/v1"))["model"]
    assert plain is not None and plain.endswith("at http://127.0.0.1:11434/v1")
