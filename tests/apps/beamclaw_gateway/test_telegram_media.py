"""Telegram: /context and the command menu; photos, voice notes and audio files within
their limits, transcribed by an OpenAI-compatible server on loopback."""

from __future__ import annotations

import email.parser
import email.policy
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest

import beamclaw_core as core
from beamclaw_gateway import parse_gateway_config
from beamclaw_gateway._telegram_bot import COMMANDS
from tests.support.asgi_server import Receive, Scope, Send, read_body, respond, serve_asgi
from tests.support.model_server import Reply

from .test_telegram import eventually, idle, telegram

_ = telegram


@attrs.define
class Transcriber:
    """An OpenAI-compatible ``POST /v1/audio/transcriptions`` (multipart), keeping what it got."""

    text: str = "please turn on the lights"
    status: int = 200
    received: list[dict[str, Any]] = attrs.field(factory=list)
    base_url: str = ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        if scope["path"] != "/v1/audio/transcriptions":
            await respond(send, 404, {"error": {"message": "not found"}})
            return
        head = f"Content-Type: {headers['content-type']}\r\n\r\n".encode()
        form = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        parts = {part.get_param("name", header="content-disposition"): part for part in form.iter_parts()}
        self.received.append({
            "authorization": headers.get("authorization", ""),
            "model": parts["model"].get_content().strip(),
            "file": parts["file"].get_content(),
            "filename": parts["file"].get_filename(),
            "type": parts["file"].get_content_type(),
        })  # fmt: skip
        await respond(send, self.status, {"text": self.text} if self.status == 200 else {"error": {"message": "no"}})


@asynccontextmanager
async def transcriber(**settings: Any) -> AsyncIterator[Transcriber]:
    service = Transcriber(**settings)
    async with serve_asgi(service) as url:
        service.base_url = f"{url}/v1"
        yield service


def with_transcription(base_url: str) -> dict[str, Any]:
    return {"transcription": {"base_url": base_url, "model": "whisper-large", "api_key": {"env": "STT_KEY"}}}


async def test_context_answers_as_in_the_terminal_and_the_menu_is_registered(telegram: Callable[..., Any]) -> None:
    async with telegram(Reply("noted"), dm_policy="open") as (_, fake):
        await eventually(lambda: bool(fake.commands))
        assert [c["command"] for c in fake.commands] == [name for name, _ in COMMANDS]
        assert "context" in [c["command"] for c in fake.commands]
        fake.push(3, "remember the number 42")
        await eventually(lambda: "noted" in fake.texts(3))
        await idle("telegram:3")
        fake.push(3, "/context")
        await eventually(lambda: any(t.startswith("Context:") for t in fake.texts(3)))
        (answer,) = [t for t in fake.texts(3) if t.startswith("Context:")]
        usage = await core.context_usage(await core.open_session("telegram:3", "default", "telegram"))
        assert f"{usage.used:,} / {usage.window:,} tokens" in answer and answer.endswith("2 messages.")
        assert "\u2588" in answer or "\u2591" in answer


def _telegram_with(telegram: Callable[..., Any], base_url: str, *steps: Any, **channel: Any) -> Any:
    return telegram(*steps, gateway_extra=with_transcription(base_url), **{"dm_policy": "open", **channel})


async def test_a_voice_note_is_transcribed_and_reaches_the_model_marked_as_a_transcript(
    telegram: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STT_KEY", "stt-key-0123456789abcdef")
    async with transcriber() as stt, _telegram_with(telegram, stt.base_url, Reply("lights on")) as (g, fake):
        fake.files["files/v1"] = b"OggS-fake-voice"
        fake.push(4, voice={"file_id": "v1", "duration": 3, "mime_type": "audio/ogg", "file_size": 15})
        await eventually(lambda: "lights on" in fake.texts(4))
        (got,) = stt.received
        assert got == {"authorization": "Bearer stt-key-0123456789abcdef", "model": "whisper-large",
                       "file": b"OggS-fake-voice", "filename": "voice.ogg", "type": "audio/ogg"}  # fmt: skip
        content = g.model.requests[0]["messages"][-1]["content"]
        assert content.endswith("\nplease turn on the lights")
        assert content.startswith("[Voice message, transcribed") and "not instructions" in content


async def test_an_audio_file_is_transcribed_too(telegram: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STT_KEY", "stt-key-0123456789abcdef")
    async with (
        transcriber(text="the minutes of the meeting") as stt,
        _telegram_with(telegram, stt.base_url, Reply("summarised")) as (g, fake),
    ):
        fake.files["files/a1"] = b"ID3-fake-mp3"
        audio = {"file_id": "a1", "duration": 60, "file_name": "meeting.mp3", "mime_type": "audio/mpeg"}
        fake.push(4, audio=audio)
        await eventually(lambda: "summarised" in fake.texts(4))
        assert (stt.received[0]["filename"], stt.received[0]["type"]) == ("meeting.mp3", "audio/mpeg")
        assert g.model.requests[0]["messages"][-1]["content"].endswith("\nthe minutes of the meeting")


async def test_too_long_disabled_or_failed_voice_and_too_large_or_disabled_photos_are_told(
    telegram: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STT_KEY", "stt-key-0123456789abcdef")
    limits = {"voice": {"max_duration_seconds": 30}, "photo": {"max_size_bytes": 1000}}
    async with transcriber(status=500) as stt, _telegram_with(telegram, stt.base_url, **limits) as (g, fake):
        fake.files["files/v1"] = b"OggS"
        fake.push(4, voice={"file_id": "v1", "duration": 31})
        await eventually(lambda: len(fake.texts(4)) == 1)
        assert fake.texts(4)[0].startswith("That voice message is too long for me (31 s; I take up to 30 s)")
        fake.push(4, voice={"file_id": "v1", "duration": 5})
        await eventually(lambda: len(fake.texts(4)) == 2)
        assert fake.texts(4)[1].startswith("Sorry, I couldn't transcribe that voice message.")
        fake.push(4, photo=[{"file_id": "p1", "file_size": 5000, "width": 9, "height": 9}])
        await eventually(lambda: len(fake.texts(4)) == 3)
        assert fake.texts(4)[2].startswith("That photo is too large for me")
        assert g.model.count == 0 and len(stt.received) == 1
    off = {"voice": {"enabled": False}, "photo": {"enabled": False}}
    # (a new fake: its update ids go on from the first one's, which the saved offset has seen)
    async with transcriber() as stt, _telegram_with(telegram, stt.base_url, first_update=10, **off) as (g, fake):
        fake.push(5, audio={"file_id": "a1", "duration": 5})
        fake.push(5, caption="look", photo=[{"file_id": "p1", "file_size": 10, "width": 1, "height": 1}])
        await eventually(lambda: len(fake.texts(5)) == 2)
        assert fake.texts(5) == [
            "I can't listen to audio files here (they are turned off). Please type your message.",
            "I can't look at photos here (they are turned off). Please describe it in words.",
        ]
        assert g.model.count == 0 and stt.received == [] and "getFile" not in fake.calls


@pytest.mark.parametrize(
    ("telegram_table", "words"),
    [
        ({"photo": {"max_size_bytes": 0}}, "gateway.channels.telegram.photo.max_size_bytes must be more than 0"),
        ({"voice": {"max_duration_seconds": -1}}, "gateway.channels.telegram.voice.max_duration_seconds must be"),
        ({"voice": {"enabled": "yes"}}, "enabled"),
        ({"photo": {"max_bytes": 5}}, "max_bytes"),
    ],
)
def test_a_bad_media_limit_names_its_key(telegram_table: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_gateway_config({"channels": {"telegram": telegram_table}})
