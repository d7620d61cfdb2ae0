"""Placeholder: filled in by the engineer who owns these routes."""

from __future__ import annotations

from quart import Blueprint

sandbox_routes = Blueprint("sandbox_routes", __name__)
