"""The environment filter: no API key ever reaches a container."""

from __future__ import annotations

from beamclaw_sandbox import parse_sandbox_config
from beamclaw_sandbox._env import container_environment

HOST = {
    "PATH": "/home/ada/.pyenv/shims:/usr/bin",
    "HOME": "/home/ada",
    "LANG": "en_GB.UTF-8",
    "TERM": "xterm",
    "OPENROUTER_API_KEY": "sk-or-v1-0123456789abcdef0123456789abcdef",
    "OPENAI_API_KEY": "sk-0123456789abcdef0123456789",
    "TELEGRAM_BOT_TOKEN": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
    "BEAMCLAW_GATEWAY_TOKEN": "gw-0123456789",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",
    "EDITOR": "vim",
}
FIXED = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}


def test_only_allowlisted_names_pass_and_the_container_keeps_its_own_path_and_home() -> None:
    env = container_environment(parse_sandbox_config({}), HOST, FIXED)
    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "en_GB.UTF-8", "TERM": "xterm"}


def test_the_blocklist_wins_over_the_allowlist_whatever_the_case() -> None:
    config = parse_sandbox_config({"env_allowlist": ["*"]})
    env = container_environment(config, {**HOST, "my_service_api_key": "x" * 20, "DB_PASSWORD": "hunter22"})
    assert "EDITOR" in env and "LANG" in env
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "BEAMCLAW_GATEWAY_TOKEN",
                 "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "my_service_api_key", "DB_PASSWORD"):  # fmt: skip
        assert name not in env, name


def test_a_credential_under_an_allowed_name_is_still_kept_out() -> None:
    config = parse_sandbox_config({"env_allowlist": ["LANG", "NOTES"]})
    env = container_environment(config, {"LANG": "sk-ant-0123456789abcdefghijkl", "NOTES": "token=abcdef123456"})
    assert env == {}
