"""The console's files ship inside the package: `pip install .` (a wheel) carries every
template and static file, so the console needs no CDN, no download and no build step.

Checked against pyproject.toml's package-data globs (what setuptools puts in the
wheel) rather than by building a wheel in every run; a built wheel was checked by hand.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import beamclaw_control

ROOT = Path(__file__).resolve().parents[3]


def test_every_template_and_static_file_is_package_data() -> None:
    package = Path(beamclaw_control.__file__).parent
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = {path for pattern in globs["beamclaw_control"] for path in package.glob(pattern)}
    files = {path for folder in ("templates", "static") for path in (package / folder).rglob("*") if path.is_file()}
    assert files, "no console files found"
    assert files <= shipped, sorted(str(p.relative_to(package)) for p in files - shipped)
