"""``[sandbox]`` of config.toml: both backends' settings, checked at start.

The keys and defaults are the reference design's. Two backends read them:

- **bubblewrap** jails every command of ``bash``, ``terminal`` and skill scripts
  (``[tools.bash] isolation`` / ``[tools.terminal] isolation`` pick it, the default).
  It uses ``network``, ``memory_limit``, ``cpu_limit``, ``pids_limit``,
  ``max_output_bytes``, ``env_allowlist``, ``env_blocklist`` and ``[sandbox.bubblewrap]``.
- **docker** runs the ``exec`` tool's code in a warm container per ``scope``; it is opt-in
  (``enabled = true``) and uses everything else as well.

``enabled`` is the opt-in of Docker code execution only: the jail of ``bash`` and
``terminal`` does not depend on it, so the sandbox app runs either way.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Any, Final, Literal

import attrs

from beamclaw_base import ConfigError, structure_config

#: The PII kinds the tokenizer knows (``[sandbox.pii] patterns``).
PII_PATTERNS: Final = ("email", "phone", "card_number", "iban", "api_key")

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS: Final = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, key: str) -> int:
    """``"512m"`` (Docker's notation: b, k, m, g, t; binary units) as bytes; `ConfigError` naming *key*."""
    match = _SIZE.match(text)
    if match is None:
        raise ConfigError(f'{key}: expected a size such as "512m" or "2g", got {text!r}')
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size <= 0:
        raise ConfigError(f"{key}: must be more than 0, got {text!r}")
    return size


@attrs.frozen
class PiiConfig:
    """``[sandbox.pii]``: values replaced by stable tokens at every crossing of the sandbox boundary."""

    #: Replace personal data with tokens at the sandbox boundary.
    enabled: bool = True
    #: The kinds of values replaced.
    patterns: list[Literal["email", "phone", "card_number", "iban", "api_key"]] = attrs.field(
        factory=lambda: list(PII_PATTERNS)
    )
    #: Tokenize the code sent into the sandbox.
    tokenize_scripts: bool = True
    #: Tokenize what tools called through the bridge return into the sandbox.
    tokenize_results: bool = True


@attrs.frozen
class PolicyRule:
    """One rule of ``[sandbox.policy] rules``: ``{ action = "allow", tool = "read_*" }`` (fnmatch wildcards)."""

    action: Literal["allow", "deny"]
    tool: str

    def matches(self, tool_name: str) -> bool:
        return fnmatch.fnmatchcase(tool_name, self.tool)


def _default_rules() -> list[PolicyRule]:
    return [
        PolicyRule("allow", "read_file"),
        PolicyRule("allow", "curl"),
        PolicyRule("deny", "bash"),
        PolicyRule("deny", "terminal"),
    ]


@attrs.frozen
class PolicyConfig:
    """``[sandbox.policy]``: which tools a sandboxed script may call through the bridge.

    The first rule whose ``tool`` pattern matches decides; with none, ``default_action``.
    """

    #: What a tool no rule matches gets.
    default_action: Literal["allow", "deny"] = "allow"
    #: ``{ action, tool }`` in order; the first whose ``tool`` pattern matches decides.
    rules: list[PolicyRule] = attrs.field(factory=_default_rules)

    def allows(self, tool_name: str) -> bool:
        for rule in self.rules:
            if rule.matches(tool_name):
                return rule.action == "allow"
        return self.default_action == "allow"


@attrs.frozen
class BubblewrapConfig:
    """``[sandbox.bubblewrap]``: what only the bubblewrap jail needs.

    ``bwrap``: the program (a name on PATH or an absolute path). ``file_size_limit``: the
    largest file a jailed process may write (RLIMIT_FSIZE). ``ro_binds``: more host
    directories shown read-only inside the jail at the same path (a language runtime
    installed outside /usr, say); never the data dir or a home directory. ``seccomp``: the
    system call filter of `_seccomp` (needs libseccomp; without it the jail refuses to run
    unless this is false, which runs it with the other walls only).
    """

    bwrap: str = "bwrap"
    file_size_limit: str = "1g"
    ro_binds: list[str] = attrs.field(factory=list)
    seccomp: bool = True


#: What never reaches a jail or a container, whatever the allowlist says: provider
#: keys, bot tokens, cloud secrets (fnmatch patterns, matched case-insensitively).
DEFAULT_ENV_BLOCKLIST: Final = (
    "*_API_KEY",
    "*_TOKEN",
    "*_SECRET",
    "*_SECRET_*",
    "*PASSWORD*",
    "*_CREDENTIALS",
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "BRAVE_API_KEY",
    "TELEGRAM_BOT_TOKEN",
    "BEAMCLAW_GATEWAY_TOKEN",
    "GITHUB_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AZURE_CLIENT_SECRET",
    "SSH_AUTH_SOCK",
)


@attrs.frozen
class SandboxConfig:
    """``[sandbox]``. Sizes are Docker's notation (``"512m"``); see the module docstring for
    which backend reads which key."""

    #: Opt in to Docker code execution (the ``exec`` tool); the jail of bash and terminal runs either way.
    enabled: bool = False
    #: The reference design's key: ``exec`` runs in Docker whatever it says (bash and terminal
    #: pick their jail with ``[tools.bash] isolation``).
    backend: Literal["bubblewrap", "docker"] = "docker"
    #: The image ``exec`` runs in (``beamclaw sandbox build`` makes it).
    docker_image: str = "beamclaw-sandbox:latest"
    #: Who shares a warm container: each conversation, each agent, or everyone.
    scope: Literal["session", "agent", "shared"] = "session"
    #: The longest one ``exec`` call may run.
    timeout_seconds: float = 60.0
    #: How often idle containers are looked for.
    reaper_interval_seconds: float = 60.0
    #: A Docker sandbox unused this long is stopped (and its container removed) by the reaper.
    idle_timeout_seconds: float = 1800.0
    #: Memory of a container, and the heap limit of a jailed command.
    memory_limit: str = "512m"
    #: CPUs of a container; a jailed command's CPU time is its time limit times this.
    cpu_limit: str = "1.0"
    #: Processes in a container or a jail.
    pids_limit: int = 256
    #: "none": no network inside; "bridge": the container's network, or the host's for a jail.
    network: Literal["none", "bridge"] = "none"
    #: The agent's workspace at /workspace in a container: not at all, read-only or writable.
    workspace_mount: Literal["none", "ro", "rw"] = "ro"
    #: Bytes of output kept of one command or ``exec`` call.
    max_output_bytes: int = 1_048_576
    pii: PiiConfig = PiiConfig()
    policy: PolicyConfig = PolicyConfig()
    #: The only environment variables a jail or container gets (then ``env_blocklist`` removes some).
    env_allowlist: list[str] = attrs.field(factory=lambda: ["PATH", "HOME", "LANG", "TERM"])
    #: Variables never passed in, whatever the allowlist says (fnmatch patterns, any case).
    env_blocklist: list[str] = attrs.field(factory=lambda: list(DEFAULT_ENV_BLOCKLIST))
    bubblewrap: BubblewrapConfig = BubblewrapConfig()

    @property
    def memory_bytes(self) -> int:
        return parse_size(self.memory_limit, "sandbox.memory_limit")

    @property
    def cpus(self) -> float:
        return float(self.cpu_limit)

    @property
    def file_size_bytes(self) -> int:
        return parse_size(self.bubblewrap.file_size_limit, "sandbox.bubblewrap.file_size_limit")

    def env_allowed(self, name: str) -> bool:
        """Whether the variable *name* may reach a jail or container: allowlisted and not blocklisted."""
        upper = name.upper()
        if any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in self.env_blocklist):
            return False
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.env_allowlist)

    def filter_env(self, env: dict[str, str]) -> dict[str, str]:
        """The part of *env* that `env_allowed` lets through."""
        return {name: value for name, value in env.items() if self.env_allowed(name)}


#: Where the host's Unix sockets live (Docker, D-Bus, X11, XDG_RUNTIME_DIR): a socket bound
#: read-only can still be connected to, so none of these is ever bound into the jail.
_SOCKET_FOLDERS: Final = ("/run", "/var/run", "/tmp")


def _refuse_socket_folders(index: int, path: str) -> None:
    real = os.path.realpath(path)
    for folder in _SOCKET_FOLDERS:
        for target in {folder, os.path.realpath(folder)}:  # /var/run is a link to /run: /var holds it all the same
            if real == target or target.startswith(real.rstrip("/") + "/") or real.startswith(target + "/"):
                raise ConfigError(
                    f"sandbox.bubblewrap.ro_binds[{index}]: {path!r} would show the host's Unix sockets of "
                    f"{folder} to the jail (a socket bound read-only can still be connected to)"
                )


def parse_sandbox_config(table: dict[str, Any]) -> SandboxConfig:
    """Check ``[sandbox]``; raises `ConfigError` (a ValueError) naming the bad key."""
    table = dict(table)
    # cpu_limit is a string in the reference ("1.0", Docker's --cpus); a TOML number is meant the same.
    cpu = table.get("cpu_limit")
    if isinstance(cpu, (int, float)) and not isinstance(cpu, bool):
        table["cpu_limit"] = str(cpu)
    config = structure_config(table, SandboxConfig, "sandbox")
    config.memory_bytes  # noqa: B018 - parsed here so a bad size fails at start, naming the key
    config.file_size_bytes  # noqa: B018
    try:
        cpus = config.cpus
    except ValueError:
        raise ConfigError(
            f'sandbox.cpu_limit: expected a number of CPUs such as "1.0", got {config.cpu_limit!r}'
        ) from None
    if not cpus > 0:
        raise ConfigError(f"sandbox.cpu_limit: must be more than 0, got {config.cpu_limit!r}")
    for key in ("timeout_seconds", "reaper_interval_seconds", "idle_timeout_seconds"):
        if not getattr(config, key) > 0:
            raise ConfigError(f"sandbox.{key}: must be more than 0, got {getattr(config, key)!r}")
    for key in ("pids_limit", "max_output_bytes"):
        if getattr(config, key) <= 0:
            raise ConfigError(f"sandbox.{key}: must be more than 0, got {getattr(config, key)!r}")
    for index, path in enumerate(config.bubblewrap.ro_binds):
        if not path.startswith("/"):
            raise ConfigError(f"sandbox.bubblewrap.ro_binds[{index}]: expected an absolute path, got {path!r}")
        _refuse_socket_folders(index, path)
    return config
