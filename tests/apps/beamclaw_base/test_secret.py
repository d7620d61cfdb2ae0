"""Secret: an environment variable's name in the config, its value read when used and
registered with the scrubber at once."""

from __future__ import annotations

import pytest

from beamclaw_base import MissingSecret, Secret, resolve
from beamclaw_obs import scrub

_VALUE = "k7Qp2xVz9LmR4tWb8NcY"


def test_a_missing_secret_names_its_variable_and_what_needed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_BASE_SECRET", raising=False)
    with pytest.raises(MissingSecret, match="the web search needs the environment variable TEST_BASE_SECRET"):
        Secret("TEST_BASE_SECRET").get("the web search")
    monkeypatch.setenv("TEST_BASE_SECRET", "")
    with pytest.raises(MissingSecret):
        Secret("TEST_BASE_SECRET").get("the web search")
    assert Secret("TEST_BASE_SECRET").get_optional() is None


def test_a_secret_read_is_scrubbed_from_then_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_BASE_SECRET", _VALUE)
    assert Secret("TEST_BASE_SECRET").get("a test") == _VALUE
    assert _VALUE not in scrub(f"the key is {_VALUE}, as sent")


def test_an_optional_secret_read_is_scrubbed_too(monkeypatch: pytest.MonkeyPatch) -> None:
    value = _VALUE[::-1]
    monkeypatch.setenv("TEST_BASE_SECRET", value)
    assert Secret("TEST_BASE_SECRET").get_optional() == value
    assert value not in scrub(f"header: {value}")


def test_resolve_takes_text_as_it_is_and_reads_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_BASE_SECRET", _VALUE)
    assert resolve("debug", "a server's LOG_LEVEL") == "debug"
    assert resolve(Secret("TEST_BASE_SECRET"), "a server's TOKEN") == _VALUE
    monkeypatch.delenv("TEST_BASE_SECRET")
    with pytest.raises(MissingSecret, match="a server's TOKEN needs"):
        resolve(Secret("TEST_BASE_SECRET"), "a server's TOKEN")
