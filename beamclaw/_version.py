"""The release version (one place, read by the package and the control socket)."""

__version__ = "0.1.0"
