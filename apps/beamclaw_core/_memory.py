"""What the agent loop does for long-term memory (the memory app keeps the index).

- After a round of tools, the agent's index is brought up to date before the model sees
  the results: whatever a tool wrote to the workspace (``workspace_memory``,
  ``write_file``, a command in the jail) is searchable by the next call.
- A finished exchange is handed to the memory app as a document of the user's own.
- So is each of the user's own files (USER.md, MEMORY.md, a daily log) when it is
  written: the memory app indexes the agent's workspace, and these are kept apart from
  it (see `user_workspace`), so they are searchable by their user alone.
- With ``auto_context`` on, before the model is called the user's message is searched in
  memory (what that user may see: their own memory and the agent's files) and the top
  hits go with the message for the turn's calls, quoted as recalled data (see `recall`).
- Before compaction drops old messages, the memory flush: a hidden model call (no tools)
  is asked what in them should last. By default ("private") its answer is kept in the
  user's own memory, searchable by that user alone; with "daily_log" it goes into the
  user's daily log of today (the *workspace* the loop gives: the user's own files, see
  `user_workspace`, or the agent's for a single-user agent), read into that user's
  prompts. A failed flush is logged and skipped: it never blocks the compaction.

When the memory app is off or restarting, each of these does nothing.
"""

from __future__ import annotations

import datetime
from typing import Final

import attrs
import trio
from loguru import logger

import beamclaw_memory as memory
from beamclaw_base import PathRefused
from beamclaw_obs import emit, scrub

from ._messages import Message
from ._provider import Provider, ProviderError
from ._session import SessionInfo
from ._workspace import Workspace

#: How long a tool round waits for the index to catch up: past it, the watcher's next
#: look does it, and the turn goes on.
KEEP_FRESH_SECONDS: Final = 5.0
#: The longest a turn waits for its recall; past it the turn goes on without.
RECALL_SECONDS: Final = 5.0
#: The flush model's answer when nothing should last.
NOTHING: Final = "NOTHING"
#: The most of a flush that is written (a model that rambles does not fill the log).
MAX_FLUSH_CHARS: Final = 4_000
FLUSH_PROMPT: Final = (
    "The messages below are about to be summarised away. Write down, as short bullet lines, only what is "
    "worth remembering for months: facts about the user and their world, decisions, commitments, dates, "
    "preferences. Do not repeat what is only small talk or already done. If nothing should last, reply "
    f"exactly {NOTHING}."
)


async def keep_fresh(agent_id: str) -> None:
    """Index what changed in the agent's workspace now (nothing if memory is off)."""
    try:
        await memory.sync(agent_id, timeout=KEEP_FRESH_SECONDS)
    except memory.MemoryUnavailable as exc:
        logger.debug("memory not refreshed for agent {}: {}", agent_id, exc)


async def recall(info: SessionInfo, query: str, limit: int) -> str:
    """What memory holds for *query* that the conversation's user may see, as the model is
    to read it: each line quoted under a header saying it is recalled data, not
    instructions (a note may hold anything, a planted "ignore your instructions" too).
    "" when nothing matched, or memory is off, failing or slower than `RECALL_SECONDS`."""
    query = query.strip()[: memory.MAX_QUERY_CHARS]
    if not query:
        return ""
    try:
        with trio.fail_after(RECALL_SECONDS):
            found = await memory.search(info.agent_id, query, owner=info.user_id, limit=limit)
    except (memory.MemoryUnavailable, trio.TooSlowError) as exc:
        logger.debug("session {}: nothing recalled: {}", info.id[:12], exc or "too slow")
        return ""
    if not found.hits:
        return ""
    emit("auto_context", session_id=info.id, agent_id=info.agent_id, hits=len(found.hits))
    # Without the search's own note (keyword-only...): the model did not ask for a search.
    return scrub(memory.format_result(attrs.evolve(found, hits=found.hits[:limit], note=""), query))


def remember_exchange(info: SessionInfo, started: float, question: str, answer: str) -> None:
    """Hand a finished exchange to the memory app (searchable by this user alone)."""
    if not question.strip() or not answer.strip():
        return
    doc = f"conversations/{info.id[:16]}/{int(started * 1000)}"
    memory.remember(info.agent_id, info.user_id, doc, f"user: {question}\nassistant: {answer}")


async def remember_user_file(agent_id: str, user_id: str, files: Workspace, name: str) -> None:
    """Hand *name* of *files*, one user's own files, to the memory app as that user's
    document (it replaces the one of the same name; the file stays the one copy that
    counts, so this is best effort and never waits); nothing for the agent's own
    workspace, which the memory app indexes itself, or when memory is off."""
    if files.shared:
        return
    text = await trio.to_thread.run_sync(files.read, name)
    memory.remember(agent_id, user_id, f"users/{files.root.name}/{name}", text)


def _transcript(messages: list[Message]) -> str:
    return "\n".join(f"{m.role}: {m.content}" for m in messages if m.role in ("user", "assistant") and m.content)


async def flush_memory(
    info: SessionInfo, workspace: Workspace, provider: Provider, older: list[Message], where: str
) -> bool:
    """The memory flush for *older*, the messages compaction is about to drop (see the
    module), written by *provider* (the summariser: ``compaction_provider`` when it is set);
    whether it is done (kept, or nothing to keep), which maintenance waits for before a
    conversation may be deleted."""
    transcript = _transcript(older)
    if not transcript:
        return True
    try:
        with trio.fail_after(provider.capabilities().timeout_seconds):
            reply = await provider.complete([Message("system", FLUSH_PROMPT), Message("user", transcript)])
    except (ProviderError, trio.TooSlowError) as exc:
        logger.warning("session {}: the memory flush was skipped: {}", info.id[:12], exc)
        return False
    notes = scrub(reply.content.strip())[:MAX_FLUSH_CHARS].strip()
    if not notes or notes.strip(". ").upper() == NOTHING:
        emit("memory_flush", session_id=info.id, agent_id=info.agent_id, chars=0)
        return True
    now = datetime.datetime.now()
    try:
        if where == "daily_log":
            entry = f"\n## Kept from a conversation before compaction ({now:%H:%M})\n{notes}\n"
            await trio.to_thread.run_sync(workspace.append, Workspace.daily_name(now.date()), entry)
            await remember_user_file(info.agent_id, info.user_id, workspace, Workspace.daily_name(now.date()))
            await keep_fresh(info.agent_id)
        else:
            doc = f"kept/{info.id[:16]}/{int(now.timestamp() * 1000)}"
            text = f"Kept before compaction on {now:%Y-%m-%d %H:%M}:\n{notes}"
            await memory.remember_now(info.agent_id, info.user_id, doc, text)
    except (PathRefused, OSError, memory.MemoryUnavailable) as exc:
        logger.warning("session {}: the memory flush could not be kept: {}", info.id[:12], exc)
        return False
    emit("memory_flush", session_id=info.id, agent_id=info.agent_id, chars=len(notes), where=where)
    return True
