"""Whether a skill's program is on PATH, remembered until a PATH folder changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from beamclaw_core import _programs
from beamclaw_core._programs import on_path


def _settled(path: Path) -> None:
    """Give *path* a modification time well in the past, as a folder nobody touched lately has."""
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))


@pytest.mark.parametrize("racy", [0.0, _programs.RACY_SECONDS])
def test_a_program_added_or_removed_is_seen_at_the_next_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, racy: float
) -> None:
    monkeypatch.setattr(_programs, "RACY_SECONDS", racy)
    early, late = tmp_path / "early", tmp_path / "late"
    early.mkdir()
    late.mkdir()
    monkeypatch.setenv("PATH", f"{early}{os.pathsep}{late}")
    _settled(early)
    _settled(late)
    assert not on_path("bc-test-tool")
    assert not on_path("bc-test-tool")  # kept
    program = late / "bc-test-tool"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)  # the folder's time is now that of the install
    assert on_path("bc-test-tool")
    program.unlink()
    assert not on_path("bc-test-tool")
