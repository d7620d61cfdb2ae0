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
