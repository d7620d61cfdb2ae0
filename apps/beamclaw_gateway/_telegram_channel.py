"""A Telegram chat as a `beamclaw_core.Channel`: a reply streamed by editing one message.

Drafts are shown as plain text (half-written Markdown is not valid HTML) and edited at
most once per ``edit_interval``; the final answer is Telegram HTML, split at 4,096
characters, and sent as plain text instead if Telegram refuses the HTML.
"""

from __future__ import annotations

import attrs
import trio
from loguru import logger

from ._telegram_api import BotApi, TelegramError
from ._telegram_format import LIMIT, split, to_html


@attrs.define(eq=False)
class TelegramChannel:
    api: BotApi
    chat_id: int
    edit_interval: float = 1.0
    _draft_id: int | None = None
    _draft_text: str = ""
    _last_edit: float = -1e9

    async def _send(self, html_text: str, plain: str) -> int | None:
        try:
            sent = await self.api.call("sendMessage", chat_id=self.chat_id, text=html_text, parse_mode="HTML")
        except TelegramError as exc:
            if exc.code != 400:
                raise
            logger.info("Telegram refused the HTML ({}); sending plain text", exc.description)
            sent = await self.api.call("sendMessage", chat_id=self.chat_id, text=plain[:LIMIT])
        return int(sent["message_id"]) if isinstance(sent, dict) else None

    async def _edit(self, message_id: int, text: str, html: bool) -> None:
        try:
            await self.api.call(
                "editMessageText",
                chat_id=self.chat_id,
                message_id=message_id,
                text=text,
                parse_mode="HTML" if html else None,
            )
        except TelegramError as exc:
            if exc.code != 400 or "not modified" in exc.description:
                if exc.code == 400:
                    return  # the same text again: nothing to do
                raise
            if not html:
                raise
            logger.info("Telegram refused the HTML ({}); editing in plain text", exc.description)
            await self._edit(message_id, self._draft_text[:LIMIT], html=False)

    async def send(self, text: str) -> None:
        html_pieces, plain_pieces = split(to_html(text)), split(text)
        for i, piece in enumerate(html_pieces):
            await self._send(piece, plain_pieces[min(i, len(plain_pieces) - 1)])

    async def send_typing(self) -> None:
        await self.api.call("sendChatAction", chat_id=self.chat_id, action="typing")

    async def update_draft(self, text: str) -> None:
        now = trio.current_time()
        if now - self._last_edit < self.edit_interval:
            return
        self._last_edit = now
        self._draft_text = text
        shown = text[:LIMIT]
        if self._draft_id is None:
            sent = await self.api.call("sendMessage", chat_id=self.chat_id, text=shown)
            self._draft_id = int(sent["message_id"])
        else:
            await self._edit(self._draft_id, shown, html=False)

    async def finalize_draft(self, text: str) -> None:
        self._draft_text = text
        pieces = split(to_html(text))
        plain = split(text)
        if self._draft_id is None:
            await self.send(text)
            return
        await self._edit(self._draft_id, pieces[0], html=True)
        for i, piece in enumerate(pieces[1:], 1):
            await self._send(piece, plain[min(i, len(plain) - 1)])
