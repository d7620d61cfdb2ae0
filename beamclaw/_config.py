"""Loading config.toml: one table per app, secrets only as ``{ env = "VAR" }``."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import beamclaw_base
from beamclaw_obs import register_secret

from ._apps import APPS, store_config
from ._errors import ConfigError

#: Tables that belong to the daemon, not to one app: ``[store]``, where durable data lives.
SHARED_TABLES: Final = ("store",)

#: Words of an environment variable's name (split at ``_``) that mark it as holding a
#: credential: ``OPENAI_API_KEY``, ``BEAMCLAW_GATEWAY_TOKEN``, ``AWS_SECRET_ACCESS_KEY``.
_SECRET_WORDS: Final = frozenset({"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIALS", "PAT"})
#: Endings that do the same inside one word: ``PGPASSWORD``, ``HFTOKEN``.
_SECRET_ENDINGS: Final = ("PASSWORD", "PASSWD", "TOKEN", "SECRET", "APIKEY")


def _names_a_secret(name: str) -> bool:
    words = name.upper().split("_")
    return any(word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS) for word in words)


def default_config_path() -> Path:
    """The config.toml shipped beside the project."""
    return Path(__file__).resolve().parent.parent / "config.toml"


def load_config(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Read and check the configuration at *path* (default: the project's config.toml).

    Raises ConfigError for a missing file, invalid TOML (with its line), or a table
    that names no app.
    """
    config_path = Path(path) if path is not None else default_config_path()
    try:
        text = config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{config_path}: no such configuration file") from None
    except OSError as exc:
        raise ConfigError(f"{config_path}: cannot be read: {exc.strerror}") from None
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{config_path}: invalid TOML: {exc}") from None
    for table, value in config.items():
        if table not in APPS and table not in SHARED_TABLES:
            raise ConfigError(
                f"{config_path}: unknown table [{table}]; the apps are {', '.join(APPS)}, "
                f"and [{'], ['.join(SHARED_TABLES)}] are the daemon's own"
            )
        if not isinstance(value, dict):
            raise ConfigError(f"{config_path}: [{table}] must be a table, got {type(value).__name__}")
        if table in SHARED_TABLES:
            continue
        enabled = value.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ConfigError(f"{config_path}: {table}.enabled must be true or false, got {enabled!r}")
    try:
        store = store_config(config)
    except beamclaw_base.ConfigError as exc:
        raise ConfigError(f"{config_path}: {exc}") from None
    if config.get("cluster", {}).get("enabled") is True and store.backend != "postgres":
        raise ConfigError(
            f"{config_path}: a cluster keeps its state in PostgreSQL: "
            '[cluster] enabled needs [store] backend = "postgres"'
        )
    return config


def env_references(value: Any) -> Iterator[str]:
    """The variable of every ``{ env = "VAR" }`` table anywhere in *value*."""
    if isinstance(value, Mapping):
        if set(value) == {"env"} and isinstance(value["env"], str):
            yield value["env"]
            return
        for item in value.values():
            yield from env_references(item)
    elif isinstance(value, list):
        for item in value:
            yield from env_references(item)


def register_secrets(config: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> int:
    """Register with the scrubber every secret the daemon holds; return how many.

    Those are the values of the variables the configuration names (``{ env = ... }``)
    and of every variable whose name says it is a credential, whether or not anything
    uses it yet: a key the daemon could read must never come back out of it, in a tool
    result, a log line or an event, in any encoding the scrubber knows.
    """
    names = set(env_references(config))
    names.update(name for name in environ if _names_a_secret(name))
    values = [environ[name] for name in sorted(names) if environ.get(name)]
    for value in values:
        register_secret(value)
    return len(values)
