"""The HTTP API page lists every route of the gateway's OpenAPI document, from the document itself."""

from __future__ import annotations

import beamclaw_control
import beamclaw_gateway

from .conftest import load_hook


def test_every_route_of_the_openapi_document_is_on_the_page() -> None:
    document = beamclaw_gateway.openapi_document(beamclaw_control.blueprints())
    page = load_hook("openapi_reference").render(document)
    routes = [(method.upper(), path) for path, methods in document["paths"].items() for method in methods]
    assert routes
    for method, path in routes:
        assert f"### `{method} {path}`" in page


def test_a_route_added_to_the_document_appears_on_the_page() -> None:
    document = beamclaw_gateway.openapi_document()
    document["paths"]["/v1/new"] = {"get": {"summary": "A new route", "responses": {"200": {"description": "ok"}}}}
    page = load_hook("openapi_reference").render(document)
    assert "### `GET /v1/new`" in page
    assert "| [`GET /v1/new`](#route-get-v1-new) | A new route | needed when configured |" in page
