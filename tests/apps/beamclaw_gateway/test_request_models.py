"""The request bodies' schemas: the one /openapi.json publishes is the one the routes apply.

A client that validates its body against the published schema is never surprised: what
the schema refuses the gateway refuses with a 400 naming the field, and what it accepts
the gateway refuses only for what no schema can say (a lone surrogate, no user message,
a user or agent outside the token's reach).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from trio_websocket import open_websocket_url

import beamclaw_gateway as gateway
from beamclaw_gateway._request_models import CHAT_REQUEST, WS_MESSAGE
from beamclaw_gateway._turns import BadRequest
from tests.support.json_mutation import DROP, mutated
from tests.support.model_server import Reply

from .conftest import RunGateway

JSON = {"Content-Type": "application/json"}
_VALID_CHAT: dict[str, Any] = {
    "model": "default",
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {}}]},
    ],
    "stream": False,
    "stream_options": {"include_usage": True},
    "user": "ada",
    "temperature": 1,
    "max_tokens": 5,
    "stop": ["x"],
    "n": 1,
}
_VALID_WS: dict[str, Any] = {"type": "message", "id": "m1", "text": "hi", "agent": "default", "user": "ada"}

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(min_value=2**63), st.floats(allow_nan=False),
    st.text(max_size=5), st.sampled_from(["", "text", "user", "message", "\ud800", "x" * 200]),
)  # fmt: skip
_values = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["type", "text", "role",
                                                                          "content", "x"]), inner, max_size=3),
)  # fmt: skip


def _bodies(valid: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.builds(mutated, st.just(valid), st.integers(0, 100), st.one_of(_values, st.just(DROP)))


@settings(max_examples=500, deadline=None, database=None)
@given(body=_bodies(_VALID_CHAT), message=_bodies(_VALID_WS))
def test_every_refusal_names_its_field_in_a_sentence(body: Any, message: Any) -> None:
    """No value falls through to the generic sentence, and nothing but a `BadRequest` escapes."""
    for shape, data in [(CHAT_REQUEST, body), (WS_MESSAGE, message)]:
        try:
            shape.parse(data)
        except BadRequest as exc:
            assert "does not match its schema" not in str(exc), (data, str(exc))
            assert exc.status == 400 and (" must " in str(exc) or "lone surrogate" in str(exc)), (data, str(exc))


#: What only the route can refuse in a body the schema accepts.
_BEYOND_THE_SCHEMA = ("lone surrogate", "no text content", "no message with role 'user'", "'user' is refused",
                      "may not", "not found", "invalid agent name")  # fmt: skip


async def test_the_published_schema_decides_which_chat_bodies_are_refused(run_gateway: RunGateway) -> None:
    table = {"rate_limit": {"requests": 1_000_000}}
    async with run_gateway(repeat=Reply("ok"), gateway_table=table) as g:
        async with g.client() as http:
            document = (await http.get("/openapi.json")).json()
        body_schema = document["paths"]["/v1/chat/completions"]["post"]["requestBody"]["content"]["application/json"]
        assert body_schema["schema"] == {"$ref": "#/components/schemas/ChatCompletionRequest"}
        published = Draft202012Validator(document["components"]["schemas"]["ChatCompletionRequest"])

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(body=_bodies(_VALID_CHAT))
        def check(http: httpx.Client, body: Any) -> None:
            answer = http.post("/v1/chat/completions", content=json.dumps(body))
            if not published.is_valid(body):
                assert answer.status_code == 400, (body, answer.text)
                said = answer.json()["error"]["message"]
                assert " must " in said or "lone surrogate" in said, (body, answer.text)
            elif answer.status_code != 200:
                message = answer.json()["error"]["message"]
                assert any(reason in message for reason in _BEYOND_THE_SCHEMA), (body, answer.text)

        def in_thread() -> None:
            with httpx.Client(base_url=g.url, headers=JSON, timeout=60) as http:
                check(http)

        await trio.to_thread.run_sync(in_thread)


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ({"type": "ping"}, "'type' must be \"message\""),
        ([1], 'a message must be {"type": "message", "id": "...", "text": "..."}'),
        ({"type": "message", "id": "1"}, "'text' must be a non-empty string"),
        ({"type": "message", "id": "1", "text": ["hi"]}, "'text' must be a non-empty string"),
        ({"type": "message", "id": "a\u0000b", "text": "hi"}, "'id' must be a non-empty printable string"),
        ({"type": "message", "id": "", "text": "hi"}, "'id' must be a non-empty printable string"),
        ({"type": "message", "id": "1", "text": "hi", "agent": 5}, "'agent' must be a string naming an agent"),
    ],
)
async def test_a_bad_websocket_message_is_told_which_field(run_gateway: RunGateway, message: Any, said: str) -> None:
    async with run_gateway() as g, open_websocket_url(g.url.replace("http", "ws") + "/ws") as ws:
        await ws.send_message(json.dumps(message))
        with trio.fail_after(20):
            answer = json.loads(await ws.get_message())
        assert answer["type"] == "error" and said in answer["error"]
        assert g.model.count == 0


async def test_the_document_given_to_the_docs_is_the_one_served(run_gateway: RunGateway) -> None:
    given_out = gateway.openapi_document()
    assert given_out["openapi"].startswith("3.1")
    assert given_out["components"]["schemas"]["ChatCompletionRequest"] == CHAT_REQUEST.schema
    assert given_out["components"]["schemas"]["WebSocketMessage"] == WS_MESSAGE.schema
    given_out["paths"].clear()  # a copy: the docs build may change it
    async with run_gateway() as g, g.client() as http:
        served = (await http.get("/openapi.json")).json()
    assert served == gateway.openapi_document() and "/v1/chat/completions" in served["paths"]
