"""A loopback fake of the Telegram Bot API methods BeamClaw uses, for the channel's tests.

Like the real one, it answers a second concurrent getUpdates for the same bot with
409 Conflict, it notices when a long poll's client goes away, it parses HTML and
refuses what Telegram refuses (400 "can't parse entities", judged by
`telegram_html_errors`, which shares no code with the channel), and it counts the 4,096-character limit on the
text left after the tags. With ``instant`` set it answers getUpdates at once, as
some servers and emulators do, ignoring ``timeout``. Failures can be scripted per
method (a 429 with retry_after, a 400 for HTML), and ``hooks`` run something (a kill)
the moment a method is called. Everything the bot sends is kept for assertions, and
``poll_times`` holds when each getUpdates arrived.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from .asgi_server import Receive, Scope, Send, read_body, respond, serve_asgi
from .telegram_html import telegram_html_errors, utf16


def refusal(params: dict[str, Any]) -> str | None:
    """Why the Bot API would refuse this text (sendMessage, editMessageText), or None."""
    text = params.get("text", "")
    if not isinstance(text, str) or not text.strip():
        return "Bad Request: message text is empty"
    if params.get("parse_mode") == "HTML":
        wrong = telegram_html_errors(text)
        if wrong:
            return f"Bad Request: can't parse entities: {wrong[0]}"
        if "REJECT-HTML" in text:  # a test's way to have valid HTML refused
            return "Bad Request: can't parse entities"
    elif utf16(text) > 4096:
        return "Bad Request: message is too long"
    return None


@attrs.define
class FakeTelegram:
    token: str
    base_url: str = ""
    updates: list[dict[str, Any]] = attrs.field(factory=list)
    sent: list[dict[str, Any]] = attrs.field(factory=list)
    edits: list[dict[str, Any]] = attrs.field(factory=list)
    actions: list[dict[str, Any]] = attrs.field(factory=list)
    calls: list[str] = attrs.field(factory=list)
    webhook: dict[str, Any] | None = None
    commands: list[dict[str, Any]] = attrs.field(factory=list)  # the menu setMyCommands registered
    fail_next: dict[str, list[tuple[int, dict[str, Any]]]] = attrs.field(factory=dict)
    files: dict[str, bytes] = attrs.field(factory=dict)
    hooks: dict[str, Callable[[], None]] = attrs.field(factory=dict)  # run once when the method is called
    polls_in_flight: int = 0
    conflicts: int = 0
    instant: bool = False
    poll_times: list[float] = attrs.field(factory=list)
    _next_update: int = 1
    _next_message: int = 100
    _changed: trio.Event = attrs.field(factory=trio.Event)

    def push(self, user_id: int, text: str | None = None, **message: Any) -> int:
        """Queue an update: a private message from *user_id*."""
        body: dict[str, Any] = {
            "message_id": self._next_update, "date": 0, "chat": {"id": user_id, "type": "private"},
            "from": {"id": user_id, "is_bot": False, "first_name": f"User{user_id}", "username": f"user{user_id}"},
            **message,
        }  # fmt: skip
        if text is not None:
            body["text"] = text
        update = {"update_id": self._next_update, "message": body}
        self._next_update += 1
        self.updates.append(update)
        self._changed.set()
        self._changed = trio.Event()
        return int(update["update_id"])

    def texts(self, chat_id: int) -> list[str]:
        """What the user sees: each message's latest text."""
        latest = {m["message_id"]: m["text"] for m in self.sent if m["chat_id"] == chat_id}
        for edit in self.edits:
            if edit["chat_id"] == chat_id:
                latest[edit["message_id"]] = edit["text"]
        return list(latest.values())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path.startswith(f"/file/bot{self.token}/"):
            data = self.files.get(path.split("/", 3)[3])
            await respond(send, 200 if data is not None else 404, data or b"")
            return
        prefix = f"/bot{self.token}/"
        if not path.startswith(prefix):
            await respond(send, 401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
            return
        method = path.removeprefix(prefix)
        params = json.loads(await read_body(receive) or b"{}")
        self.calls.append(method)
        if method == "getUpdates":
            self.poll_times.append(trio.current_time())
        hook = self.hooks.pop(method, None)
        if hook is not None:
            hook()
        scripted = self.fail_next.get(method)
        if scripted:
            status, body = scripted.pop(0)
            await respond(send, status, {"ok": False, "error_code": status, **body})
            return
        if method == "getUpdates":
            await self._get_updates(params, receive, send)
            return
        result = self._answer(method, params)
        if isinstance(result, tuple):
            await respond(send, result[0], {"ok": False, "error_code": result[0], "description": result[1]})
        else:
            await respond(send, 200, {"ok": True, "result": result})

    def _answer(self, method: str, params: dict[str, Any]) -> Any:
        match method:
            case "sendMessage":
                text = params.get("text", "")
                why = refusal(params)
                if why is not None:
                    return (400, why)
                self._next_message += 1
                self.sent.append({**params, "message_id": self._next_message})
                return {"message_id": self._next_message, "chat": {"id": params["chat_id"]}, "text": text}
            case "editMessageText":
                why = refusal(params)
                if why is not None:
                    return (400, why)
                current = self.texts(params["chat_id"])
                if params["text"] in current[-1:]:
                    return (400, "Bad Request: message is not modified")
                self.edits.append(params)
                return True
            case "sendChatAction":
                self.actions.append(params)
                return True
            case "deleteWebhook":
                self.webhook = None
                return True
            case "setWebhook":
                self.webhook = params
                return True
            case "setMyCommands":
                self.commands = params["commands"]
                return True
            case "getMe":
                return {"id": 4242, "is_bot": True, "first_name": "BeamClaw", "username": "beamclaw_test_bot"}
            case "getFile":
                return {"file_id": params["file_id"], "file_path": f"files/{params['file_id']}"}
        return (404, f"Not Found: method {method}")

    async def _get_updates(self, params: dict[str, Any], receive: Receive, send: Send) -> None:
        if self.polls_in_flight:
            self.conflicts += 1
            await respond(send, 409, {"ok": False, "error_code": 409,
                                      "description": "Conflict: terminated by other getUpdates request"})  # fmt: skip
            return
        offset = int(params.get("offset") or 0)
        self.updates = [u for u in self.updates if u["update_id"] >= offset]  # confirmed ones are gone
        self.polls_in_flight += 1
        disconnected = False
        try:
            async with trio.open_nursery() as nursery:

                async def watch_disconnect() -> None:
                    nonlocal disconnected
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    disconnected = True
                    nursery.cancel_scope.cancel()

                nursery.start_soon(watch_disconnect)
                with trio.move_on_after(0 if self.instant else float(params.get("timeout") or 0)):
                    while not self.updates:
                        await self._changed.wait()
                nursery.cancel_scope.cancel()
        finally:
            self.polls_in_flight -= 1
        if not disconnected:
            await respond(send, 200, {"ok": True, "result": list(self.updates)})


@asynccontextmanager
async def fake_telegram(token: str, first_update: int = 1, instant: bool = False) -> AsyncIterator[FakeTelegram]:
    """The fake on a loopback port; *first_update* is the first update_id it hands out."""
    fake = FakeTelegram(token, instant=instant, next_update=first_update)
    async with serve_asgi(fake) as url:
        fake.base_url = url
        yield fake
