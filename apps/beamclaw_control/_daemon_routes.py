"""Placeholder: filled in by the engineer who owns these routes."""

from __future__ import annotations

from quart import Blueprint

daemon_routes = Blueprint("daemon_routes", __name__)
