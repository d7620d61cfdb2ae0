"""Process groups (OTP's pg): named sets of processes, left automatically on exit.

A process may join a group more than once; each `leave` undoes one `join`, as in OTP.
"""

from __future__ import annotations

from collections.abc import Hashable

from ._process import Dest, Pid, Process, node, resolve_live, self

__all__ = ["join", "leave", "members", "which_groups"]


def join(group: Hashable, pid: Dest | None = None) -> None:
    """Add *pid* (default: the caller) to *group*."""
    proc = resolve_live(pid if pid is not None else self())
    groups = node().groups
    if not any(proc in members for members in groups.values()):
        proc.exit_hooks.append(_leave_all)
    groups.setdefault(group, []).append(proc)


def leave(group: Hashable, pid: Dest | None = None) -> bool:
    """Remove one membership of *pid* (default: the caller); False if it had none."""
    proc = resolve_live(pid if pid is not None else self())
    members = node().groups.get(group)
    if not members or proc not in members:
        return False
    members.remove(proc)
    if not members:
        del node().groups[group]
    return True


def members(group: Hashable) -> list[Pid]:
    """The pids in *group*, in join order."""
    return [proc.pid for proc in node().groups.get(group, ())]


def which_groups() -> list[Hashable]:
    return list(node().groups)


def _leave_all(proc: Process) -> None:
    groups = node().groups
    for group in list(groups):
        remaining = [member for member in groups[group] if member is not proc]
        if remaining:
            groups[group] = remaining
        else:
            del groups[group]
