"""The channel protocol: how the loop talks back to wherever a message came from."""

from __future__ import annotations

import abc
from typing import Protocol

import attrs


class Channel(Protocol):
    """A destination for one turn's replies (the TUI, a Telegram chat, an HTTP response).

    ``update_draft`` gets the whole reply so far, about every 80 new characters, so a
    channel can edit one message in place; ``finalize_draft`` gets the final text.
    ``send`` is for separate messages, such as an approval question or an error.
    ``turn_failed`` gets the text of a failed turn (the model unreachable, the loop
    crashed) in place of ``finalize_draft``; ``progress`` a passing note while the user
    waits (the model is being retried): a status to show, not part of the reply;
    ``tool_started`` and ``tool_finished`` each tool call; ``approval_asked`` the question
    of a tool call waiting for the user's approval (a channel with buttons shows it as
    one). `BaseChannel` gives these five their defaults.
    """

    async def send(self, text: str) -> None: ...

    async def send_typing(self) -> None: ...

    async def update_draft(self, text: str) -> None: ...

    async def finalize_draft(self, text: str) -> None: ...

    async def turn_failed(self, text: str) -> None: ...

    async def progress(self, text: str) -> None: ...

    async def tool_started(self, name: str, arguments: str) -> None: ...

    async def tool_finished(self, name: str, result: str, is_error: bool) -> None: ...

    async def approval_asked(self, question: str) -> None: ...


class BaseChannel(abc.ABC):
    """A base for channels: a subclass defines the four methods every channel has, and
    overrides the others where it shows them."""

    __slots__ = ()

    @abc.abstractmethod
    async def send(self, text: str) -> None: ...

    @abc.abstractmethod
    async def send_typing(self) -> None: ...

    @abc.abstractmethod
    async def update_draft(self, text: str) -> None: ...

    @abc.abstractmethod
    async def finalize_draft(self, text: str) -> None: ...

    async def turn_failed(self, text: str) -> None:
        """The failure ends the reply, as a final text would."""
        await self.finalize_draft(text)

    async def progress(self, text: str) -> None:  # noqa: B027 - nothing, on purpose
        """Nothing: the reply will come, or the failure."""

    async def tool_started(self, name: str, arguments: str) -> None:  # noqa: B027 - nothing, on purpose
        """Nothing: the reply tells what the tools did."""

    async def tool_finished(self, name: str, result: str, is_error: bool) -> None:  # noqa: B027 - nothing, on purpose
        """Nothing: the reply tells what the tools did."""

    async def approval_asked(self, question: str) -> None:
        """The question as a message of its own: the user answers it with /yes or /no."""
        await self.send(question)


class ReplyOnlyChannel(BaseChannel):
    """A base for a channel that shows no drafts and no typing (nobody watches the reply
    grow): a subclass defines ``send``, and takes the final text from the turn's result."""

    __slots__ = ()

    async def send_typing(self) -> None:
        """Nothing: no one is watching."""

    async def update_draft(self, text: str) -> None:
        """Nothing: only the final reply counts."""

    async def finalize_draft(self, text: str) -> None:
        """Nothing: the turn's result carries the final text."""


@attrs.define
class CollectingChannel(BaseChannel):
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
