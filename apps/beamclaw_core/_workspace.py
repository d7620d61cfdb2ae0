"""Agent workspaces: ``$BEAMCLAW_HOME/agents/<name>/``, the agent's persona and memory files.

Seeding never overwrites a file the user has written: each template is created with
``O_EXCL``, so a file that exists (even an empty one) is left as it is. Names are
checked before they become paths, and every file name the code touches is one of a
fixed set, so nothing here can reach outside the workspace.
"""

from __future__ import annotations

import datetime
import os
import re
from importlib import resources
from pathlib import Path
from typing import Final, final

import attrs

#: The context files, in the order they go into the system prompt.
CONTEXT_FILES: Final = ("IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", "BOOTSTRAP.md", "MEMORY.md")
SEEDED_FILES: Final = (*CONTEXT_FILES, "HEARTBEAT.md")
BOOTSTRAP: Final = "BOOTSTRAP.md"
MEMORY: Final = "MEMORY.md"
_AGENT_NAME: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_DAY: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_READ_CACHE_SIZE: Final = 1024
_READ_CACHE: dict[Path, tuple[tuple[int, int], str]] = {}


class InvalidAgentName(ValueError):
    pass


def check_agent_name(name: str) -> str:
    """*name* if it is a valid agent name (lowercase letters, digits, ``-`` and ``_``, up to 32)."""
    if not isinstance(name, str) or not _AGENT_NAME.fullmatch(name):
        raise InvalidAgentName(
            f"invalid agent name {name!r}: use 1 to 32 lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return name


def template(name: str) -> str:
    return resources.files("beamclaw_core").joinpath("templates", name).read_text(encoding="utf-8")


def parse_day(text: str) -> datetime.date:
    if not _DAY.fullmatch(text):
        raise ValueError(f"a date is written YYYY-MM-DD, not {text!r}")
    return datetime.date.fromisoformat(text)


@final
@attrs.frozen
class Workspace:
    name: str
    root: Path

    @classmethod
    def of(cls, data_dir: Path, name: str) -> Workspace:
        return cls(check_agent_name(name), data_dir / "agents" / name)

    def exists(self) -> bool:
        return self.root.is_dir()

    def seed(self) -> list[str]:
        """Create the workspace and every missing template file; return the files created."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.root.chmod(0o700)  # memory and persona are private, whoever made the folder
        (self.root / "memory").mkdir(mode=0o700, exist_ok=True)
        created = []
        for name in SEEDED_FILES:
            if self.create(name, template(name)):
                created.append(name)
        return created

    def create(self, name: str, text: str) -> bool:
        """Write *name* only if it does not exist (atomically); return whether it was written."""
        try:
            fd = os.open(self._path(name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return True

    def read(self, name: str) -> str:
        """The file's text, or "" when it is missing.

        The system prompt reads every context file before every model call; a file whose
        size and modification time have not changed is served from memory.
        """
        path = self._path(name)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return ""
        key = (stat.st_mtime_ns, stat.st_size)
        cached = _READ_CACHE.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""
        if len(_READ_CACHE) >= _READ_CACHE_SIZE:
            _READ_CACHE.clear()
        _READ_CACHE[path] = (key, text)
        return text

    def write(self, name: str, text: str) -> None:
        """Replace *name*. An empty BOOTSTRAP.md is deleted instead: the first-run ritual is over."""
        path = self._path(name)
        if name == BOOTSTRAP and not text.strip():
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)

    def append(self, name: str, text: str) -> None:
        path = self._path(name)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(text)

    @staticmethod
    def daily_name(day: datetime.date) -> str:
        return f"memory/{day.isoformat()}.md"

    def daily_logs(self) -> list[str]:
        """The dates that have a daily log, newest first."""
        folder = self.root / "memory"
        if not folder.is_dir():
            return []
        days = [p.stem for p in folder.glob("*.md") if _DAY.fullmatch(p.stem)]
        return sorted(days, reverse=True)

    def _path(self, name: str) -> Path:
        # Only the fixed file names and memory/YYYY-MM-DD.md are ever joined to the root.
        if name in SEEDED_FILES or (name.startswith("memory/") and _DAY.fullmatch(name[7:].removesuffix(".md"))):
            return self.root / name
        raise ValueError(f"{name!r} is not a workspace file")
