"""The jail interface: where ``bash``, ``terminal`` and skill scripts run.

The tools app defines it and the sandbox app implements it (bubblewrap, Docker), so
``beamclaw_tools`` never imports ``beamclaw_sandbox``: the agent loop puts the jails in
the `ToolContext`, by backend name, and a tool picks the one its ``isolation`` names.

`Unjailed` (in ``_subprocess``) is the ``isolation = "none"`` case: a direct subprocess,
with the deny list as its only guard; it lives in this app because it is no jail at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, Protocol, final, runtime_checkable

import attrs

#: The PATH every jailed or unjailed command starts with: the system's, never the daemon's.
SYSTEM_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class JailUnavailable(Exception):
    """The backend cannot run a command here; the message says why and names the fix."""


@final
@attrs.frozen
class JailResult:
    """How a jailed command ended.

    ``exit_code`` is the command's status (negative: killed by that signal), None when it
    ran out of time and was killed with everything it started (``timed_out``). ``stdout``
    and ``stderr`` are capped: past the limit their middle is replaced by one line saying
    how many bytes were left out, and ``truncated`` is set.
    """

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    truncated: bool = False


@runtime_checkable
class Jail(Protocol):
    """Runs one command in isolation. Implementations: the sandbox app's bubblewrap and
    Docker jails, and `Unjailed`.

    ``run`` runs *argv* with the agent's *workspace* as the only writable place (at the
    same absolute path as on the host) and *cwd* (the workspace or a folder inside it) as
    its working directory; *readonly* folders (skill folders) are visible read-only at
    their own paths. It returns within about *timeout* seconds, having killed the command
    and every process it started if it had to, and keeps at most *output_limit* bytes of
    each stream. Network, environment and resource limits are the jail's configuration,
    never the caller's, except *env*: variables added to the command's environment (a
    skill's own ``[core.skills.NAME] env``, given to that skill's scripts alone). It
    raises `JailUnavailable` (with the fix) when the backend cannot work on this machine,
    before anything runs.
    """

    @property
    def backend(self) -> str:
        """The backend's name, as ``isolation`` writes it: "bubblewrap", "docker", "none"."""
        ...

    async def check(self) -> str | None:
        """None when the backend works here; otherwise what is wrong and how to fix it."""
        ...

    async def run(
        self,
        argv: Sequence[str],
        *,
        workspace: Path,
        cwd: Path | None = None,
        timeout: float,
        output_limit: int,
        readonly: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
    ) -> JailResult: ...


def check_cwd(workspace: Path, cwd: Path | None) -> Path:
    """*cwd* (default: the workspace), which must be the workspace or inside it; else ValueError.

    Both are made absolute and their ``..`` resolved as text first (`os.path.abspath`), so
    ``/ws/../etc`` is outside ``/ws`` whichever jail then uses it.
    """
    if cwd is None:
        return workspace
    root, inside = Path(os.path.abspath(workspace)), Path(os.path.abspath(cwd))
    if not inside.is_relative_to(root):
        raise ValueError(f"cwd {str(cwd)!r} is not inside the workspace {str(workspace)!r}")
    return inside
