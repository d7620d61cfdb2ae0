"""Reading tool calls out of a reply, for models that do not use native ``tool_calls``.

The order is fixed, the first step that finds anything wins: native tool calls; then
``<tool_call>``, ``<toolcall>`` or ``<invoke>`` elements, with ``<name>`` and ``<args>``
children (or, as models also write them, a JSON body ``{"name": ..., "arguments": ...}``
or ``<invoke name="...">`` with ``<parameter name="...">`` children); then fenced
```json blocks holding ``{"tool": ..., "args": {...}}`` (or ``{"name": ...,
"arguments": ...}``); then nothing. JSON is never picked out of free text, because prose
that merely shows an example would run a tool.

A block that is plainly meant as a call but cannot be read (a tag left open, a call
inside a call, args that are not a JSON object, a name no tool could have, more calls
than a reply may make) is not dropped in silence: it becomes a refused call, which the
loop answers with the reason, so the model learns what to write instead. Thinking and
reasoning blocks are stripped from what the user sees.

The patterns run on model output, which a hostile model shapes at will: they are RE2
patterns (linear time), so a reply of ``<tool_call>`` repeated 20,000 times costs
milliseconds where a backtracking engine took 20 s with the event loop held.
"""

from __future__ import annotations

import json
from typing import Any, Final, final

import attrs
import re2

from ._messages import ToolCall


def _either_tag(*names: str, body: str) -> str:
    """One alternative per tag name, each closed by its own end tag (RE2 has no backreferences)."""
    return "|".join(f"<{name}>{body}</{name}>" for name in names)


#: A closed block and the space after it, or an unclosed one to the end of the text.
_THINKING: Final = re2.compile(
    r"(?is)(?:" + _either_tag("think", "thinking", "reasoning", body=".*?") + r")\s*|<(?:think|thinking|reasoning)>.*"
)
#: A call element; its body is in group 1 or 2, or, for ``<invoke>``, its attributes in 3 and its body in 4.
_ELEMENT: Final = re2.compile(
    r"(?is)<tool_call>(.*?)</tool_call>|<toolcall>(.*?)</toolcall>|<invoke(\s[^>]*)?>(.*?)</invoke>"
)
#: An element's opening tag; one left in the text after the closed ones were read was never closed.
_OPENING: Final = re2.compile(r"(?i)<(?:tool_call|toolcall)>|<invoke[\s>]")
#: Closing tags left over (a call nested in another leaves its outer one) and ``<function_calls>`` wrappers.
_LEFTOVER: Final = re2.compile(r"(?i)</(?:tool_call|toolcall|invoke)>|</?(?:antml:)?function_calls>")
_NAME_CHILD: Final = re2.compile(r"(?is)<name>(.*?)</name>")
_ARGS_CHILD: Final = re2.compile(r"(?is)" + _either_tag("args", "arguments", body="(.*?)"))
_NAME_ATTRIBUTE: Final = re2.compile(r"(?i)\bname\s*=\s*\"([^\"]*)\"")
_PARAMETER: Final = re2.compile(r"(?is)<parameter\s+name=\"([^\"]+)\"\s*>(.*?)</parameter>")
_FENCED: Final = re2.compile(r"(?is)```json\s*\n(.*?)\n?```")
#: What a tool's name may be (OpenAI's rule, with the dots and colons of some MCP names).
_VALID_NAME: Final = re2.compile(r"[A-Za-z0-9_.:-]{1,128}")

#: The most calls one reply may write as text; the rest are refused with one reason.
MAX_TEXT_CALLS: Final = 20
#: The name of a refused call whose own name could not be read.
UNREADABLE: Final = "unreadable_tool_call"
_FORMAT_HINT: Final = (
    "write a tool call as <tool_call><name>TOOL</name><args>{...}</args></tool_call>, with args a JSON object"
)


@final
@attrs.frozen
class TextToolCalls:
    """The calls a reply wrote as text, in order, and the text without them.

    Each call in ``refused`` could not be read: it must not run, and the loop answers it
    with the reason given, so the model can write it again properly.
    """

    calls: tuple[ToolCall, ...] = ()
    text: str = ""
    refused: dict[str, str] = attrs.field(factory=dict)

    @property
    def runnable(self) -> list[ToolCall]:
        return [call for call in self.calls if call.id not in self.refused]


class _Unreadable(Exception):
    """A call block that cannot be read; ``str()`` says why, for the model. *name* is
    the tool it names, when that much could be read."""

    def __init__(self, reason: str, name: str = UNREADABLE) -> None:
        super().__init__(reason)
        self.name = name


def strip_thinking(text: str) -> str:
    """*text* without ``<think>``/``<thinking>``/``<reasoning>`` blocks (an unclosed one runs to the end)."""
    return _THINKING.sub("", text).strip() if "<" in text else text.strip()


def _load(text: str) -> Any:
    """JSON, or `_Unreadable` (deep nesting included: json recurses once per level)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise _Unreadable(f"it is not valid JSON; {_FORMAT_HINT}") from None


def _checked_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Unreadable(f"it names no tool; {_FORMAT_HINT}")
    name = value.strip()
    if not _VALID_NAME.fullmatch(name):
        shown = name if len(name) <= 60 else name[:60] + "..."
        raise _Unreadable(f"{shown!r} is not a tool name (letters, digits, _ . : - and at most 128 of them)")
    return name


def _arguments(name: str, args: Any) -> str:
    """*args* as the JSON object text a tool takes; a string holding one is accepted too."""
    if isinstance(args, str):
        args = _load(args) if args.strip() else {}
    if not isinstance(args, dict):
        raise _Unreadable(f"the args of {name} must be a JSON object, not {type(args).__name__}", name)
    return json.dumps(args)


def _from_json(value: Any, name_key: str, args_keys: tuple[str, ...]) -> ToolCall | None:
    """The call in a decoded JSON object (id left empty), or None when it is not one."""
    if not isinstance(value, dict) or name_key not in value:
        return None
    name = _checked_name(value[name_key])
    args: Any = next((value[key] for key in args_keys if key in value), {})
    return ToolCall("", name, _arguments(name, args))


def _parameter_value(text: str) -> Any:
    text = text.strip()
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _read_element(match: Any) -> ToolCall:
    """The call one ``<tool_call>``/``<toolcall>``/``<invoke>`` element holds (id left empty)."""
    attributes = match.group(3) or ""
    body = next((group for group in (match.group(1), match.group(2), match.group(4)) if group is not None), "")
    if _OPENING.search(body):
        raise _Unreadable("a tool call written inside another one is not read; write each one on its own")
    if body.lstrip().startswith("{"):  # a JSON body: a "<name>" inside its strings is not a child
        call = _from_json(_load(body), "name", ("arguments", "parameters", "args"))
        if call is None:
            raise _Unreadable(f"it names no tool; {_FORMAT_HINT}")
        return call
    named, args = _NAME_CHILD.search(body), _ARGS_CHILD.search(body)
    if named is not None or args is not None:
        name = _checked_name(named.group(1) if named is not None else None)
        raw = next((group for group in args.groups() if group is not None), "") if args else ""
        return ToolCall("", name, _arguments(name, raw))
    attribute = _NAME_ATTRIBUTE.search(attributes)
    if attribute is not None:  # <invoke name="..."> with <parameter name="..."> children
        name = _checked_name(attribute.group(1))
        params = {key: _parameter_value(value) for key, value in _PARAMETER.findall(body)}
        return ToolCall("", name, json.dumps(params))
    call = _from_json(_load(body), "name", ("arguments", "parameters", "args"))
    if call is None:
        raise _Unreadable(f"it names no tool; {_FORMAT_HINT}")
    return call


class _Reading:
    """The calls found so far, numbered in order, with the reasons of the refused ones."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.refused: dict[str, str] = {}
        self.dropped = 0

    def add(self, call: ToolCall) -> None:
        if len(self.calls) >= MAX_TEXT_CALLS:
            self.dropped += 1
            return
        self.calls.append(attrs.evolve(call, id=f"call_text_{len(self.calls)}"))

    def refuse(self, problem: _Unreadable) -> None:
        if len(self.calls) >= MAX_TEXT_CALLS:
            self.dropped += 1
            return
        call_id = f"call_text_{len(self.calls)}"
        self.calls.append(ToolCall(call_id, problem.name, "{}"))
        self.refused[call_id] = f"it could not be read: {problem}"

    def result(self, text: str) -> TextToolCalls:
        if self.dropped:
            call_id = f"call_text_{len(self.calls)}"
            self.calls.append(ToolCall(call_id, UNREADABLE, "{}"))
            self.refused[call_id] = (
                f"a reply may write at most {MAX_TEXT_CALLS} tool calls as text; "
                f"{self.dropped} more were not read, send them in your next reply"
            )
        return TextToolCalls(tuple(self.calls), text.strip(), self.refused)


def _read_elements(text: str) -> TextToolCalls | None:
    reading = _Reading()
    for match in _ELEMENT.finditer(text):
        try:
            reading.add(_read_element(match))
        except _Unreadable as problem:
            reading.refuse(problem)
    closed = bool(reading.calls)
    rest = _LEFTOVER.sub("", _ELEMENT.sub("", text)) if closed else text
    if _OPENING.search(rest):
        reading.refuse(
            _Unreadable(f"a <tool_call>, <toolcall> or <invoke> tag was opened and never closed; {_FORMAT_HINT}")
        )
    return reading.result(rest) if reading.calls else None


def _read_fenced(text: str) -> TextToolCalls:
    reading = _Reading()
    spans = []
    for match in _FENCED.finditer(text):
        try:
            value = json.loads(match.group(1))
        except (ValueError, RecursionError):
            continue  # a code block that is not JSON is just code
        found = False
        for item in value if isinstance(value, list) else [value]:
            try:  # only {"tool": ...} or {"name": ..., "arguments": ...} is a call; other JSON is just data
                call = _from_json(item, "tool", ("args",))
                if call is None and isinstance(item, dict) and ("arguments" in item or "parameters" in item):
                    call = _from_json(item, "name", ("arguments", "parameters"))
            except _Unreadable as problem:
                reading.refuse(problem)
                found = True
                continue
            if call is not None:
                reading.add(call)
                found = True
        if found:
            spans.append(match.span())
    rest = text
    for start, end in reversed(spans):
        rest = rest[:start] + rest[end:]
    return reading.result(rest)


def parse_text_tool_calls(text: str) -> TextToolCalls:
    """Tool calls written in the reply's text (see the module for the formats), and the text without them."""
    return _read_elements(text) or _read_fenced(text)


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
