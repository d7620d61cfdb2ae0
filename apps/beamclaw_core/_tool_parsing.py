"""Reading tool calls out of a reply, for models that do not use native ``tool_calls``.

The order is fixed: native tool calls; then ``<tool_call>``, ``<toolcall>`` or
``<invoke>`` XML; then fenced ```json blocks; then nothing. JSON is never picked out
of free text, because prose that merely shows an example would run a tool.
Thinking and reasoning blocks are stripped from what the user sees.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from ._messages import ToolCall

_THINKING: Final = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)\s*", re.S | re.I)
_TAGGED: Final = re.compile(r"<(tool_call|toolcall)>\s*(.*?)\s*</\1>", re.S | re.I)
_INVOKE: Final = re.compile(r"<invoke\s+name=\"([^\"]+)\"\s*>(.*?)</invoke>", re.S | re.I)
_PARAMETER: Final = re.compile(r"<parameter\s+name=\"([^\"]+)\"\s*>(.*?)</parameter>", re.S | re.I)
_FUNCTION_CALLS: Final = re.compile(r"</?(?:antml:)?function_calls>", re.I)
_FENCED: Final = re.compile(r"```json\s*\n(.*?)\n?```", re.S | re.I)


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
            call = _call_from_json(json.loads(match.group(2)), len(calls))
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
