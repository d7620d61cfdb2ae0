"""`beamclaw skills list|status|show|install`: what the agents' skills are, on disk (no daemon needed)."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Final

import beamclaw

if TYPE_CHECKING:
    import beamclaw_core as core

from ._help import Commands, Help, add_group
from ._listing import Column, add_json_option, print_json, print_table, wants_json
from ._terminal_safe import visible


def _skills(args: argparse.Namespace) -> tuple[dict[str, core.Skill], list[str]]:
    import beamclaw_core as core

    config = beamclaw.load_config(args.config)
    bundled = config.get("core", {}).get("bundled_skills_dir") or str(beamclaw.BUNDLED_SKILLS)
    places = core.skill_places(Path(bundled), beamclaw.data_dir(), core.check_agent_name(args.agent))
    return core.discover(places)


def list_skills(args: argparse.Namespace) -> int:
    skills = sorted(_skills(args)[0].values(), key=lambda s: s.name)
    if wants_json(args):
        print_json([{"name": s.name, "eligible": s.eligible, "source": s.source, "description": s.description,
                     "emoji": s.emoji, "path": str(s.path)} for s in skills])  # fmt: skip
        return 0
    if not skills:
        print("no skills found")
        return 0
    print_table(
        [Column("", whole=True), Column("SKILL", whole=True), Column("SOURCE"), Column("DESCRIPTION")],
        [("✓" if s.eligible else "✗", f"{s.emoji} {s.name}" if s.emoji else s.name, s.source, s.description)
         for s in skills],
    )  # fmt: skip
    return 0


def status(args: argparse.Namespace) -> int:
    skills, problems = _skills(args)
    eligible = [s for s in skills.values() if s.eligible]
    print(f"{len(skills)} skills for agent {args.agent}: {len(eligible)} eligible, {len(skills) - len(eligible)} not")
    for skill in sorted(skills.values(), key=lambda s: s.name):
        if not skill.eligible:
            print(visible(f"  ✗ {skill.name}: {'; '.join(skill.missing)}"))
    for problem in problems:
        print(visible(f"  ! {problem}"))
    return 0


def _find(args: argparse.Namespace) -> core.Skill | None:
    skills, _ = _skills(args)
    skill = skills.get(args.name)
    if skill is None:
        print(f"beamclaw: there is no skill {args.name!r} (see `beamclaw skills list`)")
    return skill


def show(args: argparse.Namespace) -> int:
    skill = _find(args)
    if skill is None:
        return 1
    print(visible(f"{skill.emoji} {skill.name} ({skill.source}, {skill.path})"))
    print(visible(skill.description))
    if skill.homepage:
        print(visible(f"homepage: {skill.homepage}"))
    print(visible("eligible" if skill.eligible else f"not eligible: {'; '.join(skill.missing)}"))
    if skill.mcp or skill.tools:
        needs = [*(f"the MCP server {s!r}" for s in skill.mcp), *(f"the tool {t!r}" for t in skill.tools)]
        print(visible(f"needs {', '.join(needs)} (checked while the daemon runs: `beamclaw mcp list`)"))
    for step in skill.install:
        print(visible(f"install: {step.describe()}"))
    print()
    print(visible(skill.body))
    return 0


def install(args: argparse.Namespace) -> int:
    """Show the install steps; run them only with --yes."""
    skill = _find(args)
    if skill is None:
        return 1
    if not skill.install:
        missing = "" if skill.eligible else f"; it {'; '.join(skill.missing)}"
        print(visible(f"{skill.name} has no install steps{missing}"))
        return 0 if skill.eligible else 1
    print(visible(f"Installing {skill.name} runs:"))
    for step in skill.install:
        print(visible(f"  {step.describe()}"))
    if not args.yes:
        print(f"Nothing was run. Run `beamclaw skills install {skill.name} --yes` to run these commands.")
        return 1
    for step in skill.install:
        print(visible(f"$ {step.describe()}"), flush=True)
        result = subprocess.run(step.argv(), check=False)
        if result.returncode != 0:
            print(visible(f"beamclaw: `{step.describe()}` failed with exit code {result.returncode}"))
            return 1
    return 0


COMMANDS = {"list": list_skills, "status": status, "show": show, "install": install}


_HELP: Final = Help(
    "list, check, show or install skills",
    "Skills are SKILL.md folders: bundled, in $BEAMCLAW_HOME/skills, or in an agent's own skills folder. "
    "Without an action, list them.",
    ["beamclaw skills", "beamclaw skills status", "beamclaw skills show git-digest"],
)
_ACTIONS: Final = {
    "list": Help("list the skills an agent has", "List the skills an agent can use (bundled, yours, its own), with "
                 "a mark for each whose requirements are met.", ["beamclaw skills list --agent ops"]),
    "status": Help("say why a skill cannot be used", "For each skill whose requirements are not met, say which "
                   "program, variable or system it lacks.", ["beamclaw skills status"]),
    "show": Help("show a skill: its description, requirements and files", "Show one skill: its description, "
                 "what it requires and whether that is met, how to install it, and its files.",
                 ["beamclaw skills show git-digest"]),
    "install": Help("run a skill's install steps (with --yes)", "Show the steps a skill gives to install what it "
                    "needs; with --yes, run them.", ["beamclaw skills install git-digest --yes"]),
}  # fmt: skip


def add_parser(commands: Commands) -> None:
    for action, parser in add_group(commands, "skills", _HELP, _ACTIONS).items():
        parser.add_argument("--agent", default="default", help="whose skills (default: default)")
        parser.add_argument("--config", metavar="PATH", help="configuration file")
        if action == "list":
            add_json_option(parser)
        if action in {"show", "install"}:
            parser.add_argument("name")
        if action == "install":
            parser.add_argument("--yes", action="store_true", help="run the install steps")


def run(args: argparse.Namespace) -> int:
    import beamclaw_core as core

    try:
        if args.action is None:  # `beamclaw skills`: list, with the defaults
            args = argparse.Namespace(action="list", agent="default", config=None)
        return COMMANDS[args.action](args)
    except core.InvalidAgentName as exc:
        print(f"beamclaw: {exc}")
        return 2
