"""BeamClaw as an MCP server: its agents as tools for other MCP hosts (desktop assistants, IDEs).

Tools: ``chat(message, agent, user)`` sends a message to an agent and answers with its
reply (the same user and agent continue one conversation, with its memory, tools and
approvals), and ``agents()`` lists them. Served at ``/mcp`` by the gateway (behind its
token) and over stdio by ``beamclaw mcp serve``.

An agent that asks to approve a tool call cannot wait for the host's user inside one
tool call: ``chat`` answers with the question at once, and the turn waits; the next
``chat`` with ``/yes``, ``/no`` or ``/always`` answers it, and returns what the turn
says next (its reply, or another question).

The MCP SDK's server is built in `_agents_server`, imported only by what serves it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, Protocol

import attrs
import trio

import beamclaw_core as core

#: What answers an approval question (the session's words).
APPROVALS: Final = frozenset({"/yes", "/no", "/always", "/y", "/n"})
#: Runs kept between `chat` calls at once: each (agent, user) has one, so a host that
#: invents users cannot grow the table without end.
MAX_TURNS: Final = 256


@attrs.define
class Pending:
    """A turn in progress: what it says, as it says it (questions, then its last word)."""

    send: trio.MemorySendChannel[tuple[bool, str]]
    receive: trio.MemoryReceiveChannel[tuple[bool, str]]
    finished: bool = False
    #: The turn's last word has been handed to a `chat` call: nothing more to keep.
    told: bool = False
    last_question: str = ""

    @classmethod
    def open(cls) -> Pending:
        send, receive = trio.open_memory_channel[tuple[bool, str]](64)
        return cls(send, receive)

    def said(self, text: str) -> None:
        """A message of the turn's (an approval question); the host's user must see it now."""
        self.last_question = text
        self.send.send_nowait((False, text))

    def ended(self, ok: bool, text: str) -> None:
        self.finished = True
        self.send.send_nowait((True, text if ok else f"[the turn failed] {text}"))

    async def next(self) -> str:
        last, text = await self.receive.receive()
        self.told = last
        return text


class Backend(Protocol):
    """How the MCP server reaches the agents: core itself (the gateway), or the control socket."""

    async def start(self, agent: str, user: str, message: str, pending: Pending, origin: str) -> None:
        """Submit *message* as a turn from *origin*; tell *pending* what it says, until its end
        (in the background)."""

    async def answer(self, agent: str, user: str, word: str, origin: str) -> None:
        """Answer the approval the turn waits for (from *origin*: only the asking one's counts)."""

    async def agents(self) -> list[str]: ...


@attrs.define
class Conversations:
    """The turns in progress, one per (agent, user): the state `chat` keeps between calls."""

    backend: Backend
    default_agent: str
    turns: dict[tuple[str, str, str], Pending] = attrs.field(factory=dict)

    async def chat(self, message: str, agent: str, user: str, origin: str = "mcp") -> str:
        """The turn's next word for *message* from *origin* (the caller: each has turns of its
        own, and only its own ``/yes`` answers them); a bare *user* is put in the ``mcp:``
        namespace.

        Raises `ValueError` (said to the host) for a bad user or agent, or when
        `MAX_TURNS` conversations are waiting for answers.
        """
        agent = agent or self.default_agent
        user = core.check_user_id(user if ":" in user else f"mcp:{user}")
        key = (agent, user, origin)
        pending = self.turns.get(key)
        if pending is not None and not pending.finished:
            if message.strip().lower() not in APPROVALS:
                return (
                    f"The agent is still waiting for an answer to: {pending.last_question}\n"
                    "Reply /yes, /no or /always first."
                )
            await self.backend.answer(agent, user, message.strip(), origin)
        else:
            self._make_room()
            pending = self.turns[key] = Pending.open()
            try:
                await self.backend.start(agent, user, message, pending, origin)
            except BaseException:
                del self.turns[key]
                raise
        text = await pending.next()
        if pending.told and self.turns.get(key) is pending:
            del self.turns[key]
        return text

    def _make_room(self) -> None:
        """Forget finished turns whose caller went away before their end; refuse past `MAX_TURNS`."""
        if len(self.turns) < MAX_TURNS:
            return
        for key in [key for key, pending in self.turns.items() if pending.finished]:
            del self.turns[key]
        if len(self.turns) >= MAX_TURNS:
            raise ValueError(f"{MAX_TURNS} conversations are waiting for an approval; answer one of them first")


#: Who a ``chat`` call speaks as, and from where, from its agent, its ``user`` argument and
#: the request's headers (None over stdio): ``(user id, origin)``; raises `ValueError` for a
#: user the caller may not be.
Speaker = Callable[[str, str, Mapping[str, str] | None], tuple[str, str]]
