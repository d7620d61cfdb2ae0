"""A server's words made safe to show: no character that acts instead of being read.

A tool's description reaches the model in every request and the operator's terminal in
`beamclaw mcp tools`. Escape sequences in it move a terminal's cursor, retitle its
window or write its clipboard (OSC 52); bidi overrides and zero-width characters show a
reader one text while the model reads another. So a server's text loses its escape
sequences whole (CSI, OSC and the like, in their ESC and C1 forms), then every other
control character (C0 but the line feed and tab, DEL, C1), its format characters (bidi
controls, zero-width characters, tags...) and lone surrogates (which no encoder writes).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Final

#: A terminal's escape sequence: a CSI (``ESC [`` or C1 ``CSI``, parameters, a final
#: byte), a string command (OSC, DCS, SOS, PM, APC, up to its terminator, or to the end
#: of the text if it has none, as a terminal reads it), or ``ESC`` and its next bytes.
_SEQUENCE: Final = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
#: The Unicode categories whose characters act rather than show: control, format, surrogate.
_HIDDEN: Final = frozenset({"Cc", "Cf", "Cs"})
#: Control characters a description may hold: they only break and indent its lines.
_KEPT: Final = frozenset("\n\t")
#: The keys of a JSON schema whose text is written for a reader, not checked by a validator.
_PROSE_KEYS: Final = frozenset({"description", "title"})


def visible(text: str) -> str:
    """*text* without its escape sequences, control, format and surrogate characters (line
    feeds and tabs stay)."""
    if text.isprintable():  # the common case, checked in C
        return text
    text = _SEQUENCE.sub("", text)
    return "".join(ch for ch in text if ch in _KEPT or unicodedata.category(ch) not in _HIDDEN)


def visible_schema(schema: Any) -> Any:
    """*schema* with its descriptions and titles, at any depth, made `visible`.

    Nothing else is changed: names, enums and defaults are what the server checks a
    call's arguments against.
    """
    if isinstance(schema, dict):
        return {
            key: visible(value) if key in _PROSE_KEYS and isinstance(value, str) else visible_schema(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [visible_schema(item) for item in schema]
    return schema
