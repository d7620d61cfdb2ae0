"""The daemon's log file as events: its last lines, then each line as it is written.

The obs app writes one JSON object per line (loguru's serialised records), rotating
the file at 10 MB: a file that shrank or was replaced is followed from its start.
Every text is scrubbed again on the way out (the file was written scrubbed, with the
secrets known then).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import trio

import beamclaw_obs as obs

from ._sse import IDLE, Event

#: How often the file is looked at for new lines.
_POLL_SECONDS: Final = 0.25
#: How much is read backwards at a time to find the last lines.
_BLOCK: Final = 64 * 1024


def _last_lines(path: Path, count: int) -> tuple[list[bytes], int, int]:
    """The last *count* whole lines of *path*, the offset after them, and the file's inode."""
    try:
        with path.open("rb") as file:
            end = file.seek(0, os.SEEK_END)
            inode = os.fstat(file.fileno()).st_ino
            start, data = end, b""
            while start > 0 and data.count(b"\n") <= count:
                step = min(_BLOCK, start)
                start -= step
                file.seek(start)
                data = file.read(step) + data
    except FileNotFoundError:
        return [], 0, 0
    whole = data[: data.rfind(b"\n") + 1]
    lines = whole.splitlines()
    return (lines[-count:] if count else []), start + len(whole), inode


def _new_lines(path: Path, offset: int, inode: int) -> tuple[list[bytes], int, int]:
    """The whole lines written since *offset*; a rotated file is read from its start."""
    try:
        with path.open("rb") as file:
            info = os.fstat(file.fileno())
            if info.st_ino != inode or info.st_size < offset:
                offset, inode = 0, info.st_ino
            file.seek(offset)
            data = file.read()
    except FileNotFoundError:
        return [], 0, 0
    whole = data[: data.rfind(b"\n") + 1]
    return whole.splitlines(), offset + len(whole), inode


def _event(line: bytes) -> Event:
    """A log line as the ``log`` event: time, level, message, and the app that wrote it."""
    try:
        record = json.loads(line)["record"]
        fields: dict[str, Any] = {
            "time": record["time"]["repr"], "level": record["level"]["name"], "message": obs.scrub(record["message"]),
        }  # fmt: skip
        module = str(record.get("name") or "")
        if module.startswith("beamclaw_"):
            fields["app"] = module.split(".", maxsplit=1)[0].removeprefix("beamclaw_")
    except (ValueError, KeyError, TypeError):
        fields = {"time": None, "level": None, "message": obs.scrub(line.decode("utf-8", "replace"))}
    return "log", fields


async def log_events(path: Path, backlog: int) -> AsyncIterator[Event | None]:
    """The last *backlog* lines of *path*, then its new lines for as long as it is followed."""
    lines, offset, inode = await trio.to_thread.run_sync(_last_lines, path, backlog)
    for line in lines:
        yield _event(line)
    while True:
        await trio.sleep(_POLL_SECONDS)
        lines, offset, inode = await trio.to_thread.run_sync(_new_lines, path, offset, inode)
        for line in lines:
            yield _event(line)
        yield IDLE
