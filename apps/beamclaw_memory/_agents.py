"""The agents' memories: starts each agent's index process on first use.

One process starts them all, so two callers asking for the same agent at once get one
index; it also holds what every index is started with (the data dir, the config). An
index is a temporary child: one that crashed is started again, repaired (see `_index`),
by the next call for it or the watcher's next tick, never twice under one name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import attrs

import supervision as sv
from beamclaw_base import StoreConfig

from ._config import MemoryConfig
from ._index import INDEXES_SUP, AgentIndex, index_name
from ._messages import RememberFor, StartedIndexes, StartIndex

AGENTS: Final = "beamclaw_memory.agents"
#: The name the memory app's (empty) supervisor holds when ``enabled = false``: callers
#: are told at once that memory is off, where waiting for `AGENTS` to come back would
#: cost every turn that keeps memory fresh the whole restart wait.
MEMORY_OFF: Final = "beamclaw_memory.off"
#: An agent name as core checks it: the index's folder is named after it.
_AGENT_NAME: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


class UnknownMemory(ValueError):
    """Not an agent name; the message says what is allowed."""


@attrs.define
class _State:
    data_dir: Path
    config: MemoryConfig
    clock: Callable[[], float]
    #: Where the agents' kept documents are (see `_remembered`).
    store: StoreConfig
    #: Every agent whose index was started: the watcher starts again those not running.
    started: set[str] = attrs.field(factory=set)


def check_agent(agent: Any) -> str:
    if not isinstance(agent, str) or not _AGENT_NAME.fullmatch(agent):
        raise UnknownMemory(f"invalid agent name {agent!r}")
    return agent


class Agents(sv.GenServer):
    def init(self, data_dir: Path, config: MemoryConfig, clock: Callable[[], float], store: StoreConfig) -> _State:
        return _State(data_dir, config, clock, store)

    async def handle_call(
        self, request: StartIndex | StartedIndexes, caller: sv.Caller, state: _State
    ) -> sv.Reply | sv.NoReply:
        match request:
            case StartIndex(agent):
                try:
                    await self._start(state, check_agent(agent))
                except (UnknownMemory, sv.StartError) as exc:
                    sv.reply_error(caller, exc)
                    return sv.NoReply(state)
                return sv.Reply(index_name(agent), state)
            case StartedIndexes():
                return sv.Reply(sorted(state.started), state)
        raise ValueError(f"unknown memory request {request!r}")

    async def handle_cast(self, message: RememberFor, state: _State) -> sv.NoReply:
        match message:
            case RememberFor(agent, exchange):
                try:
                    await self._start(state, check_agent(agent))
                except (UnknownMemory, sv.StartError):
                    return sv.NoReply(state)
                sv.cast(index_name(agent), exchange)
        return sv.NoReply(state)

    @staticmethod
    async def _start(state: _State, agent: str) -> None:
        if sv.whereis(index_name(agent)) is not None:
            return
        state.started.add(agent)
        spec = sv.ChildSpec(
            agent, AgentIndex.start, args=(agent, state.data_dir, state.config, state.clock, state.store),
            name=index_name(agent), restart=sv.TEMPORARY,
        )  # fmt: skip
        try:
            await sv.start_child(INDEXES_SUP, spec)
        except sv.AlreadyStarted:
            return


def running_agents() -> list[str]:
    """The agents whose index runs now."""
    prefix = index_name("")
    return sorted(name.removeprefix(prefix) for name in sv.registered() if name.startswith(prefix))
