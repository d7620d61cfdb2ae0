"""Placeholder: filled in by the engineer who owns these routes."""

from __future__ import annotations

from quart import Blueprint

chat_routes = Blueprint("chat_routes", __name__)
