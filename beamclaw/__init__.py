"""The BeamClaw release: configuration, the apps in boot order, and the daemon.

``python -m beamclaw run`` loads config.toml, starts the enabled apps in dependency
order under one root supervisor, and serves until SIGINT or SIGTERM.
"""

from beamclaw_control import SOCKET_NAME as CONTROL_SOCKET

from ._apps import APPS, BUNDLED_SKILLS, check_config, store_config
from ._config import ConfigError, default_config_path, load_config
from ._daemon import AlreadyRunning, daemon_lock, daemon_pid, run_daemon
from ._data_dir import data_dir
from ._describe import describe
from ._root import build_tree
from ._version import __version__

__all__ = [
    "APPS",
    "AlreadyRunning",
    "BUNDLED_SKILLS",
    "CONTROL_SOCKET",
    "ConfigError",
    "__version__",
    "build_tree",
    "check_config",
    "daemon_lock",
    "daemon_pid",
    "describe",
    "data_dir",
    "default_config_path",
    "load_config",
    "run_daemon",
    "store_config",
]
