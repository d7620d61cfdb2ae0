"""The app dependency graph of DESIGN.md, enforced by import-linter contracts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import beamclaw

ROOT = Path(__file__).resolve().parent.parent


def _lint_imports(config: Path, cwd: Path, pythonpath: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    exe = shutil.which("lint-imports", path=env["PATH"]) or "lint-imports"
    return subprocess.run([exe, "--config", str(config)], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_the_project_keeps_every_contract() -> None:
    result = _lint_imports(ROOT / "pyproject.toml", ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_contracts_match_the_app_graph_of_the_release() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    apps = [*beamclaw.APPS, "control", "cli"]
    by_source = {c["source_modules"][0]: set(c["forbidden_modules"]) for c in contracts}
    for app, deps in beamclaw.APPS.items():
        forbidden = by_source[f"beamclaw_{app}"]
        # Every app but obs may import the foundation package (base); obs is below it.
        below_base = {"beamclaw_base"} if app == "obs" else set()
        expected = {"beamclaw"} | below_base | {f"beamclaw_{a}" for a in apps if a != app and a not in deps}
        assert forbidden == expected, app
    assert by_source["beamclaw_base"] == {"beamclaw"} | {f"beamclaw_{a}" for a in apps if a != "obs"}
    assert by_source["supervision"] == {"beamclaw", "beamclaw_base"} | {f"beamclaw_{a}" for a in apps}
    # The management API and console sit above every app, below the daemon root and the CLI.
    assert by_source["beamclaw_control"] == {"beamclaw", "beamclaw_cli"}


def test_a_forbidden_import_breaks_the_build(tmp_path: Path) -> None:
    """A copy of the tree where obs imports core must fail the contracts."""
    for package in ("supervision", "beamclaw"):
        shutil.copytree(ROOT / package, tmp_path / package)
    shutil.copytree(ROOT / "apps", tmp_path / "apps")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "apps" / "beamclaw_obs" / "_leak.py").write_text("import beamclaw_core\n")
    result = _lint_imports(tmp_path / "pyproject.toml", tmp_path, f"{tmp_path}:{tmp_path / 'apps'}")
    assert result.returncode != 0
    assert "beamclaw_obs imports no sibling BROKEN" in result.stdout
    assert "beamclaw_obs._leak -> beamclaw_core" in result.stdout
