"""The BeamClaw release: configuration, the apps in boot order, and the daemon.

``python -m beamclaw run`` loads config.toml, starts the enabled apps in dependency
order under one root supervisor, and serves until SIGINT or SIGTERM.

Each name is imported when it is first used (PEP 562): ``beamclaw.data_dir`` or
``beamclaw.ConfigError``, which every CLI command uses, must not import the apps, their
web framework and the MCP SDK, which only the daemon and a few commands need.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any, Final

from ._version import __version__

# httpx imports its own command-line tool (click, rich's console, table and syntax
# highlighting, pygments) whenever click is installed, as quart makes it: about a tenth of
# a second at every daemon and CLI start for a tool nothing here runs. A None entry makes
# that import fail, and httpx falls back to its stub ``main`` (only its CLI is lost).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

if TYPE_CHECKING:
    from beamclaw_control import SOCKET_NAME as CONTROL_SOCKET

    from ._apps import APPS, BUNDLED_SKILLS, check_config, store_config
    from ._config import default_config_path, load_config
    from ._daemon import daemon_lock, daemon_pid, run_daemon
    from ._data_dir import data_dir
    from ._describe import describe
    from ._errors import AlreadyRunning, ConfigError
    from ._root import build_tree

#: Where each name lives: (module, name there).
_WHERE: Final = {
    "CONTROL_SOCKET": ("beamclaw_control", "SOCKET_NAME"),
    "APPS": ("beamclaw._apps", "APPS"),
    "BUNDLED_SKILLS": ("beamclaw._apps", "BUNDLED_SKILLS"),
    "check_config": ("beamclaw._apps", "check_config"),
    "store_config": ("beamclaw._apps", "store_config"),
    "default_config_path": ("beamclaw._config", "default_config_path"),
    "load_config": ("beamclaw._config", "load_config"),
    "ConfigError": ("beamclaw._errors", "ConfigError"),
    "AlreadyRunning": ("beamclaw._errors", "AlreadyRunning"),
    "daemon_lock": ("beamclaw._daemon", "daemon_lock"),
    "daemon_pid": ("beamclaw._daemon", "daemon_pid"),
    "run_daemon": ("beamclaw._daemon", "run_daemon"),
    "data_dir": ("beamclaw._data_dir", "data_dir"),
    "describe": ("beamclaw._describe", "describe"),
    "build_tree": ("beamclaw._root", "build_tree"),
}


def __getattr__(name: str) -> Any:
    """The exported *name*, imported now and kept (the next lookup finds it directly)."""
    try:
        module, attribute = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


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
