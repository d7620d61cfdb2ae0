"""The command-line interface: ``beamclaw run``, and the commands that talk to the daemon."""

from ._main import main

__all__ = ["main"]
