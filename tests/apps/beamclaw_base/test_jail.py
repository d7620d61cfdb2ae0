"""check_cwd: a command's directory is the workspace or inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from beamclaw_base import check_cwd


def test_the_workspace_is_the_default_and_a_folder_inside_it_is_taken(tmp_path: Path) -> None:
    assert check_cwd(tmp_path, None) == tmp_path
    assert check_cwd(tmp_path, tmp_path) == tmp_path
    assert check_cwd(tmp_path, tmp_path / "src" / "app") == tmp_path / "src" / "app"


@pytest.mark.parametrize("outside", ["/", "/etc", "sibling"])
def test_a_directory_outside_the_workspace_is_refused(tmp_path: Path, outside: str) -> None:
    workspace = tmp_path / "workspace"
    with pytest.raises(ValueError, match="is not inside the workspace"):
        check_cwd(workspace, tmp_path / outside)


@pytest.mark.parametrize("escape", ["..", "../etc", "src/../../outside", "src/../.."])
def test_dot_dot_out_of_the_workspace_is_refused(tmp_path: Path, escape: str) -> None:
    """Checked as text, ``/ws/../etc`` would be inside ``/ws``: each jail gets it resolved."""
    workspace = tmp_path / "workspace"
    with pytest.raises(ValueError, match="is not inside the workspace"):
        check_cwd(workspace, workspace / escape)


def test_dot_dot_that_stays_inside_is_taken_resolved(tmp_path: Path) -> None:
    assert check_cwd(tmp_path, tmp_path / "src" / ".." / "docs") == tmp_path / "docs"
