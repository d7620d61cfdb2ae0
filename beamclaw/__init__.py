"""The BeamClaw release: configuration, the apps in boot order, and the daemon.

``python -m beamclaw run`` loads config.toml, starts the enabled apps in dependency
order under one root supervisor, and serves until SIGINT or SIGTERM.
"""

from ._apps import APPS, build_tree
from ._config import ConfigError, data_dir, default_config_path, load_config
from ._daemon import run_daemon

__version__ = "0.1.0"

__all__ = [
    "APPS",
    "ConfigError",
    "__version__",
    "build_tree",
    "data_dir",
    "default_config_path",
    "load_config",
    "run_daemon",
]
