"""Skills: SKILL.md folders with YAML front matter, discovered in three places.

Lowest to highest precedence: the bundled ``skills/``, ``$BEAMCLAW_HOME/skills/``, and
the agent's own ``skills/``; a skill of the same name in a later place replaces the
earlier one. A skill's requirements (binaries, environment variables, operating
systems) decide whether it is eligible; an ineligible skill is listed with the
reason and left out of prompts. ``{baseDir}`` in a skill's text becomes its folder.

The agent's folder is written by the model, so every place is read through
`beamclaw_base.Beneath`: a skill folder or SKILL.md that is a symbolic link, a FIFO or
over SKILL_LIMIT bytes is skipped with the reason among the problems (shown by
``beamclaw skills status``), and never blocks or fails the others.

    ---
    name: git-digest
    description: Summarise a git repository's recent activity.
    emoji: "📜"
    homepage: https://example.org
    metadata:
      requires: {bins: [git], env: [], os: [linux, darwin], mcp: [github], tools: [mcp__github__search]}
      install: [{kind: apt, package: git}]
    ---
    Run `{baseDir}/digest.sh PATH` ...

A skill saved from a script that worked in ``exec`` says ``type: sandbox_script``, with
``script`` (its file, in the skill's folder) and ``language`` (python or shell): the
``run_skill`` tool runs it again by name. Any skill's script may be run that way, in
the jail bash uses, with the skill's own ``[core.skills.NAME] env``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Final, final

import attrs
import re2

from beamclaw_base import Beneath, PathRefused

from ._messages import Message, estimate_tokens
from ._programs import on_path

SKILL_LIMIT: Final = 256_000
INLINE_MAX_SKILLS: Final = 20
INLINE_MAX_TOKENS: Final = 3_500
#: RE2, linear time: a SKILL.md may be written by the agent, so by a hostile model.
_FRONT_MATTER: Final = re2.compile(r"(?s)\A---\s*\n(.*?)\n---\s*(?:\n|\z)(.*)\z")
_NAME: Final = re2.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
#: A script's file name in its skill's folder: no folder, no leading dot.
_SCRIPT: Final = re2.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
_INSTALL_KINDS: Final = {"pip": "python -m pip install {}", "apt": "apt-get install -y {}", "npm": "npm install -g {}"}
#: A skill's ``type``: instructions for the model (the default), or a saved ``exec`` script.
SKILL_TYPES: Final = ("instructions", "sandbox_script")
#: The languages a skill's script is run with, and the program that runs it.
SCRIPT_LANGUAGES: Final = {"python": "python3", "shell": "bash"}


class SkillError(ValueError):
    """A SKILL.md that cannot be read; the message names the file and the problem."""


@final
@attrs.frozen
class InstallStep:
    kind: str
    target: str

    def describe(self) -> str:
        return self.target if self.kind == "shell" else _INSTALL_KINDS[self.kind].format(self.target)

    def argv(self) -> list[str]:
        if self.kind == "shell":
            return ["bash", "-c", self.target]
        return [
            sys.executable if self.kind == "pip" else self.kind.replace("apt", "apt-get"),
            *self.describe().split()[1:],
        ]


@final
@attrs.frozen
class Skill:
    name: str
    description: str
    path: Path
    source: str
    body: str
    homepage: str = ""
    emoji: str = ""
    bins: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    os: tuple[str, ...] = ()
    install: tuple[InstallStep, ...] = ()
    #: MCP servers (``[mcp.servers.NAME]``) and tools (by the name the agent sees) it needs.
    mcp: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    #: One of `SKILL_TYPES`.
    type: str = "instructions"
    #: The script ``run_skill`` runs when none is named (a file in the skill's folder), and its language.
    script: str = ""
    language: str = "shell"

    def unmet(self, tools: Collection[str] | None = None) -> list[str]:
        """Why the skill cannot be used here (empty when it can). Its MCP servers and tools
        are checked against *tools*, the tools there are now; None (no daemon to ask) says
        they are checked while the daemon runs."""
        reasons = [f"needs the program {b!r}, which is not on PATH" for b in self.bins if not on_path(b)]
        reasons += [f"needs the environment variable {v}" for v in self.env if not os.environ.get(v)]
        platform = {"linux": "linux", "darwin": "darwin", "win32": "windows"}.get(sys.platform, sys.platform)
        if self.os and platform not in self.os:
            reasons.append(f"runs on {', '.join(self.os)}, not {platform}")
        if tools is None:
            return reasons
        for server in self.mcp:
            if not any(tool.startswith(f"mcp__{server}__") for tool in tools):
                reasons.append(f"needs the MCP server {server!r}, which offers no tools now (`beamclaw mcp list`)")
        reasons += [f"needs the tool {tool!r}, which is not there now" for tool in self.tools if tool not in tools]
        return reasons

    @property
    def missing(self) -> list[str]:
        """Why the skill cannot be used here, as far as is known without the daemon (see `unmet`)."""
        return self.unmet(None)

    @property
    def eligible(self) -> bool:
        return not self.missing

    def summary(self) -> str:
        return f"- {self.emoji + ' ' if self.emoji else ''}{self.name}: {self.description}"


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise SkillError(f"{where} must be a list of strings")


def _install(value: Any, where: str) -> tuple[InstallStep, ...]:
    steps = []
    for i, item in enumerate(value or []):
        if not isinstance(item, dict) or item.get("kind") not in {*_INSTALL_KINDS, "shell"}:
            raise SkillError(f"{where}[{i}] needs kind pip, apt, npm or shell")
        target = item.get("command" if item["kind"] == "shell" else "package")
        if not isinstance(target, str) or not target.strip():
            raise SkillError(f"{where}[{i}] needs {'command' if item['kind'] == 'shell' else 'package'}")
        steps.append(InstallStep(item["kind"], target.strip()))
    return tuple(steps)


def _read_skill(folder: Beneath, path: str, skill_md: Path) -> str:
    try:
        excerpt = folder.read_text(path, limit=SKILL_LIMIT)
    except PathRefused as exc:
        raise SkillError(f"{skill_md}: cannot read: {exc}") from None
    except OSError as exc:
        raise SkillError(f"{skill_md}: cannot read: {exc.strerror or exc}") from None
    if excerpt.truncated:
        raise SkillError(f"{skill_md}: larger than {SKILL_LIMIT} bytes")
    if "\ufffd" in excerpt.text:
        raise SkillError(f"{skill_md}: not valid UTF-8")
    return excerpt.text


def parse_skill(skill_md: Path, source: str) -> Skill:
    """Read one SKILL.md; raises `SkillError` naming the file and what is wrong."""
    try:
        with Beneath(skill_md.parent) as folder:
            text = _read_skill(folder, skill_md.name, skill_md)
    except OSError as exc:  # the folder itself: missing, or a link
        raise SkillError(f"{skill_md}: cannot read: {exc}") from None
    return _parse(text, skill_md, source)


def _parse(text: str, skill_md: Path, source: str) -> Skill:
    import yaml  # noqa: PLC0415 - PyYAML, imported by the first SKILL.md read

    match = _FRONT_MATTER.match(text)
    if match is None:
        raise SkillError(f"{skill_md}: no front matter (a '---' block at the top)")
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise SkillError(f"{skill_md}: front matter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise SkillError(f"{skill_md}: front matter must be a mapping")
    try:
        name, description = meta.get("name"), meta.get("description")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise SkillError("'name' must be lowercase letters, digits, '.', '-' or '_'")
        if not isinstance(description, str) or not description.strip():
            raise SkillError("'description' is required")
        extra = meta.get("metadata") or {}
        requires = extra.get("requires") or {} if isinstance(extra, dict) else {}
        if not isinstance(requires, dict):
            raise SkillError("'metadata.requires' must be a mapping")
        kind, script, language = meta.get("type", "instructions"), meta.get("script", ""), meta.get("language", "shell")
        if kind not in SKILL_TYPES:
            raise SkillError(f"'type' must be one of {', '.join(SKILL_TYPES)}")
        if not isinstance(script, str) or not (_SCRIPT.fullmatch(script) or (not script and kind == "instructions")):
            raise SkillError("'script' must be a file name in the skill's folder (a sandbox_script skill needs one)")
        if language not in SCRIPT_LANGUAGES:
            raise SkillError(f"'language' must be one of {', '.join(SCRIPT_LANGUAGES)}")
        folder = skill_md.parent
        return Skill(
            name=name,
            description=" ".join(description.split()),
            path=folder,
            source=source,
            body=match.group(2).replace("{baseDir}", str(folder)).strip(),
            homepage=str(meta.get("homepage") or ""),
            emoji=str(meta.get("emoji") or ""),
            bins=_strings(requires.get("bins"), "metadata.requires.bins"),
            env=_strings(requires.get("env"), "metadata.requires.env"),
            os=_strings(requires.get("os"), "metadata.requires.os"),
            mcp=_strings(requires.get("mcp"), "metadata.requires.mcp"),
            tools=_strings(requires.get("tools"), "metadata.requires.tools"),
            install=_install(extra.get("install") if isinstance(extra, dict) else None, "metadata.install"),
            type=kind,
            script=script,
            language=language,
        )
    except SkillError as exc:
        if str(exc).startswith(str(skill_md)):
            raise
        raise SkillError(f"{skill_md}: {exc}") from None


def skill_places(bundled: Path | None, data_dir: Path, agent_id: str) -> list[tuple[str, Path]]:
    """Where an agent's skills come from, lowest precedence first."""
    first = [("bundled", bundled)] if bundled else []
    return [*first, ("home", data_dir / "skills"), ("agent", data_dir / "agents" / agent_id / "skills")]


def discover(places: Iterable[tuple[str, Path]]) -> tuple[dict[str, Skill], list[str]]:
    """Every skill in *places* (lowest precedence first), and the problems found on the way."""
    skills: dict[str, Skill] = {}
    problems: list[str] = []
    for source, folder in places:
        try:
            # The bundled folder is the project's own (trusted, maybe reached by a link);
            # the home and agent folders are opened without following one.
            with Beneath(folder, follow_root=source == "bundled") as place:
                found = _discover_in(place, folder, source, problems)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            problems.append(f"{folder}: skipped: {exc}")
            continue
        skills.update((skill.name, skill) for skill in found)
    return skills, problems


def _discover_in(place: Beneath, folder: Path, source: str, problems: list[str]) -> list[Skill]:
    found = []
    for name, kind in place.list_dir():
        if name.startswith("."):
            continue
        if kind == "link":
            problems.append(f"{folder / name}: skipped: a symbolic link; BeamClaw does not follow links here")
            continue
        if kind != "directory" or place.kind(f"{name}/SKILL.md") is None:
            continue
        skill_md = folder / name / "SKILL.md"
        try:
            found.append(_parse(_read_skill(place, f"{name}/SKILL.md", skill_md), skill_md, source))
        except SkillError as exc:
            problems.append(str(exc))
    return found


def prompt_block(skills: Iterable[Skill]) -> str:
    """Inline summaries while they are few and short; past that, point at `skill_search`."""
    eligible = [s for s in skills if s.eligible]
    if not eligible:
        return ""
    lines = [s.summary() for s in sorted(eligible, key=lambda s: s.name)]
    if len(lines) <= INLINE_MAX_SKILLS and estimate_tokens([Message("system", "\n".join(lines))]) <= INLINE_MAX_TOKENS:
        return (
            "<skills>\nSkills you can use. Before following one, read it with the read_skill tool.\n"
            + "\n".join(lines)
            + "\n</skills>"
        )
    return (
        f"<skills>\nYou have {len(eligible)} skills. Find the ones that fit with the skill_search tool, "
        "then read one with read_skill before following it.\n</skills>"
    )
