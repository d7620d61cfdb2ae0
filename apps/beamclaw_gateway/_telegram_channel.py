"""A Telegram chat as a `beamclaw_core.Channel`: a reply streamed by editing one message.

Drafts are shown as plain text (half-written Markdown is not valid HTML) and edited at
most once per ``edit_interval``; the final answer is Telegram HTML in pieces that are
each valid on their own (see `chunks`). A piece Telegram refuses as HTML is sent as
that same piece's plain text, so the fallback never repeats or skips anything.

Failures are logged in one line, not as tracebacks: the loop calls ``send_typing`` and
``update_draft`` again and again, so a failing one is logged once and then only
counted until it works again (`QuietFailures`). When the user has the final answer,
the update's `Pending` row is cleared (see `_telegram_ledger`).
"""

from __future__ import annotations

import attrs
import trio
from loguru import logger

import beamclaw_core as core

from ._telegram_api import BotApi, TelegramError
from ._telegram_format import chunks
from ._telegram_html import LIMIT, problems, utf16_len, visible_text
from ._telegram_ledger import Pending


@attrs.define
class QuietFailures:
    """A call that repeats every turn, logged once when it starts failing, then counted."""

    what: str
    failures: int = 0

    def failed(self, exc: TelegramError) -> None:
        if self.failures == 0:
            logger.warning("Telegram {} failed ({}); counting, not logging, until it works again", self.what, exc)
        self.failures += 1

    def worked(self) -> None:
        if self.failures:
            logger.info("Telegram {} works again after {} failures", self.what, self.failures)
        self.failures = 0


@attrs.define
class ChatNotices:
    """The quiet failure counters of one bot, shared by all its chats' channels."""

    typing: QuietFailures = attrs.field(factory=lambda: QuietFailures("sendChatAction"))
    drafts: QuietFailures = attrs.field(factory=lambda: QuietFailures("draft update"))


def _clip(text: str) -> str:
    """The longest start of *text* Telegram accepts as one message (counted in UTF-16)."""
    if utf16_len(text) <= LIMIT:
        return text
    used = 0
    for i, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > LIMIT:
            return text[:i]
    return text  # pragma: no cover - the length check above returned


@attrs.define(eq=False)
class TelegramChannel(core.BaseChannel):
    api: BotApi
    chat_id: int
    edit_interval: float = 1.0
    notices: ChatNotices = attrs.field(factory=ChatNotices)
    pending: Pending | None = None  # cleared when the user has the final answer
    turn: core.Turn | None = None  # set once the turn is queued
    _draft_id: int | None = None
    _last_edit: float = -1e9

    async def _answered(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            await pending.answered()

    async def _send(self, piece: str) -> int | None:
        """One piece as HTML; as that piece's own plain text if Telegram refuses the HTML."""
        wrong = problems(piece)
        if not wrong:
            try:
                sent = await self.api.call("sendMessage", chat_id=self.chat_id, text=piece, parse_mode="HTML")
                return int(sent["message_id"]) if isinstance(sent, dict) else None
            except TelegramError as exc:
                if exc.code != 400:
                    raise
                wrong = [exc.description]
        logger.info("Telegram: HTML not usable ({}); sending plain text", "; ".join(wrong))
        sent = await self.api.call("sendMessage", chat_id=self.chat_id, text=_clip(visible_text(piece)))
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
            if exc.code == 400 and "not modified" in exc.description:
                return  # the same text again: nothing to do
            if exc.code != 400 or not html:
                raise
            logger.info("Telegram refused the HTML ({}); editing in plain text", exc.description)
            await self._edit(message_id, _clip(visible_text(text)), html=False)

    async def send(self, text: str) -> None:
        try:
            for piece in chunks(text):
                await self._send(piece)
        except TelegramError as exc:
            logger.warning("Telegram: a message to chat {} was not delivered: {}", self.chat_id, exc)
            return
        if self.turn is not None and self.turn.result is not None:
            await self._answered()  # the turn ended with this message (the loop crashed, say)

    async def send_typing(self) -> None:
        try:
            await self.api.call("sendChatAction", chat_id=self.chat_id, action="typing")
        except TelegramError as exc:
            self.notices.typing.failed(exc)
            return
        self.notices.typing.worked()

    async def update_draft(self, text: str) -> None:
        now = trio.current_time()
        if now - self._last_edit < self.edit_interval or not text.strip():
            return
        self._last_edit = now
        try:
            if self._draft_id is None:
                sent = await self.api.call("sendMessage", chat_id=self.chat_id, text=_clip(text))
                self._draft_id = int(sent["message_id"])
            else:
                await self._edit(self._draft_id, _clip(text), html=False)
        except TelegramError as exc:
            self.notices.drafts.failed(exc)
            return
        self.notices.drafts.worked()

    async def finalize_draft(self, text: str) -> None:
        pieces = chunks(text)
        try:
            if self._draft_id is not None and pieces:
                await self._edit(self._draft_id, pieces[0], html=True)
                pieces = pieces[1:]
            for piece in pieces:
                await self._send(piece)
        except TelegramError as exc:
            logger.warning("Telegram: the answer to chat {} was not delivered: {}", self.chat_id, exc)
            return
        await self._answered()
