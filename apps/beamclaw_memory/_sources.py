"""What an agent's memory holds from its workspace: the files to index, read safely.

The agent's configured ``workspace_files`` (MEMORY.md first) and its daily logs
``memory/YYYY-MM-DD.md``. The model writes this folder (bash runs in a jail whose only
writable place is the workspace), so every file is reached through `Beneath`: a planted
link (``MEMORY.md -> /proc/self/environ``), a FIFO or a hard link to a file elsewhere is
skipped, never followed or blocked on; a file is read up to `MAX_FILE_BYTES`.
Blocking: called from worker threads.
"""

from __future__ import annotations

import datetime
import re
import stat
from pathlib import Path
from typing import Final

import attrs
from loguru import logger

from beamclaw_base import Beneath, PathRefused

#: What is read of one file: a memory file past this is indexed from its first bytes.
MAX_FILE_BYTES: Final = 2_000_000
#: Names of the ``memory`` folder looked at: decades of daily logs, not an unbounded folder.
MAX_DIRECTORY_ENTRIES: Final = 20_000
_DAILY: Final = re.compile(r"(\d{4}-\d{2}-\d{2})\.md")


@attrs.frozen
class SourceFile:
    path: str  # relative to the workspace
    kind: str  # "file" or "daily"
    signature: str  # changes whenever the file does
    day: str | None = None


def workspace_of(data_dir: Path, agent: str) -> Path:
    return data_dir / "agents" / agent


def scan(root: Path, files: tuple[str, ...]) -> tuple[list[SourceFile], bool]:
    """The memory files of the workspace *root* as they are now (none if it does not
    exist), and whether the ``memory`` folder was listed whole: one stuffed with more than
    MAX_DIRECTORY_ENTRIES names (a command can make them) is listed in part, and a daily
    log not seen then is not taken as deleted."""
    try:
        beneath = Beneath(root)
    except (FileNotFoundError, PathRefused):
        return [], True
    found = []
    with beneath:
        for name in files:
            signature = _signature(beneath, name)
            if signature:
                found.append(SourceFile(name, "file", signature))
        try:
            entries = beneath.list_dir("memory", limit=MAX_DIRECTORY_ENTRIES)
        except (FileNotFoundError, PathRefused, NotADirectoryError):
            entries = []
        complete = len(entries) < MAX_DIRECTORY_ENTRIES
        for entry, kind in entries:
            match = _DAILY.fullmatch(entry)
            name = f"memory/{entry}"
            if kind == "file" and match and _valid_day(match.group(1)) and name not in files:
                signature = _signature(beneath, name)
                if signature:
                    found.append(SourceFile(name, "daily", signature, match.group(1)))
    return found, complete


def _valid_day(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _signature(beneath: Beneath, name: str) -> str:
    st = beneath.lstat(name)
    if st is None or not stat.S_ISREG(st.st_mode):
        return ""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def read(root: Path, path: str) -> str | None:
    """The text of the workspace file *path*, or None if it cannot be read safely now."""
    try:
        with Beneath(root) as beneath:
            excerpt = beneath.read_text(path, limit=MAX_FILE_BYTES)
    except (FileNotFoundError, PathRefused, NotADirectoryError, IsADirectoryError) as exc:
        logger.debug("memory: {} skipped ({})", path, exc)
        return None
    return excerpt.head
