"""Whether a program is on PATH, asked of every skill at every model call.

`shutil.which` looks in each PATH folder in turn (a ``stat`` and an ``access`` per
folder); a skill's programs rarely come or go, so each answer is kept with the
modification times of the folders it depended on: the folder the program was found in,
or every folder when it was not. Adding, removing or renaming a program changes its
folder's time, so the next question looks again. A folder changed in the last
`RACY_SECONDS` is not trusted (its time comes from a clock that ticks every few
milliseconds): the answer is looked up every time until it settles.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Final

#: A folder changed this recently is looked in again at every question.
RACY_SECONDS: Final = 2.0

#: (program, PATH) -> (the folders looked in with their modification times, found).
_known: dict[tuple[str, str], tuple[tuple[tuple[str, int | None], ...], bool]] = {}


def _mtime(folder: str) -> int | None:
    try:
        return os.stat(folder or ".").st_mtime_ns
    except OSError:
        return None


def on_path(program: str) -> bool:
    """Whether `shutil.which` finds *program* on the PATH of now."""
    path = os.environ.get("PATH", os.defpath)
    key = (program, path)
    known = _known.get(key)
    if known is not None and all(_mtime(folder) == mtime for folder, mtime in known[0]):
        return known[1]
    folders = path.split(os.pathsep)
    times = {folder: _mtime(folder) for folder in folders}  # before looking: a later change is seen next time
    found = shutil.which(program, path=path)
    looked = [os.path.dirname(found)] if found is not None and os.path.dirname(found) in times else folders
    settled = time.time_ns() - int(RACY_SECONDS * 1e9)
    if all((times[folder] or 0) <= settled for folder in looked):
        _known[key] = (tuple((folder, times[folder]) for folder in looked), found is not None)
    else:
        _known.pop(key, None)
    return found is not None
