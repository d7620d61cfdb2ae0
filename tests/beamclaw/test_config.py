"""Every secret the daemon holds is registered with the scrubber before anything runs."""

from __future__ import annotations

import base64
import secrets

from beamclaw._config import register_secrets
from beamclaw_obs import scrub


def _value() -> str:
    return "v" + secrets.token_hex(16)


def test_config_references_and_credential_names_are_redacted_in_any_encoding() -> None:
    environ = {
        "MY_PROVIDER": _value(),  # named by the config only
        "AWS_SECRET_ACCESS_KEY": _value(),
        "BEAMCLAW_GATEWAY_TOKEN": _value(),
        "PGPASSWORD": _value(),
        "HF_TOKEN": _value(),
    }
    config = {"core": {"provider": {"api_key": {"env": "MY_PROVIDER"}}}, "tools": {"curl": [{"env": "UNSET_VAR"}]}}

    assert register_secrets(config, environ) == len(environ)

    for value in environ.values():
        text = f"a={value} b={base64.b64encode(value.encode()).decode()} c={value.encode().hex()}"
        assert value not in scrub(text)
        assert base64.b64encode(value.encode()).decode() not in scrub(text)
        assert value.encode().hex() not in scrub(text)


def test_ordinary_variables_are_left_alone() -> None:
    environ = {"GIT_AUTHOR_NAME": "Maintainers of the project", "PWD": "/home/someone/project", "KEYBOARD": _value()}

    assert register_secrets({}, environ) == 0
    assert scrub("Maintainers of the project in /home/someone/project") == (
        "Maintainers of the project in /home/someone/project"
    )
