"""`beamclaw agent create|list|show|delete|rehatch`: agent workspaces on disk (no daemon needed)."""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Final

import beamclaw

if TYPE_CHECKING:
    import beamclaw_core as core
    from beamclaw_base import Tx

from ._help import Commands, Help, add_group
from ._listing import Column, add_json_option, print_json, print_table, wants_json
from ._store_config import add_config_option, store_of
from ._terminal_safe import visible


def _workspace(name: str, create: bool = False) -> core.Workspace:
    """The agent's workspace; with *create*, the data dir is made first (or refused in one line)."""
    import beamclaw_core as core

    return core.Workspace.of(beamclaw.data_dir(create=create), name)


def _read(ws: core.Workspace, name: str) -> str | None:
    """The file's text, or None when BeamClaw refuses it (a symbolic link, a FIFO...)."""
    try:
        return ws.read(name)
    except OSError:
        return None


def create(args: argparse.Namespace) -> int:
    ws = _workspace(args.name, create=True)
    existed = ws.exists()
    created = ws.seed()
    print(f"agent {ws.name}: {ws.root}")
    print(f"  created {', '.join(created)}" if created else "  every file was already there; nothing changed")
    if existed and created:
        print("  (existing files were left as they were)")
    return 0


def list_agents(args: argparse.Namespace) -> int:
    import beamclaw_core as core

    folder = beamclaw.data_dir() / "agents"
    names = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    rows = [(name, bool(_read(core.Workspace(name, folder / name), "BOOTSTRAP.md"))) for name in names]
    if wants_json(args):
        print_json([{"name": name, "ritual_pending": pending} for name, pending in rows])
        return 0
    if not names:
        print("no agents yet: `beamclaw agent create NAME`, or just start chatting (the default agent is made then)")
        return 0
    # A folder's name: anything may have made it; the table writes its controls out.
    print_table(
        [Column("AGENT", whole=True), Column("FIRST-RUN RITUAL")],
        [(name, "pending" if pending else "done") for name, pending in rows],
    )
    return 0


def show(args: argparse.Namespace) -> int:
    import beamclaw_core as core

    ws = _workspace(args.name)
    if not ws.exists():
        print(f"beamclaw: there is no agent {args.name!r} (create it with `beamclaw agent create {args.name}`)")
        return 1
    print(f"agent {ws.name}: {ws.root}")
    for name in core.SEEDED_FILES:
        text = _read(ws, name)
        if text is None:
            print(f"  {name:<13} refused (a symbolic link or not a regular file)")
            continue
        print(f"  {name:<13} {'missing' if not os.path.lexists(ws.root / name) else f'{len(text):>6} chars'}")
    try:
        logs = ws.daily_logs()
    except OSError:
        logs = []
    print(f"  daily logs    {len(logs)}" + (f" (latest {logs[0]})" if logs else ""))
    identity = (_read(ws, "IDENTITY.md") or "").splitlines()
    name = next((line.partition(":")[2].strip() for line in identity if line.startswith("- Name:")), "")
    print(visible(f"  name          {name or 'not chosen yet (IDENTITY.md)'}"))  # the model writes IDENTITY.md
    return 0


def delete(args: argparse.Namespace) -> int:
    import beamclaw_core as core

    ws = _workspace(args.name)
    if not ws.exists():
        print(f"beamclaw: there is no agent {args.name!r}")
        return 1
    if not args.yes:
        print(f"This deletes {ws.root} (persona, memory, daily logs) and the agent's stored conversations.")
        print(f"Run `beamclaw agent delete {args.name} --yes` to do it.")
        return 1
    # The conversations first: if the store refuses, the agent is still whole and the
    # command can be run again.
    store = store_of(args)
    if store.backend != "sqlite" or (beamclaw.data_dir() / core.SESSIONS_FILE).exists():
        db = core.open_session_store(store, beamclaw.data_dir())
        try:
            db.transact(lambda tx: _delete_conversations(tx, ws.name))
        finally:
            db.close()
    shutil.rmtree(ws.root)
    print(f"deleted agent {ws.name}")
    return 0


def _delete_conversations(tx: Tx, agent: str) -> None:
    """Every stored conversation of *agent*, messages first, in one transaction: all of
    them go, or (on a failure) none does."""
    tx.execute("DELETE FROM messages WHERE session_id IN (SELECT id FROM sessions WHERE agent_id = ?)", (agent,))
    tx.execute("DELETE FROM sessions WHERE agent_id = ?", (agent,))


def _persona() -> tuple[str, ...]:
    """The files a rehatch puts back from their templates; MEMORY.md and the daily logs only with ``--memory``."""
    import beamclaw_core as core

    return tuple(name for name in core.SEEDED_FILES if name != "MEMORY.md")


def _move_aside(root: Path, names: list[str], backup: Path) -> list[str]:
    """Move each of *names* that exists below *root* into *backup* (a link as the link, never
    its target); return the names moved."""
    moved = []
    for name in names:
        if not os.path.lexists(root / name):
            continue
        (backup / name).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.rename(root / name, backup / name)
        moved.append(name)
    return moved


def rehatch(args: argparse.Namespace) -> int:
    """The spec's factory reset: every bootstrap file back to its template, the old ones kept
    in a dated backup folder outside the workspace (where no jailed command reaches them);
    memory (MEMORY.md, the daily logs, each user's own notes) is kept unless ``--memory``."""
    ws = _workspace(args.name)
    if not ws.exists():
        print(f"beamclaw: there is no agent {args.name!r} (create it with `beamclaw agent create {args.name}`)")
        return 1
    data = beamclaw.data_dir(create=True)  # owner-only, as every file there
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H%M%S.%fZ")
    backup = data / "backups" / "agents" / ws.name / stamp
    backup.mkdir(mode=0o700, parents=True)
    names = [*_persona(), *(["MEMORY.md", "memory"] if args.memory else [])]
    moved = _move_aside(ws.root, names, backup)
    users = data / "users" / ws.name
    if args.memory and os.path.lexists(users):
        os.rename(users, backup / "users")
        moved.append(f"{users.relative_to(data)}/")
    ws.seed()
    print(f"agent {ws.name}: {', '.join(_persona())} back to their templates")
    kept = "kept (MEMORY.md, daily logs, each user's notes; --memory resets it)"
    print(f"  memory {'reset too' if args.memory else kept}")
    print(f"  the old files are in {backup}" if moved else "  there were no old files to keep")
    print("  the next conversation starts with the first-run ritual")
    return 0


COMMANDS = {"create": create, "list": list_agents, "show": show, "delete": delete, "rehatch": rehatch}


_HELP: Final = Help(
    "create, list, show, delete or rehatch agents",
    "Manage agents, each with its own workspace and conversations (no daemon needed). Without an action, list them.",
    ["beamclaw agent list", "beamclaw agent create ops", "beamclaw agent show ops"],
)
_ACTIONS: Final = {
    "list": Help("list the agents", "List the agents and whether their first-run ritual is pending.",
                 ["beamclaw agent list"]),
    "create": Help("create an agent and its workspace", "Create an agent: its workspace, seeded with IDENTITY.md, "
                   "SOUL.md and the other templates (a file you wrote is never overwritten).",
                   ["beamclaw agent create ops", 'beamclaw chat --agent ops "hello"']),
    "show": Help("show an agent's workspace files", "Show an agent's workspace: each file's size, its daily logs "
                 "and its name.", ["beamclaw agent show default"]),
    "delete": Help("delete an agent, its workspace and its conversations", "Delete an agent's workspace and its "
                   "stored conversations (asks for --yes).", ["beamclaw agent delete ops --yes"]),
    "rehatch": Help("reset an agent to its templates (factory reset)", "Put every bootstrap file (IDENTITY.md, "
                    "SOUL.md, USER.md, TOOLS.md, AGENTS.md, BOOTSTRAP.md, HEARTBEAT.md) back to its template, so "
                    "the next conversation starts with the first-run ritual; the old files are moved to "
                    "backups/agents/NAME/<UTC time>/ in the data dir. Memory (MEMORY.md, the daily logs, each "
                    "user's own notes) is kept unless --memory.",
                    ["beamclaw agent rehatch default", "beamclaw agent rehatch ops --memory"]),
}  # fmt: skip


def add_parser(commands: Commands) -> None:
    actions = add_group(commands, "agent", _HELP, _ACTIONS)
    add_json_option(actions["list"])
    for action in ("create", "show", "delete", "rehatch"):
        actions[action].add_argument("name")
    actions["delete"].add_argument("--yes", action="store_true", help="really delete it")
    add_config_option(actions["delete"])
    actions["rehatch"].add_argument("--memory", action="store_true", help="reset memory too (kept in the backup)")


def run(args: argparse.Namespace) -> int:
    import beamclaw_core as core

    try:
        return COMMANDS[args.action or "list"](args)
    except (core.InvalidAgentName, core.StoreError) as exc:
        print(f"beamclaw: {exc}")
        return 2
