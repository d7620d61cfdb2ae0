"""What the rest of BeamClaw calls: search, read, keep fresh, remember, reindex, status.

Every call names the agent; searches and reads also name the user they are for
(``owner``): the agent's files are everyone's, a conversation is its user's alone.
When the memory app is not running (disabled, or restarting past the wait) the call
raises `MemoryUnavailable` saying so; callers that only keep memory fresh ignore it.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import supervision as sv

from ._agents import AGENTS, MEMORY_OFF, UnknownMemory, running_agents
from ._index import index_name
from ._messages import (
    IndexStatus,
    ReadLines,
    Reindex,
    Remember,
    RememberFor,
    Search,
    SearchResult,
    StartIndex,
    Sync,
)

R = TypeVar("R")

#: Seconds a call waits for an index to start (its first start indexes the workspace).
_START_TIMEOUT: Final = 120.0
_RESTART_WAIT: Final = 2.0


class MemoryUnavailable(Exception):
    """The memory app cannot answer now; the message says why."""


async def _index(agent: str, timeout: float) -> str:
    """The name of the agent's index, started first if it is not running (waiting at most
    *timeout*: the start goes on without the caller, who is told memory is unavailable)."""
    if sv.whereis(index_name(agent)) is not None:  # running: no need to queue behind other agents' starts
        return index_name(agent)
    if sv.whereis(MEMORY_OFF) is not None:
        raise MemoryUnavailable("the memory app is not running ([memory] enabled = false)")
    try:
        name = await sv.call(AGENTS, StartIndex(agent), timeout=timeout, restart_wait=_RESTART_WAIT)
    except UnknownMemory:
        raise
    except sv.NoProc:
        raise MemoryUnavailable("the memory app is not running ([memory] enabled = false?)") from None
    except (sv.StartError, sv.CallTimeout, sv.ProcessExited) as exc:
        raise MemoryUnavailable(f"the memory index of agent {agent!r} could not be started: {exc}") from None
    return name


async def _ask(agent: str, request: sv.Request[R], timeout: float = 60.0) -> R:
    """*request* to the agent's index; a crash in it is answered by one try on the restarted one."""
    for attempt in (1, 2):
        name = await _index(agent, min(timeout, _START_TIMEOUT))
        try:
            return await sv.call(name, request, timeout=timeout)
        except (sv.NoProc, sv.ProcessExited) as exc:
            if attempt == 2:
                raise MemoryUnavailable(f"the memory index of agent {agent!r} failed: {exc}") from None
        except sv.CallTimeout:
            raise MemoryUnavailable(f"the memory index of agent {agent!r} did not answer in {timeout:g} s") from None
    raise AssertionError("unreachable")  # pragma: no cover


async def search(agent: str, query: str, *, owner: str | None, limit: int) -> SearchResult:
    """The agent's memory chunks best matching *query* that *owner* may see (None: files only)."""
    return await _ask(agent, Search(query, owner, limit))


async def read_lines(agent: str, path: str, *, owner: str | None, start: int, count: int) -> str:
    """Lines of an indexed document; `LookupError` when it is not one *owner* may see."""
    return await _ask(agent, ReadLines(path, owner, start, count))


async def sync(agent: str, timeout: float = 60.0) -> int:
    """Index what changed in the agent's workspace now; the documents changed."""
    return await _ask(agent, Sync(), timeout)


def remember(agent: str, owner: str, doc: str, text: str) -> bool:
    """Keep one exchange of *owner*'s conversation with *agent* (best effort: False if not sent)."""
    try:
        return sv.cast(AGENTS, RememberFor(agent, Remember(owner, doc, text)))
    except sv.NoProc:  # the memory app is off or restarting: this exchange is not indexed
        return False


async def remember_now(agent: str, owner: str, doc: str, text: str) -> None:
    """`remember`, waiting until it is stored (`MemoryUnavailable` if it cannot be)."""
    await _ask(agent, Remember(owner, doc, text))


async def reindex(agent: str) -> dict[str, Any]:
    """Index the agent's files from scratch and make every vector again; its new status."""
    return await _ask(agent, Reindex(), timeout=_START_TIMEOUT)


async def status(agents: list[str]) -> list[dict[str, Any]]:
    """Each agent's counts (documents, chunks, embedded, keyword chunks, vector model).

    An agent whose index is not running yet is started (and so indexed) to answer.
    """
    return [await _ask(agent, IndexStatus()) for agent in sorted(set(agents) | set(running_agents()))]
