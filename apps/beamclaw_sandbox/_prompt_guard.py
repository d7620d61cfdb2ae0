"""The workspace names a jailed command may read but never change: what shapes the prompt.

The files read into the agent's system prompt or run as its heartbeat (beamclaw_core's
context files and HEARTBEAT.md) and the folders of its daily logs and its own skills
(each SKILL.md enters the prompt) change only through the ``workspace_memory`` tool and
its approval rules, or by the operator's hand: a command in a jail (bubblewrap or
Docker) sees each of them bound read-only over the writable workspace. A bind covers the
name itself, so the command can neither write the file nor truncate, remove, rename,
replace or link over it (the kernel refuses to unlink or rename a mount point, and a hard
link across mounts); a name that does not exist yet is made first (an empty file, which
the prompt skips, or an empty folder), so it cannot be created either.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Final

from beamclaw_base import JailUnavailable

#: The prompt files (kept the same as beamclaw_core's SEEDED_FILES: a test checks it).
PROMPT_FILES: Final = (
    "IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", "BOOTSTRAP.md", "MEMORY.md", "HEARTBEAT.md",
)  # fmt: skip
#: The folders whose files enter the prompt: the daily logs and the agent's own skills.
PROMPT_FOLDERS: Final = ("memory", "skills")
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def guarded_names(workspace: Path) -> list[str]:
    """The prompt files and folders of *workspace*, each made first if it is missing, for a
    jail to bind read-only (blocks: call it from a worker thread).

    Raises:
        JailUnavailable: one of them is a symbolic link or not what it should be (a jail
            cannot bind it safely); the message names it and the fix.
    """
    root = os.open(workspace, _DIR_FLAGS)
    try:
        for name in PROMPT_FILES:
            with contextlib.suppress(FileExistsError):
                os.close(os.open(name, _CREATE, 0o600, dir_fd=root))
            _check(root, name, stat.S_ISREG, "a regular file")
        for name in PROMPT_FOLDERS:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=root)
            _check(root, name, stat.S_ISDIR, "a folder")
    finally:
        os.close(root)
    return [*PROMPT_FILES, *PROMPT_FOLDERS]


def _check(root: int, name: str, is_kind: Callable[[int], bool], kind: str) -> None:
    if not is_kind(os.stat(name, dir_fd=root, follow_symlinks=False).st_mode):
        raise JailUnavailable(
            f"{name} in the workspace is not {kind} (a symbolic link or something else): a jailed command could "
            f"change what the agent's prompt holds through it; remove or replace it by hand, then retry"
        )
