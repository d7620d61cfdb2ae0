"""The commands that read the disk print what others wrote there as text: an agent's name
the model wrote into IDENTITY.md, a folder's name, a skill's SKILL.md."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from beamclaw_cli import main

HOSTILE: Final = "[/][bold]x\x1b]52;c;aGk=\x07\x08\x9b\u202e"
SHOWN: Final = "[/][bold]x\\x1b]52;c;aGk=\\x07\\x08\\x9b\\u202e"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    assert not set(out) & {"\x1b", "\x07", "\x08", "\x9b", "\u202e"}, out
    return out


def test_agent_names_and_skills_print_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("BEAMCLAW_HOME", str(home))
    _run(capsys, "agent", "create", "ada")
    (home / "agents" / "ada" / "IDENTITY.md").write_text(f"- Name: {HOSTILE}\n")
    assert f"name          {SHOWN}" in _run(capsys, "agent", "show", "ada")
    (home / "agents" / "[bold]ev\x1b]0;il\x07").mkdir()  # a folder's name cannot hold [/]
    assert "[bold]ev\\x1b]0;il\\x07" in _run(capsys, "agent", "list")

    folder = home / "skills" / "evil"
    folder.mkdir(parents=True)
    # YAML takes controls only as escapes: these are HOSTILE's.
    description = '"[/][bold]x\\e]52;c;aGk=\\a\\b\\x9b\\u202e"'
    (folder / "SKILL.md").write_text(f"---\nname: evil\ndescription: {description}\n---\nBody {HOSTILE}\n")
    assert SHOWN in _run(capsys, "skills", "list")
    shown = _run(capsys, "skills", "show", "evil")
    assert SHOWN in shown and f"Body {SHOWN}" in shown
