"""The generated configuration reference holds every key of config.toml, so the two cannot drift.

config.toml shows most optional keys commented out (``# max_restarts = 5``); those are
read too, uncommented, since a user will uncomment them and look them up.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from typing import Any

from .conftest import ROOT, load_hook

_HEADING = re.compile(r"^### `\[\[?([\w.]+)\]\]?`", re.MULTILINE)
#: A commented-out key (``# key = value``) or table header (``# [table]``, alone on its line).
_COMMENTED = re.compile(r"^# ?((?:[A-Za-z_]\w* = .*)|(?:\[[\w.]+\]\s*(?:#.*)?))$")


def _sections(reference: str) -> dict[str, str]:
    """The reference's tables by path (``core.providers.NAME``), each with its text."""
    starts = list(_HEADING.finditer(reference))
    return {
        match.group(1): reference[match.start() : starts[i + 1].start() if i + 1 < len(starts) else len(reference)]
        for i, match in enumerate(starts)
    }


def _find(sections: dict[str, str], path: tuple[str, ...]) -> str | None:
    placeholder = load_hook("config_reference").PLACEHOLDER
    for name, text in sections.items():
        parts = name.split(".")
        if len(parts) == len(path) and all(p in (q, placeholder) for p, q in zip(parts, path, strict=True)):
            return text
    return None


def _has_key(section: str, key: str) -> bool:
    return f"| `{key}` |" in section or f"``{key}``" in section


def missing_keys(config: dict[str, Any], reference: str) -> list[str]:
    """Every key of *config* (a parsed config.toml) that *reference* does not document where it belongs."""
    sections = _sections(reference)

    def walk(path: tuple[str, ...], table: dict[str, Any]) -> Iterator[str]:
        section = _find(sections, path)
        if section is None:
            yield "[" + ".".join(path) + "]"
            return
        for key, value in table.items():
            below = (*path, key)
            if isinstance(value, dict) and _find(sections, below) is not None:
                yield from walk(below, value)
                continue
            if not _has_key(section, key):
                yield ".".join(below)
            elif isinstance(value, dict):  # a table of named tables: [core.providers.NAME]
                for name, item in value.items():
                    if isinstance(item, dict) and _find(sections, (*below, name)) is not None:
                        yield from walk((*below, name), item)
            elif isinstance(value, list) and _find(sections, below) is not None:  # [[a2a.skills]]
                for item in value:
                    if isinstance(item, dict):
                        yield from walk(below, item)

    return [missing for table, value in config.items() for missing in walk((table,), value)]


def _uncommented(text: str) -> str:
    return "\n".join(match.group(1) if (match := _COMMENTED.match(line)) else line for line in text.splitlines())


def test_every_key_of_config_toml_is_in_the_reference() -> None:
    reference = load_hook("config_reference").render()
    config = tomllib.loads((ROOT / "config.toml").read_text(encoding="utf-8"))
    assert missing_keys(config, reference) == []


def test_every_commented_key_of_config_toml_is_in_the_reference() -> None:
    reference = load_hook("config_reference").render()
    text = (ROOT / "config.toml").read_text(encoding="utf-8")
    config = tomllib.loads(_uncommented(text))
    assert config["mcp"]["servers"]["files"]["trust"] == "ask"  # the commented examples were read
    assert missing_keys(config, reference) == []


def test_a_key_the_classes_do_not_have_is_reported() -> None:
    reference = load_hook("config_reference").render()
    config = {
        "core": {"providers": {"mine": {"base_url": "http://x", "no_such_key": 1}}, "agentic_loop": {"typo": 1}},
        "gateway": {"auth": {"tokens": {"web": {"token": {"env": "X"}, "rol": "admin"}}}},
        "nowhere": {"key": 1},
    }
    assert missing_keys(config, reference) == [
        "core.providers.mine.no_such_key",
        "core.agentic_loop.typo",
        "gateway.auth.tokens.web.rol",
        "[nowhere]",
    ]


def test_the_reference_gives_types_and_defaults_from_the_classes() -> None:
    sections = _sections(load_hook("config_reference").render())
    assert "| `port` | integer | `18800` |" in sections["gateway.http"]
    assert '| `token` | `{ env = "VAR" }` | `{ env = "BEAMCLAW_GATEWAY_TOKEN" }` |' in sections["gateway.http"]
    assert "| `base_url` | string | required |" in sections["core.providers.NAME"]
    assert '`"shared"` \\| `"per_channel"`' in sections["core"]
    assert "Merged scores below this are not returned." in sections["memory.search"]  # its `#:` comment
