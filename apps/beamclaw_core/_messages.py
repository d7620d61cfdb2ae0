"""Chat messages and tool calls, in the shape OpenAI-compatible APIs use and storage keeps."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any, Final, Literal, final

import attrs
import trio

from beamclaw_obs import OFF_LOOP_CHARS, scrub, scrub_data

#: The stored format's version; a record of a newer version is refused, never misread.
RECORD_VERSION: Final = 1

Role = Literal["system", "user", "assistant", "tool"]


@final
@attrs.frozen
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text, as the model sent it

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@final
@attrs.frozen
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    images: tuple[str, ...] = ()  # data: URLs of images sent with a user message

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.images:
            out["content"] = [
                {"type": "text", "text": self.content},
                *({"type": "image_url", "image_url": {"url": url}} for url in self.images),
            ]
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
            out["content"] = self.content or None
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    @functools.cached_property
    def openai_json(self) -> str:
        """`to_openai` as JSON text, made once: a message never changes, and the whole
        history is sent to the model at every call."""
        return json.dumps(self.to_openai())

    def to_record(self) -> str:
        """The JSON text stored for this message (versioned)."""
        record: dict[str, Any] = {"v": RECORD_VERSION, "role": self.role, "content": self.content}
        if self.tool_calls:
            record["tool_calls"] = [[c.id, c.name, c.arguments] for c in self.tool_calls]
        if self.tool_call_id is not None:
            record["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            record["name"] = self.name
        if self.images:
            record["images"] = list(self.images)
        return json.dumps(record, ensure_ascii=False)

    @classmethod
    def from_record(cls, text: str) -> Message:
        record = json.loads(text)
        version = record.get("v")
        if version != RECORD_VERSION:
            raise ValueError(f"stored message has format version {version!r}; this BeamClaw reads {RECORD_VERSION}")
        return cls(
            role=record["role"],
            content=record.get("content", ""),
            tool_calls=tuple(ToolCall(*call) for call in record.get("tool_calls", ())),
            tool_call_id=record.get("tool_call_id"),
            name=record.get("name"),
            images=tuple(record.get("images", ())),
        )

    @property
    def chars(self) -> int:
        """Characters the model reads for this message (content and tool-call arguments)."""
        # An image costs the model roughly a thousand characters' worth of tokens.
        return (
            len(self.content) + sum(len(c.name) + len(c.arguments) for c in self.tool_calls) + 1000 * len(self.images)
        )


def estimate_tokens(messages: list[Message]) -> int:
    """Tokens estimated at four characters each, plus a little per message for its framing."""
    return sum(m.chars // 4 + 4 for m in messages)


def _scrubbed_arguments(arguments: str) -> str:
    """*arguments* with credentials redacted, still the same JSON when it was JSON.

    Scrubbing the parsed value keeps the text valid JSON (a redaction can never cut an
    escape or a quote); the original text is kept when nothing was redacted.
    """
    try:
        value = json.loads(arguments)
    except ValueError:
        return scrub(arguments)
    cleaned = scrub_data(value)
    return arguments if cleaned == value else json.dumps(cleaned, ensure_ascii=False)


def _safe_id(call_id: str) -> str:
    """A tool call's id, or, if it holds a credential, a stand-in made from it: the same for
    the call and its result, and different for different ids (a strict API refuses twins)."""
    if scrub(call_id) == call_id:
        return call_id
    return "call_" + hashlib.sha256(call_id.encode("utf-8", "replace")).hexdigest()[:24]


def scrubbed(message: Message) -> Message:
    """*message* as it may be kept: credentials redacted from its text and tool calls (ids and
    names too: a model chooses them).

    The session applies it to every message it stores, whichever path produced it, so
    history, the ``history`` command and every later request to a model never hold a
    secret the scrubber recognises.
    """
    calls = tuple(
        attrs.evolve(call, id=_safe_id(call.id), name=scrub(call.name), arguments=_scrubbed_arguments(call.arguments))
        for call in message.tool_calls
    )
    fields: dict[str, Any] = {"content": scrub(message.content), "tool_calls": calls}
    if message.tool_call_id is not None:
        fields["tool_call_id"] = _safe_id(message.tool_call_id)
    if message.name is not None:
        fields["name"] = scrub(message.name)
    return attrs.evolve(message, **fields)


async def scrubbed_all(messages: list[Message]) -> list[Message]:
    """`scrubbed` of each message; in a worker thread when they are long, so the loop runs on."""
    if sum(len(m.content) + sum(len(c.arguments) for c in m.tool_calls) for m in messages) < OFF_LOOP_CHARS:
        return [scrubbed(m) for m in messages]
    return await trio.to_thread.run_sync(lambda: [scrubbed(m) for m in messages])


#: The most characters of a user's message a turn takes (the gateway's default
#: ``max_user_chars``, and the control socket's): the rest is cut, with a notice.
MAX_USER_CHARS: Final = 32_000


def truncated(text: str, limit: int = MAX_USER_CHARS) -> str:
    """*text* cut to *limit* characters, with a notice to the model saying so."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n\n[The user's message was truncated: {len(text) - limit} more characters were cut.]"
