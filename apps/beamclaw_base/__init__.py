"""What every BeamClaw app shares, below the apps and above the scrubber.

Configuration structuring (`structure_config`), secrets from the environment
(`Secret`), path confinement (`Beneath`), the `Jail` protocol with subprocess capture
(`run_captured`, `Unjailed`), JSON-RPC's reserved codes, one retry helper, and the store interface every app's
durable data goes through (`open_store`: SQLite or PostgreSQL). It imports
`supervision` and `beamclaw_obs` only (a secret read is registered with the scrubber);
every app may import it.
"""

from ._config import ConfigError, structure_config
from ._jail import SYSTEM_PATH, Jail, JailResult, JailUnavailable, check_cwd
from ._jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from ._path_confinement import Beneath, Excerpt, PathRefused
from ._retry import MAX_RETRY_AFTER, OnRetry, RetryOn, RetryPolicy, parse_retry_after, retry
from ._secret import MissingSecret, Secret, TextOrSecret, resolve
from ._store import (
    Database,
    Dialect,
    Rows,
    Schema,
    Step,
    StoreConfig,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    Tx,
)
from ._store_listen import Notified, listener, notify, notify_group
from ._store_open import open_store
from ._subprocess import Unjailed, run_captured

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_RETRY_AFTER",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SYSTEM_PATH",
    "Beneath",
    "Database",
    "Dialect",
    "ConfigError",
    "Excerpt",
    "Jail",
    "JailResult",
    "JailUnavailable",
    "MissingSecret",
    "Notified",
    "OnRetry",
    "PathRefused",
    "RetryOn",
    "RetryPolicy",
    "Rows",
    "Schema",
    "Secret",
    "Step",
    "StoreConfig",
    "StoreError",
    "StoreRefused",
    "StoreUnavailable",
    "TextOrSecret",
    "Tx",
    "Unjailed",
    "check_cwd",
    "listener",
    "notify",
    "notify_group",
    "open_store",
    "parse_retry_after",
    "resolve",
    "retry",
    "run_captured",
    "structure_config",
]
