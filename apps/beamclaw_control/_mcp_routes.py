"""Placeholder: filled in by the engineer who owns these routes."""

from __future__ import annotations

from quart import Blueprint

mcp_routes = Blueprint("mcp_routes", __name__)
