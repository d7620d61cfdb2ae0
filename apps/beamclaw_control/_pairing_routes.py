"""Placeholder: filled in by the engineer who owns these routes."""

from __future__ import annotations

from quart import Blueprint

pairing_routes = Blueprint("pairing_routes", __name__)
