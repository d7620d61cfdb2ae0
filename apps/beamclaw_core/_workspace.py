"""Agent workspaces: ``$BEAMCLAW_HOME/agents/<name>/``, the agent's persona and memory files.

An agent that serves several users keeps each user's own USER.md, MEMORY.md,
HEARTBEAT.md and daily logs apart, in ``$BEAMCLAW_HOME/users/<agent>/<user folder>/``
(`user_workspace`): outside the agent's workspace, so no jailed command, file tool or
workspace index of another user's turn reaches them, and what one user has the agent
write goes into that user's prompt alone. An agent the operator lists in
``core.single_user_agents`` keeps them in its own workspace, read into every prompt.

Seeding never overwrites a file the user has written: each template is created with
``O_EXCL``, so a file that exists (even an empty one) is left as it is. Names are
checked before they become paths, and every file name the code touches is one of a
fixed set.

The model writes this folder too (bash runs in a jail whose only writable place is the
workspace), so every access goes through `beamclaw_base.Beneath`: no symbolic link is
followed (``MEMORY.md -> /proc/self/environ``, ``memory -> ../other/memory``), a FIFO or
device is refused without blocking, and reads stop at a cap. A refusal raises
`beamclaw_base.PathRefused`; the methods block, so the daemon calls them from a
worker thread.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from importlib import resources
from pathlib import Path
from typing import Final, final

import attrs

from beamclaw_base import Beneath

#: The context files, in the order they go into the system prompt.
CONTEXT_FILES: Final = ("IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", "BOOTSTRAP.md", "MEMORY.md")
SEEDED_FILES: Final = (*CONTEXT_FILES, "HEARTBEAT.md")
BOOTSTRAP: Final = "BOOTSTRAP.md"
MEMORY: Final = "MEMORY.md"
USER: Final = "USER.md"
HEARTBEAT: Final = "HEARTBEAT.md"
#: The files that shape the agent's system prompt, by the name `workspace_memory`'s ``file`` gives them.
BOOTSTRAP_FILES: Final = ("IDENTITY.md", "USER.md", "SOUL.md", "TOOLS.md", "AGENTS.md", BOOTSTRAP)
#: The files each user of an agent that is not single-user has of their own (and daily logs).
USER_FILES: Final = (USER, MEMORY, HEARTBEAT)
#: The bytes a user's folder name keeps as they are; every other byte is written %XX.
_PLAIN_BYTES: Final = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-")
#: A user's folder name longer than this (in bytes) is a hash of the id instead.
_MAX_FOLDER_NAME: Final = 200
_AGENT_NAME: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_DAY: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
#: What `Workspace.read` keeps of a larger file: its first READ_HEAD and last READ_TAIL bytes.
READ_HEAD: Final = 80_000
READ_TAIL: Final = 20_000


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


class UnknownAgent(InvalidAgentName):
    """No agent by that name: only ``beamclaw agent create`` (and the default agent) make one."""


def agent_names(data_dir: Path, default_agent: str) -> list[str]:
    """The agents there are: every workspace folder, and the default agent (made on first use)."""
    folder = data_dir / "agents"
    try:
        names = {p.name for p in folder.iterdir() if p.is_dir() and _AGENT_NAME.fullmatch(p.name)}
    except FileNotFoundError:
        names = set()
    return sorted(names | {default_agent})


def check_agent_exists(data_dir: Path, name: str, default_agent: str) -> str:
    """*name* if such an agent exists (or is the default); `UnknownAgent` naming the fix otherwise."""
    check_agent_name(name)
    if name == default_agent or (data_dir / "agents" / name).is_dir():
        return name
    known = ", ".join(agent_names(data_dir, default_agent))
    raise UnknownAgent(f"there is no agent {name!r} (agents: {known}); create it with `beamclaw agent create {name}`")


def template(name: str) -> str:
    return resources.files("beamclaw_core").joinpath("templates", name).read_text(encoding="utf-8")


def user_folder_name(user_id: str) -> str:
    """A folder name for *user_id* that no id can turn into a path: ``telegram:42`` is
    ``telegram%3A42``, ``api:alice/x`` is ``api%3Aalice%2Fx``.

    Every byte but lowercase letters, digits, ``_`` and ``-`` is written ``%XX`` (so
    ``.``, ``..``, ``/`` and case never matter, and two ids never share a folder); a name
    that would pass 200 bytes is ``~`` and the id's SHA-256 (``~`` is never written plain).
    """
    if not user_id:
        raise ValueError("a user id must not be empty")
    data = user_id.encode()
    name = "".join(chr(b) if b in _PLAIN_BYTES else f"%{b:02X}" for b in data)
    return name if len(name) <= _MAX_FOLDER_NAME else f"~{hashlib.sha256(data).hexdigest()}"


def parse_day(text: str) -> datetime.date:
    if not _DAY.fullmatch(text):
        raise ValueError(f"a date is written YYYY-MM-DD, not {text!r}")
    return datetime.date.fromisoformat(text)


@final
@attrs.frozen
class Workspace:
    """An agent's workspace, or (``shared=False``) one user's own files of an agent."""

    name: str
    root: Path
    #: False for one user's folder (see `user_workspace`): made on its first write.
    shared: bool = True

    @classmethod
    def of(cls, data_dir: Path, name: str) -> Workspace:
        return cls(check_agent_name(name), data_dir / "agents" / name)

    def exists(self) -> bool:
        return self.root.is_dir()

    def seed(self) -> list[str]:
        """Create the workspace and every missing template file; return the files created.

        A name already taken (by a file, a folder or a link) is left alone.
        """
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.root.chmod(0o700)  # memory and persona are private, whoever made the folder
        created = []
        with self._open() as root:
            if root.kind("memory") is None:
                root.mkdir("memory")
            for name in SEEDED_FILES:
                if root.create(name, template(name).encode()):
                    created.append(name)
        return created

    def create(self, name: str, text: str) -> bool:
        """Write *name* only if it does not exist (atomically); return whether it was written."""
        with self._open(create=True) as root:
            return root.create(self._check(name), text.encode(), parents=True)

    def read(self, name: str) -> str:
        """The file's text, or "" when it is missing.

        At most READ_HEAD + READ_TAIL bytes are read: a longer file gives its head and its
        tail around a marker. Bytes that are not UTF-8 become U+FFFD.

        Raises:
            PathRefused: the file (or a folder on its way) is a link, a FIFO, a directory...
        """
        name = self._check(name)
        try:
            with self._open() as root:
                excerpt = root.read_text(name, limit=READ_HEAD + READ_TAIL, tail=READ_TAIL)
        except FileNotFoundError:
            return ""
        if not excerpt.truncated:
            return excerpt.text
        return (
            f"{excerpt.head}\n[...{name} is {excerpt.size} bytes; only its head and tail were read...]\n{excerpt.tail}"
        )

    def write(self, name: str, text: str) -> None:
        """Replace *name*. An empty BOOTSTRAP.md ends the first-run ritual: it stays, empty,
        so seeding (at every conversation's start) does not bring the ritual back."""
        name = self._check(name)
        if name == BOOTSTRAP and not text.strip():
            text = ""
        with self._open(create=True) as root:
            root.write(name, text.encode(), parents=True)

    def append(self, name: str, text: str) -> None:
        with self._open(create=True) as root:
            root.append(self._check(name), text.encode(), parents=True)

    def delete(self, name: str) -> bool:
        """Delete *name* (never a link's target); return whether there was one."""
        with self._open() as root:
            return root.remove(self._check(name), missing_ok=True) is not None

    @staticmethod
    def daily_name(day: datetime.date) -> str:
        return f"memory/{day.isoformat()}.md"

    def daily_logs(self) -> list[str]:
        """The dates that have a daily log, newest first."""
        try:
            with self._open() as root:
                entries = root.list_dir("memory")
        except FileNotFoundError:
            return []
        days = [n.removesuffix(".md") for n, kind in entries if kind == "file" and n.endswith(".md")]
        return sorted((d for d in days if _DAY.fullmatch(d)), reverse=True)

    def _open(self, *, create: bool = False) -> Beneath:
        if create and not self.shared:
            _private_folders(self.root, depth=3)  # users/<agent>/<user>: made by the daemon alone
        return Beneath(self.root)

    @staticmethod
    def _check(name: str) -> str:
        # Only the fixed file names and memory/YYYY-MM-DD.md are ever used below the root.
        if name in SEEDED_FILES or (name.startswith("memory/") and _DAY.fullmatch(name[7:].removesuffix(".md"))):
            return name
        raise ValueError(f"{name!r} is not a workspace file")


def user_workspace(data_dir: Path, agent_id: str, user_id: str, *, single_user: bool) -> Workspace:
    """Where *user_id*'s own USER.md, MEMORY.md, HEARTBEAT.md and daily logs with *agent_id* are.

    The agent's workspace itself when the agent is single-user (every user's prompt reads
    them), else ``users/<agent>/<user folder>/`` in the data dir (see the module).
    """
    if single_user:
        return Workspace.of(data_dir, agent_id)
    folder = data_dir / "users" / check_agent_name(agent_id) / user_folder_name(user_id)
    return Workspace(agent_id, folder, shared=False)


def _private_folders(folder: Path, depth: int) -> None:
    """Make *folder* and the *depth* - 1 folders above it, each owner-only whatever the umask."""
    for path in [*reversed(folder.parents[: depth - 1]), folder]:
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        path.chmod(0o700)
