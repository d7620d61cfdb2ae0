"""Placeholder: filled in by the engineer who owns these routes."""

from __future__ import annotations

from quart import Blueprint

session_routes = Blueprint("session_routes", __name__)
