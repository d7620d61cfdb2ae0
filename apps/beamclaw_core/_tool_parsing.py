"""Reading tool calls out of a reply, for models that do not use native ``tool_calls``.

The order is fixed: native tool calls; then ``<tool_call>``, ``<toolcall>`` or
``<invoke>`` XML; then fenced ```json blocks; then nothing. JSON is never picked out
of free text, because prose that merely shows an example would run a tool.
Thinking and reasoning blocks are stripped from what the user sees.

The patterns run on model output, which a hostile model shapes at will: they are RE2
patterns (linear time), so a reply of ``<tool_call>`` repeated 20,000 times costs
milliseconds where a backtracking engine took 20 s with the event loop held.
"""

from __future__ import annotations

import json
from typing import Any, Final

import re2

from ._messages import ToolCall


def _either_tag(*names: str, body: str) -> str:
    """One alternative per tag name, each closed by its own end tag (RE2 has no backreferences)."""
    return "|".join(f"<{name}>{body}</{name}>" for name in names)


#: A closed block and the space after it, or an unclosed one to the end of the text.
_THINKING: Final = re2.compile(
    r"(?is)(?:" + _either_tag("think", "thinking", "reasoning", body=".*?") + r")\s*|<(?:think|thinking|reasoning)>.*"
)
_TAGGED: Final = re2.compile(r"(?is)" + _either_tag("tool_call", "toolcall", body=r"\s*(.*?)\s*"))
_INVOKE: Final = re2.compile(r"(?is)<invoke\s+name=\"([^\"]+)\"\s*>(.*?)</invoke>")
_PARAMETER: Final = re2.compile(r"(?is)<parameter\s+name=\"([^\"]+)\"\s*>(.*?)</parameter>")
_FUNCTION_CALLS: Final = re2.compile(r"(?i)</?(?:antml:)?function_calls>")
_FENCED: Final = re2.compile(r"(?is)```json\s*\n(.*?)\n?```")


def strip_thinking(text: str) -> str:
    """*text* without ``<think>``/``<thinking>``/``<reasoning>`` blocks (an unclosed one runs to the end)."""
    return _THINKING.sub("", text).strip() if "<" in text else text.strip()


def _call_from_json(value: Any, index: int) -> ToolCall | None:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    args = value.get("arguments", value.get("parameters", {}))
    if isinstance(args, str):
        raw = args
    elif isinstance(args, dict):
        raw = json.dumps(args)
    else:
        return None
    return ToolCall(id=f"call_text_{index}", name=value["name"], arguments=raw)


def _parameter_value(text: str) -> Any:
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_text_tool_calls(text: str) -> tuple[list[ToolCall], str]:
    """Tool calls written in the reply's text, and the text without them."""
    calls: list[ToolCall] = []
    for match in _TAGGED.finditer(text):
        try:
            body = next(group for group in match.groups() if group is not None)
            call = _call_from_json(json.loads(body), len(calls))
        except ValueError:
            call = None
        if call is not None:
            calls.append(call)
    if calls:
        return calls, _TAGGED.sub("", text).strip()
    for match in _INVOKE.finditer(text):
        params = {name: _parameter_value(value) for name, value in _PARAMETER.findall(match.group(2))}
        calls.append(ToolCall(id=f"call_text_{len(calls)}", name=match.group(1), arguments=json.dumps(params)))
    if calls:
        return calls, _FUNCTION_CALLS.sub("", _INVOKE.sub("", text)).strip()
    fenced_spans = []
    for match in _FENCED.finditer(text):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        for item in value if isinstance(value, list) else [value]:
            call = _call_from_json(item, len(calls))
            if call is not None:
                calls.append(call)
                fenced_spans.append(match.span())
    rest = text
    for start, end in reversed(sorted(set(fenced_spans))):
        rest = rest[:start] + rest[end:]
    return calls, rest.strip()


_THINKING_TAGS: Final = ("think", "thinking", "reasoning")
_OPENINGS: Final = tuple(f"<{tag}>" for tag in _THINKING_TAGS)
_LONGEST_TAG: Final = max(len(f"</{tag}>") for tag in _THINKING_TAGS)
_SPACE: Final = " \t\n\f\r"  # RE2's \s, which `strip_thinking` drops after a block
#: Lower-cases ASCII only, so indexes in the lowered text are indexes in the text.
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class ThinkingFilter:
    """`strip_thinking` for a stream: text in, in pieces, and what may be shown out.

    Each piece is looked at once, with at most one tag's length held back (the start
    of a tag cut by the chunking), so a streamed reply costs time linear in its length.
    Like `strip_thinking`, a block runs from its opening tag to the matching closing
    tag and the space after it, or to the end of the reply if it is never closed.
    """

    def __init__(self) -> None:
        self._pending = ""
        self._inside: str | None = None  # the closing tag awaited
        self._skip_space = False

    def feed(self, text: str) -> str:
        """The part of the reply, after what came before, now known to be shown."""
        text = self._pending + text
        lowered = text.translate(_ASCII_LOWER)
        shown: list[str] = []
        at, self._pending = 0, ""
        while at < len(text):
            if self._skip_space:
                while at < len(text) and text[at] in _SPACE:
                    at += 1
                if at == len(text):
                    break
                self._skip_space = False
            if self._inside is not None:
                end = lowered.find(self._inside, at)
                if end < 0:
                    self._pending = text[max(at, len(text) - len(self._inside) + 1) :]
                    break
                at, self._inside, self._skip_space = end + len(self._inside), None, True
                continue
            start = lowered.find("<", at)
            if start < 0:
                shown.append(text[at:])
                break
            shown.append(text[at:start])
            tail = lowered[start : start + _LONGEST_TAG]
            opening = next((tag for tag in _OPENINGS if tail.startswith(tag)), None)
            if opening is not None:
                self._inside = "</" + opening[1:]
                at = start + len(opening)
            elif start + len(tail) == len(text) and any(tag.startswith(tail) for tag in _OPENINGS):
                self._pending = text[start:]  # perhaps a tag cut by the chunking: wait for more
                break
            else:
                shown.append("<")
                at = start + 1
        return "".join(shown)

    def flush(self) -> str:
        """What is left to show at the end of the reply (an unclosed block shows nothing)."""
        rest = "" if self._inside is not None else self._pending
        self._pending = ""
        return rest
