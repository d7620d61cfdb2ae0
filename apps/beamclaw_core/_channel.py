"""The channel protocol: how the loop talks back to wherever a message came from."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs


@runtime_checkable
class Channel(Protocol):
    """A destination for one run's replies (the TUI, a Telegram chat, an HTTP response).

    ``update_draft`` gets the whole reply so far, about every 80 new characters, so a
    channel can edit one message in place; ``finalize_draft`` gets the final text.
    ``send`` is for separate messages, such as an approval question or an error.

    A channel may also define ``tool_started(name, arguments)`` and
    ``tool_finished(name, result, is_error)``, and ``turn_failed(text)`` to get the text
    of a failed turn apart from replies (instead of ``finalize_draft`` or ``send``),
    and ``progress(text)`` for a passing note while the user waits (the model is being
    retried): a status to show, not part of the reply. The loop and the session call
    them when present.
    """

    async def send(self, text: str) -> None: ...

    async def send_typing(self) -> None: ...

    async def update_draft(self, text: str) -> None: ...

    async def finalize_draft(self, text: str) -> None: ...


class ReplyOnlyChannel:
    """A base for a channel that shows no drafts and no typing (nobody watches the reply
    grow): a subclass defines ``send``, and takes the final text from the run's result."""

    async def send_typing(self) -> None:
        """Nothing: no one is watching."""

    async def update_draft(self, text: str) -> None:
        """Nothing: only the final reply counts."""

    async def finalize_draft(self, text: str) -> None:
        """Nothing: the run's result carries the final text."""


@attrs.define
class CollectingChannel:
    """A channel that keeps everything it is given: for request/response callers and tests."""

    sent: list[str] = attrs.field(factory=list)
    drafts: list[str] = attrs.field(factory=list)
    finals: list[str] = attrs.field(factory=list)
    typing: int = 0

    async def send(self, text: str) -> None:
        self.sent.append(text)

    async def send_typing(self) -> None:
        self.typing += 1

    async def update_draft(self, text: str) -> None:
        self.drafts.append(text)

    async def finalize_draft(self, text: str) -> None:
        self.finals.append(text)
