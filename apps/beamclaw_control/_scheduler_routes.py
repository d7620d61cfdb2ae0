"""Placeholder: filled in by the engineer who owns these routes."""

from __future__ import annotations

from quart import Blueprint

scheduler_routes = Blueprint("scheduler_routes", __name__)
