"""The data dir: where it is, and that it is its owner's alone.

It holds every conversation, the memory notes, the logs, the databases and the owner's
control socket. A local user who can read it reads all of that; one who can reach the
sockets in it acts as the owner. So a process that writes into it writes owner-only
files whatever umask it was started with, a data dir that others can read or enter is
closed (0700) with a warning, and one that belongs to another user is refused: its
files would end up owned by two users, and whoever owns the folder could swap them.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path
from typing import Final

from ._errors import ConfigError

#: The umask of every process that writes into the data dir: no bit for group or others.
OWNER_ONLY_UMASK: Final = 0o077


def data_dir(create: bool = False) -> Path:
    """``$BEAMCLAW_HOME``, else ``~/.beamclaw``; with *create*, made private for writing.

    With *create*, this process's umask becomes `OWNER_ONLY_UMASK` (so every file,
    folder and socket it makes from now on, here or anywhere, is owner-only), the
    folder is made (0700) if missing, and closed to others (0700) with a logged
    warning if it was open to them.

    A path that cannot be the data dir (a file, a directory that cannot be created or
    written, or with *create*, one that belongs to another user) raises ConfigError
    naming it and the variable, and saying how to fix it, so that every command says
    so in one line instead of failing later with an OSError traceback.
    """
    variable = os.environ.get("BEAMCLAW_HOME")
    home = Path(variable).expanduser() if variable else Path.home() / ".beamclaw"
    where = f"the data dir {home} ({'BEAMCLAW_HOME' if variable else 'the default; set BEAMCLAW_HOME to move it'})"
    fix = "point BEAMCLAW_HOME at a directory you can write"
    try:
        nearest = next(path for path in (home, *home.parents) if path.exists())
    except OSError as exc:
        raise ConfigError(f"{where} cannot be reached: {exc.strerror}; {fix}") from None
    if not nearest.is_dir():
        what = "is not a directory" if nearest == home else f"cannot be created: {nearest} is not a directory"
        raise ConfigError(f"{where} {what}; {fix}")
    if create:
        os.umask(OWNER_ONLY_UMASK)
        try:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{where} cannot be created: {exc.strerror}; {fix}") from None
        _make_private(home, where)
        if not os.access(home, os.W_OK | os.X_OK):
            raise ConfigError(f"{where} is not writable; {fix}")
    return home


def _make_private(home: Path, where: str) -> None:
    """Refuse *home* if another user owns it; close it to everyone else if it is open."""
    info = home.stat()
    me = os.geteuid()
    if info.st_uid != me:
        owner, user = _user_name(info.st_uid), _user_name(me)
        raise ConfigError(
            f"{where} belongs to {owner}, not to {user} who runs BeamClaw: run BeamClaw as {owner}, "
            f"or give the folder to {user} (`chown -R {me} {home}`), or point BEAMCLAW_HOME at a folder of {user}'s"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        home.chmod(0o700)
        from loguru import logger  # noqa: PLC0415 - here only: every CLI command asks for the data dir

        logger.warning(
            "{} was open to other users (mode {:04o}); it is now 0700, so conversations, memory, logs "
            "and the sockets in it are the owner's alone",
            where,
            mode,
        )


def _user_name(uid: int) -> str:
    """``name (uid N)``, or ``uid N`` for a uid without a name."""
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"
