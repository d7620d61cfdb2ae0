"""Telegram's HTML, read the way the Bot API reads it: tokens, visible text, and its rules.

The Bot API refuses a message (400 "can't parse entities") whose HTML uses a tag it does
not know, leaves a tag open, closes one that is not open, or has a bare ``<`` or ``&``;
and it counts the 4,096-character limit on the text left after the tags are parsed.
`problems` states those rules, so the channel can check each piece before sending it
(a bad piece goes out as plain text instead of being refused), and the tests can check
everything the channel ever sends.

Nesting follows the Bot API's formatting notes: nothing inside ``code``; ``pre`` holds
text or exactly one ``code`` (for the language class); ``pre`` is never inside another
entity; no ``blockquote`` inside a ``blockquote``, no link inside a link. Bold, italic
and the like around inline code are accepted by the parser, so they are allowed here.
"""

from __future__ import annotations

import html
from typing import Final, Literal

import attrs
import re2

from ._unicode_classes import SPACE, is_word, without_surrogates

LIMIT: Final = 4096
_INLINE: Final = frozenset({"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "tg-spoiler"})
_TAGS: Final = _INLINE | {"span", "a", "code", "pre", "blockquote"}
_NAMED: Final = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
# One attribute, or (``junk``) the character where the attributes stop parsing. RE2:
# linear time on any text (see `_unicode_classes` for ``SPACE``).
_ATTR: Final = re2.compile(
    rf"[{SPACE}]*(?P<name>[A-Za-z][A-Za-z0-9-]*)"
    rf"(?:[{SPACE}]*=[{SPACE}]*(?P<value>\"[^\"]*\"|'[^']*'|[^{SPACE}\"'>]+))?[{SPACE}]*"
    r"|(?P<junk>(?s:.))"
)
_NAME_START: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_NAME: Final = _NAME_START | frozenset("0123456789-")
_ALNUM: Final = _NAME - {"-"}
_DIGITS: Final = frozenset("0123456789")
_HEX: Final = _DIGITS | frozenset("abcdefABCDEF")


def _language_class(value: str) -> bool:
    """Whether *value* is ``language-`` and a language name (word characters and ``+#.-``)."""
    name = value.removeprefix("language-")
    return name != value and bool(name) and all(is_word(char) or char in "+#.-" for char in name)


Kind = Literal["open", "close", "entity", "text", "stray"]


@attrs.frozen
class Token:
    """One piece of Telegram HTML: a tag, an entity, a run of text, or a stray ``<``/``>``/``&``."""

    kind: Kind
    raw: str
    name: str = ""  # the tag's name, lower-cased
    attrs: tuple[tuple[str, str | None], ...] = ()
    text: str = ""  # what it shows: the text itself, or the entity's character
    malformed: bool = False  # a tag whose attributes did not parse (or a closing tag with some)

    @property
    def width(self) -> int:
        """Its length as Telegram counts it (UTF-16 code units, never fewer than characters)."""
        return utf16_len(self.text)


def utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _entity(name: str) -> str | None:
    if name.startswith(("#x", "#X")):
        code = int(name[2:], 16)
    elif name.startswith("#"):
        code = int(name[1:])
    else:
        return _NAMED.get(name)
    if code == 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return None
    return chr(code)


def _attributes(raw: str) -> tuple[tuple[tuple[str, str | None], ...], bool]:
    """The attributes of a tag, and whether all of *raw* parsed as attributes.

    One pass: the pattern matches an attribute where one starts, else one character
    (``junk``), so its matches follow each other from the start of *raw* and the
    first junk is where parsing stops.
    """
    if not raw:
        return (), True
    found: list[tuple[str, str | None]] = []
    for match in _ATTR.finditer(without_surrogates(raw)):
        name, value, junk = match.groups()
        if junk is not None:
            return tuple(found), False
        if value is not None and value[:1] in {'"', "'"}:
            value = value[1:-1]
        found.append((name.lower(), html.unescape(value) if value is not None else None))
    return tuple(found), True


def _run(text: str, start: int, chars: frozenset[str]) -> int:
    """The end of the run of *chars* from *start*."""
    end = start
    while end < len(text) and text[end] in chars:
        end += 1
    return end


@attrs.define
class _Next:
    """The next index of one character at or after a moving position (each found once)."""

    text: str
    char: str
    at: int = -1

    def after(self, position: int) -> int:
        if self.at < position:
            found = self.text.find(self.char, position)
            self.at = found if found != -1 else len(self.text)
        return self.at


def _tag_end(text: str, start: int, lt: _Next, gt: _Next) -> int | None:
    """Where the tag at *start* (a ``<``) ends: ``</?NAME>`` or ``</?NAME`` space, no ``<``, then ``>``."""
    name = start + 2 if text.startswith("</", start) else start + 1
    if name >= len(text) or text[name] not in _NAME_START:
        return None
    after = _run(text, name + 1, _NAME)
    if after < len(text) and text[after] == ">":
        return after + 1
    if after < len(text) and text[after].isspace():
        close = gt.after(after)
        return close + 1 if close < lt.after(after) and close < len(text) else None
    return None


def _entity_end(text: str, start: int) -> int | None:
    """Where the entity at *start* (an ``&``) ends: ``&#DIGITS;``, ``&#xHEX;`` or ``&NAME;``."""
    if text.startswith("&#", start):
        if text.startswith(("x", "X"), start + 2):
            end = _run(text, start + 3, _HEX)
            size = end - start - 3
            return end + 1 if 1 <= size <= 7 and text.startswith(";", end) else None
        end = _run(text, start + 2, _DIGITS)
        return end + 1 if 1 <= end - start - 2 <= 8 and text.startswith(";", end) else None
    if start + 1 < len(text) and text[start + 1] in _NAME_START:
        end = _run(text, start + 2, _ALNUM)
        return end + 1 if text.startswith(";", end) else None
    return None


def tokens(text: str) -> list[Token]:
    """*text* as tokens; every character of it belongs to exactly one token.

    A scanner rather than a pattern, in time linear in *text*: a tag is ``<``, an
    optional ``/``, a name (a letter, then letters, digits and ``-``), and either
    ``>`` or a space and attributes up to the next ``>`` with no ``<`` before it; an
    entity is ``&#1;`` to ``&#12345678;``, ``&#x1;`` to ``&#x1234567;`` or ``&name;``;
    text runs up to the next ``<``, ``>`` or ``&``; any other ``<``, ``>`` or ``&`` is
    stray.
    """
    out: list[Token] = []
    lt, gt, amp = _Next(text, "<"), _Next(text, ">"), _Next(text, "&")
    position = 0
    while position < len(text):
        char = text[position]
        if char == "<" and (end := _tag_end(text, position, lt, gt)) is not None:
            raw = text[position:end]
            kind: Kind = "close" if raw.startswith("</") else "open"
            name_end = _run(raw, 2 if kind == "close" else 1, _NAME)
            found, complete = _attributes(raw[name_end:-1])
            malformed = not complete or (kind == "close" and bool(found))
            out.append(Token(kind, raw, raw[1 if kind == "open" else 2 : name_end].lower(), found, malformed=malformed))
        elif char == "&" and (end := _entity_end(text, position)) is not None:
            raw = text[position:end]
            entity = _entity(raw[1:-1])
            out.append(Token("entity", raw, text=entity) if entity is not None else Token("stray", raw, text=raw))
        elif char in "<>&":
            end = position + 1
            out.append(Token("stray", char, text=char))
        else:
            end = min(lt.after(position), gt.after(position), amp.after(position))
            out.append(Token("text", text[position:end], text=text[position:end]))
        position = end
    return out


def visible_text(text: str) -> str:
    """What a reader sees of *text*: tags dropped, entities decoded (the plain-text fallback)."""
    return "".join(token.text for token in tokens(text))


def visible_length(text: str) -> int:
    """The length the Bot API compares with its 4,096 limit (after entity parsing)."""
    return sum(token.width for token in tokens(text))


def _tag_problem(token: Token, stack: list[Token]) -> str | None:
    """Why this opening tag is not allowed here, or None."""
    name, given = token.name, dict(token.attrs)
    if name not in _TAGS:
        return f"unsupported tag <{name}>"
    if token.malformed or len(given) != len(token.attrs):
        return f"malformed attributes in {token.raw!r}"
    allowed: dict[str, set[str]] = {"a": {"href"}, "span": {"class"}, "code": {"class"}, "blockquote": {"expandable"}}
    extra = set(given) - allowed.get(name, set())
    if extra:
        return f"<{name}> does not take {', '.join(sorted(extra))}"
    if name == "a" and not given.get("href"):
        return "<a> needs an href"
    if name == "span" and given.get("class") != "tg-spoiler":
        return '<span> needs class="tg-spoiler"'
    if name == "blockquote" and given.get("expandable") is not None:
        return "expandable takes no value"
    parents = [t.name for t in stack]
    if parents and parents[-1] == "code":
        return f"<{name}> inside <code>"
    if name == "code" and "class" in given:
        if not parents or parents[-1] != "pre":
            return "a language class on <code> outside <pre>"
        if not _language_class(given["class"] or ""):
            return f"bad language class {given['class']!r}"
    if parents and parents[-1] == "pre" and name != "code":
        return f"<{name}> inside <pre>"
    if name == "pre" and parents:
        return f"<pre> inside <{parents[-1]}>"
    if name == "blockquote" and "blockquote" in parents:
        return "a <blockquote> inside a <blockquote>"
    if name == "a" and "a" in parents:
        return "a link inside a link"
    return None


def problems(text: str, limit: int = LIMIT) -> list[str]:
    """Every way *text* breaks Telegram's HTML rules; empty when the Bot API would take it."""
    found: list[str] = []
    stack: list[Token] = []
    pre_content: list[str] = []  # per open <pre>: what it held so far ("text", "code")
    for token in tokens(text):
        if token.kind == "stray":
            found.append(f"unescaped {token.raw!r}")
        elif token.kind == "open":
            problem = _tag_problem(token, stack)
            if problem is not None:
                found.append(problem)
            if stack and stack[-1].name == "pre":
                if pre_content and pre_content[-1]:
                    found.append("<pre> holds more than one <code>, or text and <code>")
                pre_content[-1] = "code"
            if token.name == "pre":
                pre_content.append("")
            stack.append(token)
        elif token.kind == "close":
            if not stack or stack[-1].name != token.name:
                found.append(f"</{token.name}> does not close the open tag")
                continue
            if token.malformed:
                found.append(f"attributes on a closing tag: {token.raw!r}")
            stack.pop()
            if token.name == "pre":
                pre_content.pop()
        elif stack and stack[-1].name == "pre" and token.text:
            if pre_content[-1] == "code":
                found.append("<pre> holds text and <code>")
            pre_content[-1] = "text"
    found.extend(f"<{t.name}> is never closed" for t in stack)
    shown = visible_text(text)
    if not shown.strip():
        found.append("no visible text (Telegram refuses an empty message)")
    if utf16_len(shown) > limit:
        found.append(f"{utf16_len(shown)} characters after entity parsing, over {limit}")
    return found


def balanced(text: str) -> str:
    """*text* with its tags properly nested, for HTML built by regular expressions.

    Inline Markdown can cross (``**a _b** c_``); Telegram refuses the crossing tags, so
    a tag closed while others opened after it are still open closes those first and
    opens them again after it, as browsers do. A closing tag with no opening one is
    dropped, and whatever is still open at the end is closed.
    """
    out: list[str] = []
    stack: list[Token] = []
    for token in tokens(text):
        if token.kind == "open":
            stack.append(token)
        elif token.kind == "close":
            depth = next((i for i in range(len(stack) - 1, -1, -1) if stack[i].name == token.name), None)
            if depth is None:
                continue
            inner = stack[depth + 1 :]
            out.extend(f"</{t.name}>" for t in reversed(inner))
            out.append(f"</{token.name}>")
            out.extend(t.raw for t in inner)
            del stack[depth]
            continue
        elif token.kind == "stray":
            out.append(html.escape(token.raw, quote=False))
            continue
        out.append(token.raw)
    out.extend(f"</{t.name}>" for t in reversed(stack))
    return "".join(out)
