"""The management routes are in the OpenAPI document, from the routes themselves."""

from __future__ import annotations

from pathlib import Path

import httpx
from quart import Blueprint

import beamclaw_control
from beamclaw_gateway import Role, create_app, needs, openapi_document
from beamclaw_gateway._config import GatewayConfig


def _blueprint() -> Blueprint:
    routes = Blueprint("example", __name__)

    @routes.post("/v1/things/<thing>/poke")
    @needs(Role.ADMIN)
    async def poke(thing: str) -> str:
        """Poke one thing.

        More text that is not the summary.
        """
        return thing

    @routes.get("/ui/things")
    @needs(Role.VIEWER)
    async def page() -> str:
        return "a page"

    return routes


def test_a_marked_route_is_described_with_its_role_and_parameters() -> None:
    document = openapi_document([_blueprint()])
    operation = document["paths"]["/v1/things/{thing}/poke"]["post"]
    assert operation["summary"] == "Poke one thing"
    assert operation["description"] == "Needs the admin role."
    assert operation["parameters"] == [{"name": "thing", "in": "path", "required": True, "schema": {"type": "string"}}]
    assert "/ui/things" not in document["paths"]  # the console's pages are not the API
    assert "/v1/chat/completions" in document["paths"]


async def test_the_served_document_has_the_routes_the_app_was_given(tmp_path: Path) -> None:
    app = create_app(GatewayConfig(), tmp_path, (_blueprint(),))
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]  # Quart's ASGI callable
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        served = (await http.get("/openapi.json", headers={"Host": "127.0.0.1"})).json()
    assert "/v1/things/{thing}/poke" in served["paths"]
    assert served == openapi_document((_blueprint(),))


def test_every_management_route_is_documented() -> None:
    document = openapi_document(beamclaw_control.blueprints())
    base = openapi_document()
    added = set(document["paths"]) - set(base["paths"])
    for path in added:
        for operation in document["paths"][path].values():
            assert operation["description"].startswith("Needs the "), path
