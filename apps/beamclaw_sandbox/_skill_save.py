"""Sandbox skills: a script that worked in ``exec``, saved as a skill of the agent, and read back by name.

A saved skill is a folder of the agent's workspace, ``skills/NAME/``, holding the
script (``script.py`` or ``script.sh``) and a SKILL.md that says ``type:
sandbox_script``, ``script`` and ``language``: the skill system lists it like any other,
``run_skill`` runs it in bash's jail, and ``exec`` with ``skill`` runs it again in the
sandbox (where the bridge and ``/workspace`` are). A name already taken is refused,
never overwritten. Every access goes through `beamclaw_base.Beneath` (the model writes
this folder too): no link is followed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final, Literal

from beamclaw_base import Beneath, PathRefused

#: A skill's name, as the skill system reads it.
SKILL_NAME: Final = r"^[a-z0-9][a-z0-9._-]{0,63}$"
Language = Literal["python", "shell"]
#: The file the script of each language is saved in.
SCRIPT_FILES: Final = {"python": "script.py", "shell": "script.sh"}
#: The most bytes read of a saved SKILL.md or script.
_READ_LIMIT: Final = 256_000
_FRONT_MATTER: Final = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.DOTALL)


class SkillNotSaved(Exception):
    """Why a script could not be saved or read back as a skill; the message says so."""


def save_skill(workspace: Path, name: str, description: str, language: str, code: str) -> str:
    """Save *code* as the skill *name* of the agent whose workspace this is; return its folder."""
    import yaml  # noqa: PLC0415 - PyYAML, imported by the first skill saved

    folder = f"skills/{name}"
    text = yaml.safe_dump(
        {
            "name": name,
            "description": " ".join(description.split()),
            "type": "sandbox_script",
            "script": SCRIPT_FILES[language],
            "language": language,
        },
        sort_keys=False,
        allow_unicode=True,
    )
    body = (
        f"A script saved from `exec` after it ran successfully. Run it again with `run_skill` "
        f"(name: {name}) in bash's jail, or with `exec` (skill: {name}) in the sandbox.\n"
    )
    try:
        with Beneath(workspace) as root:
            if root.kind(folder) is not None:
                raise SkillNotSaved(f"there is already a skill folder {folder}: choose another name")
            root.create(f"{folder}/{SCRIPT_FILES[language]}", code.encode(), parents=True)
            root.create(f"{folder}/SKILL.md", f"---\n{text}---\n{body}".encode(), parents=True)
    except (OSError, PathRefused) as exc:
        raise SkillNotSaved(f"the skill could not be saved: {exc}") from None
    return folder


def load_skill(workspace: Path, name: str) -> tuple[Language, str]:
    """The language and code of the agent's saved ``sandbox_script`` skill *name*."""
    import yaml  # noqa: PLC0415 - PyYAML, imported by the first skill saved

    folder = f"skills/{name}"
    try:
        with Beneath(workspace) as root:
            match = _FRONT_MATTER.match(root.read_text(f"{folder}/SKILL.md", limit=_READ_LIMIT).text)
            meta = yaml.safe_load(match.group(1)) if match else None
            if not isinstance(meta, dict) or meta.get("type") != "sandbox_script":
                raise SkillNotSaved(f"the skill {name!r} is not a saved sandbox script (type: sandbox_script)")
            language = meta.get("language")
            if language not in SCRIPT_FILES or meta.get("script") != SCRIPT_FILES[language]:
                raise SkillNotSaved(f"the skill {name!r} names no script this sandbox can run")
            excerpt = root.read_text(f"{folder}/{SCRIPT_FILES[language]}", limit=_READ_LIMIT)
    except FileNotFoundError:
        raise SkillNotSaved(f"the agent has no saved skill {name!r} (in {folder}/)") from None
    except (OSError, PathRefused, yaml.YAMLError) as exc:
        raise SkillNotSaved(f"the skill {name!r} cannot be read: {exc}") from None
    if excerpt.truncated:
        raise SkillNotSaved(f"the script of the skill {name!r} is larger than {_READ_LIMIT} bytes")
    return ("python" if language == "python" else "shell"), excerpt.text
