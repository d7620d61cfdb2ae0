"""The runs `chat` keeps between calls: one per (agent, user), forgotten once told, bounded."""

from __future__ import annotations

import attrs
import pytest

from beamclaw_gateway._mcp_server import MAX_TURNS, Conversations, Pending


@attrs.define
class _AskingBackend:
    """Each run asks one question first when *ask* is set, then ends with the message echoed."""

    ask: bool
    started: list[tuple[str, str]] = attrs.field(factory=list)
    waiting: dict[str, Pending] = attrs.field(factory=dict)

    async def start(self, agent: str, user: str, message: str, pending: Pending, origin: str) -> None:
        self.started.append((agent, user))
        if self.ask:
            self.waiting[user] = pending
            pending.said(f"Approve for {user}?")
        else:
            pending.ended(True, f"echo {message}")

    async def answer(self, agent: str, user: str, word: str, origin: str) -> None:
        self.waiting.pop(user).ended(True, f"answered {word}")

    async def agents(self) -> list[str]:
        return ["default"]


async def test_a_told_run_is_forgotten_and_users_are_namespaced() -> None:
    conversations = Conversations(_AskingBackend(ask=False), "default")
    for n in range(3 * MAX_TURNS):
        assert await conversations.chat("hi", "", f"host-{n}") == "echo hi"
    assert conversations.turns == {}
    assert conversations.backend.started[:2] == [("default", "mcp:host-0"), ("default", "mcp:host-1")]


async def test_waiting_runs_are_bounded_and_answering_one_makes_room() -> None:
    backend = _AskingBackend(ask=True)
    conversations = Conversations(backend, "default")
    for n in range(MAX_TURNS):
        assert await conversations.chat("go", "", f"u{n}") == f"Approve for mcp:u{n}?"
    with pytest.raises(ValueError, match=f"{MAX_TURNS} conversations are waiting for an approval"):
        await conversations.chat("go", "", "one-too-many")
    assert ("default", "mcp:one-too-many", "mcp") not in conversations.turns
    assert await conversations.chat("/yes", "", "u0") == "answered /yes"
    assert await conversations.chat("go", "", "one-too-many") == "Approve for mcp:one-too-many?"


async def test_a_bad_user_is_refused_before_anything_starts() -> None:
    backend = _AskingBackend(ask=False)
    conversations = Conversations(backend, "default")
    with pytest.raises(ValueError, match="must be printable"):
        await conversations.chat("hi", "", "\x1b[2J")
    assert backend.started == []
