"""The tool discovery tree a script reads from disk, mounted read-only at ``/tools``.

    /tools/index.txt                 one "name: first line of the description" a line
    /tools/<name>/description.txt    the whole description
    /tools/<name>/schema.json        the JSON schema of its arguments

Only the tools the policy allows are written, so a script cannot even learn the
description of a denied tool. The tree is rewritten only when the set of tools changed.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from beamclaw_tools import ToolDefinition

#: Names that are safe as one directory name; a tool named otherwise is listed in the
#: index (and reachable through the bridge) but gets no folder.
_SAFE_NAME: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")
_STAMP: Final = ".definitions"


def write_discovery(directory: Path, tools: Sequence[ToolDefinition]) -> bool:
    """Make *directory* describe *tools*; whether anything had to be written."""
    ordered = sorted(tools, key=lambda t: t.name)
    digest = hashlib.sha256(
        json.dumps([[t.name, t.description, t.parameters] for t in ordered], sort_keys=True).encode()
    ).hexdigest()
    stamp = directory / _STAMP
    if stamp.is_file() and stamp.read_text() == digest:
        return False
    directory.mkdir(parents=True, exist_ok=True)
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    lines = []
    for tool in ordered:
        summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        lines.append(f"{tool.name}: {summary}")
        if _SAFE_NAME.match(tool.name):
            folder = directory / tool.name
            folder.mkdir()
            (folder / "description.txt").write_text(tool.description + "\n")
            (folder / "schema.json").write_text(json.dumps(tool.parameters, indent=2, sort_keys=True) + "\n")
    (directory / "index.txt").write_text("".join(line + "\n" for line in lines))
    stamp.write_text(digest)
    return True
