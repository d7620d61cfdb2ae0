"""Compaction: when the history nears the model's context window, summarise the old part.

Above ``compaction_threshold_pct`` of the window (tokens estimated at four characters
each), the newest messages that fit ``compaction_target_pct`` are kept and the rest is
summarised by the model into one ``[Conversation summary]`` system message. If the
model cannot summarise, the old part is dropped instead (a plain trim), so the turn
still goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import attrs
import trio

from beamclaw_obs import scrub

from ._messages import Message, estimate_tokens
from ._provider import Provider, ProviderError

SUMMARY_HEADER: Final = "[Conversation summary]"
DEFAULT_WINDOW: Final = 32_768

#: Context windows by model-name fragment; the longest fragment found in the name wins.
CONTEXT_WINDOWS: Final[dict[str, int]] = {
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "claude": 200_000,
    "gemini": 1_000_000,
    "llama-3.1": 128_000,
    "llama-3.2": 128_000,
    "llama-3.3": 128_000,
    "llama3": 8_192,
    "mistral-large": 128_000,
    "mistral": 32_768,
    "mixtral": 32_768,
    "qwen": 32_768,
    "deepseek": 128_000,
    "grok": 131_072,
}

_SUMMARY_PROMPT: Final = (
    "Summarise the conversation below for your own later use. Keep facts, decisions, names, numbers, "
    "open tasks and the user's preferences; drop small talk. Write plain prose or short bullet points."
)


def context_window(model: str, override: int | None = None) -> int:
    if override:
        return override
    name = model.lower()
    matches = [fragment for fragment in CONTEXT_WINDOWS if fragment in name]
    return CONTEXT_WINDOWS[max(matches, key=len)] if matches else DEFAULT_WINDOW


@attrs.frozen
class Compacted:
    history: list[Message]
    method: str  # "summary" or "trim"
    tokens_before: int
    tokens_after: int


def split(history: list[Message], budget: int) -> tuple[list[Message], list[Message]]:
    """(older, kept): the newest whole turns within *budget* tokens.

    The kept part starts at a user message, so no turn is cut in half (a tool result
    without the call that asked for it would make the history invalid for the model).
    """
    kept_tokens = 0
    cut = len(history)
    while cut > 0:
        cost = estimate_tokens([history[cut - 1]])
        if kept_tokens + cost > budget:
            break
        kept_tokens += cost
        cut -= 1
    while cut < len(history) and history[cut].role != "user":
        cut += 1
    if cut == len(history):  # keep at least the newest user message
        users = [i for i, m in enumerate(history) if m.role == "user"]
        cut = users[-1] if users else len(history) - 1
    return history[:cut], history[cut:]


def _transcript(messages: list[Message]) -> str:
    lines = []
    for m in messages:
        if m.tool_calls:
            calls = ", ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
            lines.append(f"{m.role}: {m.content} [called {calls}]".strip())
        else:
            lines.append(f"{m.role}{f' ({m.name})' if m.name else ''}: {m.content}")
    return "\n".join(lines)


async def compact(
    history: list[Message],
    summariser: Provider,
    window: int,
    threshold_pct: int,
    target_pct: int,
    *,
    flush: Callable[[list[Message]], Awaitable[None]] | None = None,
) -> Compacted | None:
    """The compacted history, or None when it is still below the threshold.

    *window* is the conversation's model's; *summariser* writes the summary (the
    conversation's own provider, or the cheaper ``compaction_provider``).

    *flush*, when given, is awaited with the messages about to be dropped first (the
    memory flush: the model keeps what should last before they go).
    """
    before = estimate_tokens(history)
    if before <= window * threshold_pct // 100:
        return None
    older, kept = split(history, window * target_pct // 100)
    if not older:
        return None
    if flush is not None:
        await flush(older)
    try:
        with trio.fail_after(summariser.capabilities().timeout_seconds):
            reply = await summariser.complete([Message("system", _SUMMARY_PROMPT), Message("user", _transcript(older))])
        summary = scrub(reply.content.strip())
        if not summary:
            raise ProviderError("the model returned an empty summary")
    except (ProviderError, trio.TooSlowError):
        new = kept
        method = "trim"
    else:
        new = [Message("system", f"{SUMMARY_HEADER}\n{summary}"), *kept]
        method = "summary"
    return Compacted(new, method, before, estimate_tokens(new))
