"""The request bodies the gateway reads: a chat completion and a WebSocket chat message.

Each is an attrs class whose fields carry their JSON Schema (see `_schema`): the route
validates with it, and /openapi.json publishes it. What a schema cannot say (a lone
surrogate in a text, a user or agent outside the token's reach) the routes check after.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from ._schema import ERROR, Shape, checked_property, field, object_schema
from ._turns import BadRequest, checked_text

#: Where the OpenAI-compatible chat completions are asked.
CHAT_PATH: Final = "/v1/chat/completions"

_STRING: Final = {"type": "string"}
_NAME: Final = {"type": ["string", "null"], "description": "The agent: NAME or beamclaw/NAME (none: the default)"}
_USER: Final = {"type": ["string", "null"], "description": "The user the request speaks as (else X-User-Id), "
                "within the token's reach: at most 128 characters, its namespace included"}  # fmt: skip


@attrs.frozen
class ContentPart:
    """One part of a message's content; only ``text`` parts are read."""

    type: str = field(_STRING, "must be a string")
    text: str | None = field(_STRING, "must be a string", default=None)


_PART: Final = object_schema(
    ContentPart, "must be an object with a 'type'",
    extra={"if": {"properties": {"type": {"const": "text"}}}, "then": {"required": ["text"],
           "properties": {"text": {**_STRING, ERROR: "must be a string"}}}},
)  # fmt: skip


@attrs.frozen
class ChatMessage:
    """A message of an OpenAI chat request: of the conversation a client sends, the gateway
    reads the last user message (the session keeps the rest)."""

    role: str = field({**_STRING, "description": "system, user, assistant, tool or developer"}, "must be a string")
    content: str | tuple[ContentPart, ...] | None = field(
        {"type": ["string", "array", "null"], "items": _PART}, "must be a string, a list of content parts or null",
        default=None,
    )  # fmt: skip

    def user_text(self, where: str) -> str | None:
        """The text of a user message (its text parts joined; "" if it has none); None for other roles."""
        if self.role != "user":
            return None
        content = self.content
        if isinstance(content, tuple):
            content = "\n".join(part.text or "" for part in content if part.type == "text")
        return checked_text(content or "", f"{where}.content")


_MESSAGE: Final = object_schema(ChatMessage, "must be an object with 'role' and 'content'")


@attrs.frozen
class StreamOptions:
    include_usage: bool = field({"type": "boolean"}, "must be true or false", default=False)


_STREAM_OPTIONS: Final = {**object_schema(StreamOptions, "must be an object"), "type": ["object", "null"]}


def _number(low: float, high: float) -> dict[str, Any]:
    return checked_property({"type": ["number", "null"], "minimum": low, "maximum": high},
                            f"must be a number from {low:g} to {high:g}")  # fmt: skip


_COUNT: Final = checked_property({"type": ["integer", "null"], "minimum": 1}, "must be a whole number of at least 1")
_OBJECT: Final = checked_property({"type": ["object", "null"]}, "must be an object")
#: OpenAI's sampling options: accepted (the agent's own settings decide), but only when well formed.
_OPTIONS: Final = {
    "temperature": _number(0, 2), "top_p": _number(0, 1),
    "presence_penalty": _number(-2, 2), "frequency_penalty": _number(-2, 2),
    "max_tokens": _COUNT, "max_completion_tokens": _COUNT,
    "tools": checked_property({"type": ["array", "null"]}, "must be a list"),
    "tool_choice": checked_property({"type": ["string", "object", "null"]}, "must be a string or an object"),
    "response_format": _OBJECT, "logit_bias": _OBJECT, "metadata": _OBJECT,
    "stop": checked_property({"type": ["string", "array", "null"], "items": _STRING},
                             "must be a string or a list of strings"),
    "n": checked_property({"enum": [1, None]}, "must be 1: an agent gives one answer"),
}  # fmt: skip


@attrs.frozen(kw_only=True)
class ChatRequest:
    """POST /v1/chat/completions: OpenAI's chat completion request (its fields are checked in
    this order: the agent first)."""

    model: str | None = field(_NAME, "must be a string naming an agent", default=None)
    messages: tuple[ChatMessage, ...] = field(
        {"type": "array", "minItems": 1, "items": _MESSAGE}, "must be a non-empty list"
    )
    stream: bool = field({"type": "boolean"}, "must be true or false", default=False)
    stream_options: StreamOptions | None = field(_STREAM_OPTIONS, "must be an object", default=None)
    user: str | None = field(_USER, "must be a string", default=None)

    def last_user_text(self) -> str:
        """The text of the last user message; every message is checked, not only that one."""
        texts = [message.user_text(f"messages[{index}]") for index, message in enumerate(self.messages)]
        for text in reversed(texts):
            if text is None:
                continue
            if not text.strip():
                raise BadRequest("the last user message has no text content")
            return text
        raise BadRequest("'messages' has no message with role 'user'")


CHAT_REQUEST: Final = Shape.of(
    ChatRequest, "the body", "must be a JSON object (an OpenAI chat completion request)", checked=_OPTIONS
)

#: The longest WebSocket message id: ids are remembered (against resends), so they must be short.
MAX_MESSAGE_ID: Final = 128


@attrs.frozen
class WsMessage:
    """What a client sends on /ws: ``{"type": "message", "id": "...", "text": "..."}``."""

    type: str = field({"const": "message"}, 'must be "message"')
    id: str = field({"type": "string", "minLength": 1, "maxLength": MAX_MESSAGE_ID},
                    f"must be a non-empty printable string of at most {MAX_MESSAGE_ID} characters")  # fmt: skip
    text: str = field({"type": "string", "minLength": 1}, "must be a non-empty string")
    agent: str | None = field(_NAME, "must be a string naming an agent", default=None)
    user: str | None = field(_USER, "must be a string", default=None)


WS_MESSAGE: Final = Shape.of(WsMessage, "a message", 'must be {"type": "message", "id": "...", "text": "..."}')
