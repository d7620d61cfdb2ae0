"""Placeholder: filled in by the engineer who owns these routes."""

from __future__ import annotations

from quart import Blueprint

memory_routes = Blueprint("memory_routes", __name__)
