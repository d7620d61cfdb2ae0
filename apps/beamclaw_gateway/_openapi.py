"""The OpenAPI document of the HTTP routes, served at /openapi.json; `openapi_document` gives it
to the docs site.

OpenAPI 3.1, whose schemas are JSON Schema 2020-12: the request bodies' schemas are the
very ones the routes validate with (`_request_models`), so they cannot drift. A test
checks that every HTTP route of the app is in it, and schemathesis checks the routes
against it. The A2A request's schema is written here: beamclaw_a2a validates A2A's
JSON-RPC itself (its errors are JSON-RPC errors, not 400s).

The management API's routes (the blueprints the app is given, each route marked with
the role it needs) are described from the routes themselves: their path, methods, path
parameters, the role, and the first line of their docstring, so a route cannot be
added without being in the document.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any, Final

from quart import Blueprint, Response, current_app
from quart_trio import QuartTrio

from ._principals import ROLE_ATTRIBUTE, Role
from ._request_models import CHAT_REQUEST, WS_MESSAGE

_ERROR: Final = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "code"],
            "properties": {"message": {"type": "string"}, "type": {"type": "string"}, "code": {"type": "string"}},
        }
    },
}
_JSON_ERROR: Final = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _errors(*codes: int) -> dict[str, Any]:
    reasons = {
        400: "bad request",
        401: "no or wrong gateway token",
        403: "the token's role or reach does not cover this route, user or agent; or an Origin not in "
        "gateway.http.allowed_origins, or a cross-site request without one",
        404: "not found",
        409: "the first request with this Idempotency-Key is still being answered (see Retry-After)",
        413: "body too large",
        415: "the body is not application/json",
        422: "this Idempotency-Key was used for another request (another body or X-User-Id)",
        421: "a Host this gateway does not answer to (gateway.http.allowed_hosts)",
        429: "rate limited (see Retry-After)",
        503: "unavailable",
    }
    # Every route checks Host and Origin first; every route with a body, its type.
    return {str(code): {"description": reasons[code], **_JSON_ERROR} for code in sorted({*codes, 403, 421})}


def _json(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema or {"type": "object"}}}}


_STRING: Final = {"type": "string"}
_A2A_METHODS: Final = [
    "SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
    "GetExtendedAgentCard", "CreateTaskPushNotificationConfig", "message/send", "message/stream", "tasks/get",
    "tasks/cancel", "tasks/resubscribe", "agent/getAuthenticatedExtendedCard",
]  # fmt: skip
#: A JSON-RPC 2.0 request of A2A: the union of every method's params, so a fuzzer reaches each.
_A2A_REQUEST: Final = {
    "type": "object",
    "required": ["jsonrpc", "method"],
    "properties": {
        "jsonrpc": {"type": "string", "enum": ["2.0"]},
        "id": {"type": ["string", "integer", "null"]},
        "method": {"type": "string", "enum": _A2A_METHODS},
        "params": {
            "type": "object",
            "properties": {
                "message": {
                    "type": "object",
                    "required": ["parts"],
                    "properties": {
                        "messageId": _STRING,
                        "role": {"type": "string", "enum": ["ROLE_USER", "user"]},
                        "contextId": {"type": "string", "maxLength": 128},
                        "parts": {
                            "type": "array",
                            "minItems": 1,
                            "items": {"type": "object", "properties": {"text": _STRING, "kind": _STRING}},
                        },
                    },
                },
                "configuration": {
                    "type": "object",
                    "properties": {"returnImmediately": {"type": "boolean"}, "blocking": {"type": "boolean"}},
                },
                "id": {"type": "string", "maxLength": 128},
                "historyLength": {"type": "integer", "minimum": 0},
                "pageSize": {"type": "integer", "minimum": 1, "maximum": 100},
                "pageToken": _STRING,
                "status": _STRING,
                "contextId": {"type": "string", "maxLength": 128},
            },
        },
    },
}

_DOCUMENT: Final[dict[str, Any]] = {
    "openapi": "3.1.0",
    "info": {
        "title": "BeamClaw gateway",
        "version": "1",
        "description": "The HTTP API of a BeamClaw daemon. Every route but /health needs "
        "'Authorization: Bearer <token>' when a token is configured. The token decides the principal: its role "
        "(viewer: the GET routes of metadata; operator: chat, /ws, /a2a, /mcp; admin: anything) and the users "
        "and agents it may act as; a request never names its own role.",
    },
    "components": {
        "schemas": {
            "Error": _ERROR,
            "ChatCompletionRequest": CHAT_REQUEST.schema,
            # Not a route's body: what a client sends on GET /ws (a WebSocket), for the docs.
            "WebSocketMessage": WS_MESSAGE.schema,
        },
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    },
    "security": [{"bearer": []}],
    "paths": {
        "/health": {
            "get": {
                "summary": "Liveness and the state of each app",
                "security": [],
                "responses": {
                    "200": _json("ok or degraded", {"type": "object", "required": ["status", "apps"]}),
                    **_errors(),
                },
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics",
                "responses": {
                    "200": {"description": "metrics", "content": {"text/plain": {"schema": {"type": "string"}}}},
                    **_errors(401, 429, 503),
                },
            }
        },
        "/v1/supervision/tree": {
            "get": {
                "summary": "The live supervision tree",
                "parameters": [
                    {
                        "name": "cluster",
                        "in": "query",
                        "required": False,
                        "description": "1: every node's tree, as {nodes: [{node_id, url, state, tree, error}]}",
                        "schema": {"type": "string", "enum": ["1", "true"]},
                    }
                ],
                "responses": {"200": _json("the tree, or every node's"), **_errors(401, 429, 503)},
            }
        },
        "/v1/models": {
            "get": {"summary": "The agents, as models", "responses": {"200": _json("a list"), **_errors(401, 429)}}
        },
        "/v1/chat/completions": {
            "post": {
                "summary": "OpenAI-compatible chat completion (JSON, or SSE with stream: true)",
                "parameters": [
                    {
                        "name": "Idempotency-Key",
                        "in": "header",
                        "required": False,
                        "description": "A key of the client's for this request (a UUID): sent again with the same "
                        "body, through any node, it gets the first request's answer, never a second turn. Kept 24 "
                        "hours per principal; a failure worth retrying (5xx, 429) keeps no key.",
                        "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7e]+$"},
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletionRequest"}}},
                },
                "responses": {
                    "200": {
                        "description": "a chat.completion, or chat.completion.chunk events",
                        "content": {
                            "application/json": {"schema": {"type": "object"}},
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    **_errors(400, 401, 404, 409, 413, 415, 422, 429),
                },
            }
        },
        "/webhook/telegram": {
            "post": {
                "summary": "Telegram updates (webhook mode); checks X-Telegram-Bot-Api-Secret-Token",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {"200": _json("accepted"), **_errors(400, 401, 404, 413, 415, 429)},
            }
        },
        "/.well-known/agent-card.json": {
            "get": {"summary": "The A2A agent card", "responses": {"200": _json("the card"), **_errors(401, 429)}}
        },
        "/.well-known/agent.json": {
            "get": {
                "summary": "The A2A agent card (pre-0.3 path)",
                "responses": {"200": _json("the card"), **_errors(401, 429)},
            }
        },
        "/a2a": {
            "post": {
                "summary": "A2A JSON-RPC 2.0 (SendMessage, SendStreamingMessage, GetTask, ListTasks, ...)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _A2A_REQUEST}}},
                "responses": {
                    "200": {
                        "description": "a JSON-RPC response, or SSE for streaming methods",
                        "content": {
                            "application/json": {"schema": {"type": "object"}},
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    **_errors(401, 413, 415, 429),
                },
            }
        },
        "/openapi.json": {
            "get": {"summary": "This document", "responses": {"200": _json("OpenAPI 3"), **_errors(401, 429)}}
        },
    },
}

#: Where the web console's pages are: HTML for a browser, not part of the API.
_CONSOLE_PREFIX: Final = "/ui"


def _operation(view: Any, role: Role, arguments: Iterable[str]) -> dict[str, Any]:
    summary = ((view.__doc__ or "").strip().splitlines() or [view.__name__.replace("_", " ")])[0]
    return {
        "summary": summary.rstrip("."),
        "description": f"Needs the {role.name.lower()} role.",
        "parameters": [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}} for name in sorted(arguments)
        ],
        "responses": {
            "200": {
                "description": "the answer, or server-sent events for a stream",
                "content": {
                    "application/json": {"schema": {"type": "object"}},
                    "text/event-stream": {"schema": {"type": "string"}},
                },
            },
            **_errors(400, 401, 404, 409, 413, 415, 429, 503),
        },
    }


def _management_paths(blueprints: Iterable[Blueprint]) -> dict[str, dict[str, Any]]:
    """The paths of *blueprints*' routes that are marked with a role (`needs`)."""
    app = QuartTrio("beamclaw_openapi")
    for blueprint in blueprints:
        app.register_blueprint(blueprint)
    paths: dict[str, dict[str, Any]] = {}
    for rule in app.url_map.iter_rules():
        view = app.view_functions.get(rule.endpoint)
        role = getattr(view, ROLE_ATTRIBUTE, None)
        if not isinstance(role, Role) or rule.websocket or rule.rule.startswith(_CONSOLE_PREFIX):
            continue
        path = rule.rule
        for name in rule.arguments:
            path = path.replace(f"<{name}>", f"{{{name}}}").replace(f"<path:{name}>", f"{{{name}}}")
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            paths.setdefault(path, {})[method.lower()] = _operation(view, role, rule.arguments)
    return paths


def openapi_document(blueprints: Iterable[Blueprint] = ()) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the gateway's HTTP API with the management routes of
    *blueprints* (as `create_app`'s *extra*), as served at /openapi.json (a new copy: the
    caller may change it)."""
    document = copy.deepcopy(_DOCUMENT)
    document["paths"].update(_management_paths(blueprints))
    return document


#: Where the app keeps its document, serialised by the first request for it: building it
#: walks every route, a few percent of the daemon's start, for a page few ask for.
DOCUMENT_KEY: Final = "BEAMCLAW_OPENAPI"
#: Where the app keeps the management blueprints the document describes beside its own.
BLUEPRINTS_KEY: Final = "BEAMCLAW_OPENAPI_BLUEPRINTS"

openapi = Blueprint("openapi", __name__)


@openapi.get("/openapi.json")
async def document() -> Response:
    config = current_app.config
    if DOCUMENT_KEY not in config:
        config[DOCUMENT_KEY] = json.dumps(openapi_document(config[BLUEPRINTS_KEY]))
    return Response(config[DOCUMENT_KEY], content_type="application/json")
