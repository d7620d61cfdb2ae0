"""``[sandbox]``: the reference's defaults, every key checked at start, errors that name the key."""

from __future__ import annotations

import pytest

from beamclaw_base import ConfigError
from beamclaw_sandbox import parse_sandbox_config, parse_size


def test_the_reference_defaults() -> None:
    config = parse_sandbox_config({})
    assert (config.enabled, config.backend, config.docker_image, config.scope) == (
        False, "docker", "beamclaw-sandbox:latest", "session",
    )  # fmt: skip
    assert (config.timeout_seconds, config.reaper_interval_seconds, config.memory_limit, config.cpu_limit) == (
        60.0, 60.0, "512m", "1.0",
    )  # fmt: skip
    assert (config.network, config.workspace_mount, config.max_output_bytes) == ("none", "ro", 1_048_576)
    assert config.env_allowlist == ["PATH", "HOME", "LANG", "TERM"]
    assert config.memory_bytes == 512 * 1024**2 and config.cpus == 1.0 and config.pids_limit == 256
    assert config.bubblewrap.bwrap == "bwrap" and config.file_size_bytes == 1024**3


def test_the_environment_filter_keeps_secrets_out_whatever_the_allowlist() -> None:
    config = parse_sandbox_config({"env_allowlist": ["*"]})
    env = {"PATH": "/bin", "OPENROUTER_API_KEY": "k", "GITHUB_TOKEN": "t", "db_password": "p", "NOTES": "n"}
    assert config.filter_env(env) == {"PATH": "/bin", "NOTES": "n"}
    assert parse_sandbox_config({}).filter_env(env) == {"PATH": "/bin"}


@pytest.mark.parametrize(
    ("text", "size"), [("512m", 512 * 1024**2), ("2g", 2 * 1024**3), ("64k", 65536), ("1.5G", 3 * 1024**3 // 2),
                       ("100", 100), ("512MiB", 512 * 1024**2)],
)  # fmt: skip
def test_sizes_are_dockers_notation(text: str, size: int) -> None:
    assert parse_size(text, "k") == size


def test_a_number_of_cpus_may_be_written_as_a_number() -> None:
    assert parse_sandbox_config({"cpu_limit": 2}).cpus == 2.0
    assert parse_sandbox_config({"cpu_limit": 0.5}).cpus == 0.5


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"backend": "firecracker"}, "sandbox.backend: firecracker is not one of ['bubblewrap', 'docker']"),
        ({"scope": "global"}, "sandbox.scope: global is not one of"),
        ({"network": "host"}, "sandbox.network: host is not one of ['none', 'bridge']"),
        ({"workspace_mount": "yes"}, "sandbox.workspace_mount: yes is not one of"),
        ({"memory_limit": "lots"}, 'sandbox.memory_limit: expected a size such as "512m"'),
        ({"memory_limit": "0m"}, "sandbox.memory_limit: must be more than 0"),
        ({"cpu_limit": "fast"}, 'sandbox.cpu_limit: expected a number of CPUs such as "1.0"'),
        ({"cpu_limit": "0"}, "sandbox.cpu_limit: must be more than 0"),
        ({"timeout_seconds": 0}, "sandbox.timeout_seconds: must be more than 0"),
        ({"timeout_seconds": "60"}, "sandbox.timeout_seconds: expected a number"),
        ({"pids_limit": -1}, "sandbox.pids_limit: must be more than 0"),
        ({"max_output_bytes": 0}, "sandbox.max_output_bytes: must be more than 0"),
        ({"enabled": "yes"}, "sandbox.enabled: expected true or false"),
        ({"env_allowlist": "PATH"}, "sandbox.env_allowlist"),
        ({"pii": {"patterns": ["emial"]}}, "sandbox.pii.patterns[0]: emial is not one of"),
        ({"pii": {"tokenise": True}}, "sandbox.pii: unknown key 'tokenise'"),
        ({"bubblewrap": {"file_size_limit": "huge"}}, "sandbox.bubblewrap.file_size_limit: expected a size"),
        ({"bubblewrap": {"ro_binds": ["opt/tools"]}}, "sandbox.bubblewrap.ro_binds[0]: expected an absolute path"),
        ({"bubblewrap": {"path": "/usr/bin/bwrap"}}, "sandbox.bubblewrap: unknown key 'path'"),
        ({"dockerimage": "x"}, "sandbox: unknown key 'dockerimage'"),
    ],
)
def test_a_bad_value_names_its_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_sandbox_config(table)
    assert message in str(raised.value)


@pytest.mark.parametrize("path", ["/run", "/var/run", "/run/user/1000", "/tmp", "/tmp/tools", "/var", "/"])
def test_no_folder_of_the_hosts_unix_sockets_is_bound_into_the_jail(path: str) -> None:
    """A Unix socket bound read-only can still be connected to (the Docker socket, a D-Bus bus)."""
    with pytest.raises(ConfigError, match=r"sandbox\.bubblewrap\.ro_binds\[0\]: .* Unix sockets"):
        parse_sandbox_config({"bubblewrap": {"ro_binds": [path]}})
    assert parse_sandbox_config({"bubblewrap": {"ro_binds": ["/opt/tools"]}}).bubblewrap.ro_binds == ["/opt/tools"]
