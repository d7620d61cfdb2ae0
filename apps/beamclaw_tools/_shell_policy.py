"""The shell deny list: destructive, privilege, reverse-shell and pipe-to-shell commands.

A check on the raw string is easy to dodge (``r''m -rf /``, ``true && sudo x``,
``$(echo rm) -rf /``). So the command is first de-quoted, then cut into every simple
command it contains (at ``;``, ``&&``, ``||``, ``|``, ``&``, newlines, ``$(...)``,
backticks, subshells and braces), wrappers such as ``env``, ``nohup`` or ``bash -c``
are peeled off, and each command word is judged on its own. A command word that is
computed (it contains ``$`` or a backtick) is refused outright: what it runs cannot
be known before it runs.
"""

from __future__ import annotations

import re
from typing import Final

_DENIED_COMMANDS: Final = {
    "sudo": "privilege escalation",
    "su": "privilege escalation",
    "doas": "privilege escalation",
    "pkexec": "privilege escalation",
    "shutdown": "stops the machine",
    "reboot": "stops the machine",
    "halt": "stops the machine",
    "poweroff": "stops the machine",
    "systemctl": "controls system services",
    "mkfs": "formats a file system",
    "fdisk": "changes disk partitions",
    "sfdisk": "changes disk partitions",
    "parted": "changes disk partitions",
    "wipefs": "erases file system signatures",
    "shred": "destroys files beyond recovery",
    "mount": "changes mounts",
    "umount": "changes mounts",
    "chroot": "changes the root directory",
    "insmod": "loads kernel modules",
    "rmmod": "unloads kernel modules",
    "modprobe": "loads kernel modules",
    "iptables": "changes the firewall",
    "useradd": "changes system users",
    "userdel": "changes system users",
    "usermod": "changes system users",
    "passwd": "changes passwords",
    "chpasswd": "changes passwords",
    "crontab": "installs persistent jobs",
    "nc": "opens raw network connections (reverse shells)",
    "ncat": "opens raw network connections (reverse shells)",
    "netcat": "opens raw network connections (reverse shells)",
    "socat": "opens raw network connections (reverse shells)",
    "telnet": "opens raw network connections (reverse shells)",
    "eval": "runs dynamically built code",
}
_SHELLS: Final = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash", "busybox"})
_INTERPRETERS: Final = frozenset(
    {"python", "python2", "python3", "perl", "ruby", "node", "php", "lua", "osascript", "pwsh"}
)
# Wrappers that run their arguments as a command; the number is how many of their own
# arguments to skip besides options.
_WRAPPERS: Final = {
    "env": 0, "nohup": 0, "nice": 0, "time": 0, "command": 0, "builtin": 0, "exec": 0,
    "stdbuf": 0, "setsid": 0, "xargs": 0, "timeout": 1, "watch": 0, "ionice": 0, "unbuffer": 0,
}  # fmt: skip
_ROOTISH: Final = re.compile(r"^(/+\*?|/[^/]+/?\*?|~/?\*?|\$HOME/?\*?|\$\{HOME\}/?\*?|\*|\.{1,2}/?\*?)$")
_SEPARATORS: Final = re.compile(r"\|\||&&|[;&|\n`(){}]|\$\(|<\(|>\(")
_PIPE_TO_INTERPRETER: Final = re.compile(
    r"\|\s*(?:\S*/)?(?:sudo\s+)?(?:"
    + "|".join(sorted(_SHELLS | _INTERPRETERS))
    + r")\d*(?:\s+-[a-z]*)*\s*(?:$|[;&|)\n-])"
)
_RAW_PATTERNS: Final = (
    (re.compile(r"/dev/(?:tcp|udp)/"), "opens a network socket from the shell (reverse shell)"),
    (re.compile(r"([^\s(){};|&]+)\s*\(\s*\)\s*\{[^}]*?\1\s*\|\s*\1"), "is a fork bomb"),
    (re.compile(r"\bdd\b[^;&|\n]*\bof=/dev/"), "writes raw to a device"),
    (re.compile(r">\s*/dev/(?:sd|nvme|hd|vd|xvd|mmcblk|disk)"), "writes raw to a device"),
    (re.compile(r"\b(?:pty\.spawn|os\.dup2|socket\.socket\b.*\bsubprocess)"), "matches a reverse-shell pattern"),
    (re.compile(r"--no-preserve-root"), "disables rm's root protection"),
)


def _dequote(command: str) -> str:
    """Remove quoting so ``r''m`` and ``"r"m`` read as ``rm`` (what the shell runs)."""
    return re.sub(r"""\\(.)|['"]""", lambda m: m.group(1) or "", command)


def _strip_wrappers(words: list[str]) -> list[str]:
    while words:
        first = words[0].rsplit("/", 1)[-1]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):  # VAR=value cmd
            words = words[1:]
        elif first in _WRAPPERS:
            rest = words[1:]
            while rest and (rest[0].startswith("-") or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", rest[0])):
                rest = rest[1:]
            words = rest[_WRAPPERS[first] :]
        else:
            break
    return words


def _check_simple(words: list[str]) -> str | None:
    words = _strip_wrappers(words)
    if not words:
        return None
    word = words[0]
    if "$" in word:
        return f"the command name {word!r} is computed at run time"
    name = word.rsplit("/", 1)[-1]
    base = name.split(".", 1)[0] if name.startswith("mkfs") else name
    if base in _DENIED_COMMANDS:
        return f"{name!r} {_DENIED_COMMANDS[base]}"
    args = words[1:]
    if name in _SHELLS | _INTERPRETERS:
        if "-c" in args or "-e" in args:
            flag = "-c" if "-c" in args else "-e"
            nested = " ".join(args[args.index(flag) + 1 :])
            return check_command(nested) if name in _SHELLS else None
        if name in _SHELLS and not args:
            return f"{name!r} without a script starts a shell that reads commands from its input"
    if name == "rm":
        flags = "".join(a.lstrip("-") for a in args if a.startswith("-") and not a.startswith("--"))
        recursive = "r" in flags.lower() or "--recursive" in args
        if recursive and any(_ROOTISH.match(a) for a in args if not a.startswith("-")):
            return "'rm -r' on the root, home or a whole top-level directory is destructive"
    if name in {"chmod", "chown", "chgrp"}:
        recursive = any(a.startswith("-") and "R" in a for a in args) or "--recursive" in args
        if recursive and any(_ROOTISH.match(a) for a in args if not a.startswith("-")):
            return f"'{name} -R' on the root or home changes the whole system"
    return None


def check_command(command: str) -> str | None:
    """The reason *command* is refused, or None when it may run."""
    for pattern, reason in _RAW_PATTERNS:
        if pattern.search(command):
            return f"the command {reason}"
    plain = _dequote(command)
    for pattern, reason in _RAW_PATTERNS:
        if pattern.search(plain):
            return f"the command {reason}"
    if _PIPE_TO_INTERPRETER.search(plain):
        return "the command pipes into a shell or interpreter"
    if re.search(r"(?:^|[\s;&|])(?:source|\.)\s*<\(", plain) or re.search(
        r"\b(?:" + "|".join(_SHELLS) + r")\s+<\(", plain
    ):
        return "the command runs a shell on downloaded or generated input"
    for segment in _SEPARATORS.split(plain):
        refusal = _check_simple(segment.split())
        if refusal is not None:
            return refusal
    return None
