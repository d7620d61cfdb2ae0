"""Placeholder: filled in by the engineer who owns these routes."""

from __future__ import annotations

from quart import Blueprint

console_routes = Blueprint("console_routes", __name__)
