"""Which store a command that reads or writes stored data opens: the running daemon's.

`beamclaw pair` and `beamclaw agent delete` change the store directly, daemon running or
not. They must change the one the daemon uses: ``--config`` when given, else the
running daemon's own configuration (asked over its socket), else the project's
config.toml. A PostgreSQL store left out here would send an approval to a SQLite file
nobody reads.
"""

from __future__ import annotations

import argparse
import functools
from typing import TYPE_CHECKING

import beamclaw

if TYPE_CHECKING:
    from beamclaw_base import StoreConfig

from ._api_client import ApiError, NoDaemon, call


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="PATH", help="configuration file (default: the running daemon's)")


def store_of(args: argparse.Namespace) -> StoreConfig:
    """The ``[store]`` of ``--config``, or of the running daemon, or of the project's config.toml."""
    import trio

    path = getattr(args, "config", None)
    if path is None:
        try:
            answer = trio.run(functools.partial(call, raw=True), "GET", "/v1/config")
        except (NoDaemon, ApiError, OSError, ValueError, KeyError):
            answer = {}
        if isinstance(answer.get("config"), dict):
            return beamclaw.store_config(answer["config"])
    return beamclaw.store_config(beamclaw.load_config(path))
