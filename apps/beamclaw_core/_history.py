"""The one rule every history obeys before a model sees it: each tool call is answered.

OpenAI-compatible APIs refuse, with a 400, a request in which an assistant message's
tool call is not followed by a tool message answering it, or a tool message answers
no call of the assistant message just before it. A crash at the wrong moment (the
daemon killed while a tool runs, the session restarted, a loop cancelled) can leave
exactly that in the stored history, and a strict API would then refuse every later
turn of the conversation, for good. So the rule is not repaired on one crash path
but enforced as an invariant in two places that every path goes through:

- when a session restores its history (after any restart or a `kill -9`), an
  unanswered call gets a result saying the tool was interrupted, and the repaired
  history is saved;
- every request the provider builds is checked again, so no request ever goes to a
  model with an unanswered call, whatever happened in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ._messages import Message

INTERRUPTED: Final = "error: this tool call was interrupted (the agent restarted) before it returned a result"


def answered_history(history: Sequence[Message]) -> list[Message]:
    """*history* with every tool call answered right after the message that made it.

    An unanswered call gets an `INTERRUPTED` result after the results that did come;
    a tool message that answers no call of the assistant message just before it (or
    answers one a second time) is left out. Returns a list equal to *history* when
    nothing needed repair, so ``answered_history(h) != h`` says whether it did.
    """
    out: list[Message] = []
    index, count = 0, len(history)
    while index < count:
        message = history[index]
        index += 1
        if message.role == "tool":
            continue  # an orphan: no assistant message with calls comes right before it
        out.append(message)
        if message.role != "assistant" or not message.tool_calls:
            continue
        wanted = {call.id for call in message.tool_calls}
        answered: dict[str | None, Message] = {}
        while index < count and history[index].role == "tool":
            result = history[index]
            index += 1
            if result.tool_call_id in wanted and result.tool_call_id not in answered:
                answered[result.tool_call_id] = result
        out.extend(answered.values())
        out.extend(
            Message("tool", INTERRUPTED, tool_call_id=call.id, name=call.name)
            for call in message.tool_calls
            if call.id not in answered
        )
    return out
